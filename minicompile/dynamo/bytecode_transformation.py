"""Mini version of torch/_dynamo/bytecode_transformation.py: bytecode <-> editable instructions.

A code object's bytecode is hard to edit in place: jumps are relative offsets, an instruction
whose argument exceeds 255 needs ``EXTENDED_ARG`` prefixes (which move every later offset),
CPython 3.11+ interleaves inline ``CACHE`` entries, and three side tables are keyed by offset:
the exception table (``co_exceptiontable``, "zero-cost" exceptions), the line/column table
(``co_linetable``) and the stack size (``co_stacksize``). So, like Dynamo, we:

1. decode a code object into a list of :class:`Instruction` objects whose jumps point at
   *instruction objects* (``inst.target``) and whose exception-table entry is attached to each
   instruction it covers (``inst.exn_tab_entry``), with no offsets anywhere;
2. edit that list freely (insert a prologue, drop dead code, ...);
3. :func:`assemble` it back: lay out offsets, compute jump arguments, grow ``EXTENDED_ARG``
   prefixes until nothing moves (a fixed point), then re-encode the exception and line tables;
4. :func:`code_from_instructions` builds the new code object with ``CodeType.replace``.

Works on CPython 3.11, 3.12 and 3.13; the table formats are documented in CPython's
``Objects/locations.md`` and ``Objects/exception_handling_notes.txt``.
"""

from __future__ import annotations

import dis
from types import CodeType
from typing import Any, Iterable

from .bytecode import PY312, PY313, SUPERINSTRUCTIONS
from .bytecode import ExnTabEntry, Instruction  # noqa: F401  (re-exported: the one instruction class)
from .bytecode_analysis import stacksize_analysis

_NOTHING = object()  # "argval not given" (None is a real argval: LOAD_CONST None)

# Jumps whose argument counts backwards from the next instruction (3.11 has a few more).
BACKWARD_JUMPS = {n for n in dis.opmap if "JUMP_BACKWARD" in n}
JUMP_OPCODES = set(dis.hasjrel) | set(dis.hasjabs)
# Instructions whose argument indexes "fast locals" (co_varnames + cells + free vars).
LOCAL_OPCODES = set(dis.haslocal) | set(dis.hasfree)
EXTENDED_ARG = dis.opmap["EXTENDED_ARG"]
CACHE = dis.opmap["CACHE"]


def cache_entries(opcode: int) -> int:
    """Inline CACHE code units that follow ``opcode`` (3.11+ specialization scratch space).
    ``dis`` keeps the counts in a list by opcode up to 3.12, in a dict by name from 3.13."""
    table = dis._inline_cache_entries
    if isinstance(table, dict):
        return table.get(dis.opname[opcode], 0)
    return table[opcode]


def create_instruction(
    opname: str, *, arg: int | None = None, argval: Any = _NOTHING, target: Instruction | None = None
) -> Instruction:
    """A new instruction; give ``argval`` (a name or constant) and assemble() finds the ``arg``."""
    opcode = dis.opmap[opname]
    if argval is _NOTHING:
        argval = arg if target is None else None
    elif arg is None and opcode not in LOCAL_OPCODES and opcode not in dis.hasconst:
        raise ValueError(f"{opname}: give arg= (only local and constant args are looked up)")
    return Instruction(opcode, opname, arg, argval, target=target)


def create_call(nargs: int) -> list[Instruction]:
    """Call the callable under ``nargs`` arguments (with its NULL, see ``push_callable``):
    3.11 needs PRECALL."""
    if not PY312:
        return [create_instruction("PRECALL", arg=nargs), create_instruction("CALL", arg=nargs)]
    return [create_instruction("CALL", arg=nargs)]


def push_callable(load: list[Instruction]) -> list[Instruction]:
    """``load`` (instructions pushing a callable) with the NULL that CALL expects beside it:
    below the callable up to 3.12, above it on 3.13. Assembled the other way round, the 3.13
    interpreter crashes (it does not check)."""
    null = create_instruction("PUSH_NULL")
    return [*load, null] if PY313 else [null, *load]


def create_load_closure(name: str) -> Instruction:
    """Push the cell of ``name`` (for a closure tuple): LOAD_CLOSURE, which 3.13 spells
    LOAD_FAST (a cell variable's fast slot holds the cell)."""
    return create_instruction("LOAD_FAST" if PY313 else "LOAD_CLOSURE", argval=name)


# ---------------------------------------------------------------------------------- decoding


def parse_exception_table(table: bytes) -> list[tuple[int, int, int, int, bool]]:
    """``co_exceptiontable`` -> [(start, end, target, depth, lasti)], byte offsets, end exclusive.

    Each entry is four varints, most significant 6-bit chunk first, 0x40 = "more chunks", and
    0x80 marks the first byte of an entry. Offsets are stored in code units (2 bytes).
    """
    entries, i = [], 0

    def varint() -> int:
        nonlocal i
        value = table[i] & 63
        while table[i] & 64:
            i += 1
            value = (value << 6) | (table[i] & 63)
        i += 1
        return value

    while i < len(table):
        start, length, target, depth_lasti = varint(), varint(), varint(), varint()
        entries.append((2 * start, 2 * (start + length), 2 * target, depth_lasti >> 1,
                        bool(depth_lasti & 1)))
    return entries


