"""Frame interception and the cache (mirrors torch/_dynamo/eval_frame.py).

Real Dynamo installs a PEP 523 frame-evaluation hook (``torch._C._dynamo.eval_frame
.set_eval_frame``): CPython then hands it *every* Python frame about to run, and it looks the
frame's code object up in a cache kept on the code object itself. minicompile has no C hook:
``optimize(fn)`` returns a wrapper, and **the wrapper is the frame interception**. It binds the
arguments into the frame's locals ``L`` (and ``G`` = the function's globals), checks the cache
entries of ``fn.__code__``, most recently used first (``guard(L, G)``), and on a miss traces and compiles the frame
(``convert_frame``). Only the wrapped function's own frame is intercepted; the functions it calls
are inlined into the same graph instead of being intercepted separately.

A miss when entries exist is a *recompile* (``metrics.recompiles``): the reason is the first guard
each entry failed (``MINICOMPILE_LOGS=recompiles``, ``recompile_reasons(fn)``); after
``config.recompile_limit`` entries the frame runs eagerly with a warning. Each compile runs under
the frame's ``DynamicPolicy`` (automatic_dynamic.py), which remembers the sizes seen so far.

A frame that cannot be traced runs eagerly (``metrics.eager_fallbacks``), its reason recorded;
with ``fullgraph=True`` it raises. Like a frame real Dynamo skips, the user functions it calls
are still compiled as their own frames (:func:`run_eagerly`).

Errors and threads: a compile whose first run raises is undone (the error is most likely the
user's: bad inputs must leave no entry behind), and the error reaches the user without the
compiler's frames (``exc.without_internal_frames``). Compiles take one lock; lookups do not.
"""

from __future__ import annotations

import builtins
import copy
import functools
import inspect
import sys
import threading
import traceback
import types
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import torch.utils.checkpoint
from torch.utils._device import DeviceContext

from .. import _logging, config
from ..metrics import metrics
from .automatic_dynamic import DynamicPolicy, FrameState, dynamic_policy
from .bytecode_analysis import globals_only_called, writes_globals
from .convert_frame import CacheEntry, convert_frame
from .exc import FullGraphError, Unsupported, without_internal_frames
from .module_calls import compiling_module_calls
from .resume_execution import CLOSURE_ARG, resume_function
from .symbolic_convert import NEVER_TRACED_WRAPPERS, compiles_as_callee
from .variables.nn_module import _has_hooks


