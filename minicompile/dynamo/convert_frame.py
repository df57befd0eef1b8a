"""Trace one frame and turn it into a cache entry (mirrors torch/_dynamo/convert_frame.py).

``convert_frame`` is what runs on a cache miss: log the original bytecode, run the
InstructionTranslator over it, compile the graph with the backend, write the transformed
function, and build the guard function from the guards the trace installed.
"""

from __future__ import annotations

import types
from dataclasses import dataclass
from typing import Callable

import torch

from .. import _logging
from ..metrics import metrics
from ..names import readable
from . import handlers_data, handlers_flow  # noqa: F401  (registers the instruction handlers)
from .bytecode import format_listing
from .exc import Unsupported
from .graph_break import break_at
from .guard_manager import GuardFn, build_guard_fn
from .output_graph import FrameResult, OutputGraph
from .symbolic_convert import InstructionTranslator
from .variables.generators import check_paused_generators, close_at_frame_exit


@dataclass
class CacheEntry:
    """One compiled version of a frame: reuse ``fn`` whenever ``guard(L, G)`` holds."""

    guard: GuardFn
    fn: Callable  # the transformed function, called with the frame's locals
    backend: Callable
    result: FrameResult
    code: types.CodeType


def convert_frame(fn: types.FunctionType, f_locals: dict, backend: Callable,
                  fullgraph: bool = False, cache=None,
                  unspecialized: tuple[str, ...] = ()) -> CacheEntry:
    """``unspecialized``: arguments whose modules are traced for any module of their class
    (``OutputGraph.unspecialized``)."""
    code = fn.__code__
    _logging.trace_artifact("bytecode", lambda: format_listing(code),
                            title=f"ORIGINAL BYTECODE {code.co_name}")
    grad_mode = torch.is_grad_enabled()
    break_error = None
    while True:  # at most twice: a failed trace is restarted to graph-break at the failure
        output = OutputGraph(fn, list(f_locals), backend, cache, grad_mode,
                             unspecialized)
        try:
            tx = InstructionTranslator(code, fn.__globals__, f_locals, fn.__closure__, output)
            if break_error is not None:
                tx.break_index, tx.break_error = break_error.root_index, break_error
            tx.run()
            if tx.stopped_at_break:
                result = break_at(tx, tx.index, break_error)
            else:
                close_at_frame_exit(tx)
                check_paused_generators(output.local_generators)
                result = output.compile_and_codegen(tx.return_value)
            break
        except Unsupported as e:  # graph_break.py: trace again, breaking where it failed
            if fullgraph or break_error is not None or getattr(e, "root_index", None) is None:
                raise
            # kept by the next trace's objects, which refer to each other: without its
            # traceback, so it holds no frames (and through them, the caller's locals)
            break_error = e.with_traceback(None)
        finally:
            torch._C._set_grad_enabled(grad_mode)  # a `with no_grad()` cut short by Unsupported
            for region in reversed(output.active_autocasts):  # a `with autocast()` likewise
                region.leave_while_tracing(output)
    guard = build_guard_fn(result.guards, name="guard_" + readable(code.co_name))
    _logging.trace_artifact("bytecode", result.transformed_source,
                            title=f"TRANSFORMED CODE {code.co_name}")
    _logging.trace_artifact("guards", guard.source, title=f"GUARDS {code.co_name}")
    metrics.increment("frames_compiled")
    return CacheEntry(guard, result.transformed_fn, backend, result, code)
