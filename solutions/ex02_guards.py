"""Exercises for notebook 02: guards, recompilation and dynamic shapes.

Grade with ``bash course.sh grade -k 02``. Each function plugs into minicompile's real
guard and shape machinery; the checks run it on random tensors against the reference behaviour.
"""

from __future__ import annotations

import torch

from minicompile.dynamo.symbolic_shapes import ShapeEnv


def tensor_match_guard(name: str, t: torch.Tensor, dynamic_dims: set[int] = frozenset()) -> str:
    """Exercise 2.1: the TENSOR_MATCH guard for local ``name`` holding example tensor ``t``.

    Return one Python expression over ``L`` (the frame's locals, a dict) that is True exactly
    when ``L[name]`` is a torch.Tensor with ``t``'s dtype, device, requires_grad and number of
    dims, the same size in every dim that is not in ``dynamic_dims``, and (only when
    ``dynamic_dims`` is empty) the same strides. Example::

        tensor_match_guard("x", torch.randn(4, 3))
        # "isinstance(L['x'], torch.Tensor) and L['x'].dtype == torch.float32 and ..."
    """
    ### BEGIN SOLUTION 2.1: build the TENSOR_MATCH guard expression for L[name]
    x = f"L[{name!r}]"
    parts = [f"isinstance({x}, torch.Tensor)",
             f"{x}.dtype == {t.dtype}",
             f"{x}.device == torch.device({str(t.device)!r})",
             f"{x}.requires_grad == {t.requires_grad}",
             f"{x}.dim() == {t.dim()}"]
    parts += [f"{x}.size()[{d}] == {n}" for d, n in enumerate(t.shape) if d not in dynamic_dims]
    if not dynamic_dims:
        parts.append(f"{x}.stride() == {tuple(t.stride())}")
    return " and ".join(parts)
    ### END SOLUTION


def create_symbol(env: ShapeEnv, hint: int, source_name: str):
    """Exercise 2.2: duck sizing and 0/1 specialization (ShapeEnv.create_symbol).

    - a size of 0 or 1 is never symbolic: return ``hint`` itself (an int);
    - duck sizing: if a symbol was already created for this same ``hint``
      (``env.val_to_var[hint]``), reuse it, and append ``source_name`` to
      ``env.var_to_sources[symbol]`` (the ShapeEnv later guards that those sizes stay equal);
    - otherwise make a fresh one with ``env.new_symbol(hint, source_name)`` and remember it in
      ``env.val_to_var``.
    """
    ### BEGIN SOLUTION 2.2: 0/1 specialization, then reuse or create a symbol for hint
    if hint in (0, 1):
        return hint
    if hint in env.val_to_var:
        sym = env.val_to_var[hint]
        env.var_to_sources[sym].append(source_name)
        return sym
    sym = env.new_symbol(hint, source_name)
    env.val_to_var[hint] = sym
    return sym
    ### END SOLUTION


def evaluate_and_guard(relation, var_to_val: dict):
    """Exercise 2.3: turn a symbolic comparison into a guard (ShapeEnv.evaluate_expr).

    ``relation`` is a SymPy comparison such as ``2*s0 < 16``; ``var_to_val`` maps each symbol to
    its hint (``{s0: 8}``). Return ``(value, guard)``: the bool the comparison has for the hints,
    and the relation that must hold for that answer to stay right: ``relation`` itself when it is
    True, its negation when it is False (``2*s0 >= 16``). SymPy helps: ``expr.xreplace(mapping)``
    substitutes values, and a relation's ``.negated`` is its negation.
    """
    ### BEGIN SOLUTION 2.3: evaluate with the hints, return the relation that keeps the answer
    value = bool(relation.xreplace(var_to_val))
    return value, (relation if value else relation.negated)
    ### END SOLUTION


def tensor_mismatch_reason(name: str, spec, value) -> str | None:
    """Exercise 2.4: the recompile reason of a failed TENSOR_MATCH (guards.GUARD_REASONS).

    ``spec`` is a ``minicompile.dynamo.guards.TensorSpec`` (type, dtype, device, shape, stride,
    requires_grad; a ``None`` size or stride is dynamic and never a mismatch). Return None when
    ``value`` matches, else the first difference, checked in this order and worded exactly so
    (``T`` stands for ``f"tensor '{name}'"``):

    - not a tensor of exactly ``spec.type``: ``T type mismatch. expected Tensor, actual list``
      (the ``__name__`` of the types);
    - ``T dtype mismatch. expected torch.float32, actual torch.float64``, then the same for
      ``device`` (compare ``str(...)`` of the devices), ``requires_grad`` and ``rank``
      (``len(spec.shape)`` against ``value.dim()``);
    - ``T size mismatch at index 0. expected 4, actual 8``, then the same for ``stride``.
    """
    ### BEGIN SOLUTION 2.4: compare type, dtype, device, requires_grad, rank, sizes, strides
    t = f"tensor '{name}'"
    if not isinstance(value, torch.Tensor) or type(value) is not spec.type:
        return f"{t} type mismatch. expected {spec.type.__name__}, actual {type(value).__name__}"
    for what, expected, actual in (("dtype", spec.dtype, value.dtype),
                                   ("device", str(spec.device), str(value.device)),
                                   ("requires_grad", spec.requires_grad, value.requires_grad),
                                   ("rank", len(spec.shape), value.dim())):
        if expected != actual:
            return f"{t} {what} mismatch. expected {expected}, actual {actual}"
    for what, dims, actual in (("size", spec.shape, value.shape),
                               ("stride", spec.stride, value.stride())):
        for i, (e, a) in enumerate(zip(dims, actual)):
            if e is not None and e != a:
                return f"{t} {what} mismatch at index {i}. expected {e}, actual {a}"
    return None
    ### END SOLUTION
