"""A small pattern matcher for ATen FX graphs (mirrors torch/_inductor/pattern_matcher.py, and
tinygrad's ``UPat``/``PatternMatcher``, which keep rewrites as a readable table).

A pattern is a tree of :class:`Op` calls whose leaves are :class:`Var` (binds anything: a node or
a Python value) or literals (``0``, ``1``, ``2``: match a scalar argument equal to them)::

    sin, pow_ = Op(aten.sin.default), Op(aten.pow.Tensor_Scalar)
    pattern = pow_(sin(X), 2)          # matches  pow(sin(x), 2)  and binds x

A replacement is ``lambda g, **bindings: node``; ``g(aten.mul.Tensor, x, y)`` emits a new node.
:func:`rewrite` applies a table of ``(pattern, replacement)`` rows until nothing matches, and
accepts a rewrite only when :func:`forwardable` says every use of the old value may read the new
one: the same shape, dtype and strides (so ``x * 1 -> x`` can never silently turn an int tensor
times ``1.0`` into an int, or drop a broadcast), and no aliasing a caller could observe (so
``x[:, 0] * 1`` returned to the caller stays a fresh tensor, not a view of the caller's ``x``).
No-op removal (``noop.py``) forwards values under the same rule.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Callable

import torch
import torch.fx

from .dce import eliminate_dead_code

aten = torch.ops.aten


@dataclass(frozen=True)
class Var:
    """Binds whatever sits at this position; a second use of the same name must be equal."""

    name: str

    def __repr__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Op:
    """A call to one of ``targets``; ``commutative`` ops also try their two arguments swapped."""

    targets: tuple
    args: tuple = ()
    commutative: bool = False

    def __init__(self, *targets, args: tuple = (), commutative: bool = False):
        object.__setattr__(self, "targets", targets)
        object.__setattr__(self, "args", args)
        object.__setattr__(self, "commutative", commutative)

    def __call__(self, *args) -> "Op":
        return Op(*self.targets, args=args, commutative=self.commutative)

    def __repr__(self) -> str:
        name = str(self.targets[0]).removeprefix("aten.").split(".")[0]
        return f"{name}({', '.join(map(repr, self.args))})"


Replacement = Callable[..., "torch.fx.Node | None"]


def match(pattern: Any, value: Any, bindings: dict[str, Any]) -> bool:
    """Match ``pattern`` against ``value`` (a node or a Python value), extending ``bindings``."""
    if isinstance(pattern, Var):
        if pattern.name in bindings:
            return bindings[pattern.name] is value or _same_value(bindings[pattern.name], value)
        bindings[pattern.name] = value
        return True
    if isinstance(pattern, Op):
        if not (isinstance(value, torch.fx.Node) and value.op == "call_function"
                and value.target in pattern.targets):
            return False
        if not _rest_is_default(value, len(pattern.args)):
            return False
        orders = [pattern.args]
        if pattern.commutative and len(pattern.args) == 2:
            orders.append(pattern.args[::-1])
        for args in orders:
            trial = dict(bindings)
            if all(match(p, v, trial) for p, v in zip(args, value.args)):
                bindings.update(trial)
                return True
        return False
    # A literal: a Python scalar argument equal to it (a bool is not a number here).
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and value == pattern)


def _same_value(a: Any, b: Any) -> bool:
    return not isinstance(a, torch.fx.Node) and not isinstance(b, torch.fx.Node) and a == b


def _rest_is_default(node: torch.fx.Node, n_matched: int) -> bool:
    """Arguments the pattern does not name must hold their defaults (``add(x, y, alpha=2)`` is
    not ``add(x, y)``)."""
    if len(node.args) < n_matched:
        return False
    schema = getattr(node.target, "_schema", None)
    if schema is None:
        return len(node.args) == n_matched and not node.kwargs
    params = schema.arguments
    extra = list(zip(params[n_matched:], node.args[n_matched:]))
    extra += [(p, node.kwargs[p.name]) for p in params if p.name in node.kwargs]
    return all(p.has_default_value() and p.default_value == v for p, v in extra)


class Emitter:
    """``g(target, *args)`` inserts a node before the one being rewritten and infers its meta."""

    def __init__(self, graph: torch.fx.Graph, anchor: torch.fx.Node):
        self.graph, self.anchor, self.created = graph, anchor, []

    def __call__(self, target: Callable, *args: Any, **kwargs: Any) -> torch.fx.Node:
        with self.graph.inserting_before(self.anchor):
            node = self.graph.call_function(target, args, kwargs)
        self.created.append(node)
        try:  # the new node's value (shape, dtype) from its inputs' values, without real data
            node.meta["val"] = _propagate(target, args, kwargs)
        except Exception:  # no value to propagate: the shape check below refuses the rewrite
            pass
        return node

    def undo(self) -> None:
        for node in reversed(self.created):
            if not node.users:
                self.graph.erase_node(node)


def _propagate(target: Callable, args: tuple, kwargs: dict) -> Any:
    """Run ``target`` on the inputs' ``meta["val"]``: on meta tensors when shapes are concrete
    (make_fx's values may come from different fake modes), else under their fake mode."""
    vals = torch.fx.node.map_arg((args, kwargs), lambda n: n.meta["val"])
    leaves = [v for v in torch.utils._pytree.tree_leaves(vals) if isinstance(v, torch.Tensor)]
    if all(isinstance(s, int) for t in leaves for s in t.shape):
        to_meta = lambda v: (torch.empty_strided(v.shape, v.stride(), dtype=v.dtype, device="meta")  # noqa: E731
                             if isinstance(v, torch.Tensor) else v)
        margs, mkwargs = torch.utils._pytree.tree_map(to_meta, vals)
        out = target(*margs, **mkwargs)
        device = leaves[0].device if leaves else torch.device("cpu")
        return torch.empty_strided(out.shape, out.stride(), dtype=out.dtype, device=device)
    with torch._guards.detect_fake_mode(vals) or contextlib.nullcontext():
        return target(*vals[0], **vals[1])


def tensor_val(node: Any) -> torch.Tensor | None:
    """The tensor a node's ``meta["val"]`` holds (None for a Python value or no value)."""
    val = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    return val if isinstance(val, torch.Tensor) else None


def same_meta(old: torch.fx.Node, new: Any) -> bool:
    a, b = tensor_val(old), tensor_val(new)
    if a is None or b is None:
        return False
    return a.shape == b.shape and a.dtype == b.dtype and a.device == b.device


def _is_view(node: torch.fx.Node) -> bool:
    return node.op == "call_function" and getattr(node.target, "is_view", False)


# ops that read a tensor's place in its storage (its storage offset), which a copy does not keep:
# functionalisation scatters a write through a view of an offset input into a clone of it
_READS_STORAGE = {aten.as_strided.default, aten.as_strided_scatter.default,
                  aten.as_strided_copy.default}


def _mutates(node: torch.fx.Node) -> bool:
    schema = getattr(node.target, "_schema", None)
    return schema is not None and schema.is_mutable


def _alias_users(node: torch.fx.Node) -> list[torch.fx.Node]:
    """The users of ``node`` and of every view of it (views of views too): whatever reads the
    same memory. A view's user sees ``node``'s storage, so it counts as a user of ``node``."""
    users, todo = [], list(node.users)
    while todo:
        user = todo.pop()
        users.append(user)
        if _is_view(user):
            todo.extend(user.users)
    return users


def forwardable(old: torch.fx.Node, new: object) -> bool:
    """May every use of ``old`` read ``new`` instead? (The rule for every pass that forwards a
    value: :func:`rewrite`'s ``x * 1 -> x`` as much as no-op removal's ``clone(x) -> x``.)

    An output that was a fresh tensor must stay one: ``x[:, 0] * 1`` returned as ``x[:, 0]``
    would be a view of the caller's ``x`` (a write into the result writes into ``x``), and
    ``x[:, :1].expand(4, 6) * 1`` returned as the expand would have stride 0. Uses are followed through views: ``x.clone().reshape(-1)`` returned to the caller is an
    output of the clone as much as ``x.clone()`` is, and forwarding the clone would hand the
    caller a view of ``x`` (which sees every later write into ``x``, including the copy back of
    an in-place update on the input).
    """
    a, b = tensor_val(old), tensor_val(new)
    if a is None or b is None or (a.shape, a.dtype, a.device) != (b.shape, b.dtype, b.device):
        return False
    if a.stride() != b.stride():  # a caller (or a stride-reading op) would see other strides
        return False
    old_users, new_users = _alias_users(old), _alias_users(new)
    if any(_mutates(u) for u in old_users) or any(_mutates(u) for u in new_users):
        return False  # a write into one would now land in the other
    if any(u.target in _READS_STORAGE for u in old_users):
        return False  # it would see the other tensor's storage offset
    if any(u.op == "output" for u in old_users):  # the caller gets a fresh tensor today:
        fresh = new.op == "call_function" and not _is_view(new)  # not an input, nor a view
        return fresh and not any(u.op == "output" for u in new_users)  # nor another output
    return True


def rewrite(gm: torch.fx.GraphModule, rules: list[tuple[Op, Replacement]],
            max_rounds: int = 10) -> list[tuple[str, str]]:
    """Apply ``rules`` until none matches; return ``(node name, rule)`` for each rewrite done."""
    done: list[tuple[str, str]] = []
    for _ in range(max_rounds):
        changed = False
        for node in list(gm.graph.nodes):
            if node.op != "call_function" or not node.users:
                continue  # a node an earlier rewrite left unused is about to be removed
            for pattern, replace in rules:
                bindings: dict[str, Any] = {}
                if not match(pattern, node, bindings):
                    continue
                g = Emitter(gm.graph, node)
                new = replace(g, **bindings)
                if new is None or not forwardable(node, new):
                    g.undo()
                    continue
                node.replace_all_uses_with(new)
                done.append((node.name, repr(pattern)))
                changed = True
                break
        if not changed:
            break
        eliminate_dead_code(gm)
    gm.recompile()
    return done
