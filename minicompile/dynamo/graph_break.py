"""Graph breaks: compile what was traced, run the instruction natively, resume in a new frame
(the graph-break parts of torch/_dynamo/symbolic_convert.py -- ``break_graph_if_unsupported``,
``create_call_resume_at``, ``generic_jump`` -- and of output_graph.py's ``compile_subgraph``).

How a break happens (Dynamo's "restart analysis"): the root frame is traced; when an instruction
of the *root* frame raises ``Unsupported`` (directly, or from inside a user function it was
inlining), convert_frame records that instruction's index and traces the frame again from the
start. This time, right before that instruction, :func:`break_at` stops tracing and writes::

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
"""

from __future__ import annotations

import builtins
import inspect
import types
from typing import Any

import torch

from .. import _logging
from ..metrics import metrics
from .bytecode import Instruction
from .codegen import PyCodegen
from .exc import Unsupported, unimplemented
from .graph_break_hints import GraphBreak, classify_call
from .side_effects import reads_state
from .symbolic_convert import NATIVE_MODULES
from .resume_execution import (CONTEXT, ITERATOR, NULL, VALUE, ContinueExecutionCache, ResumeSpec,
                               live_locals, resume_blocker, resume_function)

JUMPS = {"POP_JUMP_IF_FALSE": False, "POP_JUMP_IF_TRUE": True}  # jump when the value is ...


def _wrappers(output) -> dict:
    """The ``optimize`` wrappers of resume functions and natively called user functions of
    this frame cache and backend (``FrameCache.wrappers``)."""
    return output.frame_cache.wrappers.setdefault(output.backend, {})


def reconstruct(vt, codegen: PyCodegen) -> str:
    """A Python expression for ``vt`` in the transformed function (adds the kinds of values
    that only appear on the stack mid-function to what ``VariableTracker.reconstruct`` knows)."""
    from .variables.functions import UserFunctionVariable
    from .variables.lists import ListIteratorVariable
    from .variables.misc import GetAttrVariable, UserDefinedObjectVariable

    if isinstance(vt, ListIteratorVariable):  # an iterator in a local: the items still to come
        return f"iter({iterator_items(vt, codegen)})"
    if isinstance(vt, GetAttrVariable):
        return f"{reconstruct(vt.obj, codegen)}.{vt.name}"
    if isinstance(vt, UserDefinedObjectVariable) and vt.source is None and vt.attrs is None:
        # a logger, ... (an object built while tracing has no real counterpart: not this way)
        return codegen.install_global(type(vt.value).__name__.lower(), vt.value)
    if type(vt) is UserFunctionVariable and vt.source is None:
        return codegen.install_global(vt.fn.__name__, vt.fn)
    if hasattr(vt, "fn") and vt.source is None and not isinstance(vt, UserFunctionVariable):
        name = getattr(vt.fn, "__name__", "")
        if getattr(builtins, name, None) is vt.fn and name not in codegen.f_globals:
            return name  # print, len, ...: readable, and the same object
        return codegen.install_global(getattr(vt.fn, "__name__", "fn"), vt.fn)  # builtins, torch.*
    return codegen(vt)


def iterator_items(vt, codegen: PyCodegen) -> str:
    """The tuple of the items an iterator has still to give (a loop in progress on the stack
    is passed as this tuple: the resume function's prologue calls iter() on it)."""
    rest = [reconstruct(v, codegen) for v in vt.items[vt.index:]]
    return f"({''.join(r + ', ' for r in rest)})"


def _callable_value(vt) -> Any:
    """The real object a callable tracker stands for (to classify the break), if known."""
    for attr in ("fn", "value"):
        if hasattr(vt, attr):
            return getattr(vt, attr)
    if getattr(vt, "name", None) in ("item", "tolist") and hasattr(vt, "obj"):
        return torch.Tensor.item if vt.name == "item" else torch.Tensor.tolist
    return None


def _break_kind(fn_value: Any, reason: str) -> str:
    if fn_value in (torch.Tensor.item, torch.Tensor.tolist):
        return "tensor_to_python"
    if fn_value is not None:
        return classify_call(fn_value)
    return "unsupported_construct"


