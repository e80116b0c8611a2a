"""XLA programs and HLO ops: modules, shapes, graphs, buffer assignment."""
