"""Graph breaks: compile what was traced, run the instruction natively, resume in a new frame
(the graph-break parts of torch/_dynamo/symbolic_convert.py -- ``break_graph_if_unsupported``,
``create_call_resume_at``, ``generic_jump`` -- and of output_graph.py's ``compile_subgraph``).

How a break happens (Dynamo's "restart analysis"): the root frame is traced; when an instruction
of the *root* frame raises ``Unsupported`` (directly, or from inside a user function it was
inlining), convert_frame records that instruction's index and traces the frame again from the
start. This time the interpreter stops right before that instruction, and convert_frame calls
:func:`break_at`, which writes::

    def __transformed_code_3_f(x, y):
        graph_out_0 = __compiled_fn_4(x)             # graph 1: everything traced so far
        __break = print(graph_out_0[0])              # the instruction, natively (Python source)
        return __resume_at_40_1(__break, y)          # stack after it, then the live locals

``__resume_at_40_1`` (resume_execution.py) continues the original bytecode at offset 40; it is
wrapped by ``optimize`` so it is traced and compiled lazily, with its own guards and cache, and
may break again. A data-dependent ``if`` becomes ``if <cond>: return __resume_at_A(...)``
followed by ``return __resume_at_B(...)``, one resume function per branch, compiled only when
taken. A ``with torch.no_grad()`` active at the break: the native instruction runs inside the
same ``with``, and the resume function enters it again in its prologue (a CONTEXT stack slot).
Mutations traced before the break (side_effects.py) are replayed before the native instruction.

A break *inside a loop* (a jump after it goes back before it: Dynamo's ``maybe_has_backedge``)
does not resume: like real Dynamo, the frame runs eagerly with no graph (:func:`skip_frame`),
while the user functions it calls are still compiled as their own frames.

The transformed function is written per opcode family (:data:`BREAK_WRITERS`: a call, a
conditional jump, any other instruction), then one epilogue adds the graph, the replayed side
effects and the record of the break. Inside a ``try`` the native instruction is wrapped in the
same handler (:meth:`BreakWriter.guarded`). Whether a break can resume at all (inside a loop)
is resume_execution.py's question; a function called natively or resumed goes through the frame
cache (``FrameCache.compiled_callee``), so its own frame is compiled with its own cache entries.
"""

from __future__ import annotations

import inspect
import types
from typing import Any, Callable

import torch

from .. import _logging
from ..metrics import metrics
from ..names import attr, comment
from .bytecode import PY313, Instruction
from .bytecode_analysis import writes_globals
from .bytecode_transformation import instructions_from_code
from .exc import Unsupported, unimplemented
from .graph_break_hints import GraphBreak, classify_call
from .output_graph import FrameResult, transformed_name
from .resume_execution import (CLOSURE_ARG, CONTEXT, ITERATOR, NULL, VALUE,
                               ContinueExecutionCache, ResumeSpec, in_handler, in_loop,
                               live_locals, resume_blocker, resume_function, try_block_handler)
from .side_effects import reads_state
from .symbolic_convert import compiles_as_callee
from .variables.base import NullVariable, callable_and_args
from .variables.functions import UserFunctionVariable, UserMethodVariable
from .variables.generators import check_paused_generators, reachable
from .variables.lists import ListIteratorVariable
from .variables.misc import GradModeVariable
from .variables.misc import WithExitFunctionVariable
from .variables.nn_module import NNModuleVariable, _has_hooks
from .variables.tensor import TensorVariable

JUMPS = {"POP_JUMP_IF_FALSE": False, "POP_JUMP_IF_TRUE": True}  # jump when the value is ...


def _callable_value(vt) -> Any:
    """The real object a callable tracker stands for (to classify the break), if known."""
    for attr in ("fn", "value"):
        if hasattr(vt, attr):
            return getattr(vt, attr)
    method = getattr(torch.Tensor, getattr(vt, "name", ""), None)
    if method in TENSOR_METHOD_KINDS and hasattr(vt, "obj"):  # x.item, x.numpy
        return method
    return None


