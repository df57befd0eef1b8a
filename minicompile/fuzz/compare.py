"""Is a compiled result the eager result? Tolerances suited to the dtype, and a float64 referee.

Exact dtypes (int64, bool) must be equal. Floating outputs must be close at the dtype's
tolerance (``TOLERANCES``). Fused kernels round differently from eager's one-op-at-a-time
(a reduction sums in another order, float16 math runs in float32 inside a kernel), so when a
floating result is not close, the program is run once more in eager float64 and the two results
are judged against it, as Inductor's own test harness does (``torch._dynamo.utils.same`` with
``fp64_ref``): the compiled result is wrong only if it is further from the float64 result than
eager is (``ERROR_MULTIPLIER`` times as far, plus the tolerance). Eager's error is one sample of float32 rounding and
may be small by luck, so eager also runs at three ``neighbours``, points where each input element
moves up, down or not at all by about one unit in the last place, and each is compared with
float64 at that same point: the largest of these errors is eager's. The referee judges exact
outputs too, when they come from comparing floats: compiled may disagree with eager only where
eager disagrees with float64.

Where rounding decides the value, not the program, an element is ill-conditioned and not judged:
where eager, here or at a neighbour, is ``ILL_CONDITIONED`` tolerances from float64 (or finite
where float64 is not, or the other way round), or where float64 moves that far at a neighbour.
The gradient of ``std`` over equal elements is 0/0, and float32 gives whatever finite value (or
nan) its summation order leaves. The other elements are judged as above, against the errors
eager makes on them alone (a single ill-conditioned element must not widen the bound for the
rest).
"""

from __future__ import annotations

from typing import Sequence

import torch

TOLERANCES = {  # dtype -> (rtol, atol)
    torch.float32: (1e-4, 1e-5),
    torch.float64: (1e-7, 1e-7),  # torch.testing's default for float64
    torch.float16: (1e-2, 1e-2),
    torch.bfloat16: (5e-2, 5e-2),
}


def mismatch(expected: torch.Tensor, actual: torch.Tensor,
             reference: torch.Tensor | None = None,
             neighbours: Sequence[tuple[torch.Tensor, torch.Tensor]] = ()) -> str | None:
    """None if ``actual`` is ``expected`` at the dtype's tolerance, else what differs.
    ``reference``: the float64 result, the referee (None: no referee, ``expected`` decides);
    ``neighbours``: (eager, float64) results at points one unit in the last place away."""
    if not isinstance(actual, torch.Tensor):
        return f"expected a tensor, got {type(actual).__name__}"
    for what, e, a in (("shape", expected.shape, actual.shape), ("dtype", expected.dtype,
                                                                 actual.dtype)):
        if e != a:
            return f"{what}: expected {e}, got {a}"
    e, a = expected.detach().cpu().resolve_conj(), actual.detach().cpu().resolve_conj()
    if e.is_complex():  # the real and imaginary parts, each a float at the float's tolerance
        return mismatch(*_as_real(e, a, reference), [_as_real(*pair) for pair in neighbours])
    if e.dtype not in TOLERANCES:
        if torch.equal(e, a):
            return None
        wrong = int((e != a).sum())
        if reference is not None and _exact_within_referee(e, a, reference):
            return None
        return f"{wrong} of {e.numel()} elements differ (first at {_first(e != a)})"
    rtol, atol = TOLERANCES[e.dtype]
    close = torch.isclose(a.double(), e.double(), rtol=rtol, atol=atol, equal_nan=True)
    if bool(close.all()):
        return None
    if reference is not None and _float_within_referee(e, a, reference, atol, neighbours):
        return None
    diff = (a.double() - e.double()).abs().nan_to_num(float("inf"))
    return (f"{int((~close).sum())} of {e.numel()} elements differ; max abs diff "
            f"{float(diff.max()):.3g} at {_first(~close)} (rtol {rtol}, atol {atol})")


def _as_real(*tensors: torch.Tensor | None) -> list[torch.Tensor | None]:
    """Complex tensors as real ones with a last dim of 2 (``view_as_real``); others as they are."""
    return [torch.view_as_real(t.detach().cpu().resolve_conj()) if t is not None and t.is_complex()
            else t for t in tensors]


