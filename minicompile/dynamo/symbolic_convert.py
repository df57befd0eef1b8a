"""The symbolic bytecode interpreter (mirrors torch/_dynamo/symbolic_convert.py).

``InstructionTranslator`` runs a frame's bytecode one instruction at a time, on symbolic values:
its stack and locals hold VariableTrackers, not real objects. Tensor operations append nodes to
an FX graph (``OutputGraph``); everything else (constants, shapes, control flow on them, calls
into user functions) is evaluated right away, so loops unroll and branches are resolved. What
cannot be traced raises ``Unsupported``.

One handler per instruction, registered in ``OPCODE_HANDLERS`` by ``@handler("NAME")``; handlers
live in ``handlers_data.py`` (loads, stores, operators, containers) and ``handlers_flow.py``
(jumps, loops, calls, functions, ``with``, return). ``InliningInstructionTranslator`` runs a
called user function's bytecode against the same OutputGraph: one graph for the whole call tree.
"""

from __future__ import annotations

import builtins
import collections
import contextlib
import inspect
import logging
import linecache
import sys
import types
from typing import Callable

import torch

from ..names import Namespace
from .bytecode import PY313, Instruction, cleaned_instructions, expansion_start, indexof
from .bytecode_transformation import parse_exception_table
from .exc import ObservedException, Unsupported, unimplemented
from .output_graph import OutputGraph
from .source import AttrSource, GlobalSource, LocalSource
from .variables.base import NullVariable, VariableTracker
from .variables.constant import ConstantVariable
from .variables.builder import SourcelessBuilder, VariableBuilder
from .variables.functions import ClosureCell, UserMethodVariable
from .variables.misc import GetAttrVariable
from .variables.torch import is_inlined_torch_function
from .variables.generators import (ContextlibDecoratedVariable, LocalGeneratorVariable,
                                   close_dead_generators, exception_type)

Handler = Callable[["InstructionTranslatorBase", Instruction], None]
OPCODE_HANDLERS: dict[str, Handler] = {}

MAX_STEPS = 200_000  # a loop that never ends at trace time (while True on a constant)
MAX_INLINE_DEPTH = 48  # deeper than this is probably recursion
# Python code of these modules is never inlined: logging and I/O must happen for real, in
# program order, and numpy/random compute on data the graph cannot see (a graph break).
NATIVE_MODULES = {"logging", "numpy", "random", "warnings"}
# torch modules whose Python code runs natively, and why
NATIVE_TORCH_MODULES = {
    # a scheduler reads its optimizer's lr, which the graph reads as a tensor input once it has
    # changed (variables/optimizer.py): traced, the scheduler took it for a tensor lr (fill_ it
    # in place, keep tensors in get_last_lr()) and the group's lr stopped changing
    "torch.optim.lr_scheduler": "a learning-rate scheduler runs natively (it reads and writes "
                                "its optimizer's lr, which the graph may read as a tensor)",
}
# Wrappers whose function asks never to be traced (the code object of the wrapper -> its
# name): ``torch._disable_dynamo`` wraps ``Optimizer.zero_grad`` and others, and real Dynamo's
# trace_rules skip them. The call runs natively: a graph break.
NEVER_TRACED_WRAPPERS = {torch._disable_dynamo(lambda: None).__code__: "torch._disable_dynamo"}


def compiles_as_callee(fn: Any) -> bool:
    """A function whose frame is compiled as its own when compiled code calls it natively (after
    a graph break, or from a frame that runs eagerly): user code, and torch's Python code that
    is traced like the user's (torch.optim: an optimizer's ``step`` runs natively after the
    break its ``_use_grad`` wrapper asks for, and its own frame is compiled, under no_grad);
    not the modules that always run natively, the rest of torch, or a wrapper that asks never
    to be traced."""
    module = (getattr(fn, "__module__", None) or "").split(".")[0]
    return isinstance(fn, types.FunctionType) and fn.__code__ not in NEVER_TRACED_WRAPPERS \
        and (module not in NATIVE_MODULES | {"torch"} or is_inlined_torch_function(fn))


# Pure functions called for real at trace time on constant arguments (their result does not
# depend on when they run), each with the keyword arguments that tie the result to the traced
# frame: logging's lookups (only the logging call itself breaks the graph) and
# ``collections.namedtuple`` (the class it makes belongs to the traced function's module, not
# to the interpreter's, which is the frame it would find by itself).
TRACE_TIME_CALLS: dict[Callable, Callable[["InstructionTranslatorBase"], dict]] = {
    logging.getLogger: lambda tx: {},
    collections.namedtuple: lambda tx: {"module": tx.f_globals.get("__name__")},
}

# module name -> the global through which another module's globals are read (``__import_m``):
# one each, so ``my-mod`` and ``my_mod`` never share one
_MODULE_ALIASES = Namespace()