# Tensor methods whose call is a break of their own kind (the unbound method is all we know)
TENSOR_METHOD_KINDS = {torch.Tensor.item: "tensor_to_python", torch.Tensor.tolist:
                       "tensor_to_python", torch.Tensor.numpy: "numpy"}


def _break_kind(fn_value: Any) -> str:
    if fn_value in TENSOR_METHOD_KINDS:
        return TENSOR_METHOD_KINDS[fn_value]
    if fn_value is not None:
        return classify_call(fn_value)
    return "unsupported_construct"




class BreakWriter:
    """Collects the transformed function's lines for one graph break."""

    def __init__(self, tx, inst: Instruction, handler: tuple[int, int] | None = None):
        self.tx, self.inst, self.output = tx, inst, tx.output
        self.codegen = tx.output.codegen()
        self.temps: list[str] = []  # values read before the replay and the native instruction
        self.grad_mode_after = ambient_grad_mode(tx)
        self.handler = handler  # the enclosing try's (handler offset, stack depth), if any

    def value(self, vt, after_native: bool = False) -> str:
        """``vt``'s expression; one that reads outside state is copied into a temporary
        first when something that may change that state runs before the line that uses it:
        mutations replayed, or (``after_native``: an argument of the resume call) the native
        instruction itself, which may mutate what the value was read from (``first =
        list(p)`` live across ``p.sort(key=...)``: eager copied ``p``'s items before the
        sort). Real Dynamo reconstructs the stack and the live locals before the instruction
        for the same reason."""
        expr = self.codegen(vt)
        if (after_native or self.output.side_effects) and reads_state(vt):
            name = f"__break_value_{len(self.temps)}"
            self.temps.append(f"{name} = {expr}")
            return name
        return expr

    @property
    def torch(self) -> str:
        """How the transformed code names the torch module (the user's ``torch`` if any)."""
        if self.tx.f_globals.get("torch") is torch:
            return "torch"
        return self.codegen.install_global("torch", torch)

    def stack_args(self, stack: list) -> tuple[tuple[str, ...], list[str]]:
        kinds, exprs = [], []
        for vt in stack:
            if isinstance(vt, NullVariable):
                kinds.append(NULL)
            elif isinstance(vt, WithExitFunctionVariable):
                kinds.append(CONTEXT)  # a fresh context manager; the prologue enters it
                exprs.append(vt.ctx.fresh(self))
            elif isinstance(vt, ListIteratorVariable):  # a tuple the prologue calls iter() on
                kinds.append(ITERATOR)
                exprs.append(vt.remaining(self.codegen))
            else:
                kinds.append(VALUE)
                exprs.append(self.value(vt, after_native=True))
        return tuple(kinds), exprs

    def resume_call(self, offset: int, kinds: tuple[str, ...], stack_exprs: list[str]) -> str:
        """``__resume_at_<offset>_<n>(stack..., live locals...)`` for continuing at ``offset``."""
        tx = self.tx
        original, offset = ContinueExecutionCache.original(tx.code, offset)
        names = tuple(n for n in live_locals(original, offset) if n in tx.symbolic_locals)
        spec = ResumeSpec(original, offset, kinds, names)
        code = ContinueExecutionCache.lookup(spec)
        fn = self.output.root_fn
        args = stack_exprs + [self.value(tx.symbolic_locals[n], after_native=True)
                              for n in names]
        if tx.code.co_cellvars or tx.code.co_freevars:
            # the frame's cells, made anew (no closure over them is live), and the closure
            # this call of the frame was made with (the same code serves every closure)
            self.output.installed[code.co_name] = self.output.frame_cache.resume_with_cells(
                code, fn, self.output.backend)
            cells = "".join(f"{self.new_cell(tx.cells[n])}, " for n in tx.code.co_cellvars)
            args[:0] = [f"({cells})", CLOSURE_ARG if tx.code.co_freevars else "None"]
        else:  # (a frame traced unspecialized passes its modules on to its resume function)
            same = tuple(n for n in names if n in self.output.unspecialized)
            self.output.installed[code.co_name] = self.compiled(
                resume_function(code, fn), (code, id(fn.__closure__), same), same)
        return f"{code.co_name}({', '.join(args)})"

    def new_cell(self, cell) -> str:
        """A cell holding what the trace left in ``cell`` (empty where nothing was stored)."""
        make = self.codegen.install_global("CellType", types.CellType)
        return f"{make}()" if cell.value is None else \
            f"{make}({self.value(cell.value, after_native=True)})"

    def guarded(self, lines: list[str]) -> list[str]:
        """``lines`` (the native instruction) inside the ``try`` the break is in, if any: its
        exception goes to the handler as CPython's unwinding would send it, the stack cut to
        the entry's depth and the exception pushed, in a resume function that starts at the
        handler (resume_execution.try_block_handler)."""
        if self.handler is None:
            return lines
        target, depth = self.handler
        kinds, exprs = self.stack_args(self.tx.stack[:depth])
        resume = self.resume_call(target, kinds + (VALUE,), exprs + ["__break_exc"])
        return ["try:", *(f"    {line}" for line in lines),
                "except BaseException as __break_exc:", f"    return {resume}"]

    def compiled(self, fn: types.FunctionType, key: Any = None,
                 unspecialized: tuple[str, ...] = ()) -> Callable:
        """``fn`` wrapped by ``optimize`` through the frame cache (one wrapper per function)."""
        return self.output.frame_cache.compiled_callee(fn, self.output.backend, key,
                                                       unspecialized)

    def graph_lines(self) -> list:
        """Compile the graph so far (its outputs: every tensor the code above needs)."""
        out = self.output
        for region in reversed(out.active_autocasts):  # the resume function enters them again
            out.create_proxy("call_function", torch.amp._exit_autocast, (region.node,), {})
        if self.grad_mode_after != torch.is_grad_enabled():  # the mode outside open `with`s
            out.create_proxy("call_function", torch._C._set_grad_enabled,
                             (self.grad_mode_after,), {})
        out.graph.output(tuple(vt.proxy.node for vt in self.codegen.graph_outputs))
        out.dead_code_elimination()
        if not self.codegen.graph_outputs and not out.traced_calls():
            if self.grad_mode_after == out.initial_grad_mode:
                return [], []  # nothing, or only grad-mode switches that end where they began
            return [out.grad_mode_line(self.codegen, self.grad_mode_after)], []
        # (a graph whose outputs are only parameters still runs: the code below reads them)
        graph = out.compile_graph()
        return self.codegen.graph_call(graph.name, [gi.source for gi in out.graph_inputs]), [graph]