@dataclass
class FrameCache:
    """Cache entries per code object, and the frames known to run eagerly (with the reason)."""

    entries: dict[types.CodeType, list[CacheEntry]] = field(default_factory=dict)
    eager: dict[types.CodeType, Unsupported] = field(default_factory=dict)
    listeners: list[Callable[[str, Any], None]] = field(default_factory=list)
    # automatic dynamic: the sizes each code object's compiles saw (automatic_dynamic.py)
    frame_states: dict[types.CodeType, FrameState] = field(default_factory=dict)
    # why each recompile happened: "tensor 'L['x']' size mismatch at index 0. expected 4, actual 8"
    recompile_reasons: dict[types.CodeType, list[str]] = field(default_factory=dict)
    # backend -> the ``optimize`` wrappers graph breaks call (resume functions, user functions
    # run natively), so each keeps its compiled entries across calls (graph_break.py)
    wrappers: dict[Callable, dict[Any, Callable]] = field(default_factory=dict)

    def notify(self, event: str, payload: Any) -> None:
        for listener in self.listeners:
            listener(event, payload)

    def compiled_callee(self, fn: types.FunctionType, backend: Callable,
                        key: Any = None, unspecialized: tuple[str, ...] = ()) -> Callable:
        """``optimize(fn)`` for a frame compiled code calls natively (a resume function, a user
        function a graph break calls, a callee of a frame that runs eagerly): one wrapper per
        ``key`` (default ``fn``) and backend, so it keeps its compiled entries across calls.
        ``unspecialized``: arguments whose modules are traced for any module of their class
        (a module's ``forward`` called from a frame that runs eagerly, and its resume
        functions: ``OutputGraph.unspecialized``)."""
        wrappers = self.wrappers.setdefault(backend, {})
        key = fn if key is None else key
        if key not in wrappers:
            wrappers[key] = optimize(fn, backend, cache=self, unspecialized=unspecialized)
        return wrappers[key]

    def resume_with_cells(self, code: types.CodeType, fn: types.FunctionType,
                          backend: Callable) -> Callable:
        """The resume function ``code`` of ``fn``, a frame with cell variables or a closure,
        as a callable taking the cells and the closure first: the transformed function makes
        the cells at each call (from the values the break left in them) and passes on the
        closure it was called with, so each call's resume function is a new function over its
        own cells, looked up in the same cache entries of ``code``."""
        def resume(cells: tuple, closure: tuple | None, *args):
            own = dict(zip(fn.__code__.co_cellvars, cells))
            try:
                return run_frame(resume_function(code, fn, own, closure), args, {}, backend,
                                 False, self)
            except Exception as e:
                raise without_internal_frames(e)

        resume.__name__ = resume.__qualname__ = code.co_name
        return resume

    def eager_frame(self, fn: types.FunctionType, backend: Callable) -> Callable:
        """``fn`` to run eagerly, as a frame real Dynamo skips: the user functions it looks up
        in its globals are wrapped by ``optimize``, so they are still compiled as their own
        frames (``fn`` itself when its code writes globals: those writes must reach the real
        module), and so are the ``forward``s of the modules it calls (module_calls.py)."""
        wrappers = self.wrappers.setdefault(backend, {})
        if ("eager", fn) not in wrappers:
            wrappers[("eager", fn)] = self._eager_copy(fn, backend)
        eager = wrappers[("eager", fn)]
        # the copy must follow the original: ``__defaults__`` may have been reassigned since
        eager.__defaults__, eager.__kwdefaults__ = fn.__defaults__, fn.__kwdefaults__

        @functools.wraps(fn)
        def run(*args, **kwargs):
            with compiling_module_calls(lambda mod: self.compiled_forward(mod, backend)):
                return eager(*args, **kwargs)

        if fn.__code__.co_freevars:  # the code serves every closure: the call's comes first
            def run_in(closure: tuple, *args, **kwargs):
                copy = types.FunctionType(eager.__code__, eager.__globals__, eager.__name__,
                                          eager.__defaults__, closure)
                copy.__kwdefaults__ = eager.__kwdefaults__
                with compiling_module_calls(lambda mod: self.compiled_forward(mod, backend)):
                    return copy(*args, **kwargs)
            return functools.wraps(fn)(run_in)
        return run

    def _eager_copy(self, fn: types.FunctionType, backend: Callable) -> types.FunctionType:
        if writes_globals(fn.__code__):
            return fn

        def wrap(value: Any) -> Any:
            if not compiles_as_callee(value) or hasattr(value, "_minicompile_orig"):
                return value
            return self.compiled_callee(value, backend)

        code = fn.__code__
        return types.FunctionType(code, _CompilingGlobals(fn.__globals__, wrap,
                                                          globals_only_called(code)),
                                  code.co_name, fn.__defaults__, fn.__closure__)

    def compiled_forward(self, mod: torch.nn.Module, backend: Callable) -> Callable | None:
        """``mod``'s compiled ``forward`` bound to it, for a call from a frame that runs
        eagerly; None where the call stays as it is: torch's own modules, a forward set on
        the instance, hooks (``__call__`` runs them), graph modules (the compiler's own), a
        module already compiled (its own cache). One wrapper per ``forward`` serves every
        module of the class, traced as a *module call* (``unspecialized`` in
        output_graph.py): the twelve layers a loop left to eager calls in turn share one
        compiled entry, their parameters the graph's inputs, as real Dynamo's."""
        forward = _static_forward(mod)
        if isinstance(mod, (torch.fx.GraphModule, OptimizedModule)) or "forward" in mod.__dict__ \
                or _has_hooks(mod) or not compiles_as_callee(forward) \
                or _under_never_traced_wrapper(sys._getframe(1)):
            return None
        return self.compiled_callee(forward, backend, ("module call", forward),
                                    unspecialized=forward.__code__.co_varnames[:1]).__get__(mod)


