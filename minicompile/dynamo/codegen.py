"""PyCodegen: writes the transformed function as readable Python (mirrors
torch/_dynamo/codegen.py, which emits bytecode instead).

Real Dynamo replaces the frame's bytecode with new bytecode that calls the compiled graph and
rebuilds the return value. minicompile writes the same program as Python source, so a learner
can print it::

    def __transformed_code_0_fn(x, y):
        graph_out_0 = __compiled_fn_0(x, y)
        return (graph_out_0[0], 3, {'a': graph_out_0[1]})

Each VariableTracker's ``reconstruct(codegen)`` returns the expression that rebuilds it: a graph
output, a constant literal, a source expression (an input returned as it is), or a tuple/list/dict
of those. Objects with no literal form are installed as globals of the frame, as Dynamo does.
"""

from __future__ import annotations

import itertools
from typing import Any

_unique = itertools.count()


class PyCodegen:
    def __init__(self, f_globals: dict, graph_out_name: str = "graph_out_0"):
        self.f_globals = f_globals
        self.graph_out_name = graph_out_name
        self.graph_outputs: list = []  # TensorVariables, in output order (deduplicated by node)

    def __call__(self, vt) -> str:
        return vt.reconstruct(self)

    def graph_output(self, tensor_vt) -> str:
        """The expression of a tensor the graph computes: it becomes one of the graph outputs."""
        for i, existing in enumerate(self.graph_outputs):
            if existing.proxy.node is tensor_vt.proxy.node:
                return f"{self.graph_out_name}[{i}]"
        self.graph_outputs.append(tensor_vt)
        return f"{self.graph_out_name}[{len(self.graph_outputs) - 1}]"

    def install_global(self, hint: str, value: Any) -> str:
        """Bind ``value`` to a fresh name in the frame's globals (``__const_3``) and return it."""
        for name, v in self.f_globals.items():
            if name.startswith(f"__{hint}_") and v is value:
                return name
        name = f"__{hint}_{next(_unique)}"
        self.f_globals[name] = value
        return name