def ambient_grad_mode(tx) -> bool:
    """The grad mode the code after the break runs under, outside the ``with`` blocks still
    open (the resume function enters those again, and they restore this mode on exit): the mode
    the outermost open grad-mode block found, else the current one, which a call such as
    ``torch.set_grad_enabled(False)`` may have changed for the rest of the frame."""
    blocks = [ctx for ctx in tx.block_stack if isinstance(ctx, GradModeVariable)]
    if not blocks:
        return torch.is_grad_enabled()
    if blocks[-1].target != torch.is_grad_enabled():  # entering it again would not restore it
        unimplemented("grad mode switched by a call inside a `with` grad-mode block that is "
                      "open at the graph break")
    return blocks[0].prev


def _next_offset(tx, index: int) -> int:
    """Original offset of the first instruction after the one at ``index`` (3.12 expansions
    share an offset, so skip those)."""
    here = tx.instructions[index].offset
    for inst in tx.instructions[index + 1:]:
        if inst.offset != here:
            return inst.offset
    unimplemented("graph break at the last instruction")


def write_call(w: BreakWriter, tx, index: int, error: Unsupported) -> tuple[list, str, str]:
    """CALL / CALL_FUNCTION_EX: call natively, then resume after it with the result on the
    stack; under the grad mode in force at the break (inside ``with torch.no_grad():`` ...)."""
    inst = tx.instructions[index]
    if inst.opname in ("CALL", "CALL_KW"):
        stack, kw_names = tx.stack, tx.kw_names or ()
        if inst.opname == "CALL_KW":  # 3.13: the keyword names are on top
            stack, kw_names = stack[:-1], tuple(stack[-1].as_python_constant())
        n = inst.arg + 2
        below, call = stack[:-n], stack[-n:]
        kinds, stack_exprs = w.stack_args(below)
        fn_vt, args = callable_and_args(call[0], call[1], call[2:])
        call_args = [w.value(a) for a in args[:len(args) - len(kw_names)]] + [
            f"{k}={w.value(a)}" for k, a in zip(kw_names, args[len(args) - len(kw_names):])]
    else:  # f(*args) / f(*args, **kwargs): [NULL,] f, args[, kwargs] (3.13: f, NULL, args...)
        n = 3 if inst.arg & 1 else 2
        below, (fn_vt, *star) = tx.stack[:-n], tx.stack[-n:]
        if isinstance(fn_vt, NullVariable):
            below, fn_vt = below[:-1], below[-1]
        elif below and isinstance(below[-1], NullVariable):
            below = below[:-1]
        kinds, stack_exprs = w.stack_args(below)
        call_args = [f"*{w.value(star[0])}"] + [f"**{w.value(kw)}" for kw in star[1:]]
    fn_value = _callable_value(fn_vt)
    call_src = f"{_native_callable(fn_vt, fn_value, w)}({', '.join(call_args)})"
    resume = w.resume_call(_next_offset(tx, index), kinds + (VALUE,),
                           stack_exprs + ["__break_result"])
    native = [f"__break_result = {call_src}"]
    grad_now = torch.is_grad_enabled()
    if grad_now != w.grad_mode_after:  # the graph left the mode of the open `with` blocks
        ctx = "enable_grad" if grad_now else "no_grad"
        native = [f"with {w.torch}.{ctx}():", f"    {native[0]}"]
    body = w.guarded(native) + [f"return {resume}"]
    kind = "inlined_call" if getattr(error, "inlined", False) else _break_kind(fn_value)
    return body, kind, f"{error.reason} (call to {_callee_name(fn_vt, fn_value, call_src)})"


