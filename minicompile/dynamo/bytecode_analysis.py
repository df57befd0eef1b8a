"""Mini version of torch/_dynamo/bytecode_analysis.py: flow analyses over decoded instructions.

Three questions a bytecode rewriter must answer, all by walking the control-flow graph of
:class:`~minicompile.dynamo.bytecode_transformation.Instruction` objects (successors: the next
instruction unless this one ends the block, the jump target, and the exception handler):

- **stack depth** before each instruction (``co_stacksize`` is the maximum; a resume function
  needs to know how many values are on the stack at the break);
- **reachability** (dead code left behind by an edit is dropped, so listings stay readable);
- **liveness**: which locals are *read before being written* on some path from an instruction.
  At a graph break only those must be passed to the resume function (Dynamo's
  ``livevars_analysis``); passing every local would also work but keeps dead tensors alive.
"""

from __future__ import annotations

import dis
import types
from collections import deque

from .bytecode import SUPERINSTRUCTIONS, Instruction

# Instructions after which control never falls through to the next instruction.
TERMINAL = {"RETURN_VALUE", "RETURN_CONST", "RAISE_VARARGS", "RERAISE", "JUMP_FORWARD",
            "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT"}

# How each instruction touches a local variable (its argval): read first, then written.
READS = {"LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_AND_CLEAR", "DELETE_FAST", "LOAD_DEREF",
         "LOAD_CLOSURE", "DELETE_DEREF", "LOAD_CLASSDEREF", "LOAD_FROM_DICT_OR_DEREF"}
WRITES = {"STORE_FAST", "STORE_DEREF", "DELETE_FAST", "DELETE_DEREF", "LOAD_FAST_AND_CLEAR"}
# LOAD_FAST_AND_CLEAR (3.12 inlined comprehensions) saves a local on the stack and unbinds it;
# DELETE_FAST needs the local bound (it raises UnboundLocalError otherwise), so both read.


def parts(inst: Instruction) -> list[tuple[str, object]]:
    """(opname, argval) of each plain instruction ``inst`` does, in order: two for a 3.13
    superinstruction (``LOAD_FAST_LOAD_FAST`` with argval ``("x", "y")``), else itself."""
    if inst.opname in SUPERINSTRUCTIONS:
        return list(zip(SUPERINSTRUCTIONS[inst.opname], inst.argval))
    return [(inst.opname, inst.argval)]


def local_names(inst: Instruction) -> list[str]:
    return [name for _, name in parts(inst) if isinstance(name, str)]


# dis.stack_effect's answer differs from what the compiler assumes for these few.
STACK_EFFECT_OVERRIDES = {
    # A generator's first instruction: when the frame is resumed the sent value (None) is on
    # the stack, and the POP_TOP that follows removes it.
    "RETURN_GENERATOR": 1,
}


def writes_globals(code: types.CodeType) -> bool:
    """Whether ``code`` (or a function nested in it) stores or deletes a global: such a frame
    can't run with a proxy for its globals (eval_frame.py's ``_CompilingGlobals``)."""
    return any(i.opname in ("STORE_GLOBAL", "DELETE_GLOBAL") for i in dis.get_instructions(code)) \
        or any(writes_globals(c) for c in code.co_consts if isinstance(c, types.CodeType))


def globals_only_called(code: types.CodeType) -> set[str]:
    """The globals ``code`` (and the functions nested in it) reads only to call them: every
    ``LOAD_GLOBAL`` of the name pushes the NULL of a call (the low bit of its argument). A
    global read as a value (``d[f]``, ``f is g``, ``f.__code__``) is not among them."""
    called, as_value = set(), set()

    def scan(c: types.CodeType) -> None:
        for inst in dis.get_instructions(c):
            if inst.opname == "LOAD_GLOBAL":
                (called if inst.arg & 1 else as_value).add(inst.argval)
            elif inst.opname in ("LOAD_NAME", "LOAD_FROM_DICT_OR_GLOBALS"):
                as_value.add(inst.argval)
        for const in c.co_consts:
            if isinstance(const, types.CodeType):
                scan(const)

    scan(code)
    return called - as_value


def _stack_effect(inst: Instruction, jump: bool) -> int:
    if inst.opname in STACK_EFFECT_OVERRIDES:
        return STACK_EFFECT_OVERRIDES[inst.opname]
    arg = (inst.arg or 0) if inst.opcode >= dis.HAVE_ARGUMENT else None  # jumps: not yet known
    return dis.stack_effect(inst.opcode, arg, jump=jump)


def _edges(inst: Instruction, nxt: Instruction | None) -> list[tuple[Instruction, int]]:
    """(successor, stack depth change) for each way control leaves ``inst``."""
    edges = []
    if inst.opname not in TERMINAL and nxt is not None:
        edges.append((nxt, _stack_effect(inst, jump=False)))
    if inst.target is not None:
        edges.append((inst.target, _stack_effect(inst, jump=True)))
    return edges