class BreakWriter:
    """Collects the transformed function's lines for one graph break."""

    def __init__(self, tx, inst: Instruction):
        self.tx, self.inst, self.output = tx, inst, tx.output
        self.codegen = tx.output.codegen()
        self.temps: list[str] = []  # values read before the side effects are replayed

    def value(self, vt) -> str:
        """``vt``'s expression; one that reads outside state is copied into a temporary
        first when mutations will be replayed before the line that uses it."""
        expr = reconstruct(vt, self.codegen)
        if self.output.side_effects and reads_state(vt):
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
        from .variables.base import NullVariable
        from .variables.lists import ListIteratorVariable
        from .variables.misc import WithExitFunctionVariable

        kinds, exprs = [], []
        for vt in stack:
            if isinstance(vt, NullVariable):
                kinds.append(NULL)
            elif isinstance(vt, WithExitFunctionVariable):
                kinds.append(CONTEXT)  # a fresh context manager; the prologue enters it
                exprs.append(vt.ctx.fresh(self))
            elif isinstance(vt, ListIteratorVariable):  # a tuple the prologue calls iter() on
                kinds.append(ITERATOR)
                exprs.append(iterator_items(vt, self.codegen))
            else:
                kinds.append(VALUE)
                exprs.append(self.value(vt))
        return tuple(kinds), exprs

    def resume_call(self, offset: int, kinds: tuple[str, ...], stack_exprs: list[str]) -> str:
        """``__resume_at_<offset>_<n>(stack..., live locals...)`` for continuing at ``offset``."""
        tx = self.tx
        original, offset = ContinueExecutionCache.original(tx.code, offset)
        names = tuple(n for n in live_locals(original, offset) if n in tx.symbolic_locals)
        spec = ResumeSpec(original, offset, kinds, names)
        code = ContinueExecutionCache.lookup(spec)
        fn = self.output.root_fn
        wrappers = _wrappers(self.output)
        key = (code, id(fn.__closure__))
        if key not in wrappers:
            from .eval_frame import optimize

            wrappers[key] = optimize(resume_function(code, fn), self.output.backend,
                                     cache=self.output.frame_cache)
        self.output.installed[code.co_name] = wrappers[key]
        args = stack_exprs + [self.value(tx.symbolic_locals[n]) for n in names]
        return f"{code.co_name}({', '.join(args)})"

    def graph_lines(self) -> list:
        """Compile the graph so far (its outputs: every tensor the code above needs)."""
        out = self.output
        if out.initial_grad_mode != torch.is_grad_enabled():  # leave grad mode as we found it
            out.create_proxy("call_function", torch._C._set_grad_enabled,
                             (out.initial_grad_mode,), {})
        out.graph.output(tuple(vt.proxy.node for vt in self.codegen.graph_outputs))
        out.dead_code_elimination()
        if not any(n.op not in ("placeholder", "output", "get_attr")
                   and n.target is not torch._C._set_grad_enabled for n in out.graph.nodes):
            return [], []  # nothing, or only grad-mode switches that end where they began
        graph = out.compile_graph()
        args = ", ".join(gi.source.expr() for gi in out.graph_inputs)
        return [f"{self.codegen.graph_out_name} = {graph.name}({args})"], [graph]


def _next_offset(tx, index: int) -> int:
    """Original offset of the first instruction after the one at ``index`` (3.12 expansions
    share an offset, so skip those)."""
    here = tx.instructions[index].offset
    for inst in tx.instructions[index + 1:]:
        if inst.offset != here:
            return inst.offset
    unimplemented("graph break at the last instruction")


