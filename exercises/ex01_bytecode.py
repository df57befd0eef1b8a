"""Exercises for notebook 01: the bytecode interpreter.

Grade with ``bash course.sh grade -k 01``. Each piece you write is plugged into the real
mini Dynamo (minicompile/dynamo/), which then traces real functions with it; the checks compare
the compiled results with eager PyTorch on random tensors, and require that everything is
captured in one graph (a wrong piece makes the trace fail or fall back to eager).
"""

from __future__ import annotations

import operator
from typing import Callable

from minicompile.dynamo.bytecode import Instruction
from minicompile.dynamo.symbolic_convert import (InliningInstructionTranslator,
                                                 InstructionTranslatorBase, arg_count)
from minicompile.dynamo.variables.base import VariableTracker


def binary_op_table() -> dict[str, Callable]:
    """Exercise 1.1: the table behind the BINARY_OP handler.

    ``BINARY_OP``'s ``argrepr`` is the operator's symbol: ``"+"``, ``"@"``, ``"<<"``, and for the
    augmented assignments ``"+="``, ``"@="``, ... Return a dict mapping each of the 26 symbols
    (13 binary operators and their in-place forms) to the function of the ``operator`` module
    that applies it: ``"+" -> operator.add``, ``"+=" -> operator.iadd``. The interpreter calls
    ``BuiltinVariable(table[inst.argrepr])``, which becomes ``operator.add(x, y)`` in the graph.
    """
    raise NotImplementedError('Exercise 1.1: map each BINARY_OP symbol to its operator function (roughly 7 lines)')


def for_iter(tx: InstructionTranslatorBase, inst: Instruction) -> None:
    """Exercise 1.2: the FOR_ITER handler, which unrolls loops at trace time.

    On entry the top of ``tx.stack`` is a ``ListIteratorVariable`` (GET_ITER made it from a
    range, a list, ``zip(...)``, ...). Its ``next_item()`` returns the next VariableTracker, or
    None when the loop is over. Like CPython's FOR_ITER: push the next item (the loop body runs
    next), or, when exhausted, pop the iterator and jump to the loop exit with ``tx.jump(inst)``.
    """
    raise NotImplementedError('Exercise 1.2: push the next item, or pop the iterator and jump out (roughly 6 lines)')


def inline_call(parent: InstructionTranslatorBase, fn: VariableTracker,
                args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    """Exercise 1.3: inline a call to a user function into the caller's graph.

    ``fn`` is a UserFunctionVariable (or a nested function made while tracing). Bind the call's
    arguments to the function's parameters (``fn.bind_args(parent, args, kwargs)`` returns
    ``{parameter name: VariableTracker}``, defaults applied), build an
    ``InliningInstructionTranslator(code, f_globals, symbolic_locals, cells, output, parent)``
    for ``fn.get_code()``, with ``fn.get_globals()``, the closure cells
    ``fn.closure_cells(parent)`` and the parent's ``output`` graph, run it, and return its
    ``return_value``. The locals must be keyed by the names of the code's arguments,
    ``code.co_varnames[:arg_count(code)]``.
    """
    raise NotImplementedError("Exercise 1.3: bind the arguments, run the callee's bytecode, return its value (roughly 8 lines)")
