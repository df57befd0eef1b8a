"""``mode="max-autotune"``'s matrix products: the library call or a Triton template, whichever
is measured faster for these sizes (mirrors torch/_inductor/kernel/mm.py, the mm template, and
torch/_inductor/select_algorithm.py, ``AlgorithmSelectorCache``).

    choice = MatmulChoice("mm")           # the wrapper binds one per product under max-autotune
    buf1 = choice(arg0_1, arg1_1)         # first call at these sizes: time each candidate, keep
                                          # the fastest (MINICOMPILE_LOGS=autotuning), then call it

The candidates are ``torch.mm`` / ``torch.addmm`` (cuBLAS) and ``mm_template`` at a few block
shapes. The template is the tiled product every Triton tutorial writes: each program owns a
``BLOCK_M x BLOCK_N`` tile of the output, walks ``K`` in ``BLOCK_K`` steps loading a tile of
each factor and accumulating ``tl.dot`` in float32, then adds the bias and stores once; programs
are grouped ``GROUP_M`` rows at a time so that neighbours share tiles of ``b`` in the L2 cache.
Float32 products take ``input_precision`` from ``torch.backends.cuda.matmul.allow_tf32``, as
cuBLAS does, so both candidates compute the same thing. Real Inductor also fuses epilogues into
the template; here the template only competes with the library call.
"""

from __future__ import annotations

from typing import Any, Callable

import torch
import triton
import triton.language as tl
from triton.testing import do_bench

from ..._logging import trace_artifact

# (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages): a few of Inductor's mm_configs
CONFIGS = [(64, 64, 32, 4, 3), (128, 64, 32, 4, 4), (64, 128, 32, 4, 4), (128, 128, 32, 8, 3),
           (128, 128, 64, 8, 3), (32, 32, 32, 2, 2)]
DTYPES = (torch.float32, torch.float16, torch.bfloat16)


@triton.jit
def mm_template(a_ptr, b_ptr, bias_ptr, c_ptr, M, N, K,
                stride_am, stride_ak, stride_bk, stride_bn, stride_biasm, stride_biasn,
                stride_cm, stride_cn, HAS_BIAS: tl.constexpr, PRECISION: tl.constexpr,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    grid_m = tl.cdiv(M, BLOCK_M)
    grid_n = tl.cdiv(N, BLOCK_N)
    # programs in groups of GROUP_M tile rows: consecutive programs share b's tiles in L2
    width = GROUP_M * grid_n
    group = pid // width
    group_size = min(grid_m - group * GROUP_M, GROUP_M)
    pid_m = group * GROUP_M + (pid % group_size)
    pid_n = (pid % width) // group_size
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        kk = k + rk
        a = tl.load(a_ptr + rm[:, None] * stride_am + kk[None, :] * stride_ak,
                    mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + kk[:, None] * stride_bk + rn[None, :] * stride_bn,
                    mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b, input_precision=PRECISION)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    if HAS_BIAS:
        bias = tl.load(bias_ptr + rm[:, None] * stride_biasm + rn[None, :] * stride_biasn,
                       mask=mask, other=0.0)
        acc += bias.to(tl.float32)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn,
             acc.to(c_ptr.dtype.element_ty), mask=mask)


def template_call(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor | None,
                  config: tuple[int, int, int, int, int]
                  ) -> tuple[tuple, tuple, dict, torch.Tensor]:
    """``(grid, args, kwargs, c)`` of one launch of the template computing ``c = a @ b (+ bias)``
    at one block shape (``bias`` broadcast to M x N): ``mm_template[grid](*args, **kwargs)``."""
    (m, k), n = a.shape, b.shape[1]
    c = torch.empty((m, n), dtype=a.dtype, device=a.device)
    block_m, block_n, block_k, warps, stages = config
    bias_strides = (0, 0)
    if bias is not None:
        bias = bias.expand(m, n)
        bias_strides = bias.stride()
    precision = "tf32" if a.dtype == torch.float32 and torch.backends.cuda.matmul.allow_tf32 \
        else "ieee"
    grid = (triton.cdiv(m, block_m) * triton.cdiv(n, block_n),)
    args = (a, b, bias if bias is not None else c, c, m, n, k,
            *a.stride(), *b.stride(), *bias_strides, *c.stride())
    kwargs = dict(HAS_BIAS=bias is not None, PRECISION=precision, BLOCK_M=block_m,
                  BLOCK_N=block_n, BLOCK_K=block_k, GROUP_M=8, num_warps=warps,
                  num_stages=stages)
    return grid, args, kwargs, c


def run_template(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor | None,
                 config: tuple[int, int, int, int, int]) -> torch.Tensor:
    """``a @ b (+ bias)`` by the template at one block shape (``bias`` broadcast to M x N)."""
    grid, args, kwargs, c = template_call(a, b, bias, config)
    mm_template[grid](*args, **kwargs)
    return c


class MatmulChoice:
    """``torch.mm(a, b)`` or ``torch.addmm(bias, a, b)``, by whichever candidate was fastest
    the first time these sizes, strides and dtypes were seen."""

    def __init__(self, op: str):
        assert op in ("mm", "addmm")
        self.op = op
        self.chosen: dict[tuple, Callable[..., torch.Tensor]] = {}

    def __call__(self, *args: Any) -> torch.Tensor:
        bias, a, b = (None, *args) if self.op == "mm" else args
        key = tuple((t.shape, t.stride(), t.dtype) for t in args)
        run = self.chosen.get(key)
        if run is None:
            run = self.chosen[key] = self.choose(bias, a, b)
        return run(*args)

    def candidates(self, bias: torch.Tensor | None, a: torch.Tensor,
                   b: torch.Tensor) -> dict[str, Callable[..., torch.Tensor]]:
        library = {"mm": torch.mm, "addmm": torch.addmm}[self.op]
        out = {f"torch.{self.op}": library}
        if a.is_cuda and a.dtype in DTYPES and a.dtype == b.dtype:
            for config in CONFIGS:
                out[f"triton mm {config}"] = (
                    (lambda a_, b_, c=config: run_template(a_, b_, None, c)) if self.op == "mm"
                    else (lambda bias_, a_, b_, c=config: run_template(a_, b_, bias_, c)))
        return out

    def choose(self, bias: torch.Tensor | None, a: torch.Tensor,
               b: torch.Tensor) -> Callable[..., torch.Tensor]:
        args = (a, b) if bias is None else (bias, a, b)
        candidates = self.candidates(bias, a, b)
        if len(candidates) == 1:
            return next(iter(candidates.values()))
        expected = candidates[f"torch.{self.op}"](*args)
        times = {}
        for name, run in candidates.items():
            try:
                if name != f"torch.{self.op}":  # a template must give the library's values
                    torch.testing.assert_close(run(*args), expected, rtol=2e-2, atol=2e-2)
                times[name] = do_bench(lambda: run(*args), warmup=5, rep=20)
            except Exception:  # noqa: BLE001 (a config that does not compile or fit: skipped)
                continue
        best = min(times, key=times.get)
        trace_artifact("autotuning", lambda: "\n".join(
            f"  {name}: {ms * 1e3:.1f} us{'  <- chosen' if name == best else ''}"
            for name, ms in sorted(times.items(), key=lambda kv: kv[1])),
            title=f"{self.op} {tuple(a.shape)} x {tuple(b.shape)} {a.dtype}")
        return candidates[best]
