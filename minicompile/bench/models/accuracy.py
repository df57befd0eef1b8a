"""Is a compiled model's result right? (the role of ``same()`` in torch/_dynamo/utils.py, which
PyTorch's benchmark harness, benchmarks/dynamo/common.py, uses for every model).

float32 reorders sums when kernels fuse, so a compiled result may differ from eager's by more
than a fixed tolerance and still be as right. The judge is then a third run in float64: the
compiled result passes when its error against float64 is at most ``multiplier()`` times eager's
own error (plus a little): 2, or 3 for a tensor of fewer than 1000 elements, a 1x1
convolution's weight, a model given a loose tolerance, or a bfloat16 result, where rounding
noise dominates the error (the rule of ``same()``'s ``get_multiplier``); 8 for a result of 500
elements or fewer of a bfloat16 run, 10 for 10 or fewer (``same()``'s rule for the models named
in ``use_larger_multiplier_for_smaller_tensor``, applied to every such run here). bfloat16 autocast is
judged the same way, against the same float64 run: eager's own bfloat16 result is far from
exact (a batch norm's weight gradient summed over a million bfloat16 products), so agreeing
with it says little; being as close to the exact answer as eager is what counts. Only where
there is no float64 run (an op without a float64 kernel) does bfloat16 fall back to the cosine
similarity of the flattened results (``same()``'s ``cos_similarity``, opt-in there), once they
are not already within the tolerance: a result that is only rounding noise has no direction to
compare, so ``allclose`` comes first.

    ok, why = same(expected, actual, fp64=reference, tol=1e-3)
"""

from __future__ import annotations

import torch

MULTIPLIER = 2.0        # compiled float32 may be this many times less accurate than eager float32
NOISY_MULTIPLIER = 3.0  # ... or this many, where rounding noise dominates (see multiplier())
# a bfloat16 run's results of at most this many elements: the multiplier (see multiplier())
SMALL_RESULT_MULTIPLIERS = ((10, 10.0), (500, 8.0))
COSINE_MIN = 0.99       # bfloat16 without a float64 run: cosine similarity of the results


def rmse(ref: torch.Tensor, res: torch.Tensor) -> float:
    return (ref.double() - res.double()).pow(2).mean().sqrt().item()


def cosine(ref: torch.Tensor, res: torch.Tensor) -> float:
    a, b = ref.double().flatten(), res.double().flatten()
    if a.norm() == 0 and b.norm() == 0:
        return 1.0
    return torch.nn.functional.cosine_similarity(a, b, dim=0, eps=1e-12).item()


def multiplier(ref: torch.Tensor, tol: float, reduced_precision: bool = False) -> float:
    """How many times eager's error a compiled result may have: more where the error is mostly
    noise (few elements: a norm's weight gradient; a 1x1 kernel; a loose tolerance; bfloat16).

    ``reduced_precision``: the run computed in bfloat16 (autocast), whatever the dtype of the
    result (a float32 parameter's gradient). There a result of a few hundred values is one
    draw of rounding noise: mobilenetv2's first batch norm weight gradient (32 values, each
    summed over a whole feature map, behind a ReLU6 whose edges a rounding moves), the same
    compiled code, three input draws: 3.7x, 0.9x and 1.2x eager's error against float64."""
    if reduced_precision:
        for most, small in SMALL_RESULT_MULTIPLIERS:
            if ref.numel() <= most:
                return small
    noisy = (ref.numel() < 1000 or (ref.ndim == 4 and ref.shape[-1] == ref.shape[-2] == 1)
             or tol >= 2e-2 or ref.dtype in (torch.bfloat16, torch.float16))
    return NOISY_MULTIPLIER if noisy else MULTIPLIER


def same_tensor(ref: torch.Tensor, res: torch.Tensor, fp64: torch.Tensor | None, tol: float,
                use_cosine: bool, reduced_precision: bool = False) -> str | None:
    """None when ``res`` matches ``ref``; else why not. ``reduced_precision``: the results
    come from a bfloat16 (autocast) run (see ``multiplier``)."""
    if ref.shape != res.shape:
        return f"shape {tuple(res.shape)}, expected {tuple(ref.shape)}"
    if not ref.is_floating_point():
        return None if torch.equal(ref, res.to(ref.dtype)) else "integer values differ"
    ref, res = ref.detach().cpu(), res.detach().cpu()
    if torch.allclose(ref.double(), res.double(), rtol=tol, atol=tol, equal_nan=True):
        return None  # (first for bfloat16 too: a result that is only rounding noise)
    if use_cosine and fp64 is None:
        sim = cosine(ref, res)
        return None if sim >= COSINE_MIN else f"cosine similarity {sim:.4f} < {COSINE_MIN}"
    diff = (ref.double() - res.double()).abs().nan_to_num(float("inf")).max().item()
    if fp64 is None:
        return f"max abs difference {diff:.3g} > tol {tol:g}"
    fp64 = fp64.detach().cpu()
    res_error, ref_error = rmse(fp64, res), rmse(fp64, ref)
    if res_error <= multiplier(ref, tol, reduced_precision) * ref_error + tol / 10:  # as wrong as eager, not more
        return None
    return (f"max abs difference {diff:.3g}; rmse against float64 {res_error:.3g}, eager's "
            f"{ref_error:.3g}")


def same(expected: list[torch.Tensor], actual: list[torch.Tensor],
         fp64: list[torch.Tensor] | None = None, tol: float = 1e-3,
         use_cosine: bool = False, names: list[str] | None = None,
         reduced_precision: bool = False) -> tuple[bool, str]:
    """Compare two lists of results (outputs; or loss and gradients), tensor by tensor."""
    if len(expected) != len(actual):
        return False, f"{len(actual)} results, expected {len(expected)}"
    for i, (ref, res) in enumerate(zip(expected, actual)):
        why = same_tensor(ref, res, None if fp64 is None else fp64[i], tol, use_cosine,
                          reduced_precision)
        if why is not None:
            return False, f"{names[i] if names else f'result {i}'}: {why}"
    return True, ""
