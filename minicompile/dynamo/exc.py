"""Errors raised while tracing (mirrors torch/_dynamo/exc.py).

``Unsupported`` is raised by an instruction handler or a VariableTracker when minicompile cannot
turn what the user's code does into graph nodes. It carries the reason and the user's source line
that was being interpreted, so ``explain()`` and the logs can point at the exact line. The frame
then runs eagerly (or, later, the graph breaks there); with ``fullgraph=True`` it is re-raised.
"""

from __future__ import annotations


class Unsupported(Exception):
    """This construct cannot be captured: the frame falls back to eager (never a wrong result)."""

    def __init__(self, reason: str, user_line: str | None = None):
        super().__init__(reason)
        self.reason = reason
        self.user_line = user_line  # "file.py:12 in fn: y = x.item()", filled in by the translator

    def __str__(self) -> str:
        return self.reason if not self.user_line else f"{self.reason}\n  at {self.user_line}"


def unimplemented(reason: str) -> None:
    """Raise Unsupported (the name real Dynamo uses at every unsupported site)."""
    raise Unsupported(reason)


class FullGraphError(RuntimeError):
    """``fullgraph=True`` was asked for but the frame could not be captured in one graph."""

    def __init__(self, reason: str, user_line: str | None):
        super().__init__(f"fullgraph=True: {reason}" + (f"\n  at {user_line}" if user_line else ""))
        self.reason, self.user_line = reason, user_line
