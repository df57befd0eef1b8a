"""The roofline model: a kernel's arithmetic intensity (FLOPs per byte it must move) against the
FLOP/s it attains, under the machine's two ceilings (Williams, Waterman and Patterson, 2009).

    peaks = device_peaks("cuda")                  # datasheet table for H100/H200; CPU: measured
    points = [measure(w, peaks.device) for w in default_workloads(peaks.device, quick=True)]
    plot_roofline(peaks, points)

A kernel of intensity ``I`` can run no faster than ``min(peak FLOP/s, I * peak GB/s)``: left of
the ridge point ``peak FLOP/s / peak GB/s`` memory bounds it (pointwise kernels and reductions,
a fraction of a FLOP per byte), right of it arithmetic does (a large matrix product, ``n/6``
FLOPs per byte in float32). The bytes are the compulsory traffic the scheduler counts
(``Scheduler.num_bytes_accessed``, notebook 07): every input read once, every output written once.

A GPU's peaks come from NVIDIA's datasheets (dense, no sparsity), looked up by the device's name;
a CPU has no such table here, so its ceilings are measured in the same run: a large copy (the
STREAM "copy" kernel's bandwidth) and a float32 ``torch.mm`` (the vendor BLAS: the most this
machine's vector units give a matrix product in practice, not the theoretical peak).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import torch

from .. import compile as mc_compile
from ..bench.timing import copy_bandwidth_gbs, time_ms
from ..viz.schedule import schedule_function

# name fragment -> (GB/s, {ceiling: FLOP/s}), dense peaks from NVIDIA's H100 and H200 datasheets;
# the longer names first (an "H100 PCIe" is also an "H100")
GPU_PEAKS: list[tuple[str, float, dict[str, float]]] = [
    ("H100 PCIe", 2000, {"float32": 51.2e12, "tf32 tensor cores": 378e12}),
    ("H100 NVL", 3900, {"float32": 60e12, "tf32 tensor cores": 417.5e12}),
    ("H200 NVL", 4800, {"float32": 60e12, "tf32 tensor cores": 417.5e12}),
    ("H200", 4800, {"float32": 67e12, "tf32 tensor cores": 494.7e12}),
    ("H100", 3350, {"float32": 67e12, "tf32 tensor cores": 494.7e12}),  # SXM5
]


@dataclass(frozen=True)
class Peaks:
    device: str  # "cuda" or "cpu"
    name: str
    gbs: float  # memory bandwidth, GB/s
    flops: dict[str, float]  # ceiling -> FLOP/s (the first one applies to float32 kernels)
    source: str  # where the numbers come from

    @property
    def ridge(self) -> float:
        """FLOPs per byte where the bandwidth roof meets the first compute roof."""
        return next(iter(self.flops.values())) / (self.gbs * 1e9)


def gpu_peaks(name: str) -> Peaks | None:
    """The datasheet peaks of a GPU named ``name`` (``torch.cuda.get_device_name()``), or None
    for a GPU not in the table."""
    for fragment, gbs, flops in GPU_PEAKS:
        if fragment.lower() in name.lower():
            return Peaks("cuda", name, gbs, flops, f"datasheet ({fragment})")
    return None


def measured_peaks(device: str, quick: bool = True) -> Peaks:
    """Ceilings measured here: a large copy's GB/s, and the best FLOP/s of float32 matrix
    products of a few sizes (the best, as a busy machine only ever makes a run slower)."""
    sizes = (256, 512, 1024) if quick or device == "cpu" else (2048, 4096, 8192)
    best = 0.0
    for n in sizes:
        a, b = torch.randn(n, n, device=device), torch.randn(n, n, device=device)
        best = max(best, 2 * n ** 3 / (time_ms(lambda: torch.mm(a, b), device, "quick") * 1e-3))
    copy = copy_bandwidth_gbs(device, (1 << 24) if quick else (1 << 26), "quick")
    name = torch.cuda.get_device_name() if device == "cuda" else "this CPU"
    threads = f" on {torch.get_num_threads()} threads" if device == "cpu" else ""
    return Peaks(device, name, copy, {"float32 torch.mm": best}, f"measured{threads}")


def device_peaks(device: str) -> Peaks:
    """A known GPU's datasheet peaks; otherwise (a CPU, another GPU) measured ones."""
    if device == "cuda":
        known = gpu_peaks(torch.cuda.get_device_name())
        if known is not None:
            return known
    return measured_peaks(device)


