"""Real Inductor's fusion, captured for a side-by-side with minicompile's (the text that
``TORCH_LOGS=ir_post_fusion`` prints, from torch/_inductor/debug.py's ``log_ir_post_fusion``).

    text = real_ir_post_fusion(fn, x)              # every line of the artifact
    kernels = real_fused_kernels(text)             # "op0_op1: FusedSchedulerNode(...)" headers
"""

from __future__ import annotations

import io
import logging
import re
import warnings
from typing import Any, Callable

import torch

_HEADER = re.compile(r"^(\S+): (\w*SchedulerNode\w*)\((.*)\)$")


def real_ir_post_fusion(fn: Callable, *args: Any, return_compiled: bool = False):
    """Compile ``fn`` with the real ``torch.compile`` (caches off so the scheduler really runs)
    and return its ``ir_post_fusion`` artifact (and the compiled function if asked)."""
    import torch._inductor.config as inductor_config  # lazy: real Inductor, for comparison only

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger = logging.getLogger("torch._inductor.debug")
    torch._logging.set_logs(ir_post_fusion=True)
    logger.addHandler(handler)
    logger.propagate = False  # ours only: not also torch's own stderr handler
    try:
        with inductor_config.patch(force_disable_caches=True), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch._dynamo.reset()
            compiled = torch.compile(fn)
            compiled(*args)
    finally:
        logger.removeHandler(handler)
        logger.propagate = True
        torch._logging.set_logs()
    return (stream.getvalue(), compiled) if return_compiled else stream.getvalue()


def real_fused_kernels(text: str) -> list[str]:
    """The top-level scheduler nodes of an ``ir_post_fusion`` artifact, one per kernel."""
    return _top_level([line.strip() for line in text.splitlines()])


def _top_level(lines: list[str]) -> list[str]:
    """Headers not nested in a fused node (nested ones follow a ``<name>.snodes[i] =`` line)."""
    out, nested = [], False
    for line in lines:
        if re.match(r"^\S+\.snodes\[\d+\] =$", line):
            nested = True
            continue
        m = _HEADER.match(line)
        if m:
            if not nested:
                out.append(line)
            nested = False
    return out
