"""Helpers that generated Triton kernels call (mirrors torch/_inductor/runtime/triton_helpers.py).

- reductions as eager computes them: ``maximum``/``max2`` propagate NaN like ``torch.max``
  (``tl.maximum`` and ``tl.max`` do not), ``argmax``/``argmin`` return the first index among
  ties (and of the first NaN), ``welford`` merges per-lane (mean, m2, weight) summaries;
- Python's integer semantics where Triton follows C: ``floordiv`` rounds down and ``remainder``
  takes the divisor's sign (Triton's ``//`` and ``%`` truncate, as in C); ``fmod`` picks the
  float or integer form by dtype;
- ``libdevice``: the CUDA math library on a GPU (``libdevice.tanh``, as Inductor writes it).
  Triton's interpreter cannot call it, so on CPU tensors the same names are NumPy functions
  applied to the interpreter's arrays.
"""

from __future__ import annotations

import math
import os

import numpy as np
import triton
import triton.language as tl
from triton.runtime.interpreter import TensorHandle

INTERPRET = os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


# A branch on a dtype is a static ``if``/``else``: Triton's compiler, unlike Python, goes on
# compiling the statements after a ``return`` inside a static ``if`` (the integer path of ``pow``
# on floats failed to compile on a GPU, and ran fine in the interpreter).

# --- reductions ---------------------------------------------------------------------------

@triton.jit
def last_lane(x, is_last):
    """Each row's lane where ``is_last`` holds, as a (rows, 1) column: a looped scan's block
    total (``tl.reduce`` would need a commutative combine; a masked sum of one lane does not)."""
    return tl.sum(tl.where(is_last, x, 0), 1)[:, None]


@triton.jit
def maximum(a, b):
    """``max`` with NaN winning, as ``torch.maximum`` and ``torch.amax``."""
    return tl.where((a > b) | (a != a), a, b)


@triton.jit
def minimum(a, b):
    return tl.where((a < b) | (a != a), a, b)


@triton.jit
def max2(a, dim):
    """``tl.max`` skips NaN (on a GPU and in the interpreter alike); a row holding one is NaN.
    Triton reduces a bool (int1) as an int32: the result is made a bool again (``~`` of an int32
    1 is -2, which is true)."""
    if a.dtype.is_floating():
        has_nan = tl.max((a != a).to(tl.int8), dim) != 0
        return tl.where(has_nan, float("nan"), tl.max(a, dim)).to(a.dtype)
    else:
        return tl.max(a, dim).to(a.dtype)


@triton.jit
def min2(a, dim):
    if a.dtype.is_floating():
        has_nan = tl.max((a != a).to(tl.int8), dim) != 0
        return tl.where(has_nan, float("nan"), tl.min(a, dim)).to(a.dtype)
    else:
        return tl.min(a, dim).to(a.dtype)


@triton.jit
def _prod_combine(a, b):
    return a * b


@triton.jit
def prod(a, dim):
    return tl.reduce(a, dim, _prod_combine)


@triton.jit
def argmax_combine(a_value, a_index, b_value, b_index):
    """Keep the larger value; among equal values (or two NaNs) the smaller index."""
    a_nan, b_nan = a_value != a_value, b_value != b_value
    greater = (a_value > b_value) | (a_nan & ~b_nan)
    equal = (a_value == b_value) | (a_nan & b_nan)
    pick_a = greater | (equal & (a_index < b_index))
    return tl.where(pick_a, a_value, b_value), tl.where(pick_a, a_index, b_index)


@triton.jit
def argmin_combine(a_value, a_index, b_value, b_index):
    a_nan, b_nan = a_value != a_value, b_value != b_value
    less = (a_value < b_value) | (a_nan & ~b_nan)
    equal = (a_value == b_value) | (a_nan & b_nan)
    pick_a = less | (equal & (a_index < b_index))
    return tl.where(pick_a, a_value, b_value), tl.where(pick_a, a_index, b_index)


@triton.jit
def argmax(value, index, dim):
    """The smallest index holding the maximum (or the first NaN), without a combine function:
    a max, then a min over the indices that hold it (fast on a GPU and in the interpreter,
    which runs a combine function once per element)."""
    best = max2(value, dim)
    if value.dtype.is_floating():
        hit = (value == tl.expand_dims(best, dim)) | ((value != value) & tl.expand_dims(best != best, dim))
    else:
        hit = value == tl.expand_dims(best, dim)
    return tl.min(tl.where(hit, index, 2147483647), dim)


@triton.jit
def argmin(value, index, dim):
    best = min2(value, dim)
    if value.dtype.is_floating():
        hit = (value == tl.expand_dims(best, dim)) | ((value != value) & tl.expand_dims(best != best, dim))
    else:
        hit = value == tl.expand_dims(best, dim)
    return tl.min(tl.where(hit, index, 2147483647), dim)


