"""Artifact logging: ``MINICOMPILE_LOGS=graph_code,guards`` (mirrors torch/_logging, TORCH_LOGS).

Every stage reports what it produced through :func:`trace_artifact`. An artifact is printed
through Python logging when its name is enabled, and written to the debug folder when
``MINICOMPILE_DEBUG=1`` (see :mod:`minicompile.debug`). Text may be given as a callable so the
(possibly costly) rendering only happens when someone is listening.

    MINICOMPILE_LOGS=graph_code,guards bash course.sh python my_script.py
    MINICOMPILE_LOGS=all ...            # every artifact
    mc.set_logs("graph_code", "recompiles")   # the same from Python or a notebook
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Callable

from . import config, debug

# Artifact names follow TORCH_LOGS wherever a counterpart exists.
ARTIFACTS = {
    "bytecode": "original and transformed bytecode of each compiled frame",
    "graph_code": "the captured FX graph as Python code",
    "graph": "the captured FX graph as a table of nodes",
    "graph_breaks": "every graph break with its reason and user line",
    "recompiles": "every recompile with the guard that failed",
    "guards": "the guard function of each new cache entry",
    "dynamic": "symbols created and guards added by the shape environment",
    "aot_graphs": "joint, forward and backward ATen graphs",
    "decompositions": "ops decomposed while tracing to ATen",
    "ir_pre_fusion": "loop-level IR before fusion",
    "ir_post_fusion": "loop-level IR after fusion, grouped into kernels",
    "fusion": "fusion decisions, and the reason for each refused fusion",
    "output_code": "the generated wrapper and kernels",
    "cudagraphs": "CUDA graph recordings, and why a graph runs without one",
    "autotuning": "block sizes timed for each Triton kernel and the one chosen",
}

_enabled: set[str] = set()
_handler: logging.Handler | None = None


class _CurrentStderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is *now*, not the stream in place when logging began.

    Jupyter kernels and pytest swap ``sys.stderr``; a handler bound to the old object would print
    into a stream nobody reads any more.
    """

    def __init__(self) -> None:
        logging.Handler.__init__(self)

    @property
    def stream(self):  # type: ignore[override]
        return sys.stderr


def _parse(spec: str) -> set[str]:
    names = {s.strip().lstrip("+") for s in spec.split(",") if s.strip()}
    if "all" in names:
        return set(ARTIFACTS)
    unknown = names - set(ARTIFACTS)
    if unknown:
        known = ", ".join(sorted(ARTIFACTS))
        raise ValueError(f"unknown MINICOMPILE_LOGS artifact(s) {sorted(unknown)}; known: {known}")
    return names


def set_logs(*names: str) -> None:
    """Enable exactly these artifacts (``set_logs()`` turns logging off)."""
    global _handler
    _enabled.clear()
    _enabled.update(_parse(",".join(names)))
    root = logging.getLogger("minicompile")
    if _enabled and _handler is None:
        _handler = _CurrentStderrHandler()
        _handler.setFormatter(logging.Formatter("[%(name)s] %(message)s"))
        root.addHandler(_handler)
        root.setLevel(logging.INFO)
        root.propagate = False


def is_enabled(name: str) -> bool:
    return name in _enabled


def get_artifact_logger(name: str) -> logging.Logger:
    if name not in ARTIFACTS:
        raise ValueError(f"unknown artifact {name!r}")
    return logging.getLogger(f"minicompile.{name}")


def trace_artifact(name: str, text: str | Callable[[], str], title: str = "") -> None:
    """Report one artifact: log it if enabled, dump it if debugging, else do nothing."""
    if not (is_enabled(name) or config.debug):
        return
    body = text() if callable(text) else text
    if is_enabled(name):
        header = f"{title}\n" if title else ""
        get_artifact_logger(name).info("%s%s", header, body)
    if config.debug:
        debug.dump_artifact(name, body, title)


if os.environ.get("MINICOMPILE_LOGS"):
    set_logs(os.environ["MINICOMPILE_LOGS"])