def break_at(tx, index: int, error: Unsupported):
    """Stop tracing before ``tx.instructions[index]``: return the FrameResult of the break."""
    from .output_graph import FrameResult, transformed_name
    from .variables.base import NullVariable

    inst = tx.instructions[index]
    if in_loop(*ContinueExecutionCache.original(tx.code, inst.offset)):
        return skip_frame(tx, inst, error)
    if in_try_block(*ContinueExecutionCache.original(tx.code, inst.offset)):
        return skip_frame(tx, inst, error, "graph_break_in_try", "graph break inside a try block")
    if inst.opname == "BEFORE_WITH":  # a `with` we can't enter: its block can't be resumed into
        return skip_frame(tx, inst, error, "graph_break_in_with",
                          "a `with` on a context manager that is not traced")
    w = BreakWriter(tx, inst)
    w.codegen.share_repeated([*tx.stack, *tx.symbolic_locals.values(),
                              *tx.output.side_effects.values()])
    # The graph leaves grad mode as it found it; the native instruction runs under the mode
    # in force at the break (inside `with torch.no_grad():` ...).
    grad_now = torch.is_grad_enabled()
    grad_ctx = grad_now != tx.output.initial_grad_mode
    if tx.code.co_cellvars:
        unimplemented("graph break in a function whose locals are captured by closures")
    if inst.opname in ("CALL", "CALL_FUNCTION_EX"):
        if inst.opname == "CALL":
            n = inst.arg + 2
            kw_names = tx.kw_names or ()
            below, call = tx.stack[:-n], tx.stack[-n:]
            kinds, stack_exprs = w.stack_args(below)
            first, second, args = call[0], call[1], call[2:]
            fn_vt, args = (second, args) if isinstance(first, NullVariable) \
                else (first, [second, *args])
            call_args = [w.value(a) for a in args[:len(args) - len(kw_names)]] + [
                f"{k}={w.value(a)}" for k, a in zip(kw_names, args[len(args) - len(kw_names):])]
        else:  # f(*args) / f(*args, **kwargs): [NULL,] f, args[, kwargs]
            n = 3 if inst.arg & 1 else 2
            below, (fn_vt, *star) = tx.stack[:-n], tx.stack[-n:]
            if below and isinstance(below[-1], NullVariable):
                below = below[:-1]
            kinds, stack_exprs = w.stack_args(below)
            call_args = [f"*{w.value(star[0])}"] + [f"**{w.value(kw)}" for kw in star[1:]]
        fn_value = _callable_value(fn_vt)
        fn_expr = _native_callable(fn_vt, fn_value, w)
        call_src = f"{fn_expr}({', '.join(call_args)})"
        resume = w.resume_call(_next_offset(tx, index), kinds + (VALUE,),
                               stack_exprs + ["__break_result"])
        body = [f"__break_result = {call_src}", f"return {resume}"]
        if grad_ctx:
            ctx = "enable_grad" if grad_now else "no_grad"
            body = [f"with {w.torch}.{ctx}():", f"    {body[0]}", body[1]]
        kind = _break_kind(fn_value, error.reason)
        if getattr(error, "inlined", False):
            kind = "inlined_call"
        reason = f"{error.reason} (call to {call_src.split('(')[0]})"
    elif inst.opname in JUMPS:
        kinds, stack_exprs = w.stack_args(tx.stack[:-1])
        cond = w.value(tx.stack[-1])
        target = w.resume_call(tx.instructions[inst.target].offset, kinds, stack_exprs)
        fall = w.resume_call(_next_offset(tx, index), kinds, stack_exprs)
        test = cond if JUMPS[inst.opname] else f"not {cond}"
        body = [f"if {test}:", f"    return {target}", f"return {fall}"]
        kind, reason = "data_dependent_branch", error.reason
    else:
        insts = _original_instructions(tx.code)
        orig = next(i for i in insts if i.offset == inst.offset)
        if resume_blocker(insts, orig) or len(tx.output.graph.nodes) == len(
                tx.output.graph_inputs):
            raise error  # nothing gained by breaking here: the frame runs eagerly
        kinds, stack_exprs = w.stack_args(tx.stack)
        body = [f"return {w.resume_call(inst.offset, kinds, stack_exprs)}"]
        kind, reason = "unsupported_construct", error.reason
    # Mutations traced so far happen before the native instruction (program order).
    temps, replay = tx.output.side_effects.codegen(w.codegen, reconstruct)
    graph_lines, graphs = w.graph_lines()
    name = transformed_name(tx.code)
    lines = graph_lines + w.codegen.prelude + w.temps + temps + replay + body
    source = (f"def {name}({', '.join(tx.output.arg_names)}):\n"
              + "".join(f"    {line}\n" for line in lines))
    gb = GraphBreak(kind, reason, error.user_line, inst.offset, tx.code.co_name)
    metrics.increment("graph_breaks")
    _logging.trace_artifact("graph_breaks", str(gb), title=f"GRAPH BREAK in {tx.code.co_name}")
    tx.output.frame_cache.notify("graph_break", gb)
    return FrameResult(source, tx.output.define(source, name), tx.output.guards, graphs)