@triton.jit
def welford(mean, m2, weight, dim):
    """Merge the lanes' summaries along ``dim`` at once: the combined mean is the weighted mean,
    and m2 gains each lane's weight times its squared distance from it (Chan et al.)."""
    total = tl.sum(weight, dim)
    safe = tl.where(total == 0.0, 1.0, total)
    row_mean = tl.sum(mean * weight, dim) / safe
    delta = mean - tl.expand_dims(row_mean, dim)
    return row_mean, tl.sum(m2 + weight * delta * delta, dim), total


@triton.jit
def welford_reduce(value, mean, m2, weight):
    """Absorb one more element per lane into a running (mean, m2, weight)."""
    delta = value - mean
    weight = weight + 1
    mean = mean + delta / weight
    return mean, m2 + delta * (value - mean), weight


# --- Python's integer division --------------------------------------------------------------

@triton.jit
def floordiv(a, b):
    if a.dtype.is_floating() or b.dtype.is_floating():
        return tl.floor(a / b)
    else:
        quotient = a // b  # truncated, as in C
        return quotient - ((a % b != 0) & ((a < 0) != (b < 0))).to(quotient.dtype)


@triton.jit
def remainder(a, b):
    r = a % b  # the dividend's sign, as C's fmod
    return tl.where((r != 0) & ((r < 0) != (b < 0)), r + b, r)


@triton.jit
def fmod(a, b):
    """C's ``fmod``: the dividend's sign. libdevice has it for floats only (an int64 call fails
    to compile on a GPU); Triton's ``%`` on integers already truncates, as C's."""
    if a.dtype.is_floating() or b.dtype.is_floating():
        return libdevice.fmod(a, b)
    else:
        return a % b


@triton.jit
def pow(a, b):
    """``torch.pow``: libdevice's for floats; exact for integers, as ATen's powi (libdevice has
    no integer pow, and the interpreter's numpy refuses negative integer exponents): square and
    multiply over the exponent's bits, and for a negative exponent 0, except 1 for a base of 1
    and 1 or -1 by the exponent's parity for -1."""
    if a.dtype.is_floating() or b.dtype.is_floating():
        return libdevice.pow(a, b)
    else:
        base = a + b * 0  # (both broadcast to one shape)
        exponent = tl.where(b < 0, 0, b + a * 0)
        result = base * 0 + 1
        for _ in tl.static_range(63):
            result = tl.where((exponent & 1) != 0, result * base, result)
            base = base * base
            exponent = exponent >> 1
        if a.dtype.is_int_unsigned():  # no negative exponent, and no -1 to compare with
            return result
        else:
            negative = tl.where(a == 1, 1, tl.where(a == -1, 1 - 2 * (b & 1), 0))
            return tl.where(b < 0, negative.to(result.dtype), result)


@triton.jit
def index_floordiv(a, b):
    """Python's ``a // b`` for an index ``a`` of either sign and a positive ``b`` (a constant or a
    size): truncation rounded up where ``a`` is negative and not a multiple."""
    q = a // b
    return q - (q * b > a).to(q.dtype)


@triton.jit
def index_remainder(a, b):
    """Python's ``a % b`` (in [0, b)) for an index ``a`` of either sign and a positive ``b``."""
    return a - index_floordiv(a, b) * b


@triton.jit
def truncdiv(a, b):
    if a.dtype.is_floating() or b.dtype.is_floating():
        q = a / b
        return tl.where(q < 0, tl.ceil(q), tl.floor(q))
    else:
        return a // b


@triton.jit
def sign(x):
    # float constants for a float x: Triton 3.6 computes the all-integer select wrongly for a
    # float converted from a float16/bfloat16 load (half of the signs flipped on an H100)
    if x.dtype.is_floating():
        return tl.where(x > 0, 1.0, tl.where(x < 0, -1.0, 0.0)).to(x.dtype)
    else:
        return tl.where(x > 0, 1, tl.where(x < 0, -1, 0)).to(x.dtype)


# --- rounding to bfloat16 -------------------------------------------------------------------

@triton.jit
def _round_to_bfloat16_bits(x):
    """The float32 ``x`` rounded to the nearest bfloat16 (ties to even), as a float32: add
    half of the 16 dropped bits' range (minus one where the kept part is even), clear them."""
    bits = x.to(tl.uint32, bitcast=True)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return tl.where(x != x, x, bits.to(tl.float32, bitcast=True))  # a NaN stays a NaN


@triton.jit
def _round_to_bfloat16_cast(x):
    return x.to(tl.bfloat16).to(tl.float32)  # a GPU's conversion rounds to nearest even


# Triton's interpreter truncates a cast to bfloat16 (it drops the low bits), so a value rounded
# at every op drifts from eager's; there the rounding is done on the bits.
round_to_bfloat16 = _round_to_bfloat16_bits if INTERPRET else _round_to_bfloat16_cast


