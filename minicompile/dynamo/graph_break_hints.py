"""Why a graph broke, explained (mirrors torch/_dynamo/graph_break_hints.py and the graph-break
registry, torch/_dynamo/graph_break_registry.json).

Real Dynamo attaches to every graph break a short reason, an *explanation* (why tracing can't
continue) and *hints* (what the user can change). We keep the same three parts, as a table of
break kinds, plus the user's source line:

    Graph break: Tensor.item() returns a Python number (x.item())
      Explanation: the number only exists once the graph has run; ...
      Hint: keep it a 0-d tensor (...), or accept the break.
      User code: demo.py:12 in f: n = x.item()
"""

from __future__ import annotations

import builtins
import logging
import types
from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class BreakKind:
    name: str
    explanation: str
    hint: str


BREAK_KINDS: dict[str, BreakKind] = {k.name: k for k in [
    BreakKind("data_dependent_branch",
              "an `if`/`while` on a tensor's value: which way it goes is only known once the "
              "graph has computed the tensor, so tracing cannot follow either branch",
              "use torch.where(cond, a, b) (or torch.cond) to keep both sides in the graph, or "
              "branch on shapes/dtypes, which are known while tracing"),
    BreakKind("tensor_to_python",
              ".item() / .tolist() (or int()/float()/bool() of a tensor) turns tensor data into "
              "Python values; the data only exists once the graph has run",
              "keep the value a tensor (e.g. x.sum() instead of x.sum().item()), or move the "
              "conversion to the end of the function"),
    BreakKind("print_or_logging",
              "print() and logging write to the outside world: the call must happen at its "
              "place in program order, between the graph before it and the graph after it",
              "remove the print from the hot path, or log tensors after the compiled call"),
    BreakKind("untraceable_call",
              "a call into code that cannot be traced into a graph: numpy, random, a C "
              "extension, or a builtin without a symbolic model",
              "use the torch equivalent (torch.rand instead of random.random, torch ops "
              "instead of numpy), or move the call out of the compiled function"),
    BreakKind("numpy",
              "numpy code (x.numpy(), np.* functions, ndarray arithmetic) is not traced: real "
              "Dynamo rewrites numpy calls on tensors into torch ops (torch._numpy) and keeps "
              "them in the graph; minicompile runs them natively, between graphs",
              "write the computation with torch ops on the tensor (x * 2 rather than "
              "x.numpy() * 2, torch.mean rather than np.mean), or convert after the compiled "
              "call"),
    BreakKind("unsupported_construct",
              "a Python construct the symbolic interpreter does not model (mutation of unknown "
              "objects, a class statement, ...)",
              "rewrite the construct in plain Python the tracer supports, or accept the break"),
    BreakKind("graph_break_in_loop",
              "a graph break inside a for/while loop: every iteration would need its own resume "
              "function, so (like real Dynamo) the whole frame runs eagerly, with no graph; the "
              "functions it calls are still compiled",
              "fix the break inside the loop (or move it out of the loop), or move the loop "
              "body into a function"),
    BreakKind("graph_break_in_handler",
              "a graph break inside an `except` or `finally` handler: the exception being "
              "handled is frame state a resume function can't rebuild, so (like real Dynamo) "
              "the frame runs eagerly, with no graph; the functions it calls are still compiled",
              "move the code that breaks out of the handler, or the handler's body into a "
              "function"),
    BreakKind("graph_break_in_with",
              "a `with` on a context manager the tracer does not model (inference_mode, "
              "profiler, ...), or a break inside the block of one that the code after the break "
              "can't enter again (a user class, a @contextmanager generator): its block can't "
              "be resumed into, so the frame runs eagerly; the functions it calls are still "
              "compiled",
              "move the with block (or the code that breaks inside it) into its own function, "
              "or use no_grad / enable_grad"),
    BreakKind("graph_break_after_use",
              "a hook the graph can't hold (retain_grad, or a register_hook whose hook changes "
              "state or breaks the graph itself) on a tensor the graph has used already: the "
              "gradient from those uses would flow inside the compiled graph's backward, past "
              "a hook attached to the graph's output, so the frame runs eagerly; the functions "
              "it calls are still compiled",
              "make the hook a pure function of its gradient, register it right where the "
              "tensor is made, before its first use, or on an input of the function"),
    BreakKind("internal_error",
              "tracing the instruction failed inside minicompile itself (a bug, or a resource "
              "such as memory running out): the handler may have stopped half-way, so no graph "
              "is compiled from that state and the frame runs eagerly; the functions it calls "
              "are still compiled",
              "please report it with the reason; rewriting the line differently may avoid it"),
    BreakKind("explicit",
              "torch._dynamo.graph_break() asks for a break at this point: the graph so far is "
              "compiled, the call runs natively, and a resume function continues after it",
              "remove the call to get one graph"),
    BreakKind("inlined_call",
              "the break happened inside a user function being inlined: the whole call runs "
              "natively (as its own compiled function, with its own graphs and breaks)",
              "fix the break inside the callee; its own explain() shows where it is"),
]}