def instructions_from_code(code: CodeType) -> list[Instruction]:
    """Decode ``code`` into editable instructions (no EXTENDED_ARG or CACHE entries left)."""
    insts: list[Instruction] = []
    by_offset: dict[int, Instruction] = {}  # an EXTENDED_ARG prefix maps to its instruction
    prefixes: list[int] = []
    for raw in dis.get_instructions(code):
        if raw.opcode == EXTENDED_ARG:
            prefixes.append(raw.offset)
            continue
        inst = Instruction(raw.opcode, raw.opname, raw.arg, raw.argval, raw.offset, raw.positions)
        for offset in [*prefixes, raw.offset]:
            by_offset[offset] = inst
        prefixes = []
        insts.append(inst)
    for inst in insts:
        if inst.opcode in JUMP_OPCODES:
            inst.target = by_offset[inst.argval]
    for start, end, target, depth, lasti in parse_exception_table(code.co_exceptiontable):
        entry = ExnTabEntry(by_offset[target], depth, lasti)
        for inst in insts:
            if start <= inst.offset < end:
                inst.exn_tab_entry = entry
    return insts


# ---------------------------------------------------------------------------------- encoding


def _varint(value: int) -> list[int]:
    """Location-table varint: least significant 6-bit chunk first, 0x40 = "more chunks"."""
    out = []
    while value >= 64:
        out.append(64 | (value & 63))
        value >>= 6
    return out + [value]


def _svarint(value: int) -> list[int]:
    return _varint((-value << 1) | 1 if value < 0 else value << 1)


def encode_linetable(insts: list[Instruction], firstlineno: int) -> bytes:
    """``co_linetable`` (PEP 626/657): one entry per at most 8 code units of one location.

    We always use the two simplest forms: code 14 ("long": line delta, end-line delta, column+1,
    end-column+1) and code 15 ("no location"); line deltas are relative to the previous entry.
    """
    out: list[int] = []
    line = firstlineno
    for inst in insts:
        units = inst.extended_args + 1 + cache_entries(inst.opcode)
        pos = inst.positions
        while units > 0:
            n = min(units, 8)
            units -= n
            if pos is None or pos.lineno is None:
                out.append(0x80 | (15 << 3) | (n - 1))
                continue
            out.append(0x80 | (14 << 3) | (n - 1))
            out += _svarint(pos.lineno - line)
            out += _varint((pos.end_lineno if pos.end_lineno is not None else pos.lineno)
                           - pos.lineno)
            out += _varint(pos.col_offset + 1 if pos.col_offset is not None else 0)
            out += _varint(pos.end_col_offset + 1 if pos.end_col_offset is not None else 0)
            line = pos.lineno
    return bytes(out)


def _exn_varint(value: int, first: bool) -> list[int]:
    chunks = []
    while True:
        chunks.append(value & 63)
        value >>= 6
        if not value:
            break
    chunks.reverse()  # most significant first
    out = [c | 64 for c in chunks[:-1]] + [chunks[-1]]
    if first:
        out[0] |= 128
    return out


