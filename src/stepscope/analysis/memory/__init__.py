"""Memory over time: allocations per device or allocator, and what held memory at the peak."""
