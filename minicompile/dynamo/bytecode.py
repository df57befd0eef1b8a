"""Read a code object's bytecode into one instruction set shared by CPython 3.11, 3.12 and 3.13
(mirrors ``cleaned_instructions`` in torch/_dynamo/bytecode_transformation.py).

Bytecode changes with every CPython minor release. The interpreter in ``symbolic_convert.py``
must not care, so every version difference is rewritten here, in one place, as a table:

    3.11 PRECALL                      -> NOP              (3.12 dropped it)
    3.11 POP_JUMP_FORWARD_IF_FALSE    -> POP_JUMP_IF_FALSE (3.12 name; dis gives absolute targets)
    3.12 LOAD_ATTR with the method bit -> LOAD_METHOD      (3.11 name)
    3.12 RETURN_CONST c               -> LOAD_CONST c; RETURN_VALUE
    3.12 BINARY_SLICE / STORE_SLICE   -> BUILD_SLICE 2; BINARY_SUBSCR / STORE_SUBSCR
    3.12 CALL_INTRINSIC_1 list->tuple -> LIST_TO_TUPLE    (3.11 name)
    3.12 FOR_ITER exits past END_FOR  -> its target is the instruction after END_FOR (3.11 meaning)
    LOAD_GLOBAL with the NULL bit     -> PUSH_NULL; LOAD_GLOBAL (3.13: LOAD_GLOBAL; PUSH_NULL)
    3.13 LOAD_FAST_LOAD_FAST a, b     -> LOAD_FAST a; LOAD_FAST b (and the two other
         superinstructions STORE_FAST_STORE_FAST, STORE_FAST_LOAD_FAST: two plain ones)
    3.13 LOAD_FAST of a cell variable -> LOAD_CLOSURE     (the cell itself, for a closure)
    3.13 FORMAT_SIMPLE / FORMAT_WITH_SPEC -> FORMAT_VALUE 0 / FORMAT_VALUE 4 (the 3.12 spelling)
    3.13 FOR_ITER exits past END_FOR and the POP_TOP after it

Where a NULL goes is the one layout difference that is kept, not normalised: up to 3.12 CPython
expects ``NULL, callable, args`` for a CALL, 3.13 ``callable, NULL, args``. The symbolic stack
mirrors the real one exactly, because a graph break hands it to real bytecode (a NULL in the
wrong place crashes the 3.13 interpreter); the CALL handler accepts both layouts.
The parts of an expansion share the original offset; a graph break may only happen before the
first part (``expansion_start``), where the stack is the one the original instruction expects.

This module imports no torch, so it can be studied (and tested) under any Python.
"""

from __future__ import annotations

import dis
import sys
import types
import warnings
from dataclasses import dataclass, field
from typing import Any

# The CPython releases whose bytecode this module's tables describe, each tested (README.md).
# A release after the last is read as the last one: taking it in is one more entry here and its
# rows in the tables below (ADDED_IN, REMOVED_IN, RENAMES, _expand), as 3.12 and 3.13 came in.
PYTHONS = ((3, 11), (3, 12), (3, 13))
RUNNING = sys.version_info[:2]
PY312 = RUNNING >= (3, 12)
PY313 = RUNNING >= (3, 13)
if RUNNING not in PYTHONS:
    warnings.warn(f"minicompile reads CPython {'.'.join(map(str, PYTHONS[0]))} to "
                  f"{'.'.join(map(str, PYTHONS[-1]))} bytecode; Python "
                  f"{'.'.join(map(str, RUNNING))} is read as the last, untested", RuntimeWarning)
DIS_DOCS = "https://docs.python.org/{v}/library/dis.html#opcode-{op}"


@dataclass(eq=False)
class ExnTabEntry:
    """Where an exception raised by the instructions carrying this entry goes.

    ``depth``: the stack is popped down to this many items before the handler runs; ``lasti``:
    the raising instruction's offset is pushed too (``with`` cleanups use it to re-raise).
    """

    target: Instruction
    depth: int
    lasti: bool

    def key(self) -> tuple[int, int, bool]:
        return (id(self.target), self.depth, self.lasti)