def encode_exception_table(insts: list[Instruction]) -> bytes:
    """Merge runs of instructions sharing one handler into ranges and encode them."""
    out: list[int] = []
    i = 0
    while i < len(insts):
        entry = insts[i].exn_tab_entry
        if entry is None:
            i += 1
            continue
        j = i
        while j + 1 < len(insts) and insts[j + 1].exn_tab_entry is not None \
                and insts[j + 1].exn_tab_entry.key() == entry.key():
            j += 1
        start = insts[i].offset // 2
        end = (insts[j].offset + instruction_size(insts[j])) // 2
        out += _exn_varint(start, True) + _exn_varint(end - start, False)
        out += _exn_varint(entry.target.offset // 2, False)
        out += _exn_varint((entry.depth << 1) | int(entry.lasti), False)
        i = j + 1
    return bytes(out)


def instruction_size(inst: Instruction) -> int:
    """Bytes taken by ``inst``: its EXTENDED_ARG prefixes, itself and its CACHE entries."""
    return 2 * (inst.extended_args + 1 + cache_entries(inst.opcode))


def _jump_arg(inst: Instruction) -> int:
    # Relative jumps count code units from the end of the jump (after its caches).
    after = inst.offset + instruction_size(inst)
    if inst.opname in BACKWARD_JUMPS:
        return (after - inst.target.offset) // 2
    delta = inst.target.offset - after
    if delta < 0:
        raise ValueError(f"{inst.opname} can only jump forward, not to {inst.target}")
    return delta // 2


def _prefixes_needed(arg: int | None) -> int:
    return 0 if arg is None else (arg > 0xFF) + (arg > 0xFFFF) + (arg > 0xFFFFFF)


def assemble(insts: list[Instruction], firstlineno: int) -> tuple[bytes, bytes, bytes]:
    """Lay out ``insts``: returns (co_code, co_linetable, co_exceptiontable).

    Jump arguments depend on offsets, and offsets on how many EXTENDED_ARG prefixes each
    argument needs, so iterate until no instruction needs more prefixes than it has.
    """
    for inst in insts:
        inst.extended_args = _prefixes_needed(inst.arg) if inst.target is None else 0
    while True:
        offset = 0
        for inst in insts:
            inst.offset = offset
            offset += instruction_size(inst)
        grew = False
        for inst in insts:
            if inst.target is not None:
                inst.arg = _jump_arg(inst)
                if _prefixes_needed(inst.arg) > inst.extended_args:
                    inst.extended_args = _prefixes_needed(inst.arg)
                    grew = True
        if not grew:
            break
    code: list[int] = []
    for inst in insts:
        arg = inst.arg or 0
        for k in range(inst.extended_args, 0, -1):
            code += [EXTENDED_ARG, (arg >> (8 * k)) & 0xFF]
        code += [inst.opcode, arg & 0xFF]
        code += [CACHE, 0] * cache_entries(inst.opcode)
    return bytes(code), encode_linetable(insts, firstlineno), encode_exception_table(insts)


# ------------------------------------------------------------------------ code object creation


def fast_local_names(varnames: Iterable[str], cellvars: Iterable[str],
                     freevars: Iterable[str]) -> list[str]:
    """CPython 3.11+'s "localsplus" layout: locals, then cells that are not arguments, then
    free variables. LOAD_FAST/LOAD_DEREF/MAKE_CELL arguments index this list."""
    varnames = list(varnames)
    return varnames + [c for c in cellvars if c not in varnames] + list(freevars)


def _const_index(consts: list[Any], value: Any) -> int:
    for i, c in enumerate(consts):  # 1, 1.0 and True are equal but distinct constants
        if type(c) is type(value) and (c is value or (_hashable(c) and c == value)):
            return i
    consts.append(value)
    return len(consts) - 1


def _hashable(value: Any) -> bool:
    return isinstance(value, (int, float, complex, str, bytes, type(None), bool))


def fix_args(insts: list[Instruction], fast_locals: list[str], consts: list[Any]) -> None:
    """Recompute the arguments that index tables we may have changed.

    Local-variable instructions are re-indexed by name (a resume function reorders
    co_varnames); new LOAD_CONSTs get their index, appending to ``consts`` when needed.
    """
    split_wide_superinstructions(insts, fast_locals)
    for inst in insts:
        if inst.opname in SUPERINSTRUCTIONS:  # two 4-bit local indices in one argument
            first, second = (fast_locals.index(name) for name in inst.argval)
            inst.arg = (first << 4) | second
        elif inst.opcode in LOCAL_OPCODES:
            inst.arg = fast_locals.index(inst.argval)
        elif inst.opcode in dis.hasconst and inst.arg is None:
            inst.arg = _const_index(consts, inst.argval)


def split_wide_superinstructions(insts: list[Instruction], fast_locals: list[str]) -> None:
    """A 3.13 superinstruction packs two local indices of 4 bits each. When a rewrite (a
    resume function reorders the locals) gives one an index past 15, it becomes its two plain
    instructions; the first keeps the object, so jumps and handlers that target it still do."""
    i = 0
    while i < len(insts):
        inst = insts[i]
        if inst.opname in SUPERINSTRUCTIONS and \
                any(fast_locals.index(name) > 15 for name in inst.argval):
            (op1, op2), (name1, name2) = SUPERINSTRUCTIONS[inst.opname], inst.argval
            second = Instruction(dis.opmap[op2], op2, None, name2, positions=inst.positions,
                                 exn_tab_entry=inst.exn_tab_entry)
            inst.opcode, inst.opname, inst.argval = dis.opmap[op1], op1, name1
            insts.insert(i + 1, second)
        i += 1


def code_from_instructions(
    insts: list[Instruction], template: CodeType, **replace: Any
) -> CodeType:
    """Assemble ``insts`` into a copy of ``template`` (co_* fields overridable via ``replace``)."""
    varnames = replace.get("co_varnames", template.co_varnames)
    cellvars = replace.get("co_cellvars", template.co_cellvars)
    freevars = replace.get("co_freevars", template.co_freevars)
    consts = list(replace.get("co_consts", template.co_consts))
    firstlineno = replace.get("co_firstlineno", template.co_firstlineno)
    fix_args(insts, fast_local_names(varnames, cellvars, freevars), consts)
    code, linetable, exceptiontable = assemble(insts, firstlineno)
    replace.update(
        co_code=code,
        co_linetable=linetable,
        co_exceptiontable=exceptiontable,
        co_consts=tuple(consts),
        co_nlocals=len(varnames),
        co_stacksize=stacksize_analysis(insts),
    )
    return template.replace(**replace)
