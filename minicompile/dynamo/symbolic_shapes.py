"""Moved to the shared layer: minicompile/shapes/symbolic_shapes.py (torch/fx/experimental/
symbolic_shapes.py). Re-exported here for notebooks and exercises that import the old path."""

from ..shapes.symbolic_shapes import (SYM_TYPES, SYMBOL_MIN, PythonPrinter, ShapeEnv,  # noqa: F401
                                      ShapeGuard, expr_of, fake_from_sizes, has_symbolic_scalars,
                                      has_symbolic_sizes, hint_of, is_symbolic,
                                      specialize_scalars, symbolic_dispatch)