def _callee_name(fn_vt, fn_value: Any, call_src: str) -> str:
    """The callee as the user's code names it (``optimizer.step``), a module by its class
    (``Block.forward``), else by its qualified name (``TensorBase.item``), never by the name
    the transformed code calls it by (``__compiled_forward_0.__get__(...)``)."""
    if isinstance(fn_vt, NNModuleVariable):  # its source reads self._modules['block']
        return f"{type(fn_vt.value).__name__}.forward"
    qualname = getattr(fn_value, "__qualname__", None)
    source = getattr(fn_vt, "source", None)
    if source is None:
        return qualname or call_src.split("(")[0]
    expr = source.expr()  # what a wrapper calls ``func`` is named after it too
    known = qualname is None or qualname.split(".")[-1] == expr.split(".")[-1]
    return expr if known else f"{expr}, {qualname}"


def write_jump(w: BreakWriter, tx, index: int, error: Unsupported) -> tuple[list, str, str]:
    """A data-dependent branch: one resume function per side, each compiled when taken."""
    inst = tx.instructions[index]
    kinds, stack_exprs = w.stack_args(tx.stack[:-1])
    cond = w.value(tx.stack[-1])
    target = w.resume_call(inst.target.offset, kinds, stack_exprs)
    fall = w.resume_call(_next_offset(tx, index), kinds, stack_exprs)
    test = cond if JUMPS[inst.opname] else f"not {cond}"
    body = []
    if w.handler is not None:  # bool() of a tensor can raise: inside the try
        body, test = w.guarded([f"__break_cond = {test}"]), "__break_cond"
    return body + [f"if {test}:", f"    return {target}", f"return {fall}"], \
        "data_dependent_branch", error.reason