@dataclass(eq=False)  # identity semantics: instructions are dict keys and jump targets
class Instruction:
    """One instruction (torch/_dynamo/bytecode_transformation.py's ``Instruction``), used both by
    the interpreter (``cleaned_instructions``: the normalised set) and by bytecode editing
    (``instructions_from_code``: the real set). ``target`` is the *instruction* a jump goes to,
    never an index or an offset: the interpreter finds its index with ``indexof``."""

    opcode: int  # -1 for a normalised name the running Python has no opcode for (LOAD_METHOD)
    opname: str
    arg: int | None = None
    argval: Any = None
    offset: int | None = None  # the original offset (shared by the parts of an expansion)
    positions: dis.Positions | None = None  # source line and columns, for tracebacks
    target: Instruction | None = None  # jumps only
    exn_tab_entry: ExnTabEntry | None = None
    extended_args: int = field(default=0, repr=False)  # EXTENDED_ARG prefixes, set by assemble
    argrepr: str = ""  # as dis prints the argument
    lineno: int | None = None  # the source line in force here (cleaned_instructions sets it)
    original: str | None = None  # the opname dis printed, when normalising renamed it

    @property
    def starts_line(self) -> int | None:
        return self.positions.lineno if self.positions else None

    def __repr__(self) -> str:
        arg = ""
        if self.target is not None:
            arg = f" -> {self.target.offset if self.target.offset is not None else '?'}"
        elif self.argrepr:
            arg = f" {self.argrepr}"
        elif self.arg is not None or self.argval is not None:
            arg = f" {self.argval!r}"
        renamed = "" if self.original in (None, self.opname) else f"  (was {self.original})"
        return f"{self.offset if self.offset is not None else '?':>4} {self.opname}{arg}{renamed}"


def indexof(instructions: list[Instruction]) -> dict[Instruction, int]:
    """Each instruction's position in the list (a jump's ``target`` -> where to continue)."""
    return {inst: i for i, inst in enumerate(instructions)}


# Plain renames: the interpreter only knows the right-hand names.
RENAMES: dict[str, str] = {
    "POP_JUMP_FORWARD_IF_FALSE": "POP_JUMP_IF_FALSE",  # 3.11
    "POP_JUMP_BACKWARD_IF_FALSE": "POP_JUMP_IF_FALSE",
    "POP_JUMP_FORWARD_IF_TRUE": "POP_JUMP_IF_TRUE",
    "POP_JUMP_BACKWARD_IF_TRUE": "POP_JUMP_IF_TRUE",
    "POP_JUMP_FORWARD_IF_NONE": "POP_JUMP_IF_NONE",
    "POP_JUMP_BACKWARD_IF_NONE": "POP_JUMP_IF_NONE",
    "POP_JUMP_FORWARD_IF_NOT_NONE": "POP_JUMP_IF_NOT_NONE",
    "POP_JUMP_BACKWARD_IF_NOT_NONE": "POP_JUMP_IF_NOT_NONE",
    "JUMP_BACKWARD_NO_INTERRUPT": "JUMP_BACKWARD",
    "LOAD_FAST_CHECK": "LOAD_FAST",  # 3.12: LOAD_FAST that may find the local unbound
    "PRECALL": "NOP",  # 3.11: only there for the specializing interpreter
    "RESUME": "NOP",  # generator/trace bookkeeping at function start
    "COPY_FREE_VARS": "NOP",  # our frames read closure cells directly
    "EXTENDED_ARG": "NOP",  # dis already folded it into the next instruction's arg
    "CACHE": "NOP",
}

