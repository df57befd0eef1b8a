"""Exercises for notebook 03: graph breaks and resume functions.

Grade with ``bash course.sh grade -k 03``. Each function plugs into minicompile's real
resume-function machinery; the checks stop real Python functions in the middle (at every offset
they reach), continue them with a resume function built from your piece, and compare with what
the untouched function returns.
"""

from __future__ import annotations

from typing import Any

from minicompile.dynamo.bytecode_analysis import READS, TERMINAL, WRITES, parts
from minicompile.dynamo.bytecode_transformation import Instruction, create_instruction
from minicompile.dynamo.resume_execution import CONTEXT, NULL, VALUE, stack_arg_name


def live_locals(insts: list[Instruction], start: int) -> set[str]:
    """Exercise 3.1: the locals that must be passed to a resume function at ``insts[start]``.

    A local is *live* at ``insts[start]`` if some path of execution from there reads it before
    writing it. Walk the control-flow graph from ``start``: after instruction ``i`` control goes
    to ``insts[i + 1]`` unless ``i.opname in TERMINAL``, and also to ``i.target`` when it is not
    None (a jump; ``insts.index(i.target)`` is its position). ``parts(i)`` lists what ``i`` does
    as ``(opname, argval)`` pairs, in order: one pair, or two for a Python 3.13
    superinstruction (``LOAD_FAST_LOAD_FAST`` reads two locals). A part reads ``argval`` when
    its opname is in ``READS`` and writes it when it is in ``WRITES`` (a part's read happens
    before its write). Ignore exception handlers. Tip: explore (position, set of names already
    written) states.
    """
    ### BEGIN SOLUTION 3.1: search every path from start for reads that come before writes
    live: set[str] = set()
    seen: set[tuple[int, frozenset[str]]] = set()
    work = [(start, frozenset())]
    while work:
        pos, written = work.pop()
        if pos >= len(insts) or (pos, written) in seen:
            continue
        seen.add((pos, written))
        inst = insts[pos]
        for opname, name in parts(inst):
            if opname in READS and name not in written:
                live.add(name)
            if opname in WRITES:
                written = written | {name}
        if inst.opname not in TERMINAL:
            work.append((pos + 1, written))
        if inst.target is not None:
            work.append((insts.index(inst.target), written))
    return live
    ### END SOLUTION


def resume_arguments(stack: list[Any], frame_locals: dict[str, Any], live: list[str],
                     null: Any) -> tuple[tuple[str, ...], list[str], list[Any]]:
    """Exercise 3.2: from a frame stopped at the break, the resume function's call.

    ``stack`` is the value stack, bottom first; a slot equal to ``null`` (test with ``is``) is
    CPython's NULL. ``frame_locals`` holds the *bound* locals; ``live`` the live ones in order.
    Return ``(stack_kinds, argnames, args)``:

    - ``stack_kinds``: ``NULL`` or ``VALUE`` for each slot (the prologue pushes NULL itself);
    - ``argnames``: the live locals that are bound, in ``live`` order (an unbound live local is
      simply not passed: it stays unbound in the resume function too);
    - ``args``: the values to call the resume function with: the non-NULL stack values bottom
      first, then the values of ``argnames``.
    """
    ### BEGIN SOLUTION 3.2: kinds per slot, bound live locals, then the positional arguments
    kinds = tuple(NULL if v is null else VALUE for v in stack)
    argnames = [name for name in live if name in frame_locals]
    args = [v for v in stack if v is not null] + [frame_locals[n] for n in argnames]
    return kinds, argnames, args
    ### END SOLUTION


def restore_stack(stack: tuple[str, ...]) -> list[Instruction]:
    """Exercise 3.3: the resume prologue's instructions that rebuild the value stack.

    For slot ``i`` (bottom first) of kind ``stack[i]``:
      - ``NULL``: ``create_instruction("PUSH_NULL")``;
      - ``VALUE``: load the argument: ``create_instruction("LOAD_FAST", argval=stack_arg_name(i))``;
      - ``CONTEXT``: the argument is a context manager of a ``with`` block that was active at
        the break: load it, then ``BEFORE_WITH`` (enters it and pushes ``__exit__`` then the
        ``__enter__()`` result) and ``POP_TOP`` (drop the result: only ``__exit__`` stays).
    """
    ### BEGIN SOLUTION 3.3: one PUSH_NULL or LOAD_FAST (+ BEFORE_WITH, POP_TOP) per slot
    out = []
    for i, kind in enumerate(stack):
        if kind == NULL:
            out.append(create_instruction("PUSH_NULL"))
            continue
        out.append(create_instruction("LOAD_FAST", argval=stack_arg_name(i)))
        if kind == CONTEXT:
            out += [create_instruction("BEFORE_WITH"), create_instruction("POP_TOP")]
    return out
    ### END SOLUTION


def classify_call(fn: Any) -> str:
    """Exercise 3.4: the graph-break kind of a call that had to run natively.

    Return one of (see ``minicompile.dynamo.graph_break_hints.BREAK_KINDS``):
      - ``"print_or_logging"``: ``print``, a ``logging`` function (``logging.info``, ...) or a
        method of a ``logging.Logger`` (``fn.__self__`` is the logger);
      - ``"tensor_to_python"``: a tensor's bound ``item`` or ``tolist`` method;
      - ``"untraceable_call"``: anything from ``numpy`` or ``random`` (look at
        ``fn.__module__``, or the module of ``type(fn.__self__)`` for bound methods);
      - ``"inlined_call"``: any other plain Python function (``types.FunctionType``): user code;
      - ``"untraceable_call"``: any other builtin function (``types.BuiltinFunctionType``);
      - ``"unsupported_construct"``: anything else.
    """
    ### BEGIN SOLUTION 3.4: test print/logging, tensor methods, numpy/random, user functions, builtins
    import builtins
    import logging
    import types

    import torch

    owner = getattr(fn, "__self__", None)
    if fn is builtins.print or isinstance(owner, logging.Logger) or (
            getattr(fn, "__module__", None) == "logging" and callable(fn)
            and not isinstance(fn, type)):
        return "print_or_logging"
    if isinstance(owner, torch.Tensor) and getattr(fn, "__name__", "") in ("item", "tolist"):
        return "tensor_to_python"
    module = getattr(fn, "__module__", None) or type(owner).__module__
    if module and module.split(".")[0] in ("numpy", "random"):
        return "untraceable_call"
    if isinstance(fn, types.FunctionType):
        return "inlined_call"
    if isinstance(fn, types.BuiltinFunctionType):
        return "untraceable_call"
    return "unsupported_construct"
    ### END SOLUTION