# Compiled may be this many times further from float64 than eager. A kernel may compute sin, tanh
# ... with another implementation than ATen's (glibc's vector math is specified within 4 ulp,
# ATen's SLEEF within 1), and where a single rounding dominates the error (the gradient through
# 1 - tanh(v)^2 amplifies the rounding of tanh(v) a hundredfold), its error is that ratio times
# eager's; PyTorch's harness allows 2x on the root-mean-square error, which one bad element
# barely moves. A formula error is orders of magnitude beyond either.
ERROR_MULTIPLIER = 4

# eager this many tolerances away from float64: rounding, not the program, decides the value
ILL_CONDITIONED = 100


def _distance(x: torch.Tensor, ref: torch.Tensor) -> torch.Tensor:
    """``|x - ref|`` per element: 0 where both are nan or the same infinity, inf where only one
    of them is nan."""
    d = (x - ref).abs().nan_to_num(float("inf"))
    d[(x.isnan() & ref.isnan()) | ((x == ref) & x.isinf())] = 0.0
    return d


def _float_within_referee(e: torch.Tensor, a: torch.Tensor, ref: torch.Tensor, atol: float,
                          neighbours: Sequence[tuple[torch.Tensor, torch.Tensor]] = ()) -> bool:
    ref = ref.detach().cpu().double()
    if ref.shape != e.shape:
        return False
    rtol = TOLERANCES[e.dtype][0]
    e, a = e.double(), a.double()
    far = ILL_CONDITIONED * (atol + rtol * ref.abs().nan_to_num(0.0))
    eager_errors = [_distance(e, ref)]  # eager's rounding error, here and at the neighbours
    ill = eager_errors[0] > far  # eager's own error is huge
    for low, high in neighbours:
        if low is None or high is None or low.shape != ref.shape or high.shape != ref.shape:
            continue
        high = high.detach().cpu().double()
        eager_errors.append(_distance(low.detach().cpu().double(), high))
        ill |= (_distance(high, ref) > far) | (eager_errors[-1] > far)  # float64 is unstable
    if bool(ill.all()):
        return True  # every element is decided by rounding
    well = ~ill
    eager_error = max(float(error[well].max()) for error in eager_errors)
    return float(_distance(a, ref)[well].max()) <= ERROR_MULTIPLIER * eager_error + atol


def _exact_within_referee(e: torch.Tensor, a: torch.Tensor, ref: torch.Tensor) -> bool:
    """Compiled may disagree with eager only where eager disagrees with float64."""
    ref = ref.detach().cpu()
    if ref.shape != e.shape or ref.dtype.is_floating_point != e.dtype.is_floating_point:
        return False
    ill_conditioned = e != ref.to(e.dtype)
    return bool(((e != a) <= ill_conditioned).all())


def _first(mask: torch.Tensor) -> tuple[int, ...]:
    return tuple(int(i) for i in mask.nonzero()[0]) if mask.dim() else ()


def mismatches(what: str, expected: Sequence, actual: Sequence,
               references: Sequence | None = None,
               neighbours: Sequence[tuple[Sequence, Sequence]] = ()) -> list[str]:
    """Compare two lists of tensors (None where there is no tensor, as an unused gradient);
    ``references``: the float64 results; ``neighbours``: (eager, float64) result lists at
    neighbouring points."""
    if len(expected) != len(actual):
        return [f"{what}: expected {len(expected)} values, got {len(actual)}"]
    problems = []
    for i, (e, a) in enumerate(zip(expected, actual)):
        ref = references[i] if references is not None and i < len(references) else None
        near = [(low[i], high[i]) for low, high in neighbours if i < min(len(low), len(high))]
        if e is None or a is None:
            if (e is None) != (a is None) and not _is_zero(e if a is None else a):
                problems.append(f"{what}[{i}]: expected {e is not None and 'a tensor' or None}, "
                                f"got {a is not None and 'a tensor' or None}")
            continue
        problem = mismatch(e, a, ref, near)
        if problem:
            problems.append(f"{what}[{i}]: {problem}")
    return problems


def _is_zero(t: torch.Tensor) -> bool:
    """An unused input's gradient is None in one run and zeros in another: both mean zero."""
    return not bool(t.detach().ne(0).any())
