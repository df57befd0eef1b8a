"""The ops a fuzzed program is made of: one row per op, grouped by what they exercise.

Each row is ``(name, applies, build)``: ``applies(t)`` says whether the op can take a value with
example tensor ``t``; ``build(b, x)`` returns the expression, as source text, that applies the op
to the value named ``x`` (``b`` is the generator, for random choices and new inputs). A row may
return None when it does not fit after all; the generator also runs every expression eagerly on
example inputs and drops the ones eager rejects, so a row only has to be plausible, not exact.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import torch

if TYPE_CHECKING:
    from .generate import Builder


@dataclass(frozen=True)
class Op:
    name: str
    applies: Callable[[torch.Tensor], bool]
    build: Callable[["Builder", str], str | None]


def is_float(t: torch.Tensor) -> bool:
    return t.dtype.is_floating_point


def is_int(t: torch.Tensor) -> bool:
    return t.dtype == torch.int64


def is_bool(t: torch.Tensor) -> bool:
    return t.dtype == torch.bool


def is_complex(t: torch.Tensor) -> bool:
    return t.dtype.is_complex


def is_number(t: torch.Tensor) -> bool:
    return t.dtype != torch.bool


def has_dims(n: int) -> Callable[[torch.Tensor], bool]:
    return lambda t: t.dim() >= n


def both(*preds: Callable[[torch.Tensor], bool]) -> Callable[[torch.Tensor], bool]:
    return lambda t: all(p(t) for p in preds)


def anything(t: torch.Tensor) -> bool:
    return True


# --- pointwise ------------------------------------------------------------------------------------
UNARY_FLOAT = [  # bounded or guarded so that values stay finite and well conditioned
    "torch.relu({x})", "torch.sigmoid({x})", "torch.tanh({x})", "torch.neg({x})", "torch.abs({x})",
    "torch.sin({x})", "torch.cos({x})", "torch.exp({x}.clamp(max=8))", "torch.sqrt({x}.abs())",
    "torch.log1p({x}.abs())", "torch.rsqrt({x}.abs() + 1)", "F.gelu({x})", "F.silu({x})",
    "F.softplus({x})", "F.leaky_relu({x}, 0.1)", "{x}.clamp(-0.5, 0.5)", "torch.floor({x})",
    "{x} * {x}", "{x} ** 2", "torch.erf({x})", "F.hardtanh({x})", "torch.sign({x})",
    "torch.where({x} > 0, {x}, {x} * 0.5)", "{x}.float()", "torch.reciprocal({x}.abs() + 1)",
]
UNARY_INT = ["-{x}", "{x} * 3", "{x} + 1", "torch.abs({x} - 3)", "{x} // 2", "{x} % 3",
             "{x}.clamp(0, 4)", "{x} > 2", "{x} == 1", "{x}.float()", "{x}.bool()"]
UNARY_BOOL = ["~{x}", "{x}.long()", "{x}.float()", "torch.logical_not({x})", "{x}.int().long()"]
UNARY_ANY = ["{x}.clone()", "{x}.contiguous()", "{x} + 0"]

BINARY_FLOAT = ["{x} + {y}", "{x} - {y}", "{x} * {y}", "{x} / ({y}.abs() + 1)",
                "torch.maximum({x}, {y})", "torch.minimum({x}, {y})", "torch.atan2({x}, {y})",
                "torch.where({x} > {y}, {x}, {y})", "{x} > {y}", "torch.lerp({x}, {y}, 0.3)",
                "torch.addcmul({x}, {x}, {y}, value=0.5)"]
BINARY_INT = ["{x} + {y}", "{x} * {y}", "{x} - {y}", "torch.maximum({x}, {y})",
              "{x} // ({y}.abs() + 1)", "{x} % ({y}.abs() + 1)", "{x} & {y}", "{x} | {y}",
              "{x} ^ {y}", "{x} <= {y}", "{x} == {y}"]
BINARY_BOOL = ["{x} & {y}", "{x} | {y}", "{x} ^ {y}", "torch.logical_and({x}, {y})",
               "{x} == {y}"]
SCALAR_FLOAT = ["{x} + 1.5", "{x} * -2.0", "2.0 - {x}", "{x} / 3.0",
                "{x}.masked_fill({x} > 0.5, 0.0)"]


# integer division by a divisor that may be 0 (eager raises) or -1 (INT64_MIN // -1 overflows)
INT_DIVISION = ["{x} // {y}", "{x} % {y}", "torch.div({x}, {y}, rounding_mode='trunc')",
                "torch.fmod({x}, {y})", "torch.remainder({x}, {y})",
                "torch.full_like({x}, -2**63) // {y}"]

# complex values: made from floats, computed on, and taken apart again
TO_COMPLEX = ["torch.complex({x}, {y})", "torch.polar({x}.abs(), {y})", "{x}.to(torch.complex64)",
              "{x} * 1j"]
UNARY_COMPLEX = ["{x}.abs()", "{x}.real", "{x}.imag", "{x}.angle()", "torch.view_as_real({x})",
                 "{x}.conj()", "{x}.conj().resolve_conj()", "{x} * {x}", "{x} * 2 - 1j", "torch.sgn({x})",
                 "{x}.sum(dim=-1)", "{x}.mean()", "torch.exp({x}.real.clamp(max=4) + 1j * {x}.imag)"]
BINARY_COMPLEX = ["{x} + {y}", "{x} * {y}", "{x} - {y}", "{x} / ({y}.abs() + 1)"]


def _unary(table: list[str]) -> Callable[["Builder", str], str]:
    return lambda b, x: b.rng.choice(table).format(x=x)


def _binary(table: list[str]) -> Callable[["Builder", str], str]:
    """Pair ``x`` with a value it broadcasts with (an earlier one, or a new input)."""
    def build(b: "Builder", x: str) -> str:
        return b.rng.choice(table).format(x=x, y=b.broadcast_partner(x))
    return build


def _int_division(b: "Builder", x: str) -> str:
    return b.rng.choice(INT_DIVISION).format(x=x, y=b.divisor_input(b.broadcast_shape(x)))


def _to_complex(b: "Builder", x: str) -> str:
    return b.rng.choice(TO_COMPLEX).format(x=x, y=b.broadcast_partner(x, dtype="float32"))


def _mixed(b: "Builder", x: str) -> str:
    """Type promotion: a float value combined with an int or bool one."""
    y = b.broadcast_partner(x, dtype=b.rng.choice(["int64", "bool"]))
    return b.rng.choice(["{x} + {y}", "{x} * {y}", "torch.where({y}.bool(), {x}, -{x})"]).format(
        x=x, y=y)


# --- reductions -----------------------------------------------------------------------------------
# torch before 2.12 (the GPU machine's 2.11) computes the shape of vector_norm over a negative dim
# of size 1 wrong on fake tensors (the dim is kept: pytorch/pytorch#183121), so every compiler
# tracing with fake tensors, torch.compile included, returns the wrong shape there. Not a bug of
# minicompile's: programs for such a torch draw that dim as a non-negative index.
NORM_NEGATIVE_DIM_BUG = tuple(int(p) for p in torch.__version__.split(".")[:2]) < (2, 12)


def _dim(b: "Builder", x: str) -> int:
    return b.rng.randrange(-b.value(x).dim(), b.value(x).dim())


def _reduction(b: "Builder", x: str) -> str:
    t, rng = b.value(x), b.rng
    if t.dim() == 0 or rng.random() < 0.15:
        return rng.choice(["{x}.sum()", "{x}.amax()", "{x}.mean()"] if is_float(t) else
                          ["{x}.sum()", "{x}.amax()"]).format(x=x)
    keepdim = rng.choice([True, False])
    dim = _dim(b, x)
    if is_bool(t):
        op = rng.choice(["any", "all", "sum"])
    elif is_int(t):
        op = rng.choice(["sum", "amax", "amin", "argmax", "argmin"])
    else:
        op = rng.choice(["sum", "mean", "amax", "amin", "argmax", "argmin", "prod", "var", "std",
                         "logsumexp", "softmax", "log_softmax", "norm"])
    if op in ("softmax", "log_softmax"):
        return f"torch.{op}({x}, dim={dim})"
    if op == "norm":
        if NORM_NEGATIVE_DIM_BUG and dim < 0 and t.shape[dim] == 1:
            dim += t.dim()
        return f"torch.linalg.vector_norm({x}, dim={dim}, keepdim={keepdim})"
    if op == "prod":
        return f"({x}.tanh() + 1).prod(dim={dim}, keepdim={keepdim})"  # no overflow
    return f"{x}.{op}(dim={dim}, keepdim={keepdim})"


def _multi_dim_reduction(b: "Builder", x: str) -> str:
    t = b.value(x)
    dims = sorted(b.rng.sample(range(t.dim()), 2))
    op = "sum" if not is_float(t) else b.rng.choice(["sum", "mean", "amax"])
    return f"{x}.{op}(dim={tuple(dims)}, keepdim={b.rng.choice([True, False])})"


def _scan(b: "Builder", x: str) -> str:
    op = b.rng.choice(["cumsum", "cumprod"] if is_float(b.value(x)) else ["cumsum"])
    src = f"({x}.tanh() + 1)" if op == "cumprod" else x
    return f"torch.{op}({src}, dim={_dim(b, x)})"


# --- views ----------------------------------------------------------------------------------------
def _view(b: "Builder", x: str) -> str | None:
    t, rng = b.value(x), b.rng
    n = t.dim()
    choices = [f"{x}.unsqueeze({rng.randrange(-n - 1, n + 1)})", f"{x}.reshape(-1)"]
    if n >= 1:
        d = _dim(b, x)
        size = t.shape[d]
        start = rng.randrange(0, max(size, 1))
        length = max(size - start, 1) if size else 0
        choices += [f"{x}.flatten()", f"{x}.narrow({d}, {start}, {length})",
                    f"{x}[..., ::2]", f"{x}[..., 1:]", f"{x}.flip({d})",
                    f"{x}.select({d}, {rng.randrange(size)})" if size else f"{x}.flatten()"]
    if n >= 2:
        i, j = rng.sample(range(n), 2)
        perm = list(range(n))
        rng.shuffle(perm)
        choices += [f"{x}.transpose({i}, {j})", f"{x}.permute{tuple(perm)}", f"{x}.flatten(0, 1)",
                    f"{x}.movedim({i}, {j})", f"{x}.mT", f"{x}.reshape({t.shape[0]}, -1)"]
    if 1 in t.shape:
        choices += [f"{x}.squeeze()", f"{x}.squeeze({t.shape.index(1)})"]
    if n >= 1 and t.shape[-1] % 2 == 0 and t.shape[-1] > 0:
        choices.append(f"{x}.unflatten(-1, (2, {t.shape[-1] // 2}))")
    return rng.choice(choices)


def _expand(b: "Builder", x: str) -> str:
    t = b.value(x)
    new = [b.rng.choice([1, 3, 5]) if s == 1 else s for s in t.shape]
    return f"{x}.expand({', '.join(map(str, new)) or '()'})"


# --- indexing, scatter / gather, cat --------------------------------------------------------------
def _index(b: "Builder", x: str) -> str | None:
    """Indices from an input (in range, or sometimes not: eager's error is then the expected
    outcome) into one dim of ``x``."""
    t, rng = b.value(x), b.rng
    d = rng.randrange(t.dim())
    size = t.shape[d]
    if size == 0 or (b.device == "cuda" and x in b.data_dependent):
        # indices drawn below the example's size may exceed the size at run time: an error
        # eager raises on the CPU, a device-side assert that ends the process on the GPU
        return None
    kind = rng.choice(["index_select", "getitem", "gather", "scatter", "index_add", "index_put",
                       "masked", "embedding"])
    wraps = kind in ("getitem", "index_put")  # x[-1] is the last row; index_select(-1) raises
    idx = b.index_input((rng.choice([1, 2, 3, 5]),), size, wraps)
    if kind == "index_select":
        return f"{x}.index_select({d}, {idx})"
    if kind == "getitem":
        return f"{x}[{':, ' * d}{idx}]"
    if kind == "embedding" and t.dim() == 2 and is_float(t):
        ids = b.index_input(tuple(rng.choice([1, 2, 3]) for _ in range(rng.choice([1, 2]))),
                            t.shape[0])
        return f"F.embedding({ids}, {x})"
    if kind in ("gather", "scatter"):
        shape = tuple(rng.choice([1, s]) if s else 0 for s in t.shape)
        gidx = b.index_input(shape, size)
        if kind == "gather":
            return f"torch.gather({x}, {d}, {gidx})"
        src = b.new_input(shape, t.dtype)
        how = rng.choice(["scatter", "scatter_add"]) if not is_bool(t) else "scatter"
        # scatter (not scatter_add) with repeated indices is nondeterministic: use unique ones
        if how == "scatter":
            along_d = ", ".join("-1" if k == d else "1" for k in range(t.dim()))
            gidx = f"torch.arange({shape[d]}, device={x}.device).view({along_d}).expand{shape}"
        return f"{x}.{how}({d}, {gidx}, {src})"
    if kind == "index_add" and not is_bool(t):
        shape = list(t.shape)
        shape[d] = int(b.value(idx).shape[0])
        src = b.new_input(tuple(shape), t.dtype)
        return f"{x}.index_add({d}, {idx}, {src})"
    if kind == "index_put" and d == 0:
        val = b.new_input((), t.dtype)
        return f"{x}.index_put(({idx},), {val}, accumulate=True)" if not is_bool(t) else \
            f"{x}.index_put(({idx},), {val})"
    mask = b.broadcast_partner(x, dtype="bool")
    return f"{x}.masked_fill({mask}, 1)"


def _boolean_mask(b: "Builder", x: str) -> str:
    """A data-dependent output shape: minicompile must break the graph or fall back."""
    return f"{x}[{x} > 0]" if is_number(b.value(x)) else f"{x}[{x}]"


def _cat(b: "Builder", x: str) -> str | None:
    t, rng = b.value(x), b.rng
    d = _dim(b, x)
    shape = list(t.shape)
    shape[d] = rng.choice([1, 2, 3])
    other = b.new_input(tuple(shape), t.dtype)
    if rng.random() < 0.3:
        return f"torch.stack([{x}, {x} + {x}], dim={d})" if is_number(t) else \
            f"torch.stack([{x}, ~{x}], dim={d})"
    return f"torch.cat([{x}, {other}], dim={d})"


def _where_const(b: "Builder", x: str) -> str:
    return f"torch.where({b.broadcast_partner(x, dtype='bool')}, {x}, torch.zeros_like({x}))"


def _pad(b: "Builder", x: str) -> str:
    return f"F.pad({x}, ({b.rng.randrange(3)}, {b.rng.randrange(3)}), value=0.5)"


# --- matmul ---------------------------------------------------------------------------------------
def _matmul(b: "Builder", x: str) -> str:
    t, rng = b.value(x), b.rng
    k = t.shape[-1]
    n = rng.choice([1, 2, 3, 5, 7, 16])
    kind = rng.choice(["matmul", "linear", "self", "bmm"] if t.dim() == 3 else
                      ["matmul", "linear", "self"])
    if kind == "self":
        return f"{x} @ {x}.mT"
    if kind == "linear":
        w = b.new_input((n, k), t.dtype, requires_grad=True)
        bias = b.new_input((n,), t.dtype, requires_grad=True)
        return f"F.linear({x}, {w}, {bias})"
    if kind == "bmm":
        w = b.new_input((t.shape[0], k, n), t.dtype, requires_grad=True)
        return f"torch.bmm({x}, {w})"
    w = b.new_input((k, n), t.dtype, requires_grad=True, layout=rng.choice(LAYOUT_CHOICES))
    return f"{x} @ {w}"


LAYOUT_CHOICES = ["contiguous", "contiguous", "transposed", "sliced"]


# --- mutation -------------------------------------------------------------------------------------
def _mutate(b: "Builder", x: str) -> str | None:
    """An in-place op on a clone (in the graph) or on a value itself (a side effect to replay)."""
    t = b.value(x)
    op = b.rng.choice(["add_(1)", "mul_(2)", "zero_()", "fill_(3)", "clamp_(0, 1)"]
                      if is_number(t) else ["fill_(True)", "logical_not_()"])
    if b.rng.random() < 0.5:
        return f"{x}.clone().{op}"
    return f"{x}.{op}"


OPS = [
    Op("unary_float", is_float, _unary(UNARY_FLOAT)),
    Op("unary_int", is_int, _unary(UNARY_INT)),
    Op("unary_bool", is_bool, _unary(UNARY_BOOL)),
    Op("unary_any", anything, _unary(UNARY_ANY)),
    Op("binary_float", is_float, _binary(BINARY_FLOAT)),
    Op("binary_int", is_int, _binary(BINARY_INT)),
    Op("binary_bool", is_bool, _binary(BINARY_BOOL)),
    Op("scalar_float", is_float, _unary(SCALAR_FLOAT)),
    Op("mixed_dtypes", is_float, _mixed),
    Op("int_division", is_int, _int_division),
    Op("to_complex", lambda t: t.dtype == torch.float32, _to_complex),
    Op("unary_complex", is_complex, _unary(UNARY_COMPLEX)),
    Op("binary_complex", is_complex, _binary(BINARY_COMPLEX)),
    Op("reduction", anything, _reduction),
    Op("reduction_2d", has_dims(2), _multi_dim_reduction),
    Op("scan", both(is_number, has_dims(1)), _scan),
    Op("view", anything, _view),
    Op("expand", lambda t: 1 in t.shape, _expand),
    Op("index", has_dims(1), _index),
    Op("boolean_mask", anything, _boolean_mask),
    Op("cat", has_dims(1), _cat),
    Op("where", anything, _where_const),
    Op("pad", both(is_float, has_dims(1)), _pad),
    Op("matmul", both(is_float, has_dims(2)), _matmul),
    Op("mutate", anything, _mutate),
]

WEIGHTS = {"unary_float": 4, "binary_float": 4, "reduction": 3, "view": 3, "matmul": 2,
           "boolean_mask": 0.3, "mutate": 1, "to_complex": 0.3,
           "int_division": 2, "index": 2}  # the rest weigh 1
