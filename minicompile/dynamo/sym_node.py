"""Moved to the shared layer: minicompile/shapes/sym_node.py (torch/fx/experimental/sym_node.py).
Re-exported here for code that imports the old path."""

from ..shapes.sym_node import SymNode  # noqa: F401