@dataclass
class Workload:
    """One kernel to place on the roofline: ``run()`` computes it, ``flops`` and ``nbytes`` are
    the work it must do and the bytes it must move."""

    name: str
    run: Callable[[], Any]
    flops: int
    nbytes: int
    kind: str  # "pointwise", "reduction", "matmul": the marker on the plot


@dataclass
class Point:
    workload: Workload
    seconds: float

    @property
    def intensity(self) -> float:
        return self.workload.flops / self.workload.nbytes

    @property
    def flops_per_s(self) -> float:
        return self.workload.flops / self.seconds

    @property
    def gbs(self) -> float:
        return self.workload.nbytes / self.seconds / 1e9


def compulsory_bytes(fn: Callable, *args: torch.Tensor) -> int:
    """The bytes minicompile's fused schedule of ``fn`` moves (each input read once, each output
    written once), counted on CPU copies of the arguments (the same graph)."""
    cpu_args = [a.cpu() for a in args]
    return int(schedule_function(fn, *cpu_args, record_metrics=False).num_bytes_accessed)


def _compiled(fn: Callable, *args: torch.Tensor) -> Callable[[], Any]:
    """``fn(*args)`` compiled by minicompile, checked against eager, as a call to time."""
    compiled = mc_compile(fn)
    torch.testing.assert_close(compiled(*args), fn(*args), rtol=1e-4, atol=1e-4)
    return lambda: compiled(*args)


def scale_shift(x: torch.Tensor) -> torch.Tensor:
    return x * 2 + 3  # two FLOPs per element


def row_sum(x: torch.Tensor) -> torch.Tensor:
    return x.sum(-1)  # one FLOP per element


