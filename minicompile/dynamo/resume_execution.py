"""Mini version of torch/_dynamo/resume_execution.py: continue a function from the middle.

At a graph break Dynamo runs the graph captured so far, then the unsupported instruction
natively, then must *continue the original function* right after it, with the same values on
the stack and in the locals. It does so with a **resume function**: a new code object made from
the original bytecode, whose arguments are the stack values and the live locals, and whose
prologue puts them back where the original frame had them before jumping to the resume offset::

    def __resume_at_30_1(___stack0, ___stack1, x, y):   # what the prologue amounts to
        <push NULL>; <push ___stack0>; <push ___stack1>   # the stack at offset 30, rebuilt
        goto 30                                           # then the original bytecode runs

Because the rest of the original bytecode is kept as-is, loops, ``with`` blocks and
``try`` regions around offset 30 keep working: since CPython 3.11 a ``try`` is just an
exception-table entry keyed by offset (no block stack to rebuild), and an active ``with``
leaves its ``__exit__`` on the stack, which we rebuild like any other stack value. A resume
function may also start at a ``try``'s handler, with the exception as its last stack value:
that is how an exception of the native instruction reaches the handler
(:func:`try_block_handler`).

The resume function is an ordinary function: the caller wraps it with ``optimize`` so it is
traced lazily on its first call, with its own guards and cache (and may break again).

A *generator* paused at a ``yield`` when the graph breaks is continued the same way
(generators.py): a resume function of the generator's code, itself a generator, whose prologue
rebuilds the generator frame's stack and then pauses at a ``yield`` of its own -- standing for
the one the original was paused at -- before jumping to the code after it::

    def __resume_at_46_2(___stack0, i):   # a generator
        <push ___stack0 (the for loop's iterator)>
        yield None                        # primed with next(): paused here, as the original was
        goto 46                           # the value sent in is the `yield` expression's value
"""

from __future__ import annotations

import inspect
import itertools
import types
from dataclasses import dataclass
from types import CodeType

from .bytecode import PY313, ExnTabEntry
from .bytecode_analysis import in_exception_handler, live_locals_at, remove_dead_code
from .exc import unimplemented
from .bytecode_transformation import (
    Instruction,
    code_from_instructions,
    create_instruction,
    instructions_from_code,
)

# How the prologue rebuilds one stack slot (the kinds of values a break can leave there).
VALUE = "value"  # an ordinary Python value, passed as an argument
NULL = "null"  # the NULL CPython pushes beside a callable (PUSH_NULL, LOAD_GLOBAL's bit)
CONTEXT = "context"  # an active ``with``: the argument is a context manager, re-entered here
ITERATOR = "iterator"  # a loop in progress: the argument is a tuple of the items still to come
STACK_KINDS = (VALUE, NULL, CONTEXT, ITERATOR)

# The original prologue: ours runs instead (RESUME n>0 would follow a yield: no generators).
PROLOGUE_OPS = {"COPY_FREE_VARS", "MAKE_CELL", "RESUME"}
UNSUPPORTED_FLAGS = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR

_counter = itertools.count(1)


def stack_arg_name(i: int) -> str:
    return f"___stack{i}"


@dataclass(frozen=True)
class ResumeSpec:
    """Everything that determines a resume function (its cache key)."""

    code: CodeType  # the original function's code
    offset: int  # where execution continues (an instruction offset of ``code``)
    stack: tuple[str, ...]  # kind of each stack slot, bottom first
    argnames: tuple[str, ...]  # the live locals passed after the stack values
    # a generator's code, continued as a generator: None for a function; "start" for one not
    # run yet, "yield" for one paused at a yield (``yield_arg``: that YIELD_VALUE's arg)
    generator: str | None = None
    yield_arg: int | None = None

    def stack_argnames(self) -> list[str]:
        return [stack_arg_name(i) for i, kind in enumerate(self.stack) if kind != NULL]


def find_instruction(insts: list[Instruction], offset: int) -> Instruction:
    for inst in insts:
        if inst.offset == offset:
            return inst
    raise ValueError(f"no instruction at offset {offset}")


def resume_blocker(insts: list[Instruction], inst: Instruction) -> str | None:
    """Why execution cannot continue at ``inst`` from a fresh frame (None: it can)."""
    prev = insts[insts.index(inst) - 1] if insts.index(inst) > 0 else None
    if inst.opname in PROLOGUE_OPS:
        return f"{inst.opname} belongs to the function's prologue"
    if prev is not None and prev.opname in ("PRECALL", "KW_NAMES"):
        # KW_NAMES sets a frame register (not the stack) that CALL reads; and PRECALL's stack
        # effect is booked before the CALL runs. Both pairs are one call: break before them.
        return f"{inst.opname} is the second half of a call started by {prev.opname}"
    if inst in in_exception_handler(insts) and not is_handler_start(insts, inst):
        return "it is inside an exception handler (the exception state can't be rebuilt)"
    if inst.opname == "END_FOR":
        return "END_FOR is skipped at run time: an exhausted FOR_ITER jumps past it"
    if PY313 and prev is not None and prev.opname == "END_FOR":
        # 3.13's FOR_ITER jumps past END_FOR *and* this POP_TOP, counting their code units: no
        # instruction may be put before it (CPython would land inside what was put there)
        return "the POP_TOP after END_FOR is skipped at run time: FOR_ITER jumps past both"
    return None