def in_loop(code: types.CodeType, offset: int) -> bool:
    """Real Dynamo's ``maybe_has_backedge`` heuristic: a jump after ``offset`` (up to the first
    return) that goes back before it means the break is inside a loop. Dynamo then skips the
    frame (it runs eagerly): resuming would need a new resume function per iteration."""
    for inst in _original_instructions(code):
        if inst.offset is None or inst.offset <= offset:
            continue
        if inst.opname in ("RETURN_VALUE", "RETURN_CONST"):
            return False
        if inst.target is not None and inst.target.offset < offset:
            return True
    return False


def in_try_block(code: types.CodeType, offset: int) -> bool:
    """Whether the instruction at ``offset`` is guarded by a ``try`` (an exception-table entry
    whose handler is not a ``with`` block's cleanup). Like real Dynamo, a break there does not
    resume (the handler would have to cover the native call and the resume function): the
    frame runs eagerly."""
    insts = _original_instructions(code)
    inst = next((i for i in insts if i.offset == offset), None)
    entry = inst.exn_tab_entry if inst is not None else None
    if entry is None:
        return False
    handler = insts[insts.index(entry.target):][:2]
    return not any(i.opname == "WITH_EXCEPT_START" for i in handler)


class _CompilingGlobals(dict):
    """The globals a skipped frame runs with: a user function it looks up comes back wrapped
    by ``optimize``, so the frames it calls are still compiled (real Dynamo's PEP 523 hook sees
    every frame, skipped or not). Reads go to the module's real globals."""

    def __init__(self, real: dict, wrap):
        super().__init__(__builtins__=real.get("__builtins__", builtins), __name__=real.get(
            "__name__"))
        self.real, self.wrap = real, wrap

    def __getitem__(self, name: str) -> Any:
        return self.wrap(self.real[name])  # KeyError: CPython then looks in the builtins


def _writes_globals(code: types.CodeType) -> bool:
    """STORE_GLOBAL would write into the proxy, not the module: such frames run as they are."""
    import dis

    return any(i.opname in ("STORE_GLOBAL", "DELETE_GLOBAL") for i in dis.get_instructions(code)) \
        or any(_writes_globals(c) for c in code.co_consts if isinstance(c, types.CodeType))


def eager_with_compiled_callees(fn: types.FunctionType, backend, cache) -> types.FunctionType:
    """``fn`` to run eagerly, as a frame real Dynamo skips: the user functions it looks up in
    its globals are wrapped by ``optimize``, so they are still compiled as their own frames
    (``fn`` itself when its code writes globals: those writes must reach the real module)."""
    from .eval_frame import optimize

    if _writes_globals(fn.__code__):
        return fn
    wrappers = cache.wrappers.setdefault(backend, {})
    eager = wrappers.get(("eager", fn))
    if eager is not None and eager.__code__ is fn.__code__:
        # the copy must follow the original: ``__defaults__`` may have been reassigned since
        eager.__defaults__, eager.__kwdefaults__ = fn.__defaults__, fn.__kwdefaults__
        return eager

    def wrap(value: Any) -> Any:
        module = (getattr(value, "__module__", None) or "").split(".")[0]
        if not isinstance(value, types.FunctionType) or module in NATIVE_MODULES | {"torch"} \
                or hasattr(value, "_minicompile_orig"):
            return value
        if value not in wrappers:
            wrappers[value] = optimize(value, backend, cache=cache)
        return wrappers[value]

    code = fn.__code__
    eager = types.FunctionType(code, _CompilingGlobals(fn.__globals__, wrap), code.co_name,
                               fn.__defaults__, fn.__closure__)
    eager.__kwdefaults__ = fn.__kwdefaults__
    wrappers[("eager", fn)] = eager
    return eager