def write_attribute(w: BreakWriter, tx, index: int, error: Unsupported) -> tuple[list, str, str]:
    """LOAD_ATTR / LOAD_METHOD whose lookup can't be traced (a property whose getter logs):
    the attribute is read natively, and the resume function continues after the instruction
    with it on the stack; a method load leaves it beside a NULL, as a plain call expects."""
    inst = tx.instructions[index]
    *below, obj = tx.stack
    kinds, stack_exprs = w.stack_args(below)
    pushed = ((VALUE, NULL) if PY313 else (NULL, VALUE)) if inst.opname == "LOAD_METHOD" \
        else (VALUE,)
    native = [f"__break_result = {attr(w.value(obj), inst.argval)}"]
    grad_now = torch.is_grad_enabled()
    if grad_now != w.grad_mode_after:  # a getter runs in the mode of the open `with` blocks
        native = [f"with {w.torch}.{'enable_grad' if grad_now else 'no_grad'}():",
                  f"    {native[0]}"]
    resume = w.resume_call(_next_offset(tx, index), kinds + pushed,
                           stack_exprs + ["__break_result"])
    return w.guarded(native) + [f"return {resume}"], "unsupported_construct", \
        f"{error.reason} (reading .{inst.argval}, natively)"


def write_store_attribute(w: BreakWriter, tx, index: int,
                          error: Unsupported) -> tuple[list, str, str]:
    """STORE_ATTR that can't be traced (``hidden_states.requires_grad = True`` on a tensor the
    graph made, an attribute of an object the tracer does not model): the assignment runs
    natively on the graph's output, and the resume function continues after it. (Resumed *at*
    the instruction, as any other, its frame would stop at it again with nothing traced yet,
    and run the rest of the function eagerly.)"""
    inst = tx.instructions[index]
    *below, value, obj = tx.stack  # TOS.name = TOS1
    kinds, stack_exprs = w.stack_args(below)
    native = [f"{attr(w.value(obj), inst.argval)} = {w.value(value)}"]
    resume = w.resume_call(_next_offset(tx, index), kinds, stack_exprs)
    return w.guarded(native) + [f"return {resume}"], "unsupported_construct", \
        f"{error.reason} (assigned natively)"


def write_build_slice(w: BreakWriter, tx, index: int,
                      error: Unsupported) -> tuple[list, str, str]:
    """BUILD_SLICE with a tensor bound (``w[m - t : m + t]``): each tensor's ``.item()`` is read
    natively, as real Dynamo decomposes it (``u = t.item(); w[m - u : m + u]``), and the resume
    function continues after the instruction with the slice of numbers on the stack. (Resumed
    *at* the instruction, its frame would stop there again with nothing traced, and run the
    rest of the function eagerly.) The first part of a 3.12 ``BINARY_SLICE`` / ``STORE_SLICE``
    (bytecode.py's expansions) does the whole original instruction: its subscript too."""
    inst = tx.instructions[index]
    n = inst.argval
    bounds = [f"{w.value(p)}.item()" if isinstance(p, TensorVariable) else w.value(p)
              for p in tx.stack[-n:]]
    index_src = f"slice({', '.join(bounds)})"
    part_of = tx.instructions[index + 1].opname \
        if tx.instructions[index + 1].offset == inst.offset else None
    if part_of == "BINARY_SUBSCR":  # container, start, stop
        below, container = tx.stack[:-n - 1], tx.stack[-n - 1]
        native, pushed = [f"__break_result = {w.value(container)}[{index_src}]"], 1
    elif part_of == "STORE_SUBSCR":  # value, container, start, stop
        below, (value, container) = tx.stack[:-n - 2], tx.stack[-n - 2:-n]
        native, pushed = [f"{w.value(container)}[{index_src}] = {w.value(value)}"], 0
    else:
        below, native, pushed = tx.stack[:-n], [f"__break_result = {index_src}"], 1
    kinds, stack_exprs = w.stack_args(below)
    resume = w.resume_call(_next_offset(tx, index), kinds + (VALUE,) * pushed,
                           stack_exprs + ["__break_result"] * pushed)
    return w.guarded(native) + [f"return {resume}"], "unsupported_construct", \
        f"{error.reason} (a slice bound, read natively)"