# 3.13 superinstructions: two plain instructions in one code unit, argval the pair of names
SUPERINSTRUCTIONS = {
    "LOAD_FAST_LOAD_FAST": ("LOAD_FAST", "LOAD_FAST"),
    "STORE_FAST_STORE_FAST": ("STORE_FAST", "STORE_FAST"),
    "STORE_FAST_LOAD_FAST": ("STORE_FAST", "LOAD_FAST"),
}
FORMAT_FLAGS = {"FORMAT_SIMPLE": 0, "FORMAT_WITH_SPEC": 4}  # FORMAT_VALUE's "has a spec" bit

INTRINSICS_1 = {  # 3.12 CALL_INTRINSIC_1 argrepr -> the 3.11 instruction doing the same
    "INTRINSIC_LIST_TO_TUPLE": "LIST_TO_TUPLE",
    "INTRINSIC_UNARY_POSITIVE": "UNARY_POSITIVE",
    # the handler around a generator's whole body (3.11 does this in the interpreter): a
    # StopIteration leaving it becomes RuntimeError (PEP 479); a name of our own, no opcode
    "INTRINSIC_STOPITERATION_ERROR": "STOPITERATION_ERROR",
}


def _expand(ins: dis.Instruction, code: types.CodeType) -> list[tuple[str, Any, str, int | None]]:
    """One dis instruction -> a list of (opname, argval, argrepr, arg) in the shared set."""
    op, val, rep, arg = ins.opname, ins.argval, ins.argrepr, ins.arg
    if op == "KW_NAMES":  # 3.11's dis shows the const index; 3.12's the names tuple
        return [("KW_NAMES", code.co_consts[arg], repr(code.co_consts[arg]), arg)]
    if op == "LOAD_GLOBAL" and arg is not None and arg & 1:
        parts = [("PUSH_NULL", None, "", None), ("LOAD_GLOBAL", val, val, arg)]
        return parts[::-1] if PY313 else parts  # 3.13 pushes the NULL above the callable
    if op in SUPERINSTRUCTIONS:
        return [(part, name, name, None) for part, name in zip(SUPERINSTRUCTIONS[op], val)]
    if op == "LOAD_FAST" and PY313 and val in code.co_cellvars + code.co_freevars:
        return [("LOAD_CLOSURE", val, val, arg)]  # 3.13 spells LOAD_CLOSURE as LOAD_FAST
    if op in FORMAT_FLAGS:
        return [("FORMAT_VALUE", FORMAT_FLAGS[op], "", FORMAT_FLAGS[op])]
    if op == "LOAD_ATTR" and PY312 and arg is not None and arg & 1:
        return [("LOAD_METHOD", val, val, arg)]
    if op == "LOAD_SUPER_ATTR":  # 3.12 super().name: bit 0 = method load, bit 1 = two-arg form
        return [("LOAD_SUPER_METHOD" if arg & 1 else "LOAD_SUPER_ATTR", val, val, arg)]
    if op == "RETURN_CONST":
        return [("LOAD_CONST", val, rep, arg), ("RETURN_VALUE", None, "", None)]
    if op == "BINARY_SLICE":
        return [("BUILD_SLICE", 2, "2", 2), ("BINARY_SUBSCR", None, "", None)]
    if op == "STORE_SLICE":
        return [("BUILD_SLICE", 2, "2", 2), ("STORE_SUBSCR", None, "", None)]
    if op == "CALL_INTRINSIC_1" and rep in INTRINSICS_1:
        return [(INTRINSICS_1[rep], None, "", None)]
    return [(RENAMES.get(op, op), val, rep, arg)]