# The code of ``eager_frame``'s ``run`` and ``run_in``: where a frame that runs eagerly starts.
_EAGER_RUN_CODES = {c for c in FrameCache.eager_frame.__code__.co_consts
                    if isinstance(c, types.CodeType)}


# Frames under which a module call runs as it is: a function that asks never to be traced
# (``torch._disable_dynamo``), and checkpoint's implementation, also reached without that wrapper
# (``@checkpoint(use_reentrant=False)`` on a function calls it directly)
_UNCOMPILED_UNDER = set(NEVER_TRACED_WRAPPERS) | {
    f.__code__ for f in [getattr(torch.utils.checkpoint, "_checkpoint_impl", None)] if f}


def _under_never_traced_wrapper(frame: types.FrameType | None) -> bool:
    """Is a function that asks never to be traced, or checkpoint, running between ``frame``
    and the frame that runs eagerly? Real Dynamo's ``disable`` turns its hook off for every
    frame under the function, so the modules it calls run as they are. It matters:
    ``torch.utils.checkpoint.checkpoint`` is such a function, and it runs its function twice,
    in the forward and again in the backward (where no frame runs eagerly): a forward compiled
    the first time saves other tensors than the eager recomputation (CheckpointError), and
    draws its dropout masks from another generator (wrong gradients)."""
    while frame is not None and frame.f_code not in _EAGER_RUN_CODES:
        if frame.f_code in _UNCOMPILED_UNDER:
            return True
        frame = frame.f_back
    return False


class _CompilingGlobals(dict):
    """The globals a skipped frame runs with: a user function it looks up to call comes back
    wrapped by ``optimize``, so the frames it calls are still compiled (real Dynamo's PEP 523
    hook sees every frame, skipped or not). A function the code also reads as a value (a dict
    key, ``f is g``, ``f.__code__``) comes back as itself: the wrapper is another object.
    Reads go to the module's real globals."""

    def __init__(self, real: dict, wrap: Callable[[Any], Any], called: set[str]):
        super().__init__(__builtins__=real.get("__builtins__", builtins), __name__=real.get(
            "__name__"))
        self.real, self.wrap, self.called = real, wrap, called

    def __getitem__(self, name: str) -> Any:
        value = self.real[name]  # KeyError: CPython then looks in the builtins
        return self.wrap(value) if name in self.called else value


CACHE = FrameCache()

# One compile at a time (torch/_dynamo/convert_frame.py's compile_lock): tracing sets
# process-wide state (the dynamic-shapes policy, the fake mode, grad mode), and two threads
# missing the cache at once must make one entry, not two. Reentrant: compiling may run code
# that compiles another frame. Calls that hit the cache never take it.
compile_lock = threading.RLock()


def reset() -> None:
    """Forget every compiled frame (mirrors torch._dynamo.reset)."""
    CACHE.entries.clear()
    CACHE.eager.clear()
    CACHE.frame_states.clear()
    CACHE.recompile_reasons.clear()
    CACHE.wrappers.clear()


def cache_entries(fn: Any, cache: FrameCache = CACHE) -> list[CacheEntry]:
    """The cache entries of a compiled function or module, in the order they are checked
    (``entry.guard`` prints the generated guard function)."""
    if isinstance(fn, OptimizedModule):
        fn = type(fn._orig_mod).forward
    fn = getattr(fn, "_minicompile_orig", fn)
    fn = getattr(fn, "__func__", fn)
    return list(cache.entries.get(fn.__code__, []))


def recompile_reasons(fn: Any, cache: FrameCache = CACHE) -> list[str]:
    """Why each recompile of ``fn`` happened, oldest first."""
    entries = cache_entries(fn, cache)
    return list(cache.recompile_reasons.get(entries[0].code, [])) if entries else []


