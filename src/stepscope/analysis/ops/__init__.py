"""Framework ops and GPU kernels: what ran, its self time, its category and cost."""