def cleaned_instructions(code: types.CodeType) -> list[Instruction]:
    """The code object's instructions, normalised, each jump's ``target`` an instruction of the
    list."""
    out: list[Instruction] = []
    first_index: dict[int, int] = {}  # original offset -> index of its first normalised part
    lineno = code.co_firstlineno
    raw = list(dis.get_instructions(code))
    for ins in raw:
        if ins.positions is not None and ins.positions.lineno is not None:
            lineno = ins.positions.lineno
        first_index[ins.offset] = len(out)
        for opname, val, rep, arg in _expand(ins, code):
            out.append(Instruction(dis.opmap.get(opname, -1), opname, arg, val, ins.offset,
                                   ins.positions, argrepr=rep, lineno=lineno,
                                   original=ins.opname))
    for inst, ins in zip_parts(out, raw):
        if ins.opcode in dis.hasjrel or ins.opcode in dis.hasjabs:
            target = first_index[ins.argval]
            if out[target].opname == "END_FOR":  # 3.12: FOR_ITER really resumes after it
                target += 2 if PY313 else 1  # 3.13: and after the POP_TOP of the iterator
            inst.target = out[target]
    return out


def zip_parts(out: list[Instruction], raw: list[dis.Instruction]):
    """Pair each normalised instruction with the dis instruction it came from."""
    by_offset = {ins.offset: ins for ins in raw}
    for inst in out:
        yield inst, by_offset[inst.offset]


# Real instructions by the release that added or removed them (from dis.opmap); any other
# instruction the interpreter meets exists on every release of PYTHONS.
ADDED_IN: dict[tuple[int, int], set[str]] = {
    (3, 12): {"BINARY_SLICE", "CALL_INTRINSIC_1", "CALL_INTRINSIC_2", "CLEANUP_THROW", "END_FOR",
              "END_SEND", "LOAD_FAST_AND_CLEAR", "LOAD_FAST_CHECK", "LOAD_FROM_DICT_OR_DEREF",
              "LOAD_FROM_DICT_OR_GLOBALS", "LOAD_LOCALS", "LOAD_SUPER_ATTR", "POP_JUMP_IF_FALSE",
              "POP_JUMP_IF_NONE", "POP_JUMP_IF_NOT_NONE", "POP_JUMP_IF_TRUE", "RETURN_CONST",
              "STORE_SLICE"},
    (3, 13): {"LOAD_FAST_LOAD_FAST", "STORE_FAST_STORE_FAST", "STORE_FAST_LOAD_FAST", "TO_BOOL",
              "CALL_KW", "SET_FUNCTION_ATTRIBUTE", "CONVERT_VALUE", "FORMAT_SIMPLE",
              "FORMAT_WITH_SPEC"},
}
REMOVED_IN: dict[tuple[int, int], set[str]] = {
    (3, 12): {"JUMP_IF_FALSE_OR_POP", "JUMP_IF_TRUE_OR_POP", "LIST_TO_TUPLE", "LOAD_METHOD",
              "POP_JUMP_BACKWARD_IF_FALSE", "POP_JUMP_BACKWARD_IF_NONE",
              "POP_JUMP_BACKWARD_IF_NOT_NONE", "POP_JUMP_BACKWARD_IF_TRUE",
              "POP_JUMP_FORWARD_IF_FALSE", "POP_JUMP_FORWARD_IF_NONE",
              "POP_JUMP_FORWARD_IF_NOT_NONE", "POP_JUMP_FORWARD_IF_TRUE", "PRECALL",
              "UNARY_POSITIVE", "LOAD_CLASSDEREF", "PRINT_EXPR", "IMPORT_STAR"},
    # LOAD_CLOSURE lives on only as a pseudo-instruction of 3.13's compiler, emitted as LOAD_FAST
    (3, 13): {"FORMAT_VALUE", "KW_NAMES", "LOAD_CLOSURE"},
}


def exists_on(opname: str, version: tuple[int, int]) -> bool:
    """Whether CPython ``version`` (one of PYTHONS) has the real instruction ``opname``."""
    added = [v for v, names in ADDED_IN.items() if opname in names]
    removed = [v for v, names in REMOVED_IN.items() if opname in names]
    return all(v <= version for v in added) and all(version < v for v in removed)