# Modules whose functions run natively (no graph): a call into them is "untraceable".
UNTRACEABLE_MODULES = ("numpy", "random", "math", "time", "os", "sys", "json", "pickle")
PRINT_LIKE = {print, builtins.input, logging.log, logging.debug, logging.info, logging.warning,
              logging.error, logging.critical, logging.exception}
TENSOR_TO_PYTHON = {"item", "tolist", "numpy", "__int__", "__float__", "__bool__", "__index__"}


def is_explicit_break(fn: Any) -> bool:
    """``torch._dynamo.graph_break`` (recognised by name: no need to import torch._dynamo)."""
    return getattr(fn, "__name__", None) == "graph_break" and \
        (getattr(fn, "__module__", None) or "").startswith("torch._dynamo")


def classify_call(fn: Any) -> str:
    """The break kind of calling ``fn`` natively (exercise 3.4 re-implements a simpler version).

    Order matters: a logging.Logger's bound method is a print-like call, and numpy's Python
    functions are untraceable although they are plain Python functions.
    """
    if is_explicit_break(fn):
        return "explicit"
    if fn in PRINT_LIKE or isinstance(getattr(fn, "__self__", None), logging.Logger) \
            or getattr(fn, "__module__", None) == "logging" and not isinstance(fn, type):
        return "print_or_logging"
    name, owner = getattr(fn, "__name__", None), getattr(fn, "__self__", None)
    if name in ("numpy", "__array__") and _is_tensor(owner):
        return "numpy"
    if name in TENSOR_TO_PYTHON and _is_tensor(owner):
        return "tensor_to_python"
    module = getattr(fn, "__module__", None) or type(owner).__module__
    if module and module.split(".")[0] == "numpy":
        return "numpy"
    if module and module.split(".")[0] in UNTRACEABLE_MODULES:
        return "untraceable_call"
    if isinstance(fn, types.FunctionType):  # user Python code: it was being inlined
        return "inlined_call"
    return "untraceable_call" if isinstance(fn, types.BuiltinFunctionType) \
        else "unsupported_construct"


def _is_tensor(value: Any) -> bool:
    return isinstance(value, torch.Tensor)


@dataclass
class GraphBreak:
    """One graph break as explain() and MINICOMPILE_LOGS=graph_breaks report it."""

    kind: str  # a key of BREAK_KINDS
    reason: str  # what exactly happened ("Tensor.item() ...", "print(...)")
    user_line: str | None  # "file.py:12 in f: n = x.item()"
    offset: int | None = None  # the bytecode offset of the instruction run natively
    code_name: str = ""  # the frame (function or resume function) that broke

    def __str__(self) -> str:
        kind = BREAK_KINDS[self.kind]
        lines = [f"Graph break: {self.reason}",
                 f"  Explanation: {kind.explanation}",
                 f"  Hint: {kind.hint}"]
        if self.user_line:
            lines.append(f"  User code: {self.user_line}")
        return "\n".join(lines)
