"""The dependency graph of a step and its critical path, with what-if re-scheduling."""