def frame_locals(fn: types.FunctionType, args: tuple, kwargs: dict) -> dict[str, Any]:
    """The frame's locals at its first instruction: bound arguments, then free variables."""
    code = fn.__code__
    n = code.co_argcount
    simple = not kwargs and not code.co_kwonlyargcount and not code.co_flags & _VARARGS
    if simple and len(args) == n:  # positional arguments only, as most calls: no inspect
        f_locals = dict(zip(code.co_varnames, args))  # (microseconds on every call)
    elif simple and n - len(fn.__defaults__ or ()) <= len(args) < n:  # and trailing defaults
        f_locals = dict(zip(code.co_varnames, args))
        f_locals.update(zip(code.co_varnames[len(args):n], fn.__defaults__[len(args) - n:]))
    else:
        bound = _signature(fn).bind(*args, **kwargs)
        bound.apply_defaults()
        f_locals = dict(bound.arguments)
    if fn.__closure__:
        for name, cell in zip(code.co_freevars, fn.__closure__):
            f_locals[name] = cell.cell_contents
    return f_locals


_VARARGS = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS

_SIGNATURES: dict[types.FunctionType, tuple[Any, Any, inspect.Signature]] = {}


def _signature(fn: types.FunctionType) -> inspect.Signature:
    """inspect.signature is slow: cache it, but a signature holds the default values, so it is
    rebuilt when ``__defaults__`` / ``__kwdefaults__`` were reassigned or changed."""
    kw = tuple((k, id(v)) for k, v in (fn.__kwdefaults__ or {}).items())
    cached = _SIGNATURES.get(fn)
    if cached is None or cached[0] is not fn.__defaults__ or cached[1] != kw:
        cached = _SIGNATURES[fn] = (fn.__defaults__, kw, inspect.signature(fn, follow_wrapped=False))
    return cached[2]


def _check(entry: CacheEntry, f_locals: dict, f_globals: dict) -> bool:
    try:  # the compiled function itself (``GuardFn.fn``): one call less on every lookup
        return bool(entry.guard.fn(f_locals, f_globals))
    except Exception:  # a guard that cannot even be evaluated (a global deleted...) fails
        return False


def _recompile_message(code: types.CodeType, reasons: list[str]) -> str:
    where = f"{code.co_filename}:{code.co_firstlineno}"
    lines = "\n".join(f"    - {i}: {r}" for i, r in enumerate(reasons))
    return (f"Recompiling function {code.co_name} in {where}\n"
            f"    triggered by the following guard failure(s):\n{lines}")


def run_frame(fn: types.FunctionType, args: tuple, kwargs: dict, backend: Callable,
              fullgraph: bool, cache: FrameCache = CACHE, dynamic: bool | None = None,
              unspecialized: tuple[str, ...] = ()) -> Any:
    """What the PEP 523 hook does for one frame: look up, or compile, then run."""
    code = fn.__code__
    mode = _user_function_mode() if torch._C._is_torch_function_mode_enabled() else None
    if mode is not None:
        return _run_under_mode(fn, args, kwargs, cache, mode)
    try:
        f_locals = frame_locals(fn, args, kwargs)
    except (TypeError, ValueError):  # wrong arguments or an empty cell: let Python say so
        return fn(*args, **kwargs)
    if code.co_freevars:  # the transformed function passes it on to what runs after a break
        f_locals[CLOSURE_ARG] = fn.__closure__
    entry, _ = _lookup(fn, f_locals, backend, cache)
    if entry is not None:
        return entry.fn(**f_locals)
    with compile_lock:  # one compile at a time; a thread that waited may find it done
        entry, misses = _lookup(fn, f_locals, backend, cache)
        undo = None
        if entry is None:
            undo = _undo_compile(code, cache)
            entry = _compile(fn, f_locals, backend, fullgraph, cache, dynamic, misses,
                             unspecialized)
    try:
        if entry is None:
            return run_eagerly(fn, args, kwargs, backend, cache)
        return entry.fn(**f_locals)
    except BaseException:
        if undo is not None:
            undo(entry)
        raise


