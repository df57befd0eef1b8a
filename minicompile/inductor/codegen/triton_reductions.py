"""The reductions of a Triton kernel (mirrors the ``reduction`` methods of ``TritonKernel`` in
torch/_inductor/codegen/triton.py, and ``online_softmax_reduce``).

A persistent kernel reduces its (XBLOCK, RBLOCK) block across each row at once (``tl.sum(v, 1)``).
A looped kernel keeps accumulators of the block's shape, combined lane by lane in the loop
(``COMBINE``) and across lanes after it (``REDUCE_ROWS``); Welford's and argmax's carry more
than one value per lane. The online softmax keeps one running max and sum per row.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from .triton_frames import FRAMED_REDUCTIONS, LoopedReduction
from .triton_ops import compute_dtype, paren, triton_constant, triton_dtype

# reduction type -> the value a masked-off lane contributes (by the value's dtype)
def _lowest(dtype: torch.dtype) -> Any:
    return float("-inf") if dtype.is_floating_point else (
        0 if dtype == torch.bool else torch.iinfo(dtype).min)


def _highest(dtype: torch.dtype) -> Any:
    return float("inf") if dtype.is_floating_point else (
        1 if dtype == torch.bool else torch.iinfo(dtype).max)


NEUTRAL: dict[str, Callable[[torch.dtype], Any]] = {
    "sum": lambda d: 0, "prod": lambda d: 1, "any": lambda d: 0,
    "max": _lowest, "argmax": _lowest, "min": _highest, "argmin": _highest,
}

# reduction type -> (XBLOCK, RBLOCK) block reduced across its rows, as a persistent kernel and
# after a loop writes it
REDUCE_ROWS = {
    "sum": "tl.sum({0}, 1)[:, None]",
    "prod": "triton_helpers.prod({0}, 1)[:, None]",
    "max": "triton_helpers.max2({0}, 1)[:, None]",
    "min": "triton_helpers.min2({0}, 1)[:, None]",
    "any": "tl.max({0}.to(tl.int8), 1)[:, None] != 0",
}

# reduction type -> one looped step: combine the accumulator ``{acc}`` with a new value ``{v}``
COMBINE = {
    "sum": "{acc} + {v}", "prod": "{acc} * {v}", "any": "{acc} | ({v} != 0)",
    "max": "triton_helpers.maximum({acc}, {v})", "min": "triton_helpers.minimum({acc}, {v})",
}


class TritonReductions:
    """The ``ops.reduction`` of ``TritonKernel`` (which provides ``generate``, ``dtype``,
    ``to_dtype``, ``cse``, ``kind``, the loop buffers and ``row_values``)."""

    def reduction(self, dtype: torch.dtype, src_dtype: torch.dtype, reduction_type: str,
                  value: str) -> str | tuple[str, ...]:
        key = f"reduction {reduction_type} {value}"
        if key not in self.cse.cache:
            if reduction_type in ("sum", "prod") and self.dtype(value) != compute_dtype(dtype):
                value = self.to_dtype(value, dtype)
            if reduction_type == "any" and self.dtype(value) != torch.bool:
                value = self.generate(f"{paren(value)} != 0", torch.bool)
            reduce = self.reduce_looped if self.kind == "looped" else self.reduce_persistent
            self.cse.cache[key] = reduce(reduction_type, value, compute_dtype(dtype))
        return self.cse.cache[key]

    def reduce_persistent(self, rtype: str, value: str, dtype: torch.dtype):
        mask = "xmask & rmask"
        if rtype == "online_softmax_reduce":  # the whole row is here: max, then sum of exp
            # max2: a NaN in the row makes the max NaN, as torch.amax (tl.max skips it); the
            # max is a result of its own, and x - max carries the NaN into every exp and the sum
            row_max = self.generate(f"triton_helpers.max2(tl.where({mask}, {value}, "
                                    "float('-inf')), 1)[:, None]", dtype)
            total = self.generate(f"tl.sum(tl.where({mask}, tl.exp({value} - {row_max}), 0.0), "
                                  "1)[:, None]", dtype)
            return row_max, total
        if rtype == "welford_reduce":  # two passes over the registers: sum, then squares
            count = self.generate(f"tl.sum(tl.where({mask}, 1.0, 0.0), 1)[:, None]", dtype)
            total = self.generate(f"tl.sum(tl.where({mask}, {value}, 0.0), 1)[:, None]", dtype)
            mean = self.generate(f"{total} / {count}", dtype)
            dev = self.generate(f"tl.where({mask}, {value} - {mean}, 0.0)", dtype)
            return mean, self.generate(f"tl.sum({dev} * {dev}, 1)[:, None]", dtype), count
        neutral = triton_constant(NEUTRAL[rtype](self.dtype(value)), self.dtype(value))
        masked = self.generate(f"tl.where({mask}, {value}, {neutral})", self.dtype(value))
        if rtype in ("argmax", "argmin"):
            rindex = self.generate("tl.broadcast_to(rindex, [XBLOCK, RBLOCK])", torch.int32)
            return self.generate(f"triton_helpers.{rtype}({masked}, {rindex}, 1)[:, None]"
                                 ".to(tl.int64)", torch.int64)
        return self.generate(REDUCE_ROWS[rtype].format(masked),
                             torch.bool if rtype == "any" else dtype)

    def reduce_looped(self, rtype: str, value: str, dtype: torch.dtype):
        """Accumulators of the block's shape, combined lane by lane in the loop, across lanes
        after it."""
        acc = f"_{self.cse.newvar()}"
        mask, block = "xmask & rmask", "[XBLOCK, RBLOCK]"
        self.parts.plain &= rtype in FRAMED_REDUCTIONS  # others: no frame of triton_frames.py
        if rtype == "online_softmax_reduce":
            return self.reduce_online_softmax(acc, value, dtype)
        if rtype == "welford_reduce":
            names = [f"{acc}_mean", f"{acc}_m2", f"{acc}_weight"]
            for n in names:
                self.before_loop.writeline(f"{n} = tl.zeros({block}, {triton_dtype(dtype)})")
            nexts = [f"{n}_next" for n in names]
            self.body.writeline(f"{', '.join(nexts)} = triton_helpers.welford_reduce({value}, "
                                f"{', '.join(names)})")
            for n, nxt in zip(names, nexts):
                self.body.writeline(f"{n} = tl.where({mask}, {nxt}, {n})")
            rows = [f"{n}_rows" for n in names]
            self.after_loop.writeline(f"{', '.join(rows)} = triton_helpers.welford("
                                      f"{', '.join(names)}, 1)")
            results = tuple(self.generate(f"{r}[:, None]", dtype, self.after_loop) for r in rows)
            self.row_values.update(results)
            return results
        vdtype = self.dtype(value)
        if rtype in ("argmax", "argmin"):
            init = triton_constant(NEUTRAL[rtype](vdtype), vdtype)
            self.before_loop.writelines([
                f"{acc} = tl.full({block}, {init}, {triton_dtype(vdtype)})",
                f"{acc}_index = tl.full({block}, 2147483647, tl.int32)"])
            self.body.writelines([
                f"{acc}_next, {acc}_index_next = triton_helpers.{rtype}_combine("
                f"{acc}, {acc}_index, {value}, rindex)",
                f"{acc} = tl.where({mask}, {acc}_next, {acc})",
                f"{acc}_index = tl.where({mask}, {acc}_index_next, {acc}_index)"])
            result = self.generate(f"triton_helpers.{rtype}({acc}, {acc}_index, 1)[:, None]"
                                   ".to(tl.int64)", torch.int64, self.after_loop)
        else:
            acc_dtype = torch.int8 if rtype == "any" else dtype
            init = triton_constant(NEUTRAL[rtype](acc_dtype), acc_dtype)
            self.before_loop.writeline(f"{acc} = tl.full({block}, {init}, "
                                       f"{triton_dtype(acc_dtype)})")
            step = COMBINE[rtype].format(acc=acc, v=value)
            self.body.writeline(f"{acc} = tl.where({mask}, {step}, {acc})")
            reduce_rows = REDUCE_ROWS[rtype].format(acc)
            result = self.generate(reduce_rows, torch.bool if rtype == "any" else dtype,
                                   self.after_loop)
            if vdtype == acc_dtype != torch.bool:  # the frame's numbers, not bools
                self.parts.frame_lines |= {f"{acc} = tl.where({mask}, {step}, {acc})",
                                           f"{result} = {reduce_rows}"}
                self.parts.reductions.append(LoopedReduction(
                    acc, result, rtype, value, acc_dtype, triton_dtype(acc_dtype)))
            else:
                self.parts.plain = False
        self.row_values.add(result)
        return result

    def reduce_online_softmax(self, acc: str, value: str, dtype: torch.dtype):
        """One pass over the row for (max, sum of exp(x - max)): per block of RBLOCK values the
        row's running max ``m`` grows to ``m_new`` and the running sum is rescaled by
        exp(m - m_new), as FlashAttention does. One exp per element (and one per block).
        Where the max is still -inf, exps are taken against 0 instead (-inf - -inf is nan);
        a row that ends with max -inf gets a nan sum, and a row with a nan (or +inf, where
        inf - inf is nan) a nan sum, as eager's sum(exp(x - max)) does. The block's max is
        ``max2`` (a NaN wins, as torch.amax; ``tl.max`` skips it): the max is a result of its
        own, which a graph may return or reuse, and must be eager's amax (nan, +inf or -inf).

        Per-lane running maxima and sums instead (no reduction across lanes in the loop, a
        rescale by ``exp(-|v - m|)`` per element) were measured slower on an H100: 0.43 ms
        against 0.36 for cross-entropy over 16384x32000 bfloat16 logits (arithmetic-bound)."""
        m, s = f"{acc}_max", f"{acc}_sum"
        acc_type = triton_dtype(dtype)  # float32, or float64 for double rows
        self.before_loop.writelines([f"{m} = tl.full([XBLOCK, 1], float('-inf'), {acc_type})",
                                     f"{s} = tl.zeros([XBLOCK, 1], {acc_type})"])
        mask = "xmask & rmask"
        self.body.writelines([
            f"{m}_new = triton_helpers.maximum({m}, "
            f"triton_helpers.max2(tl.where({mask}, {value}, float('-inf')), 1)[:, None])",
            f"{m}_ref = tl.where({m}_new == float('-inf'), 0.0, {m}_new)",
            f"{s} = {s} * tl.exp({m} - {m}_ref) + "
            f"tl.sum(tl.where({mask}, tl.exp({value} - {m}_ref), 0.0), 1)[:, None]",
            f"{m} = {m}_new"])
        total = self.generate(f"tl.where({m} == float('-inf'), float('nan'), {s})", dtype,
                              self.after_loop)
        self.dtypes[m] = dtype  # the running max is the row's max after the loop
        self.row_values.update((m, total))
        return m, total