def skip_frame(tx, inst: Instruction, error: Unsupported, kind: str = "graph_break_in_loop",
               why: str = "graph break in a for/while loop"):
    """A break inside a loop (or at a ``with`` that can't be entered): the frame runs eagerly,
    without a graph (Dynamo's "graph break in loop" frame skip), but the user functions it
    calls are compiled as their own frames."""
    from .output_graph import FrameResult, transformed_name

    reason = f"{why}: the frame runs eagerly ({error.reason})"
    fn, code = tx.output.root_fn, tx.code
    if _writes_globals(code):
        unimplemented(reason)
    eager = eager_with_compiled_callees(fn, tx.output.backend, tx.output.frame_cache)
    name = tx.output.codegen().install_global(f"eager_{code.co_name}", eager)
    n = code.co_argcount + code.co_kwonlyargcount
    params = list(code.co_varnames[:n + bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)])
    args = params[:code.co_argcount] + [f"{p}={p}" for p in params[code.co_argcount:n]]
    if code.co_flags & 0x04:
        args.append(f"*{params[n]}")
    if code.co_flags & 0x08:
        args.append(f"**{params[-1]}")
    transformed = transformed_name(code)
    source = (f"def {transformed}({', '.join(tx.output.arg_names)}):\n"
              f"    # {reason.splitlines()[0][:90]}\n"
              f"    return {name}({', '.join(args)})\n")
    gb = GraphBreak(kind, reason, error.user_line, inst.offset, code.co_name)
    metrics.increment("graph_breaks")
    _logging.trace_artifact("graph_breaks", str(gb), title=f"GRAPH BREAK in {code.co_name}")
    tx.output.frame_cache.notify("graph_break", gb)
    return FrameResult(source, tx.output.define(source, transformed), tx.output.guards, [])


def _native_callable(fn_vt, fn_value: Any, w: BreakWriter) -> str:
    """The callable as the transformed code calls it: a user function goes through ``optimize``
    so its own frame is compiled (with its own breaks), like a function real Dynamo intercepts."""
    from .variables.functions import UserFunctionVariable, UserMethodVariable
    from .variables.nn_module import NNModuleVariable, _has_hooks

    def compiled(fn: types.FunctionType) -> str:
        from .eval_frame import optimize

        wrappers = _wrappers(w.output)
        if fn not in wrappers:
            wrappers[fn] = optimize(fn, w.output.backend, cache=w.output.frame_cache)
        return w.codegen.install_global(f"compiled_{fn.__name__}", wrappers[fn])

    def user_code(fn: Any) -> bool:
        module = (getattr(fn, "__module__", None) or "").split(".")[0]
        return isinstance(fn, types.FunctionType) and module not in NATIVE_MODULES | {"torch"}

    if type(fn_vt) is UserFunctionVariable and user_code(fn_value):
        return compiled(fn_value)
    if isinstance(fn_vt, NNModuleVariable) and not _has_hooks(fn_vt.value) \
            and "forward" not in fn_vt.value.__dict__:  # self.block(x): its forward's frame
        forward = inspect.getattr_static(fn_vt.value, "forward", None)
        if user_code(forward):
            return f"{compiled(forward)}.__get__({reconstruct(fn_vt, w.codegen)})"
    if isinstance(fn_vt, UserMethodVariable):
        owner = reconstruct(fn_vt.obj, w.codegen)
        if user_code(fn_vt.fn):  # the compiled function, bound to the same object
            return f"{compiled(fn_vt.fn)}.__get__({owner})"
        return f"{owner}.{fn_vt.fn.__name__}"
    if isinstance(fn_value, types.FunctionType):  # logging, numpy...: called as they are
        return w.codegen.install_global(fn_value.__name__, fn_value)
    return reconstruct(fn_vt, w.codegen)


def _original_instructions(code: types.CodeType):
    from .bytecode_transformation import instructions_from_code

    return instructions_from_code(code)