def _user_function_mode() -> torch.overrides.TorchFunctionMode | None:
    """The innermost ``torch.overrides.TorchFunctionMode`` active, other than the default
    device's (``with torch.device(...)``, whose effect the traced factory calls see)."""
    return next((m for m in reversed(torch.overrides._get_current_function_mode_stack())
                 if not isinstance(m, DeviceContext)), None)


def _run_under_mode(fn: types.FunctionType, args: tuple, kwargs: dict, cache: FrameCache,
                    mode: torch.overrides.TorchFunctionMode) -> Any:
    """A call made while a TorchFunctionMode is active runs natively: the mode's
    ``__torch_function__`` sees (and may change) every torch call, which a graph traced
    without it does not make, and the cache's entries were traced without it. Real Dynamo
    traces the mode's ``__torch_function__`` into the graph instead."""
    reason = Unsupported(f"a TorchFunctionMode ({type(mode).__qualname__}) is active: it runs Python code on "
                         f"every torch call, so the frame runs natively")
    metrics.fell_back(f"{fn.__code__.co_name}: {reason.reason}")
    cache.notify("fallback", (fn.__code__, reason))
    return fn(*args, **kwargs)


def _undo_compile(code: types.CodeType, cache: FrameCache) -> Callable[[CacheEntry | None], None]:
    """How to undo the compile about to happen, if its first run raises. The error is most
    likely the user's (a matmul of mismatched shapes fails the trace on fake tensors as it fails
    in eager, or the compiled code raises it): it surfaces as in eager, and the bad inputs leave
    nothing behind: no entry guarded on their sizes, no eager mark, no sizes in automatic
    dynamic's memory."""
    seen_before = copy.deepcopy(cache.frame_states.get(code, FrameState()))
    was_eager = code in cache.eager

    def undo(entry: CacheEntry | None) -> None:
        with compile_lock:
            entries = cache.entries.get(code, [])
            if entry in entries:
                entries.remove(entry)
            if not was_eager:
                cache.eager.pop(code, None)
            cache.frame_states[code] = seen_before
    return undo


def _lookup(fn: types.FunctionType, f_locals: dict, backend: Callable,
            cache: FrameCache) -> tuple[CacheEntry | None, list[CacheEntry]]:
    """The first entry of this backend whose guards hold (or None), and those that failed."""
    misses = []  # the entries of this backend whose guards failed, checked in order
    entries = cache.entries.get(fn.__code__, ())
    for i, entry in enumerate(entries):
        if entry.backend is backend:
            if _check(entry, f_locals, fn.__globals__):
                if i:  # most recently used first, as real Dynamo's lookup: a frame whose first
                    # call changed what it guards (a model's config set by its first forward)
                    # checked the dead entry before the live one on every call after. (One
                    # slice assignment: a thread iterating meanwhile at worst misses once.)
                    entries[:i + 1] = [entry, *entries[:i]]
                return entry, misses
            metrics.increment("guard_failures")
            misses.append(entry)
    return None, misses