# What _expand does beyond RENAMES, for the instruction table.
EXPANSIONS = {
    "LOAD_GLOBAL": "with the NULL bit: PUSH_NULL; LOAD_GLOBAL",
    "LOAD_ATTR": "3.12 with the method bit: LOAD_METHOD",
    "LOAD_SUPER_ATTR": "LOAD_SUPER_ATTR or LOAD_SUPER_METHOD (method bit)",
    "RETURN_CONST": "LOAD_CONST; RETURN_VALUE",
    "BINARY_SLICE": "BUILD_SLICE 2; BINARY_SUBSCR",
    "STORE_SLICE": "BUILD_SLICE 2; STORE_SUBSCR",
    "CALL_INTRINSIC_1": "LIST_TO_TUPLE, UNARY_POSITIVE or STOPITERATION_ERROR (others unsupported)",
    "KW_NAMES": "3.11: argval read from co_consts",
    "FOR_ITER": "3.12: exit target moved past END_FOR (3.13: and past its POP_TOP)",
    "LOAD_FAST_LOAD_FAST": "3.13: LOAD_FAST; LOAD_FAST",
    "STORE_FAST_STORE_FAST": "3.13: STORE_FAST; STORE_FAST",
    "STORE_FAST_LOAD_FAST": "3.13: STORE_FAST; LOAD_FAST",
    "LOAD_FAST": "3.13, of a cell variable: LOAD_CLOSURE",
    "FORMAT_SIMPLE": "3.13: FORMAT_VALUE 0",
    "FORMAT_WITH_SPEC": "3.13: FORMAT_VALUE 4 (a spec on the stack)",
}
# Reached only through the exception table and never while tracing (none left: the exception
# paths of try/except, `with` and a generator's throw() have handlers: handlers_flow.py).
EXCEPTION_PATH: set[str] = set()


def expansion_start(instructions: list[Instruction], index: int) -> int:
    """The index of the first part of the expansion ``instructions[index]`` belongs to.

    A graph break resumes the *original* bytecode at an original offset, so it may only happen
    where the symbolic stack is laid out as the original instruction expects: before its first
    part. Breaking before the ``BINARY_SUBSCR`` of a 3.12 ``BINARY_SLICE`` would hand the
    resume function ``(x, slice(None, 2))`` for an instruction that pops ``x, None, 2``; before
    the ``LOAD_GLOBAL`` of ``PUSH_NULL; LOAD_GLOBAL`` the original instruction would push a
    second NULL."""
    while index > 0 and instructions[index - 1].offset == instructions[index].offset:
        index -= 1
    return index


def offset_to_index(instructions: list[Instruction]) -> dict[int, int]:
    index: dict[int, int] = {}
    for i, inst in enumerate(instructions):
        index.setdefault(inst.offset, i)
    return index


def format_listing(code: types.CodeType) -> str:
    """The original bytecode as dis prints it (the ``bytecode`` artifact)."""
    return f"{code.co_name} ({code.co_filename}:{code.co_firstlineno})\n" + dis.Bytecode(code).dis()


def format_cleaned(code: types.CodeType) -> str:
    """The normalised instructions the interpreter executes (``cleaned_instructions``), one a
    line: the source line where it changes, the original offset (the parts of one expansion
    share it), the name and argument (a jump shows its target's offset), and ``(was X)`` where
    normalising renamed or expanded the instruction ``dis`` prints."""
    lines = [f"{code.co_name} ({code.co_filename}:{code.co_firstlineno}), normalised"]
    previous_line = None
    for inst in cleaned_instructions(code):
        line = "" if inst.lineno == previous_line else inst.lineno
        previous_line = inst.lineno
        lines.append(f"{line!s:>4} {inst!r}")
    return "\n".join(lines)


def dis_link(opname: str, version: tuple[int, int] = RUNNING) -> str:
    """The dis documentation entry of an instruction (default: the running Python's docs)."""
    return DIS_DOCS.format(v="%d.%d" % version, op=opname)
