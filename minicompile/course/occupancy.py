"""Occupancy: how many warps of a kernel one streaming multiprocessor (SM) keeps resident, from
the registers and shared memory each compiled configuration uses (the arithmetic of NVIDIA's
occupancy calculator), and those numbers read from Triton's compiled kernels.

An SM hides a warp's memory latency by switching to another resident warp. How many fit is the
tightest of four limits: registers (65,536 per SM, allocated per warp in units of 256), shared
memory (228 KB per SM on an H100/H200, 1 KB of it reserved per block), warps (64 per SM) and
blocks (32 per SM). A config that holds a bigger tile in registers does more work per load but
may fit fewer warps, or spill registers to local memory when it needs more than 255 a thread;
autotuning measures which wins.

    limits = SMLimits.of_device()                 # the GPU's, or an H100's on a CPU
    occupancy(n_regs=128, shared=32768, num_warps=4, limits=limits)
    template_stats(a, b)                          # per mm template config: regs, spills, smem, time
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import torch


@dataclass(frozen=True)
class SMLimits:
    name: str
    registers: int = 65536  # 32-bit registers per SM
    register_unit: int = 256  # registers are allocated per warp in multiples of this
    shared_bytes: int = 228 * 1024  # shared memory per SM (compute capability 9.0)
    reserved_shared_per_block: int = 1024
    warps: int = 64
    blocks: int = 32

    @classmethod
    def of_device(cls) -> "SMLimits":
        """The current GPU's limits, where torch reports them; compute capability 9.0's (H100,
        H200) otherwise, and on a CPU."""
        if not torch.cuda.is_available():
            return cls("compute capability 9.0 (H100/H200)")
        p = torch.cuda.get_device_properties(0)
        return cls(p.name, registers=getattr(p, "regs_per_multiprocessor", 65536),
                   shared_bytes=getattr(p, "shared_memory_per_multiprocessor", 228 * 1024),
                   warps=getattr(p, "max_threads_per_multi_processor", 2048) // 32)


@dataclass(frozen=True)
class Occupancy:
    blocks: int  # resident blocks (programs) per SM
    limits: dict[str, int]  # blocks allowed by each resource
    num_warps: int
    sm_warps: int

    @property
    def warps(self) -> int:
        return self.blocks * self.num_warps

    @property
    def fraction(self) -> float:
        return self.warps / self.sm_warps

    @property
    def limiter(self) -> str:
        return " and ".join(k for k, v in self.limits.items() if v == self.blocks)

    def __str__(self) -> str:
        blocks = f"{self.blocks} block{'s' if self.blocks != 1 else ''}"
        return (f"{blocks} x {self.num_warps} warps = {self.warps}/{self.sm_warps} "
                f"warps ({self.fraction:.0%}), limited by {self.limiter}")


def occupancy(n_regs: int, shared: int, num_warps: int, limits: SMLimits) -> Occupancy:
    """Resident blocks per SM of a kernel using ``n_regs`` registers a thread, ``shared`` bytes
    of shared memory a block and ``num_warps`` warps a block."""
    unit = limits.register_unit
    regs_per_warp = -(-n_regs * 32 // unit) * unit  # rounded up to the allocation unit
    by = {"registers": limits.registers // max(1, regs_per_warp * num_warps),
          "warps": limits.warps // num_warps, "blocks": limits.blocks}
    if shared:
        by["shared memory"] = limits.shared_bytes // (shared + limits.reserved_shared_per_block)
    return Occupancy(min(by.values()), by, num_warps, limits.warps)


def template_stats(a: torch.Tensor, b: torch.Tensor) -> list[dict]:
    """For each block shape of minicompile's matmul template (``runtime/mm_autotune.py``, on a
    GPU): the compiled kernel's registers a thread, spills, shared memory, the occupancy that
    allows, and its time (``do_bench`` median, ms), checked against ``a @ b`` first."""
    from triton.runtime.errors import OutOfResources
    from triton.testing import do_bench

    from ..inductor.runtime.mm_autotune import CONFIGS, mm_template, template_call

    rows = []
    limits = SMLimits.of_device()
    expected = a @ b
    for config in CONFIGS:
        grid, args, kwargs, c = template_call(a, b, None, config)
        try:
            kernel = mm_template[grid](*args, **kwargs)  # the launch returns the CompiledKernel
        except OutOfResources as e:  # more shared memory than a block may have: not a candidate
            rows.append({"config": config, "error": str(e)})
            continue
        torch.testing.assert_close(c, expected, rtol=2e-2, atol=2e-2)
        kernel._init_handles()  # loads the binary: fills n_regs and n_spills (Triton's own call)
        shared = kernel.metadata.shared
        ms = do_bench(lambda: mm_template[grid](*args, **kwargs), warmup=5, rep=20)
        rows.append({"config": config, "regs/thread": kernel.n_regs,
                     "spills": kernel.n_spills, "shared KB": shared / 1024,
                     "occupancy": occupancy(kernel.n_regs, shared, config[3], limits),
                     "ms": ms})
    return rows


def kernel_launchers(fn: Callable, *args: Any) -> list[Any]:
    """The Triton launchers of the kernels ``mc.compile(fn)(*args)`` makes, after that call: on
    a GPU each has compiled and timed its candidate configs for these sizes."""
    from ..inductor.codegen.wrapper import WrapperCodeGen
    from ..viz.codegen import compile_watching

    defined: list[Any] = []  # define_kernel(self, name, kernel, source)
    compile_watching(WrapperCodeGen, "define_kernel",
                     lambda _, wrapper, name, kernel, source: defined.append(kernel), fn, *args)
    return [k for k in defined if hasattr(k, "binaries")]


def launcher_stats(launcher: Any) -> list[dict]:
    """For each config a launcher compiled (``TritonLauncher.binaries``: its autotuning
    candidates), the compiled kernel's registers, spills, shared memory, the occupancy they
    allow, and the time the autotuner measured (ms, None if it timed none)."""
    limits = SMLimits.of_device()
    times = {cfg: ms for per_size in launcher.timings.values() for cfg, ms in per_size.items()}
    rows = []
    for (cfg, _), binary in launcher.binaries.items():
        kernel = binary.kernel
        kernel._init_handles()
        rows.append({"config": str(cfg), "regs/thread": kernel.n_regs,
                     "spills": kernel.n_spills, "shared KB": kernel.metadata.shared / 1024,
                     "occupancy": occupancy(kernel.n_regs, kernel.metadata.shared,
                                            cfg.num_warps, limits),
                     "ms": times.get(cfg)})
    return rows


def format_stats(rows: list[dict], rate: tuple[str, float] | None = None) -> str:
    """A table of ``template_stats`` or ``launcher_stats`` rows; ``rate``: (unit, work in that
    unit's numerator, e.g. ``("TFLOP/s", flops / 1e12)``) for a throughput column."""
    unit, work = rate or ("ms", None)
    lines = [f"{'config':<44}{'regs':>5}{'spills':>7}{'smem KB':>8}{unit:>9}  occupancy"]
    for r in rows:
        if "error" in r:
            lines.append(f"{str(r['config']):<44}  {r['error']}")
            continue
        ms = r["ms"]
        speed = "" if ms is None else f"{ms if work is None else work / (ms * 1e-3):.3g}"
        lines.append(f"{str(r['config']):<44}{r['regs/thread']:>5}{r['spills']:>7}"
                     f"{r['shared KB']:>8.1f}{speed:>9}  {r['occupancy']}")
    return "\n".join(lines)