def _compile(fn: types.FunctionType, f_locals: dict, backend: Callable, fullgraph: bool,
             cache: FrameCache, dynamic: bool | None, misses: list[CacheEntry],
             unspecialized: tuple[str, ...] = ()) -> CacheEntry | None:
    """A new cache entry for this frame, or None: it runs eagerly (called under the lock)."""
    code = fn.__code__
    entries = cache.entries.setdefault(code, [])
    reasons = [e.guard.failure_reason(f_locals, fn.__globals__) or "guard failed" for e in misses]
    if code in cache.eager:
        if fullgraph:
            raise FullGraphError(cache.eager[code].reason, cache.eager[code].user_line)
        return None
    if len(entries) >= config.recompile_limit:
        warnings.warn(f"{code.co_name}: hit recompile_limit ({config.recompile_limit}); running "
                      f"eagerly from now on{'; last reason: ' + reasons[-1] if reasons else ''}")
        cache.eager[code] = Unsupported("recompile_limit reached")
        metrics.fell_back(f"{code.co_name}: recompile_limit reached")  # eagerly from now on
        return None
    if misses:
        metrics.increment("recompiles")
        cache.recompile_reasons.setdefault(code, []).append("; ".join(reasons))
        _logging.trace_artifact("recompiles", lambda: _recompile_message(code, reasons))
    state = cache.frame_states.setdefault(code, FrameState())
    try:
        entry = _convert(fn, f_locals, backend, fullgraph, cache, dynamic, state, unspecialized)
    except Unsupported as e:
        if fullgraph:  # the reason and the user's line say it all; no internal traceback
            raise FullGraphError(e.reason, e.user_line) from None
        failure = _without_tracebacks(e)  # handled below, outside this except block
        _release_frames(e)
    else:
        entries.append(entry)
        cache.notify("compiled", entry)
        return entry
    cache.eager[code] = failure
    metrics.fell_back(f"{code.co_name}: {failure.reason}")
    metrics.increment("graph_breaks")  # explain() lists it among the break reasons
    _logging.trace_artifact("graph_breaks", f"{failure.reason}\n  at {failure.user_line}",
                            title=f"EAGER FALLBACK {code.co_name}")
    cache.notify("fallback", (code, failure))
    return None


def _release_frames(error: Unsupported) -> None:
    """Let go of the frames ``error`` reaches: the locals of the finished frames in its
    traceback and in those of the errors chained to it are cleared, and ``error`` (the
    tracer's own, kept by the tracer's objects, which refer to each other and so wait for the
    cycle collector) drops its traceback. Otherwise those frames, and through ``f_back`` the
    user's frame that called the frame being compiled, would outlive the call with its locals:
    a paused generator whose ``finally`` CPython runs when the frame returns, a big tensor.
    The errors chained to it keep their tracebacks (where a learner's own code raised)."""
    chained, seen = error, set()
    while chained is not None and id(chained) not in seen:
        seen.add(id(chained))
        traceback.clear_frames(chained.__traceback__)
        chained = chained.__cause__ or chained.__context__
    error.__traceback__ = None


def _without_tracebacks(error: Unsupported) -> Unsupported:
    """A copy of ``error`` with no traceback and nothing chained, to be kept in the cache: a
    traceback holds the tracer's frames, and through their callers the user's frames that were
    running then (a frame running eagerly whose callee was being compiled), with their locals:
    tensors, and generators whose ``finally`` would then run late. A copy, because the errors
    chained to it are not the cache's: a user's own exception keeps its traceback (where their
    code raised is what they need to see)."""
    kept = copy.copy(error)
    kept.__traceback__ = kept.__cause__ = kept.__context__ = None
    return kept


def _convert(fn: types.FunctionType, f_locals: dict, backend: Callable, fullgraph: bool,
             cache: FrameCache, dynamic: bool | None, state: FrameState,
             unspecialized: tuple[str, ...] = ()) -> CacheEntry:
    """convert_frame under the frame's dynamic-shapes policy."""
    policy = DynamicPolicy(dynamic, state)
    try:
        with dynamic_policy(policy):
            return convert_frame(fn, f_locals, backend, fullgraph, cache, unspecialized)
    except Unsupported as e:
        if dynamic is not None or not policy.went_symbolic:
            raise
        # Automatic dynamic made a size symbolic and the code could not trace with it
        # (a size used as a list index, a dict key...): compile for these sizes instead.
        reason = e.reason
    _logging.trace_artifact("recompiles", f"{fn.__code__.co_name}: static sizes, because "
                            f"tracing with symbolic ones failed: {reason}")
    with dynamic_policy(DynamicPolicy(False, policy.state)):
        return convert_frame(fn, f_locals, backend, fullgraph, cache, unspecialized)