def pointwise_workload(numel: int, device: str) -> Workload:
    x = torch.randn(numel, device=device)
    part = min(numel, 4096)  # the bytes are counted on a part of x (scheduled on a CPU)
    return Workload(f"x*2+3, {numel:,}", _compiled(scale_shift, x), 2 * numel,
                    compulsory_bytes(scale_shift, x[:part]) * numel // part, "pointwise")


def reduction_workload(rows: int, cols: int, device: str) -> Workload:
    x = torch.randn(rows, cols, device=device)
    part = min(rows, 16)
    return Workload(f"x.sum(-1), {rows}x{cols}", _compiled(row_sum, x), rows * cols,
                    compulsory_bytes(row_sum, x[:part]) * rows // part, "reduction")


def matmul_workload(n: int, device: str) -> Workload:
    """``a @ b`` by minicompile: on a GPU its own Triton template (``runtime/mm_autotune.py``,
    the first block shape), on a CPU the library call its wrapper makes (``torch.mm``)."""
    a, b = torch.randn(n, n, device=device), torch.randn(n, n, device=device)
    nbytes = 3 * n * n * 4  # a and b read once, the product written once
    if device == "cuda":
        from ..inductor.runtime.mm_autotune import CONFIGS, run_template

        torch.testing.assert_close(run_template(a, b, None, CONFIGS[0]), a @ b,
                                   rtol=2e-2, atol=2e-2)
        return Workload(f"mm template {n}^3", lambda: run_template(a, b, None, CONFIGS[0]),
                        2 * n ** 3, nbytes, "matmul")
    return Workload(f"mm (torch.mm) {n}^3", _compiled(lambda a, b: a @ b, a, b), 2 * n ** 3,
                    nbytes, "matmul")


def default_workloads(device: str, quick: bool = True) -> list[Workload]:
    """A pointwise kernel, a row sum and matrix products of growing intensity: on a CPU 64 MiB
    tensors (as big as the copy that measures its bandwidth, so that neither runs from a cache)
    and small products; on a GPU, sizes that fill its memory system and its SMs."""
    if device == "cuda":
        return [pointwise_workload(1 << 26, device), reduction_workload(16384, 4096, device),
                *(matmul_workload(n, device) for n in (256, 1024, 4096))]
    big = 1 << 24  # 64 MiB a tensor, as the copy that measures the bandwidth: past the caches
    return [pointwise_workload(big, device), reduction_workload(big // 1024, 1024, device),
            *(matmul_workload(n, device) for n in ((64, 256) if quick else (64, 256, 1024)))]


def measure(workload: Workload, device: str) -> Point:
    return Point(workload, time_ms(workload.run, device, "quick") * 1e-3)


def table(peaks: Peaks, points: list[Point]) -> str:
    """One line per kernel: intensity, attained GFLOP/s and GB/s, and the fraction of the roof
    above it (``min(peak FLOP/s, intensity * peak GB/s)``)."""
    flops_peak = next(iter(peaks.flops.values()))
    lines = [f"{peaks.name}: {peaks.gbs:,.0f} GB/s, "
             + ", ".join(f"{k} {v / 1e12:,.2f} TFLOP/s" for k, v in peaks.flops.items())
             + f" ({peaks.source}); ridge at {peaks.ridge:.1f} FLOP/B",
             f"{'kernel':<26}{'FLOP/B':>8}{'GFLOP/s':>10}{'GB/s':>9}{'% of roof':>11}  bound by"]
    above = False
    for p in points:
        roof = min(flops_peak, p.intensity * peaks.gbs * 1e9)
        bound = "memory" if p.intensity < peaks.ridge else "compute"
        lines.append(f"{p.workload.name:<26}{p.intensity:8.2f}{p.flops_per_s / 1e9:10.1f}"
                     f"{p.gbs:9.1f}{p.flops_per_s / roof:11.0%}  {bound}")
        above |= p.flops_per_s > 1.1 * roof
    if above:
        lines.append("(above 100%: the data stayed in a cache the copy's did not fit in, or the "
                     "ceilings were measured while the machine was busy)")
    return "\n".join(lines)


def plot_roofline(peaks: Peaks, points: list[Point]) -> Any:
    """Two log-log views of one roofline. Left, FLOP/s: the bandwidth slope ``I * B`` and a flat
    roof per compute ceiling. Right, GB/s: the flat bandwidth roof and the compute slope ``P / I``
    (a compute-bound kernel moves fewer bytes a second the more FLOPs each byte needs). One
    marker per kernel at its intensity, in both."""
    import matplotlib.pyplot as plt
    import numpy as np

    fig, (ax_flops, ax_gbs) = plt.subplots(1, 2, figsize=(12, 4))
    lo = min([p.intensity for p in points] + [peaks.ridge]) / 4
    hi = max([p.intensity for p in points] + [peaks.ridge]) * 4
    xs = np.geomspace(lo, hi, 200)
    bandwidth = peaks.gbs * 1e9
    for i, (label, flops) in enumerate(peaks.flops.items()):
        style = dict(color="black", linestyle="-" if i == 0 else ":")
        ax_flops.plot(xs, np.minimum(flops, xs * bandwidth), label=f"roof: {label}", **style)
        ax_gbs.plot(xs, np.minimum(bandwidth, flops / xs) / 1e9, label=f"roof: {label}", **style)
    markers = {"pointwise": "o", "reduction": "s", "matmul": "^"}
    for p in points:
        style = dict(marker=markers.get(p.workload.kind, "x"), s=50)
        ax_flops.scatter(p.intensity, p.flops_per_s, label=p.workload.name, **style)
        ax_gbs.scatter(p.intensity, p.gbs, label=p.workload.name, **style)
    for ax, unit in ((ax_flops, "FLOP/s attained"), (ax_gbs, "GB/s attained (bytes moved / time)")):
        ax.set_xscale("log"); ax.set_yscale("log")
        ax.set_xlabel("arithmetic intensity (FLOP per byte moved)"); ax.set_ylabel(unit)
        ax.legend(fontsize=7, loc="lower right" if ax is ax_flops else "lower left")
    ax_flops.set_title(f"roofline: {peaks.name}, {peaks.gbs:,.0f} GB/s ({peaks.source})",
                       fontsize=10)
    ax_gbs.set_title("the same kernels in GB/s", fontsize=10)
    fig.tight_layout()
    return fig
