"""The guard function that runs, compiled from its listing (real Dynamo builds a tree of C++
guard managers instead, torch/_dynamo/guards.py ``GuardManager``, whose nodes each fetch one
source once and look up nothing by name).

The listing (``MINICOMPILE_LOGS=guards``) is written for a person: ``L['self']._modules['0']``
again in every check that reads it, ``torch.float32`` spelt out. The function compiled from it
is the same expression with three rewrites:

- the TENSOR_MATCH lines are one call of torch's C++ tensor check, at the place of the last of
  them, with the lines themselves asked only where it says no (``guards.batch_tensor_matches``;
  the function's text: ``GuardFn.runs``); none of the three changes what it accepts:
- each value read from the frame more than once is read once (``read_sources_once``):
  ``(___read3 := L['self']._modules['0'])`` at its first read, ``___read3`` after;
- each attribute of ``torch`` the checks name (``torch.float32``, ``torch.nn.Parameter``,
  ``torch.is_grad_enabled``) is looked up once, when the function is built, and bound to a
  global (``___torch_float32``): a module attribute lookup costs about 20 ns, and a tiny MLP's
  guard names ``torch`` 40 times.
"""

from __future__ import annotations

import ast
import contextlib
from typing import Any

import torch


def compile_listing(source: str, name: str, names: dict[str, Any]) -> Any:
    """The function ``name`` defined by ``source``, with its reads made once and its ``torch``
    attributes bound; ``names`` are the globals the listing refers to."""
    bound: dict[str, Any] = {}
    tree = ast.fix_missing_locations(_BindTorch(bound).visit(_read_once(ast.parse(source))))
    namespace = {**names, **bound}
    exec(compile(tree, f"<{name}>", "exec"), namespace)
    return namespace[name]


class _BindTorch(ast.NodeTransformer):
    """``torch.a.b`` -> a global bound to its value, where that value cannot change: a function,
    a class or a dtype. A flag (``torch.backends.cudnn.enabled``) is still read at each call."""

    def __init__(self, bound: dict[str, Any]):
        self.bound = bound

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        parts, inner = [], node
        while isinstance(inner, ast.Attribute):
            parts.append(inner.attr)
            inner = inner.value
        is_torch = isinstance(inner, ast.Name) and inner.id == "torch"
        if not (is_torch and isinstance(node.ctx, ast.Load)):
            return self.generic_visit(node)
        value: Any = torch
        try:
            for attr in reversed(parts):
                value = getattr(value, attr)
        except AttributeError:  # left as written: it fails (or not) when it runs, as listed
            return node
        if not (callable(value) or isinstance(value, (type, torch.dtype))):
            return node  # a value that may change (a flag: torch.backends.cudnn.enabled)
        global_name = "___torch_" + "_".join(reversed(parts))
        self.bound[global_name] = value
        return ast.copy_location(ast.Name(global_name, ast.Load()), node)


class _ReadOnce(ast.NodeTransformer):
    """Binds each repeated read of the frame's values (``L['self']._modules['0']``: dict
    lookups and attribute reads from ``L`` or ``G``) to a local at its first evaluation and
    reuses the local afterwards. A read is bound only where it is sure to run once the check
    gets there (not inside an ``or``, a conditional or a comprehension), so a later use never
    finds the local unbound; evaluation order, and so the short-circuits, stay the listing's."""

    def __init__(self, counts: dict[tuple, int]):
        self.counts, self.bound, self.sure = counts, {}, True

    def _read(self, node: ast.expr, key: tuple) -> ast.expr:
        if key in self.bound:
            return ast.Name(self.bound[key], ast.Load())
        node = self.generic_visit(node)  # its own prefix first: L['self'] in L['self'].x
        if self.counts.get(key, 0) > 1 and self.sure:
            self.bound[key] = f"___read{len(self.bound)}"
            return ast.NamedExpr(ast.Name(self.bound[key], ast.Store()), node)
        return node

    def visit_Subscript(self, node: ast.expr) -> ast.expr:
        key = read_key(node)
        return self.generic_visit(node) if key is None else self._read(node, key)

    visit_Attribute = visit_Subscript

    @contextlib.contextmanager
    def _maybe(self, runs_maybe: bool = True):
        """Inside: code that runs only maybe, once the check gets there (binds nothing)."""
        sure, self.sure = self.sure, self.sure and not runs_maybe
        try:
            yield
        finally:
            self.sure = sure

    def _unsure(self, node: ast.AST) -> ast.AST:
        with self._maybe():
            return self.generic_visit(node)

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        first = self.visit(node.values[0])  # always evaluated; the others only maybe, except
        with self._maybe(not isinstance(node.op, ast.And)):  # in an `and` chain, where a later
            node.values = [first, *map(self.visit, node.values[1:])]  # operand runs only after
        return node  # those before it (and the whole chain runs only if it is itself sure)

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        node.left = self.visit(node.left)  # in a < b < c, c is compared only if a < b
        node.comparators[0] = self.visit(node.comparators[0])
        with self._maybe():
            node.comparators[1:] = list(map(self.visit, node.comparators[1:]))
        return node

    visit_IfExp = visit_ListComp = visit_SetComp = visit_DictComp = _unsure
    visit_GeneratorExp = visit_Lambda = _unsure


def read_key(node: ast.expr) -> tuple | None:
    """What ``node`` reads from the frame, as a hashable path (``('L', '[self]', '._modules')``)
    when it is ``L[...]``/``G[...]`` followed by constant subscripts and attribute reads only;
    else None. (A path, not ``ast.dump``: a guard listing of a large model holds thousands of
    reads, and dumping each nested read again made building its guard take seconds.)"""
    steps = []
    while isinstance(node, (ast.Subscript, ast.Attribute)):
        if isinstance(node, ast.Attribute):
            steps.append("." + node.attr)
        elif isinstance(node.slice, ast.Constant):
            steps.append(("[]", type(node.slice.value), node.slice.value))
        else:
            return None
        node = node.value
    if isinstance(node, ast.Name) and node.id in ("L", "G"):
        return (node.id, *reversed(steps))
    return None


def read_sources_once(source: str) -> str:
    """``source`` (the listing shown by ``MINICOMPILE_LOGS=guards``) with each value read from
    the frame more than once read once, as Python: the function that runs, before its
    ``torch`` attributes are bound. Real Dynamo gets the same from its guard tree, whose nodes
    each fetch one source (C++)."""
    return ast.unparse(_read_once(ast.parse(source)))


def _read_once(tree: ast.Module) -> ast.Module:
    counts: dict[tuple, int] = {}
    for node in ast.walk(tree):
        key = read_key(node) if isinstance(node, (ast.Subscript, ast.Attribute)) else None
        if key is not None:
            counts[key] = counts.get(key, 0) + 1
    return ast.fix_missing_locations(_ReadOnce(counts).visit(tree))