def _signature(tx, fn, *args, **kwargs) -> VariableTracker:
    """``inspect.signature(f)`` of a function the trace knows (its real code object): computed
    now, not traced through inspect's machinery; a bound method's drops ``self``, as
    CPython's does. The Signature is immutable, so it is a value like any constant."""
    if isinstance(fn, GetAttrVariable) and fn.obj.is_python_constant():  # Class.method
        real = getattr(fn.obj.as_python_constant(), fn.name)
    else:
        real = getattr(fn, "fn", None) or (fn.as_python_constant() if fn.is_python_constant()
                                           else None)
    if not callable(real) or args or kwargs:
        unimplemented(f"inspect.signature of {fn}")
    signature = inspect.signature(real, follow_wrapped=False)
    if isinstance(fn, UserMethodVariable):
        signature = signature.replace(parameters=list(signature.parameters.values())[1:])
    return ConstantVariable(signature)


# Python functions answered by a handler instead of being inlined: what they compute is known
# from values the trace already has.
HANDLED_CALLS: dict[Callable, Callable[..., VariableTracker]] = {
    inspect.signature: _signature,
    contextlib.contextmanager: lambda tx, fn: ContextlibDecoratedVariable(fn),  # generators.py
}


def handler(*opnames: str, supported: bool = True) -> Callable[[Handler], Handler]:
    """Register ``fn(tx, inst)`` as the handler of these (normalised) instructions.

    ``supported=False`` marks a handler that only explains why the instruction can't be traced
    (it raises Unsupported); a later stage may register a real handler over it."""

    def register(fn: Handler) -> Handler:
        fn.supported = supported
        for op in opnames:
            OPCODE_HANDLERS[op] = fn
        return fn

    return register