def in_loop(code: CodeType, offset: int) -> bool:
    """Real Dynamo's ``maybe_has_backedge`` heuristic: a jump after ``offset`` (up to the first
    return) that goes back before it means the break is inside a loop. Dynamo then skips the
    frame (it runs eagerly): resuming would need a new resume function per iteration."""
    for inst in instructions_from_code(code):
        if inst.offset is None or inst.offset <= offset:
            continue
        if inst.opname in ("RETURN_VALUE", "RETURN_CONST"):
            return False
        if inst.target is not None and inst.target.offset < offset:
            return True
    return False


def try_block_handler(code: CodeType, offset: int) -> ExnTabEntry | None:
    """The exception-table entry of the ``try`` guarding the instruction at ``offset`` (None:
    no ``try``, or only a ``with`` block's cleanup, whose ``__exit__`` the stack carries).

    A break there resumes like any other, and the handler is re-created around what runs
    outside the original bytecode: the transformed function catches an exception of the native
    instruction and continues in a resume function that starts *at the handler*, with the
    stack cut to the entry's depth and the exception on top, as CPython's unwinding leaves it
    (graph_break.py). The code after the break is the original bytecode with its exception
    table, so the handler covers it already."""
    insts = instructions_from_code(code)
    inst = next((i for i in insts if i.offset == offset), None)
    entry = inst.exn_tab_entry if inst is not None else None
    if entry is None or entry.lasti:  # lasti: a cleanup handler (`with`, an except's body)
        return None
    handler = insts[insts.index(entry.target):][:2]
    return None if any(i.opname == "WITH_EXCEPT_START" for i in handler) else entry


def in_handler(code: CodeType, offset: int) -> bool:
    """The instruction at ``offset`` runs inside an exception handler (past its start): a break
    there can't resume, since the exception being handled is frame state no prologue sets."""
    insts = instructions_from_code(code)
    inst = find_instruction(insts, offset)
    return inst in in_exception_handler(insts) and not is_handler_start(insts, inst)


def is_handler_start(insts: list[Instruction], inst: Instruction) -> bool:
    """``inst`` is where a ``try``'s handler begins: its stack is the entry's values and the
    exception, all of which a prologue can push (PUSH_EXC_INFO then makes it the current one)."""
    return any(i.exn_tab_entry is not None and i.exn_tab_entry.target is inst
               and not i.exn_tab_entry.lasti for i in insts)


def live_locals(code: CodeType, offset: int) -> list[str]:
    """Locals of ``code`` read after ``offset`` before being written: what a resume needs."""
    insts = instructions_from_code(code)
    cells = frozenset(code.co_cellvars + code.co_freevars)  # those travel in the closure
    return live_locals_at(insts, find_instruction(insts, offset), cells)


def restore_stack(stack: tuple[str, ...]) -> list[Instruction]:
    """Instructions that rebuild the stack from the ``___stack<i>`` arguments (bottom first)."""
    out = []
    for i, kind in enumerate(stack):
        if kind == NULL:
            out.append(create_instruction("PUSH_NULL"))
            continue
        out.append(create_instruction("LOAD_FAST", argval=stack_arg_name(i)))
        if kind == CONTEXT:  # enter it again; BEFORE_WITH leaves __exit__ under the result
            out += [create_instruction("BEFORE_WITH"), create_instruction("POP_TOP")]
        elif kind == ITERATOR:  # the tracer sees a tuple with a source (items get guards)
            out.append(create_instruction("GET_ITER"))
    return out


def _prologue(spec: ResumeSpec, target: Instruction) -> list[Instruction]:
    code = spec.code
    out = []
    cells = code.co_cellvars + code.co_freevars
    if cells:  # the closure's cells become this frame's free variables
        out.append(create_instruction("COPY_FREE_VARS", arg=len(cells)))
    if spec.generator:  # calling it makes the generator; the first next() runs on from here
        out += [create_instruction("RETURN_GENERATOR"), create_instruction("POP_TOP")]
    out.append(create_instruction("RESUME", arg=0))
    out += restore_stack(spec.stack)
    if spec.generator == "yield":  # the paused yield: what is sent in is its value
        out += [create_instruction("LOAD_CONST", argval=None),
                create_instruction("YIELD_VALUE", arg=spec.yield_arg),
                create_instruction("RESUME", arg=1)]
    out.append(create_instruction("JUMP_FORWARD", target=target))
    return out


