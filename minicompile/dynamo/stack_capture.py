"""What is really on CPython's stack at an offset? Run the function and look (no counterpart in torch/).

Python cannot inspect a running frame's value stack, so to check a resume function against
real execution we instrument a copy of the function: just before the instruction at
``offset`` we insert::

    STORE_FAST ___capture_stack<k> ... STORE_FAST ___capture_stack0   # pop the whole stack
    PUSH_NULL; LOAD_CONST <hook>; CALL 0; RAISE_VARARGS 1             # hook snapshots locals
                                                 # (3.13: the NULL after the hook, above it)

The hook reads the frame's locals (a NULL stack slot shows up as a missing local; the cells of
cell variables are stored with LOAD_CLOSURE first, which 3.13 spells LOAD_FAST) and returns an
exception carrying them, which stops the function right there. The snippet has no
exception-table entry, so no ``except``/``finally``/``with`` of the function runs on the way
out. Built with our own assembler, so it doubles as a test of it.
"""

from __future__ import annotations

import copy
import sys
import types
from dataclasses import dataclass
from typing import Any, Callable

from .bytecode_analysis import stack_depths
from .bytecode_transformation import (
    code_from_instructions,
    create_call,
    create_instruction,
    create_load_closure,
    instructions_from_code,
    push_callable,
)
from .resume_execution import NULL, VALUE, find_instruction

_PREFIX = "___capture_stack"


@dataclass
class FrameSnapshot:
    """The stack (bottom first; ``NULL`` marks a NULL slot), the bound locals and the cells of
    the cell variables at ``offset``. Nothing ran after the snapshot, so no copies are needed."""

    offset: int
    stack: list[Any]
    locals: dict[str, Any]
    cells: dict[str, types.CellType]

    @property
    def stack_kinds(self) -> tuple[str, ...]:
        return tuple(NULL if v is NULL else VALUE for v in self.stack)

    @property
    def stack_values(self) -> list[Any]:
        return [v for v in self.stack if v is not NULL]


class _Captured(BaseException):  # BaseException: a user's ``except Exception`` can't eat it
    def __init__(self, snapshot: FrameSnapshot):
        self.snapshot = snapshot


def instrument(fn: Callable, offset: int) -> Callable:
    """A copy of ``fn`` that stops at ``offset`` the first time it gets there (see module doc)."""
    code = fn.__code__
    insts = instructions_from_code(code)
    target = find_instruction(insts, offset)
    depth = stack_depths(insts)[target]
    names = [f"{_PREFIX}{i}" for i in range(depth)]
    cell_names = [f"{_PREFIX}_cell_{c}" for c in code.co_cellvars]

    def hook() -> BaseException:
        frame_locals = dict(sys._getframe(1).f_locals)
        stack = [frame_locals.pop(name, NULL) for name in names]
        cells = {c: frame_locals.pop(n) for c, n in zip(code.co_cellvars, cell_names)}
        frame_locals = {k: v for k, v in frame_locals.items()
                        if not k.startswith(_PREFIX) and k not in cells}
        return _Captured(FrameSnapshot(offset, stack, frame_locals, cells))

    snippet = [create_instruction("STORE_FAST", argval=n) for n in reversed(names)]
    for cell, name in zip(code.co_cellvars, cell_names):  # the cell itself
        snippet += [create_load_closure(cell), create_instruction("STORE_FAST", argval=name)]
    snippet += push_callable([create_instruction("LOAD_CONST", argval=hook)])
    snippet += create_call(0) + [create_instruction("RAISE_VARARGS", arg=1)]
    # Turn the target object itself into the snippet's head, so every jump to the target now
    # lands on the snippet, and put a copy of the original instruction after it.
    moved = copy.copy(target)
    head = snippet[0]
    for attr in ("opcode", "opname", "arg", "argval", "target", "exn_tab_entry"):
        setattr(target, attr, getattr(head, attr))
    for inst in insts:  # a handler starting at the target must still start with the original
        if inst.exn_tab_entry is not None and inst.exn_tab_entry.target is target:
            inst.exn_tab_entry.target = moved
    i = insts.index(target)
    insts[i + 1:i + 1] = snippet[1:] + [moved]
    new_code = code_from_instructions(insts, code, co_varnames=code.co_varnames + tuple(names + cell_names))
    copy_fn = types.FunctionType(new_code, fn.__globals__, fn.__name__, fn.__defaults__,
                                 fn.__closure__)
    copy_fn.__kwdefaults__ = fn.__kwdefaults__
    return copy_fn


def capture(fn: Callable, offset: int, *args: Any, **kwargs: Any) -> FrameSnapshot | None:
    """Run ``fn`` up to the first time it reaches ``offset``; None if it never does."""
    try:
        instrument(fn, offset)(*args, **kwargs)
    except _Captured as e:
        return e.snapshot
    except Exception:  # it raised before getting there
        return None
    return None
