"""Trace one frame and turn it into a cache entry (mirrors torch/_dynamo/convert_frame.py).

``convert_frame`` is what runs on a cache miss: log the original bytecode, run the
InstructionTranslator over it, compile the graph with the backend, write the transformed
function, and build the guard function from the guards the trace installed.
"""

from __future__ import annotations

import re
import types
from dataclasses import dataclass
from typing import Callable

import torch

from .. import _logging
from ..metrics import metrics
from . import handlers_data, handlers_flow  # noqa: F401  (registers the instruction handlers)
from .bytecode import format_listing
from .guards import GuardFn, build_guard_fn
from .output_graph import FrameResult, OutputGraph
from .symbolic_convert import InstructionTranslator


@dataclass
class CacheEntry:
    """One compiled version of a frame: reuse ``fn`` whenever ``guard(L, G)`` holds."""

    guard: GuardFn
    fn: Callable  # the transformed function, called with the frame's locals
    backend: Callable
    result: FrameResult
    code: types.CodeType


def convert_frame(fn: types.FunctionType, f_locals: dict, backend: Callable) -> CacheEntry:
    code = fn.__code__
    _logging.trace_artifact("bytecode", lambda: format_listing(code),
                            title=f"ORIGINAL BYTECODE {code.co_name}")
    output = OutputGraph(code, fn.__globals__, backend)
    grad_mode = torch.is_grad_enabled()
    try:
        tx = InstructionTranslator(code, fn.__globals__, f_locals, fn.__closure__, output)
        tx.run()
        result = output.compile_and_codegen(tx.return_value, list(f_locals))
    finally:
        torch._C._set_grad_enabled(grad_mode)  # a `with no_grad()` cut short by Unsupported
    guard = build_guard_fn(result.guards, name="guard_" + re.sub(r"\W", "_", code.co_name))
    _logging.trace_artifact("bytecode", result.transformed_source,
                            title=f"TRANSFORMED CODE {code.co_name}")
    _logging.trace_artifact("guards", guard.source, title=f"GUARDS {code.co_name}")
    metrics.increment("frames_compiled")
    return CacheEntry(guard, result.transformed_fn, backend, result, code)
