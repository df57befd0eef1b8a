"""Errors raised while tracing (mirrors torch/_dynamo/exc.py).

``Unsupported`` is raised by an instruction handler or a VariableTracker when minicompile cannot
turn what the user's code does into graph nodes. It carries the reason and the user's source line
that was being interpreted, so ``explain()`` and the logs can point at the exact line. The frame
then runs eagerly (or, later, the graph breaks there); with ``fullgraph=True`` it is re-raised.
"""

from __future__ import annotations

import os
import types


class Unsupported(Exception):
    """This construct cannot be captured: the frame falls back to eager (never a wrong result)."""

    def __init__(self, reason: str, user_line: str | None = None):
        super().__init__(reason)
        self.reason = reason
        self.user_line = user_line  # "file.py:12 in fn: y = x.item()", filled in by the translator

    def __str__(self) -> str:
        return self.reason if not self.user_line else f"{self.reason}\n  at {self.user_line}"


class ObservedException(Unsupported):
    """The traced code raised an exception (``raise KeyError(k)``, a missing key, an attribute
    that is not there): ``value`` is its tracker. A translator whose exception table covers the
    instruction jumps to the handler, as CPython would (symbolic_convert.py); one that has none
    passes it to its caller, and in the root frame it is an ``Unsupported`` like any other: the
    graph breaks there, and the instruction runs natively and raises for real."""

    def __init__(self, value, reason: str | None = None):
        if reason is None:  # a real exception that an operation on constants raised
            reason = f"{type(value).__name__}: {value}"
        super().__init__(f"the traced code raises {reason}")
        self.value = value  # a tracker, or that real exception (the translator wraps it)


def unimplemented(reason: str) -> None:
    """Raise Unsupported (the name real Dynamo uses at every unsupported site)."""
    raise Unsupported(reason)


class FullGraphError(RuntimeError):
    """``fullgraph=True`` was asked for but the frame could not be captured in one graph."""

    def __init__(self, reason: str, user_line: str | None):
        super().__init__(f"fullgraph=True: {reason}" + (f"\n  at {user_line}" if user_line else ""))
        self.reason, self.user_line = reason, user_line


# Code of the compiler itself: its package, and the programs it generates, by file name. A
# frame's transformed function (``<__transformed_code_0_fn>``) is not among them: it stands for
# the user's frame, and runs the instruction a graph break leaves to Python.
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
GENERATED_FILES = ("<minicompile",  # wrapper programs and kernels
                   "<guard_")  # guard functions (guards.py)


def _is_internal(frame: types.FrameType) -> bool:
    filename = frame.f_code.co_filename
    return filename.startswith(PACKAGE_DIR) or filename.startswith(GENERATED_FILES)


def without_internal_frames(error: BaseException) -> BaseException:
    """``error`` as eager would show it: the user's frames only, when the error is the user's.

    An error raised by the user's code or by a torch op on bad inputs passes through the
    compiler's frames on its way out (the cache lookup, the eager fallback); a traceback full of
    them hides the user's line. They are dropped, unless the error was raised inside the
    compiler itself: then every frame is kept, since that is a minicompile bug to report.
    """
    entries, tb = [], error.__traceback__
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    if not entries or _is_internal(entries[-1].tb_frame):
        return error
    kept = None
    for entry in reversed([e for e in entries if not _is_internal(e.tb_frame)]):
        kept = types.TracebackType(kept, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return error.with_traceback(kept)