# --- run-time checks (inductor/checks.py) ----------------------------------------------------

class CheckFailed(Exception):
    """A kernel's check failed under the interpreter: its site number, the value and the size
    (the launcher raises eager's error from them)."""

    def __init__(self, site: int, value: int, size: int):
        super().__init__(f"check {site} failed: {value} outside a dimension of {size}")
        self.site, self.value, self.size = site, value, size


@triton.jit
def _check_index_device(index, in_bounds, mask, size, site: tl.constexpr):
    """On a GPU, a device assert (compiled in by Triton's debug flag, as Inductor does)."""
    tl.device_assert(in_bounds | ~mask, "index out of bounds")


def _data(x):
    return np.asarray(x.handle.data) if isinstance(x, tl.core.tensor) else \
        np.asarray(getattr(x, "value", x))


def _scalar(x) -> int:
    """A kernel's scalar argument as an int: a size parameter (``s0``) arrives as a tensor of
    shape (1,) under the interpreter, a literal as a 0-d one."""
    return int(_data(x).reshape(-1)[0])


def _check_index_interpreted(index, in_bounds, mask, size, site):
    """Under the interpreter, which ignores device asserts: the first failing lane raises."""
    index, in_bounds, mask = np.broadcast_arrays(_data(index), _data(in_bounds), _data(mask))
    bad = (in_bounds == 0) & (mask != 0)
    if bad.any():
        raise CheckFailed(_scalar(site), int(index[bad].flat[0]), _scalar(size))


@triton.jit
def _check_divisor_device(divisor, mask, site: tl.constexpr):
    tl.device_assert((divisor != 0) | ~mask, "integer division by zero")


def _check_divisor_interpreted(divisor, mask, site):
    divisor, mask = np.broadcast_arrays(_data(divisor), _data(mask))
    if ((divisor == 0) & (mask != 0)).any():
        raise CheckFailed(_scalar(site), 0, 0)


check_index = _check_index_interpreted if INTERPRET else _check_index_device
check_divisor = _check_divisor_interpreted if INTERPRET else _check_divisor_device


# --- libdevice ------------------------------------------------------------------------------

def _lgamma(x: float) -> float:
    """``math.lgamma``, but +inf where it raises: at its poles (0 and the negative integers)
    and past float64's range, where eager and libdevice give +inf."""
    try:
        return math.lgamma(x)
    except (ValueError, OverflowError):
        return math.inf


class _NumpyLibdevice:
    """``libdevice.<name>`` under Triton's interpreter: NumPy on the interpreter's arrays."""

    FUNCS = {
        "tanh": np.tanh, "expm1": np.expm1, "log1p": np.log1p, "tan": np.tan, "sinh": np.sinh,
        "cosh": np.cosh, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan,
        "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh, "atan2": np.arctan2,
        "hypot": np.hypot, "copysign": np.copysign, "pow": np.power, "nearbyint": np.rint,
        "trunc": np.trunc, "floor": np.floor, "ceil": np.ceil, "fmod": np.fmod,
        "signbit": np.signbit,
        "erfc": np.vectorize(math.erfc, otypes=[np.float64]),
        "lgamma": np.vectorize(_lgamma, otypes=[np.float64]),
    }

    def __getattr__(self, name: str):
        fn = self.FUNCS[name]

        def call(*args):
            first = next(a for a in args if isinstance(a, tl.core.tensor))
            data = [a.handle.data if isinstance(a, tl.core.tensor) else a for a in args]
            out = np.asarray(fn(*data))
            dtype, ty = first.handle.dtype, first.type
            if out.dtype == np.bool_:
                dtype, ty = tl.int1, tl.block_type(tl.int1, first.shape) if first.shape else tl.int1
            else:
                out = out.astype(first.handle.data.dtype)
            return tl.core.tensor(TensorHandle(out, dtype), ty)

        return call


def _scalar_index_fix() -> None:
    """Triton's interpreter up to 3.6 makes a scalar argument a 1-element array and converts it
    with ``int(array)``, which NumPy 2.4 refuses for an array of one dimension: every
    ``for roffset in range(0, rnumel, RBLOCK)`` failed ("only 0-dimensional arrays can be
    converted to Python scalars"). Triton 3.7 squeezes the array first; so does this, patched
    over each launch's own patch of ``tl.tensor`` (its scope restores both, in order)."""
    from triton.runtime import interpreter

    patch = getattr(interpreter, "_patch_lang_tensor", None)
    if patch is None or getattr(patch, "squeezes_scalars", False):
        return

    def patched(tensor, scope):
        patch(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(np.asarray(self.handle.data).squeeze()))

    patched.squeezes_scalars = True
    interpreter._patch_lang_tensor = patched


if INTERPRET:
    _scalar_index_fix()
    libdevice = _NumpyLibdevice()
else:
    from triton.language.extra.cuda import libdevice  # noqa: F401
