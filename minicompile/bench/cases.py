"""The benchmark's cases (the role of PyTorch's ``benchmarks/dynamo/microbenchmarks``): one row per
workload, each with its sizes per device and scale, the fewest bytes it must move and its FLOPs.

A case builds a :class:`Workload`: the function (or module) that gets compiled, fresh random
inputs, and how one timed step runs it. ``kind`` says what the step is limited by:

    memory    bandwidth- or launch-bound: reported as achieved GB/s, and % of copy bandwidth
    compute   matrix products: reported as TFLOP/s
    train     forward + backward of a module: TFLOP/s of its matrix products
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import torch.nn.functional as F
from torch import nn

from .gpt_block import Block, block_flops

# tolerances of the check against eager, per dtype (torch.testing.assert_close's rtol, atol):
# fused kernels reorder float32 sums, bfloat16 keeps 8 bits of mantissa
TOLERANCES = {torch.float32: (1e-4, 1e-4), torch.bfloat16: (2e-2, 2e-2),
              torch.float16: (2e-3, 2e-3)}


@dataclass
class Workload:
    fn: Callable                      # what torch.compile and mc.compile get (function or module)
    args: tuple                       # fresh random inputs
    size: str                         # readable size for the table, "8192x8192 f32"
    kind: str = "memory"              # "memory" | "compute" | "train"
    flops: float = 0.0                # compute and train cases
    module: nn.Module | None = None   # train: whose parameters receive gradients
    tol: tuple[float, float] | None = None  # (rtol, atol); None: by the output's dtype
    grad_out: torch.Tensor | None = None  # memory cases with a backward: the output's gradient
    mutated: tuple[int, ...] = ()     # in-place cases: the args the step updates (its results)
    _initial: list[torch.Tensor] = field(default_factory=list, repr=False)

    def __post_init__(self):
        # an in-place step changes its inputs: each checked first call starts from these values
        self._initial = [self.args[i].clone() for i in self.mutated]

    def restore(self) -> None:
        """Put the mutated inputs back to their first values (before a checked call)."""
        with torch.no_grad():
            for i, value in zip(self.mutated, self._initial):
                self.args[i].copy_(value)

    def step(self, fn: Callable) -> Any:
        """One timed step with ``fn`` (eager, or a compiled version of ``self.fn``)."""
        if self.kind != "train" and self.grad_out is None:
            return fn(*self.args)
        for t in self.grad_targets():  # fresh gradients each step, like optimizer.zero_grad()
            t.grad = None
        out = fn(*self.args)
        grad = self.grad_out if self.grad_out is not None else out.new_ones(()).expand_as(out)
        out.backward(grad)
        return out

    def grad_targets(self) -> list[torch.Tensor]:
        if self.module is not None:
            return [self.args[0], *self.module.parameters()]
        return [a for a in self.args if isinstance(a, torch.Tensor) and a.requires_grad]

    def results(self, out: Any) -> list[torch.Tensor]:
        """What the check compares: outputs (the updated inputs of an in-place step), and with a
        backward the input and parameter grads."""
        outs = list(out) if isinstance(out, (tuple, list)) else [] if out is None else [out]
        outs += [self.args[i] for i in self.mutated]
        if self.kind == "train" or self.grad_out is not None:
            outs += [t.grad for t in self.grad_targets()]
        return [o.detach().clone() for o in outs]

    def min_bytes(self, outs: list[torch.Tensor]) -> int:
        """Each input (and parameter, and output gradient) read once, each output written once."""
        inputs = [a for a in self.args if isinstance(a, torch.Tensor)]
        if isinstance(self.fn, nn.Module):
            inputs += list(self.fn.parameters())
        if self.grad_out is not None:
            inputs.append(self.grad_out)
        return sum(t.numel() * t.element_size() for t in inputs + outs)

    def tolerance(self) -> tuple[float, float]:
        if self.tol is not None:
            return self.tol
        dtype = self.args[0].dtype if self.args[0].is_floating_point() else torch.float32
        return TOLERANCES.get(dtype, (1e-4, 1e-4))


# ---- the workloads ---------------------------------------------------------------------------

def _short(dtype: torch.dtype) -> str:
    return {torch.float32: "f32", torch.bfloat16: "bf16", torch.float16: "f16"}[dtype]


def _count(n: int) -> str:
    for unit, scale in (("M", 1 << 20), ("K", 1 << 10)):
        if n % scale == 0:
            return f"{n // scale}{unit}"
    return str(n)


def pointwise_chain(x):
    return (x.sin() * 2 + 1).relu()  # 4 ops, read N write N once fused


def make_pointwise(device: str, n: int) -> Workload:
    x = torch.randn(n, device=device)
    return Workload(pointwise_chain, (x,), f"{_count(n)} f32")


def softmax(x):
    return torch.softmax(x, dim=-1)  # read MN, write MN (max, sum, normalise in one pass per row)


def make_softmax(device: str, m: int, n: int) -> Workload:
    return Workload(softmax, (torch.randn(m, n, device=device),), f"{m}x{n} f32")


def layernorm(x, w, b):
    return F.layer_norm(x, x.shape[-1:], w, b)  # read MN + 2N, write MN


def make_layernorm(device: str, m: int, n: int) -> Workload:
    args = (torch.randn(m, n, device=device), torch.randn(n, device=device),
            torch.randn(n, device=device))
    return Workload(layernorm, args, f"{m}x{n} f32")


def rowsum_mean(x):
    return x.sum(dim=-1), x.mean(dim=-1)  # two outputs of one pass: read MN, write 2M


def make_rowsum_mean(device: str, m: int, n: int) -> Workload:
    return Workload(rowsum_mean, (torch.randn(m, n, device=device),), f"{m}x{n} f32")


def cross_entropy(logits, target):
    return F.cross_entropy(logits, target)  # read M*V logits + M targets, write 1


def make_cross_entropy(device: str, m: int, v: int) -> Workload:
    dtype = torch.bfloat16 if device == "cuda" else torch.float32  # bf16 is a GPU dtype here
    logits = torch.randn(m, v, device=device, dtype=dtype)
    target = torch.randint(0, v, (m,), device=device)
    return Workload(cross_entropy, (logits, target), f"{m}x{v} {_short(dtype)}")


def make_tiny_mlp(device: str, batch: int, width: int) -> Workload:
    layers = []
    for _ in range(4):
        layers += [nn.Linear(width, width), nn.ReLU()]
    mlp = nn.Sequential(*layers).to(device).requires_grad_(False)  # inference
    return Workload(mlp, (torch.randn(batch, width, device=device),), f"{batch}x{width} 4 layers")


def gelu_mm(x, w, b):
    return F.gelu(x @ w + b)  # matmul with a bias + GELU epilogue


def make_gelu_mm(device: str, m: int, k: int, n: int) -> Workload:
    dtype = torch.bfloat16 if device == "cuda" else torch.float32  # tensor cores on the GPU
    args = (torch.randn(m, k, device=device, dtype=dtype) / k ** 0.5,
            torch.randn(k, n, device=device, dtype=dtype), torch.randn(n, device=device, dtype=dtype))
    tol = (2e-2, 2e-2) if dtype == torch.bfloat16 else (1e-3, 1e-3)  # K-long dot products
    return Workload(gelu_mm, args, f"{m}x{k}x{n} {_short(dtype)}", kind="compute",
                    flops=2.0 * m * k * n, tol=tol)


def make_gpt_block_train(device: str, batch: int, seq: int, n_embd: int, n_head: int) -> Workload:
    torch.manual_seed(0)
    block = Block(n_embd, n_head).to(device)  # float32 weights: the check compares gradients
    x = torch.randn(batch, seq, n_embd, device=device, requires_grad=True)
    return Workload(block, (x,), f"B{batch} T{seq} d{n_embd} h{n_head}", kind="train",
                    flops=block_flops(batch, seq, n_embd), module=block, tol=(2e-3, 2e-3))


@dataclass
class Case:
    """A workload maker and its sizes: ``sizes[scale]`` lists argument tuples for ``make``.
    Scales: cuda (bandwidth-bound, then launch-bound size), cuda-quick, cpu, cpu-quick, tiny
    (the test's)."""
    make: Callable[..., Workload]
    sizes: dict[str, list[tuple]] = field(default_factory=dict)


M = 1 << 20
CASES: dict[str, Case] = {
    "pointwise": Case(make_pointwise, {
        "cuda": [(64 * M,), (16 * M,)], "cuda-quick": [(16 * M,)],
        "cpu": [(4 * M,)], "cpu-quick": [(256 * 1024,)], "tiny": [(4096,)]}),
    "softmax": Case(make_softmax, {
        "cuda": [(8192, 8192), (4096, 4096)], "cuda-quick": [(4096, 4096)],
        "cpu": [(1024, 1024)], "cpu-quick": [(256, 512)], "tiny": [(16, 64)]}),
    "layernorm": Case(make_layernorm, {
        "cuda": [(32768, 4096), (8192, 1024)], "cuda-quick": [(8192, 1024)],
        "cpu": [(2048, 1024)], "cpu-quick": [(256, 512)], "tiny": [(16, 64)]}),
    "rowsum_mean": Case(make_rowsum_mean, {
        "cuda": [(16384, 16384), (2048, 2048)], "cuda-quick": [(2048, 2048)],
        "cpu": [(2048, 2048)], "cpu-quick": [(256, 512)], "tiny": [(16, 64)]}),
    "cross_entropy": Case(make_cross_entropy, {
        "cuda": [(16384, 32000)], "cuda-quick": [(4096, 32000)],
        "cpu": [(1024, 8192)], "cpu-quick": [(128, 1024)], "tiny": [(16, 64)]}),
    "tiny_mlp": Case(make_tiny_mlp, {
        "cuda": [(8, 64)], "cuda-quick": [(8, 64)],
        "cpu": [(8, 64)], "cpu-quick": [(8, 64)], "tiny": [(8, 64)]}),
    "gelu_mm": Case(make_gelu_mm, {
        "cuda": [(4096, 1024, 4096)], "cuda-quick": [(2048, 1024, 2048)],
        "cpu": [(1024, 512, 1024)], "cpu-quick": [(256, 256, 256)], "tiny": [(16, 32, 16)]}),
    "gpt_block_train": Case(make_gpt_block_train, {
        "cuda": [(8, 256, 768, 12)], "cuda-quick": [(8, 256, 768, 12)],
        "cpu": [(2, 64, 128, 4)], "cpu-quick": [(1, 32, 64, 2)], "tiny": [(1, 8, 32, 2)]}),
}