class InstructionTranslatorBase:
    def __init__(self, code: types.CodeType, f_globals: dict,
                 symbolic_locals: dict[str, VariableTracker], cells: dict[str, ClosureCell],
                 output: OutputGraph, parent: InstructionTranslatorBase | None = None):
        self.code, self.f_globals, self.output, self.parent = code, f_globals, output, parent
        self.instructions = cleaned_instructions(code)
        self.indexof = indexof(self.instructions)  # jump target -> its index
        self.exception_table = parse_exception_table(code.co_exceptiontable)
        self.first_index: dict[int, int] = {}  # an original offset -> its first instruction
        for i, inst in enumerate(self.instructions):
            self.first_index.setdefault(inst.offset, i)
        self.exc_info: list[VariableTracker] = []  # the exceptions being handled, innermost last
        self.symbolic_locals = symbolic_locals
        self.cells = cells  # cell and free variables by name (LOAD_DEREF / STORE_DEREF)
        self.stack: list[VariableTracker] = []
        self.in_flight: list[VariableTracker] = []  # the values the running handler holds
        self.handed: list[VariableTracker] = []  # and those it got while running (see step)
        self.index = 0  # index of the next instruction
        self.current_instruction: Instruction | None = None
        self.kw_names: tuple[str, ...] | None = None  # set by KW_NAMES for the next CALL
        self.block_stack: list[VariableTracker] = []  # active `with` contexts (grad mode)
        self.return_value: VariableTracker | None = None
        self.done = False
        self.suspended = False  # a generator's frame paused at a yield
        self.depth = 0 if parent is None else parent.depth + 1
        self.break_index: int | None = None  # root frame: stop here and graph-break
        self.break_error: Unsupported | None = None
        self.stopped_at_break = False  # run() stopped at break_index: convert_frame writes it

    # -- the stack --------------------------------------------------------------------------
    def push(self, vt: VariableTracker) -> None:
        assert isinstance(vt, VariableTracker), vt
        self.stack.append(vt)

    def push_callable(self, fn: VariableTracker) -> None:
        """Push ``fn`` with the NULL that CALL expects where the running CPython puts it: below
        the callable up to 3.12, above it on 3.13 (the stack must match the real one)."""
        if PY313:
            self.stack += [fn, NullVariable()]
        else:
            self.stack += [NullVariable(), fn]

    def pop(self) -> VariableTracker:
        return self.stack.pop()

    def popn(self, n: int) -> list[VariableTracker]:
        if n == 0:
            return []
        items = self.stack[-n:]
        del self.stack[-n:]
        return items

    # -- running ------------------------------------------------------------------------------
    def step(self) -> None:
        inst = self.instructions[self.index]
        self.index += 1
        self.current_instruction = inst
        fn = OPCODE_HANDLERS.get(inst.opname)
        if fn is None:
            unimplemented(f"instruction {inst.opname} is not supported")
        # what the handler pops stays alive until it returns, as CPython holds a call's
        # arguments until the call returns; what it gets while running (an inlined call's
        # result, an iterator's item) it holds for some time before it returns, which
        # generators.close_dead_generators cannot know
        self.in_flight, self.handed = self.stack[:], []
        try:
            fn(self, inst)
        except ObservedException as e:
            if not self.handle_exception(e, inst):
                raise
        except Unsupported:
            raise
        except Exception as e:  # a bug in a handler or tracker: never a crash or a wrong result,
            # the frame runs eagerly and the reason says what went wrong. Not a graph break: the
            # handler may have stopped half-way (a tracker changed, a node appended), and the
            # graph before the instruction would be compiled from that state
            error = Unsupported(f"internal error in {inst.opname}: {type(e).__name__}: {e}")
            error.whole_frame, error.whole_frame_kind = "an internal error", "internal_error"
            raise error from e
        self.in_flight, self.handed = [], []
        if self.output.local_generators:
            close_dead_generators(self)

    def run(self) -> None:
        prev, self.output.current_tx = self.output.current_tx, self
        self.output.running.append(self)
        try:
            for _ in range(MAX_STEPS):
                if self.done or self.suspended:
                    return
                if self.index >= len(self.instructions):
                    unimplemented("ran past the last instruction")
                if self.parent is None and self.index == self.break_index:  # graph_break.py
                    self.stopped_at_break = True
                    return
                self.step()
            unimplemented(f"more than {MAX_STEPS} instructions: a loop that does not end?")
        except Unsupported as e:
            if e.user_line is None:
                e.user_line = self.user_line()
            if isinstance(e, ObservedException) and self.parent is not None:
                # raised out of this frame: its traceback keeps its locals alive (not its stack)
                self.output.held_by_tracebacks += [*self.symbolic_locals.values(),
                                                   *self.cells.values()]
            if self.parent is not None:  # the root frame will break at its CALL instead
                e.inlined = True
            elif not hasattr(e, "root_index"):  # where the root frame can break (restart):
                e.root_index = expansion_start(self.instructions, self.index - 1)  # bytecode.py
            raise
        finally:
            self.output.current_tx = prev
            self.output.running.pop()

    def handle_exception(self, e: ObservedException, inst: Instruction) -> bool:
        """Where the exception table sends an exception raised at ``inst``: the stack cut to
        the entry's depth, the offset pushed where the entry asks for it (``lasti``), then the
        exception, and on at the handler. False when no entry covers ``inst``."""
        for start, end, target, depth, lasti in self.exception_table:
            if start <= inst.offset < end:
                del self.stack[depth:]
                if lasti:
                    self.push(ConstantVariable(inst.offset))
                value = e.value
                if not isinstance(value, VariableTracker):  # an operation raised it just now
                    value = SourcelessBuilder.wrap(self, value)
                    value.chain_context(self, self.handled_exception())
                self.push(value)
                self.index = self.first_index[target]
                return True
        return False

    def handled_exception(self) -> VariableTracker | None:
        """The exception being handled here or, if none, in a caller (CPython's
        ``_PyErr_GetTopmostException``): the ``__context__`` of one raised now."""
        tx = self
        while tx is not None:
            if tx.exc_info:
                return tx.exc_info[-1]
            tx = tx.parent
        return None

    def jump(self, inst: Instruction) -> None:
        self.index = self.indexof[inst.target]

    def user_line(self) -> str:
        inst = self.current_instruction
        lineno = inst.lineno if inst else self.code.co_firstlineno
        text = linecache.getline(self.code.co_filename, lineno).strip() if lineno else ""
        return f"{self.code.co_filename}:{lineno} in {self.code.co_name}: {text}"

    # -- names ----------------------------------------------------------------------------------
    def load_global(self, name: str) -> VariableTracker:
        stored = self.output.side_effects.load_global(self.f_globals, name)
        if stored is not None:  # assigned earlier in this trace (STORE_GLOBAL)
            return stored
        if name in self.f_globals:
            return VariableBuilder(self, self.global_source(name)).wrap(self.f_globals[name])
        if hasattr(builtins, name):
            return VariableBuilder(self, None).wrap(getattr(builtins, name))
        unimplemented(f"name {name!r} is not defined")

    def global_source(self, name: str):
        """``G['w']`` in the root frame's module; through an installed module reference in
        another module (a helper imported from elsewhere reads its own globals)."""
        root_globals = self.output.root_tx.f_globals
        if self.f_globals is root_globals:
            return GlobalSource(name)
        module = sys.modules.get(self.f_globals.get("__name__", ""))
        if module is None or module.__dict__ is not self.f_globals:
            return None
        hint = "__import_" + module.__name__.replace(".", "_dot_")
        alias = _MODULE_ALIASES(module.__name__, hint)
        root_globals[alias] = module
        return AttrSource(GlobalSource(alias), name)

    def zero_arg_super(self) -> tuple[type, VariableTracker]:
        """``super()`` with no arguments: the ``__class__`` cell and the first argument."""
        if "__class__" not in self.cells or not self.code.co_argcount:
            unimplemented("super() outside a method")
        cls = self.cells["__class__"].get(self, "__class__").as_python_constant()
        return cls, self.symbolic_locals[self.code.co_varnames[0]]

    def inline_user_function_return(self, fn: VariableTracker, args: list[VariableTracker],
                                    kwargs: dict[str, VariableTracker]) -> VariableTracker:
        return InliningInstructionTranslator.inline_call(self, fn, args, kwargs)


