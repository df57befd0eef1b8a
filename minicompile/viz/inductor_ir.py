"""Real Inductor's loop IR next to ours: ``torch_ir_pre_fusion(fn, *args)`` compiles ``fn`` with
``torch.compile`` (Inductor), its debug trace written to a temporary folder, and returns the
``ir_pre_fusion.txt`` it wrote (the same text ``TORCH_LOGS=ir_pre_fusion`` prints)."""

from __future__ import annotations

import contextlib
import glob
import logging
import os
import tempfile
import warnings
from typing import Any, Callable, Iterator

import torch


def _trace_patch(inductor_config: Any, debug_dir: str) -> dict:
    """Config for a debug trace. The caches must be off: on a cache hit (the same graph compiled
    before, even by another process) Inductor skips lowering and writes no IR files."""
    patch = {"trace.enabled": True, "trace.debug_dir": debug_dir, "fx_graph_cache": False}
    if hasattr(inductor_config, "force_disable_caches"):
        patch["force_disable_caches"] = True
    return patch


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """No "debug trace: <folder>" log line, no "caches disabled" warning in the notebook."""
    logger = logging.getLogger("torch._inductor.debug")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.setLevel(level)


def torch_ir_pre_fusion(fn: Callable, *args: Any, name: str = "ir_pre_fusion.txt") -> str:
    import torch._inductor.config as inductor_config  # lazy: real Inductor, for comparison only

    torch._dynamo.reset()
    with tempfile.TemporaryDirectory() as tmp:
        try:
            with inductor_config.patch(_trace_patch(inductor_config, tmp)), _quiet():
                torch.compile(fn, backend="inductor")(*args)
        except Exception as e:  # no C++ compiler, an unsupported platform...
            return f"(real Inductor unavailable here: {type(e).__name__}: {e})"
        finally:
            torch._dynamo.reset()
        files = sorted(glob.glob(os.path.join(tmp, "**", name), recursive=True))
        if not files:
            return f"(Inductor wrote no {name})"
        with open(files[-1]) as f:
            return f.read()