def create_resume(spec: ResumeSpec, name: str) -> CodeType:
    """Build the resume code object described by ``spec`` (see the module docstring)."""
    code = spec.code
    if code.co_flags & UNSUPPORTED_FLAGS & ~(inspect.CO_GENERATOR if spec.generator else 0):
        raise NotImplementedError("resuming coroutines is not supported")
    if any(kind not in STACK_KINDS for kind in spec.stack):
        raise ValueError(f"stack kinds must be in {STACK_KINDS}: {spec.stack}")
    insts = instructions_from_code(code)
    target = find_instruction(insts, spec.offset)
    blocker = resume_blocker(insts, target)
    if blocker:
        raise ValueError(f"cannot resume at {target}: {blocker}")
    body = [inst for inst in insts if inst.opname not in PROLOGUE_OPS]
    insts = remove_dead_code(_prologue(spec, target) + body)
    jump = next(i for i in insts if i.opname == "JUMP_FORWARD" and i.target is target)
    if insts[insts.index(jump) + 1] is target:  # nothing left between prologue and target
        insts.remove(jump)

    original_offsets = {id(inst): inst.offset for inst in body}  # assembling moves them
    args = [*spec.stack_argnames(), *spec.argnames]
    # The original's cell variables become free variables: the resume function gets the *same*
    # cells in its closure, so closures created before the break still share them.
    cells = code.co_cellvars + code.co_freevars
    varnames = tuple(args + [v for v in code.co_varnames if v not in args and v not in cells])
    flags = code.co_flags & ~(inspect.CO_VARARGS | inspect.CO_VARKEYWORDS)
    resume = code_from_instructions(
        insts, code,
        co_name=name, co_qualname=name, co_flags=flags, co_varnames=varnames,
        co_argcount=len(args), co_posonlyargcount=0, co_kwonlyargcount=0,
        co_cellvars=(), co_freevars=cells,
    )
    ContinueExecutionCache.origins[resume] = (code, {
        inst.offset: original_offsets[id(inst)] for inst in insts if id(inst) in original_offsets})
    return resume


# The parameter through which a frame with free variables gets its call's closure: the
# transformed function passes it on to the resume functions and the eager copies it calls.
CLOSURE_ARG = "___closure"


def resume_function(code: CodeType, fn: types.FunctionType,
                    cells: dict[str, types.CellType] | None = None,
                    closure: tuple[types.CellType, ...] | None = None) -> types.FunctionType:
    """The resume ``code`` as a function with ``fn``'s globals; its closure holds the broken
    frame's ``cells`` (one per cell variable of ``fn``) then the closure cells of the call that
    broke (``closure``; ``fn``'s own by default). A function's code is compiled once for every
    closure it is made with (a function defined inside another, a decorator's wrapper): the
    closure must be the call's, not the one of the call that compiled it."""
    own = tuple(cells[name] for name in fn.__code__.co_cellvars) if cells else ()
    closure = fn.__closure__ if closure is None else closure
    return types.FunctionType(code, fn.__globals__, code.co_name, None,
                              own + (closure or ()) or None)


class ContinueExecutionCache:
    """One resume code object per ResumeSpec (mirrors Dynamo's class of the same name).

    Reusing it matters: when the function that broke is recompiled, its resume functions stay
    the same objects, so their own compiled entries (and guards) are reused, not rebuilt.
    """

    cache: dict[ResumeSpec, CodeType] = {}
    # resume code -> (the original code, {offset in the resume code: offset in the original})
    origins: dict[CodeType, tuple[CodeType, dict[int, int]]] = {}

    @classmethod
    def lookup(cls, spec: ResumeSpec) -> CodeType:
        if spec not in cls.cache:
            cls.cache[spec] = create_resume(spec, f"__resume_at_{spec.offset}_{next(_counter)}")
        return cls.cache[spec]

    @classmethod
    def original(cls, code: CodeType, offset: int) -> tuple[CodeType, int]:
        """Where ``offset`` of ``code`` is in the user's original code. A break inside a resume
        function resumes the *original* code (as real Dynamo's
        ``generate_based_on_original_code_object`` does): a data-dependent ``while`` loop then
        reuses one resume function per offset instead of making a new one per iteration."""
        while code in cls.origins:
            code, offsets = cls.origins[code]
            if offset not in offsets:  # the prologue: it re-enters the `with` blocks
                unimplemented("a graph break while a resume function re-enters its `with` "
                              "blocks: it runs eagerly")
            offset = offsets[offset]
        return code, offset

    @classmethod
    def clear(cls) -> None:
        cls.cache.clear()
        cls.origins.clear()