def stack_depths(insts: list[Instruction]) -> dict[Instruction, int]:
    """Stack depth before every reachable instruction (unreachable ones are absent).

    An exception handler starts with the stack cut to its entry's depth, plus the raising
    instruction's offset when ``lasti`` is set, plus the exception itself.
    """
    nxt = {a: b for a, b in zip(insts, insts[1:])}
    depths: dict[Instruction, int] = {insts[0]: 0}
    work = deque([insts[0]])
    while work:
        inst = work.popleft()
        succs = [(t, depths[inst] + d) for t, d in _edges(inst, nxt.get(inst))]
        if inst.exn_tab_entry is not None:
            e = inst.exn_tab_entry
            succs.append((e.target, e.depth + int(e.lasti) + 1))
        for succ, depth in succs:
            if succ not in depths:
                depths[succ] = depth
                work.append(succ)
            elif depths[succ] != depth:
                raise ValueError(f"inconsistent stack depth at {succ}: {depths[succ]} vs {depth}")
    return depths


def stacksize_analysis(insts: list[Instruction]) -> int:
    """``co_stacksize``: the deepest the stack gets anywhere (during or after an instruction)."""
    depths = stack_depths(insts)
    nxt = {a: b for a, b in zip(insts, insts[1:])}
    deepest = max(depths.values(), default=0)
    for inst, depth in depths.items():
        for _, change in _edges(inst, nxt.get(inst)):
            deepest = max(deepest, depth + change)
        deepest = max(deepest, depth + _stack_effect(inst, jump=False))
    return deepest


def remove_dead_code(insts: list[Instruction]) -> list[Instruction]:
    """Drop instructions no path from the first one reaches (handlers count as reachable)."""
    reachable = stack_depths(insts)
    return [inst for inst in insts if inst in reachable]


def in_exception_handler(insts: list[Instruction]) -> set[Instruction]:
    """Instructions that run while an exception handler's values are on the stack.

    Unwinding pushes (lasti,) exception at the handler's depth; the handler runs until it
    pops back below that depth (POP_EXCEPT / RERAISE). We propagate, per instruction, the
    lowest stack slot holding such a value, and drop the mark once the stack shrinks below it.
    """
    depths = stack_depths(insts)
    nxt = {a: b for a, b in zip(insts, insts[1:])}
    mark: dict[Instruction, int] = {}  # lowest handler-owned slot on the stack before inst
    work = deque(e.target for e in {id(i.exn_tab_entry): i.exn_tab_entry for i in insts
                                    if i.exn_tab_entry is not None and i in depths}.values())
    for inst in insts:
        if inst.exn_tab_entry is not None and inst in depths:
            t = inst.exn_tab_entry.target
            mark[t] = min(mark.get(t, 1 << 30), inst.exn_tab_entry.depth)
    while work:
        inst = work.popleft()
        for succ, change in _edges(inst, nxt.get(inst)):
            low = mark[inst] if depths[inst] + change > mark[inst] else None
            if low is not None and low < mark.get(succ, 1 << 30):
                mark[succ] = low
                work.append(succ)
    return {inst for inst, low in mark.items() if depths.get(inst, 0) > low}


def livevars_analysis(insts: list[Instruction]) -> dict[Instruction, frozenset[str]]:
    """For each instruction, the locals some path from it reads before writing (backward flow).

    live_in(i) = reads(i) | (live_out(i) - writes(i)) | live_in(handler of i)
    The handler's needs are added whole: if ``i`` raises, its own write never happened.
    """
    nxt = {a: b for a, b in zip(insts, insts[1:])}
    succs = {i: [s for s, _ in _edges(i, nxt.get(i))] for i in insts}
    live: dict[Instruction, frozenset[str]] = {i: frozenset() for i in insts}
    changed = True
    while changed:
        changed = False
        for inst in reversed(insts):
            out = frozenset().union(*(live[s] for s in succs[inst]))
            for opname, name in reversed(parts(inst)):
                if opname in WRITES:
                    out = out - {name}
                if opname in READS:
                    out = out | {name}
            if inst.exn_tab_entry is not None:
                out = out | live[inst.exn_tab_entry.target]
            if out != live[inst]:
                live[inst] = out
                changed = True
    return live


def live_locals_at(insts: list[Instruction], inst: Instruction, exclude: frozenset[str] = frozenset()
                   ) -> list[str]:
    """The locals live at ``inst`` in a stable order (the order of first appearance)."""
    live = livevars_analysis(insts)[inst] - exclude
    order = {}
    for i in insts:
        for name in local_names(i):
            if name in live:
                order.setdefault(name, len(order))
    return sorted(live, key=order.__getitem__)