def write_instruction(w: BreakWriter, tx, index: int, error: Unsupported) -> tuple[list, str, str]:
    """Any other instruction: the resume function starts *at* it and runs it natively."""
    inst = tx.instructions[index]
    insts = instructions_from_code(tx.code)
    orig = next(i for i in insts if i.offset == inst.offset)
    if resume_blocker(insts, orig) or len(tx.output.graph.nodes) == len(tx.output.graph_inputs):
        raise error  # nothing gained by breaking here: the frame runs eagerly
    kinds, stack_exprs = w.stack_args(tx.stack)
    return [f"return {w.resume_call(inst.offset, kinds, stack_exprs)}"], \
        "unsupported_construct", error.reason


# The transformed function's body at the break, per opcode family (default: write_instruction).
BREAK_WRITERS: dict[str, Callable[..., tuple[list, str, str]]] = {
    "CALL": write_call, "CALL_KW": write_call, "CALL_FUNCTION_EX": write_call,
    "LOAD_ATTR": write_attribute, "LOAD_METHOD": write_attribute,
    "STORE_ATTR": write_store_attribute, "BUILD_SLICE": write_build_slice,
    **{name: write_jump for name in JUMPS},
}


def break_at(tx, index: int, error: Unsupported) -> FrameResult:
    """The interpreter stopped before ``tx.instructions[index]``: the FrameResult of the break."""
    inst = tx.instructions[index]
    original = ContinueExecutionCache.original(tx.code, inst.offset)
    if in_loop(*original):
        return skip_frame(tx, inst, error)
    if getattr(error, "whole_frame", None):  # the graph before the break would be wrong
        return skip_frame(tx, inst, error, getattr(error, "whole_frame_kind",
                                                   "graph_break_after_use"), error.whole_frame)
    if in_handler(*original):
        return skip_frame(tx, inst, error, "graph_break_in_handler",
                          "graph break inside an exception handler")
    entry = try_block_handler(*original)
    if inst.opname == "BEFORE_WITH":  # a `with` we can't enter: its block can't be resumed into
        return skip_frame(tx, inst, error, "graph_break_in_with",
                          "a `with` on a context manager that is not traced")
    exits = [vt for vt in tx.stack if isinstance(vt, WithExitFunctionVariable)]
    if not all(vt.resumable() for vt in exits):  # a `with` the resume function can't enter
        return skip_frame(tx, inst, error, "graph_break_in_with",
                          "a graph break inside a `with` block of a context manager that the "
                          "code after the break cannot enter again (a user class or a "
                          "@contextmanager generator)")
    check_paused_generators(tx.output.local_generators)
    own_cells = [tx.cells[name] for name in tx.code.co_cellvars]
    if _closure_over(own_cells, [*tx.stack, *tx.symbolic_locals.values(),
                                 *tx.output.side_effects.values()]):
        unimplemented("graph break while a function made in the frame still holds the frame's "
                      "variables (a closure over them): the code after the break could not "
                      "share them with it")
    w = BreakWriter(tx, inst, entry and (_handler_offset(tx, inst), entry.depth))
    w.codegen.share_repeated([*tx.stack, *tx.symbolic_locals.values(),
                              *tx.output.side_effects.values(),
                              *(cell.value for cell in own_cells if cell.value is not None)])
    tx.output.side_effects.codegen_hooks(w.codegen, at_break=True)  # first: a local may be a handle
    body, kind, reason = BREAK_WRITERS.get(inst.opname, write_instruction)(w, tx, index, error)
    # Mutations traced so far happen before the native instruction (program order).
    temps, replay = tx.output.side_effects.codegen(w.codegen)
    graph_lines, graphs = w.graph_lines()
    name = transformed_name(tx.code)
    lines = graph_lines + w.codegen.prelude + w.temps + temps + replay + body
    source = (f"def {name}({', '.join(tx.output.arg_names)}):\n"
              + "".join(f"    {line}\n" for line in lines))
    _record(tx, GraphBreak(kind, reason, error.user_line, inst.offset, tx.code.co_name))
    return FrameResult(source, tx.output.define(source, name), tx.output.guards, graphs)