class InstructionTranslator(InstructionTranslatorBase):
    """The root frame: its arguments come from the caller (``L``) and become graph inputs."""

    def __init__(self, code: types.CodeType, f_globals: dict, f_locals: dict, closure: tuple,
                 output: OutputGraph):
        super().__init__(code, f_globals, {}, {}, output)
        output.root_tx = output.current_tx = self
        self.current_instruction = self.instructions[0]
        for name, cell in zip(code.co_freevars, closure or ()):
            self.cells[name] = ClosureCell(real=cell, source=LocalSource(name))
        for name in code.co_varnames[:arg_count(code)]:
            self.symbolic_locals[name] = VariableBuilder(self, LocalSource(name)).wrap(f_locals[name])


def arg_count(code: types.CodeType) -> int:
    """Positional + keyword-only + *args + **kwargs parameters, the first co_varnames."""
    n = code.co_argcount + code.co_kwonlyargcount
    return n + bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)


class InliningInstructionTranslator(InstructionTranslatorBase):
    """A called user function, traced into the caller's graph."""

    @classmethod
    def inline_call(cls, parent: InstructionTranslatorBase, fn, args, kwargs) -> VariableTracker:
        if parent.depth >= MAX_INLINE_DEPTH:
            unimplemented(f"inlining deeper than {MAX_INLINE_DEPTH} calls (recursion?)")
        code = fn.get_code()
        module = fn.get_globals().get("__name__", "").split(".")[0]
        if getattr(fn, "fn", None) in TRACE_TIME_CALLS and all(
                a.is_python_constant() for a in [*args, *kwargs.values()]):
            frame_kwargs = TRACE_TIME_CALLS[fn.fn](parent)
            return SourcelessBuilder.wrap(parent, fn.fn(*[a.as_python_constant() for a in args],
                                                        **{**frame_kwargs,
                                                           **{k: v.as_python_constant()
                                                              for k, v in kwargs.items()}}))
        if getattr(fn, "fn", None) in HANDLED_CALLS:
            return HANDLED_CALLS[fn.fn](parent, *args, **kwargs)
        if code in NEVER_TRACED_WRAPPERS:
            wrapped = getattr(getattr(fn, "fn", None), "__wrapped__", None)
            unimplemented(f"{getattr(wrapped, '__qualname__', code.co_name)} is wrapped in "
                          f"{NEVER_TRACED_WRAPPERS[code]}: it asks never to be traced")
        if module in NATIVE_MODULES:  # like Dynamo's trace_rules: run these natively
            unimplemented(f"call to {code.co_name} from the {module!r} module (not traced)")
        native = NATIVE_TORCH_MODULES.get(fn.get_globals().get("__name__", ""))
        if native:
            unimplemented(f"call to {code.co_name}: {native}")
        bound = fn.bind_args(parent, args, kwargs)
        # inspect renames the 3.11 comprehension argument ".0" to "implicit0"
        symbolic_locals = {name: bound["implicit" + name[1:] if name.startswith(".") else name]
                           for name in code.co_varnames[:arg_count(code)]}
        tx = cls(code, fn.get_globals(), symbolic_locals, fn.closure_cells(parent),
                 parent.output, parent)
        if code.co_flags & inspect.CO_GENERATOR:  # runs when its items are asked for
            gen = LocalGeneratorVariable(tx)
            parent.output.local_generators.append(gen)
            parent.handed.append(gen)  # held by the handler that called it, for a while
            return gen
        tx.run()
        parent.handed.append(tx.return_value)
        return tx.return_value

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.generated_items: list[VariableTracker] = []  # YIELD_VALUE of an inlined generator

    def resume(self) -> None:
        """A generator's frame, on to its next ``yield`` (or its end)."""
        self.suspended = False
        try:
            self.run()
        except ObservedException as e:  # raised out of the generator: it is finished
            self.done = True
            if issubclass(exception_type(e), StopIteration):  # PEP 479: not a silent end
                raise ObservedException(RuntimeError("generator raised StopIteration")) from e
            raise