def run_eagerly(fn: types.FunctionType, args: tuple, kwargs: dict, backend: Callable,
                cache: FrameCache) -> Any:
    """Run a frame that falls back to eager. Real Dynamo's hook still sees the frames it calls,
    so the user functions it calls are compiled as their own frames."""
    run = cache.eager_frame(fn, backend)
    if fn.__code__.co_freevars:
        return run(fn.__closure__, *args, **kwargs)
    return run(*args, **kwargs)


def _static_forward(mod: torch.nn.Module) -> Any:
    """``inspect.getattr_static(mod, "forward")`` without its cost on every call: the
    instance's own ``forward`` if it has one, else the first class in the MRO that defines it."""
    if "forward" in mod.__dict__:
        return mod.__dict__["forward"]
    for klass in type(mod).__mro__:
        if "forward" in klass.__dict__:
            return klass.__dict__["forward"]
    return None


class OptimizedModule(torch.nn.Module):
    """``mc.compile(module)``: calling it runs ``type(module).forward`` through the cache with
    ``self`` bound (so ``L['self']`` is the module, and its attributes are guarded)."""

    def __init__(self, mod: torch.nn.Module, backend: Callable, fullgraph: bool,
                 cache: FrameCache = CACHE, dynamic: bool | None = None):
        super().__init__()
        self._orig_mod = mod
        self._backend, self._fullgraph, self._cache = backend, fullgraph, cache
        self._dynamic = dynamic

    def __call__(self, *args, **kwargs):
        # The wrapper is no module of the user's: a global hook (register_module_forward_hook)
        # runs once, for the module inside (eager: 1 call of the hook, not 2); hooks put on the
        # wrapper itself run as on any module
        if self._forward_hooks or self._forward_pre_hooks or self._backward_hooks \
                or self._backward_pre_hooks:
            return super().__call__(*args, **kwargs)
        try:
            return self._run(args, kwargs)
        except Exception as e:
            raise without_internal_frames(e)  # the user's error, with the user's frames

    def forward(self, *args, **kwargs):
        try:
            return self._run(args, kwargs)
        except Exception as e:
            raise without_internal_frames(e)

    def _run(self, args: tuple, kwargs: dict) -> Any:
        mod = self._modules["_orig_mod"]  # (``self._orig_mod``: two __getattr__ calls, ~1 us)
        forward = _static_forward(mod)
        if not isinstance(forward, types.FunctionType) or _has_hooks(mod):
            return mod(*args, **kwargs)
        return run_frame(forward, (mod, *args), kwargs, self._backend, self._fullgraph,
                         self._cache, self._dynamic)

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._orig_mod, name)


def optimize(model: Callable, backend: Callable, fullgraph: bool = False,
             dynamic: bool | None = None, cache: FrameCache = CACHE,
             unspecialized: tuple[str, ...] = ()) -> Callable:
    """Wrap ``model`` so each call goes through the cache (``mc.compile`` calls this).

    ``dynamic``: None = automatic dynamic, True = symbolic sizes from the first compile,
    False = static (see automatic_dynamic.py). Compiling (or explaining) something already
    compiled starts again from the original function or module."""
    model = getattr(model, "_minicompile_orig", model)
    if isinstance(model, OptimizedModule):
        model = model._orig_mod
    if isinstance(model, torch.nn.Module):
        return OptimizedModule(model, backend, fullgraph, cache, dynamic)
    fn, bound_self = model, None
    if isinstance(model, types.MethodType):
        fn, bound_self = model.__func__, model.__self__
    if not isinstance(fn, types.FunctionType):
        raise TypeError(f"minicompile can only compile Python functions and nn.Modules, "
                        f"not {type(model).__name__}")

    @functools.wraps(fn)
    def compiled(*args, **kwargs):
        if bound_self is not None:
            args = (bound_self, *args)
        try:
            return run_frame(fn, args, kwargs, backend, fullgraph, cache, dynamic, unspecialized)
        except Exception as e:
            raise without_internal_frames(e)  # the user's error, with the user's frames

    compiled._minicompile_orig = model  # traced through when called from compiled code
    return compiled
