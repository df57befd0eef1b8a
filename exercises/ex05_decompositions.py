"""Exercises for notebook 05: decompositions, from compound ATen ops to core ATen.

Grade with ``bash course.sh grade -k 05``. Write each decomposition with ``aten.*``
overloads from the core set (``aten.mul.Tensor``, ``aten.add.Tensor``, ``aten.erf.default``,
``aten.tanh.default``, ``aten.exp.default``, ``aten.log.default``, ``aten.amax.default``,
``aten.sum.dim_IntList``, ``aten.sub.Tensor``, ``aten.div.Tensor``, ``aten.rsqrt.default``,
``aten.pow.Tensor_Scalar``, ...). A Python number is fine as the second operand of
``aten.mul.Tensor`` / ``aten.add.Tensor``. The checks compare with eager PyTorch on random
inputs and trace your function to make sure the compound op is really gone.
"""

from __future__ import annotations

import math

import torch

aten = torch.ops.aten


def gelu(x: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    """Exercise 5.1: ``aten.gelu.default`` in core ATen ops.

    approximate="none":  0.5 * x * (1 + erf(x / sqrt(2)))
    approximate="tanh":  0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x**3)))
    """
    raise NotImplementedError('Exercise 5.1: the erf and tanh formulas of GELU with aten ops (roughly 7 lines)')


def log_softmax(x: torch.Tensor, dim: int, half_to_float: bool = False) -> torch.Tensor:
    """Exercise 5.2: ``aten._log_softmax.default``, numerically stable.

    log_softmax(x) = (x - m) - log(sum(exp(x - m)))  with m = max of x along ``dim``
    (keepdim=True). Subtracting m keeps exp from overflowing: the check uses logits near 1000.
    """
    raise NotImplementedError('Exercise 5.2: subtract the row max, then subtract the log of the sum of exps (roughly 3 lines)')


def native_layer_norm(x: torch.Tensor, normalized_shape: list[int], weight, bias, eps: float):
    """Exercise 5.3: ``aten.native_layer_norm.default`` -> ``(out, mean, rstd)``.

    Over the last ``len(normalized_shape)`` dims (keepdim=True): mean = sum(x) / N,
    var = sum((x - mean)^2) / N (biased), rstd = rsqrt(var + eps),
    out = (x - mean) * rstd, then ``* weight`` and ``+ bias`` when they are not None.
    mean and rstd keep the reduced dims as size 1 (the shape ATen returns).
    """
    raise NotImplementedError('Exercise 5.3: mean and biased variance over the last dims, then normalize (roughly 12 lines)')