def _closure_over(cells: list, live: list) -> bool:
    """Whether something reachable from ``live`` (or from the cells' own values) holds one of
    the frame's ``cells``: a function made while tracing that closes over it. Without one (a
    comprehension's function is gone once it has run), the code after the break may get new
    cells holding the same values."""
    if not cells:
        return False
    wanted = {id(cell) for cell in cells}
    held = reachable([*live, *(cell.value for cell in cells)], stop_when_seen=wanted)
    return bool(wanted & held)


def _handler_offset(tx, inst: Instruction) -> int:
    """Where the frame's exception table sends an exception raised at ``inst``."""
    return next(target for start, end, target, _, _ in tx.exception_table
                if start <= inst.offset < end)


def _record(tx, gb: GraphBreak) -> None:
    metrics.increment("graph_breaks")
    _logging.trace_artifact("graph_breaks", str(gb), title=f"GRAPH BREAK in {gb.code_name}")
    tx.output.frame_cache.notify("graph_break", gb)


def skip_frame(tx, inst: Instruction, error: Unsupported, kind: str = "graph_break_in_loop",
               why: str = "graph break in a for/while loop") -> FrameResult:
    """A break inside a loop (or at a ``with`` that can't be entered): the frame runs eagerly,
    without a graph (Dynamo's "graph break in loop" frame skip), but the user functions it
    calls are compiled as their own frames (``FrameCache.eager_frame``)."""
    reason = f"{why}: the frame runs eagerly ({error.reason})"
    fn, code = tx.output.root_fn, tx.code
    if writes_globals(code):
        unimplemented(reason)
    eager = tx.output.frame_cache.eager_frame(fn, tx.output.backend)
    name = tx.output.codegen().install_global(f"eager_{code.co_name}", eager)
    n = code.co_argcount + code.co_kwonlyargcount
    params = list(code.co_varnames[:n + bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)])
    args = params[:code.co_argcount] + [f"{p}={p}" for p in params[code.co_argcount:n]]
    if code.co_freevars:  # (the eager copy runs in this call's closure)
        args.insert(0, CLOSURE_ARG)
    if code.co_flags & 0x04:
        args.append(f"*{params[n]}")
    if code.co_flags & 0x08:
        args.append(f"**{params[-1]}")
    transformed = transformed_name(code)
    source = (f"def {transformed}({', '.join(tx.output.arg_names)}):\n"
              f"    # {comment(reason.splitlines()[0][:90])}\n"
              f"    return {name}({', '.join(args)})\n")
    _record(tx, GraphBreak(kind, reason, error.user_line, inst.offset, code.co_name))
    return FrameResult(source, tx.output.define(source, transformed), tx.output.guards, [])


def _native_callable(fn_vt, fn_value: Any, w: BreakWriter) -> str:
    """The callable as the transformed code calls it: a user function goes through ``optimize``
    so its own frame is compiled (with its own breaks), like a function real Dynamo intercepts."""
    def compiled(fn: types.FunctionType) -> str:
        return w.codegen.install_global(f"compiled_{fn.__name__}", w.compiled(fn))

    if type(fn_vt) is UserFunctionVariable and compiles_as_callee(fn_value):
        return compiled(fn_value)
    if isinstance(fn_vt, NNModuleVariable) and not _has_hooks(fn_vt.value) \
            and "forward" not in fn_vt.value.__dict__:  # self.block(x): its forward's frame
        forward = inspect.getattr_static(fn_vt.value, "forward", None)
        if compiles_as_callee(forward):
            return f"{compiled(forward)}.__get__({w.codegen(fn_vt)})"
    if isinstance(fn_vt, UserMethodVariable):
        owner = w.codegen(fn_vt.obj)
        if compiles_as_callee(fn_vt.fn):  # the compiled function, bound to the same object
            return f"{compiled(fn_vt.fn)}.__get__({owner})"
        return attr(owner, fn_vt.fn.__name__)
    if isinstance(fn_value, types.FunctionType):  # logging, numpy...: called as they are
        return w.codegen.install_global(fn_value.__name__, fn_value)
    return w.codegen(fn_vt)
