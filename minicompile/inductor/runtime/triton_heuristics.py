"""Launching a generated Triton kernel (mirrors ``CachingAutotuner`` and the ``pointwise`` /
``persistent_reduction`` / ``reduction`` heuristics in torch/_inductor/runtime/triton_heuristics.py).

The wrapper calls a kernel as ``triton_poi_fused_add_0(in0, buf1, s0, 37*s0)``: buffers, size
symbols, then ``xnumel`` (and ``rnumel`` for reductions), computed by the call line from the sizes.
``TritonLauncher`` picks block sizes (a *config*), computes the grid ``cdiv(xnumel, XBLOCK)`` and
launches. On a GPU it times a few configs the first time it sees a size class (sizes rounded up
to powers of two) and keeps the fastest (``MINICOMPILE_LOGS=autotuning`` shows the choice); under
Triton's interpreter every config computes the same thing slowly, so it takes one, with big
blocks (fewer programs, each one a few NumPy calls).

After the first launch of a config with given argument properties, later launches call the
compiled binary's launcher directly (``CompiledLaunch``), skipping ``JITFunction.run``'s argument
binding and cache lookup, which on a launch-bound graph costs more than the kernel.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import triton
from triton import knobs
from triton.compiler.errors import CompilationError
from triton.testing import do_bench

from ... import debug
from ..options import InductorOptions
from ..._logging import trace_artifact
from . import compile_workers

log = logging.getLogger(__name__)
INTERPRET = os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")
INTERPRETER_BLOCK = 1 << 14  # elements per program under the interpreter
# Triton's interpreter patches triton.language's functions while a kernel runs and restores them
# after, so two threads interpreting kernels at once break each other: one kernel at a time
INTERPRETER_LOCK = threading.Lock()
# launch compiled binaries directly (``CompiledLaunch``); MINICOMPILE_TRITON_FAST_LAUNCH=0 goes
# through ``JITFunction.run`` on every call instead
FAST_LAUNCH = os.environ.get("MINICOMPILE_TRITON_FAST_LAUNCH", "1") != "0"
# compile options of every kernel: each multiply rounded, then each add, as eager's kernels do.
# With fused multiply-adds (Triton's default on CUDA) a value recomputed in a second loop over a
# row, fused there and not in the first, differs: exp(x * 0.1 - amax(x * 0.1)) gave inf
COMPILE_OPTIONS = {"enable_fp_fusion": False}
# a kernel with checks keeps its device asserts (Inductor's ``assert_indirect_indexing``), not
# the int32 overflow asserts the debug flag adds; the interpreter raises (triton_helpers.py)
CHECKED_OPTIONS = {**COMPILE_OPTIONS, "debug": True, "sanitize_overflow": False}
# do_bench's warm-up and timing budget (ms) per autotuned candidate: each timed run clears the
# L2 cache (a 256 MB memset), so 20 ms of runs were ~30 ms a candidate, and a GPT block's first
# call timed 32 candidates; 5 ms is still dozens of runs of a launch-bound kernel
AUTOTUNE_MS = (1, 5)


@dataclass(frozen=True)
class Config:
    XBLOCK: int
    RBLOCK: int | None = None
    num_warps: int = 4
    YBLOCK: int | None = None  # a 2-D tiled pointwise kernel's lines per program

    def kwargs(self) -> dict[str, int]:
        out = {"XBLOCK": self.XBLOCK, "num_warps": self.num_warps}
        for name in ("RBLOCK", "YBLOCK"):  # in the kernel's parameter order
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        return out

    def programs(self, numel0: int, numel1: int) -> int:
        """The grid: ``cdiv(xnumel, XBLOCK)`` programs; a tile's ``(numel0, numel1)`` are
        ``(ynumel, xnumel)``, one program per (YBLOCK, XBLOCK) block."""
        if self.YBLOCK is None:  # (grid and tiled_grid looked up now: the course swaps them)
            return grid(numel0, self.XBLOCK)
        return tiled_grid(numel0, numel1, self.YBLOCK, self.XBLOCK)

    def __str__(self) -> str:
        r = f", RBLOCK={self.RBLOCK}" if self.RBLOCK is not None else ""
        y = f", YBLOCK={self.YBLOCK}" if self.YBLOCK is not None else ""
        return f"XBLOCK={self.XBLOCK}{r}{y}, num_warps={self.num_warps}"


def pow2(n: int) -> int:
    return triton.next_power_of_2(max(1, n))


# An outer reduction (``x.sum(0)``: the kept dim is the contiguous one, a row's elements lie a
# whole row of the input apart) reads coalesced only when a program owns many adjacent kept
# elements: (XBLOCK, RBLOCK) tiles wide in x and short in r, each loop step reading XBLOCK
# contiguous values from each of RBLOCK rows (Inductor's ReductionHint.OUTER configs). The
# inner configs, one row per program in long blocks, read one element per row: 4 bytes of each
# 32-byte sector. Narrower tiles make more programs where there are few kept elements.
# The widths are in bytes (bytes of adjacent kept elements a row, rows, warps): a loop step reads
# the same bytes whatever the element size, 256 per row in the first shape. A GPU keeps memory
# busy only with enough bytes in flight; one loop step's loads are what a program has in flight,
# so a tile 64 elements wide read half the bytes a step in bfloat16 as in float32 (sum(0) and
# amax(0) of 8192 x 8192 16-bit values on an H200: 35% of the copy bandwidth, float32 64%).
# A shallow tile, a line of each of 4 rows, is the fastest for a split's first pass in 16-bit
# (that amax(0) in 16 parts of 512 rows, H200, every tile of 32-256 by 4-64 timed: 64 x 4 45 us,
# 64 x 32 52 us, 128 x 8 57 us; in float32 all within 74 +- 1 us).
OUTER_SHAPES = ((256, 8, 4), (128, 32, 4), (512, 16, 8), (64, 64, 4), (128, 4, 4))


def outer_shapes(itemsize: int) -> list[tuple[int, int, int]]:
    """``OUTER_SHAPES`` in elements of ``itemsize`` bytes: (XBLOCK, RBLOCK, warps)."""
    return [(max(1, width // itemsize), rows, warps) for width, rows, warps in OUTER_SHAPES]


def candidate_configs(kind: str, xnumel: int, rnumel: int, hint: str = "inner",
                      max_autotune: bool = False, itemsize: int = 4) -> list[Config]:
    """Configs worth trying for a kernel of ``kind`` at these sizes (the first is the default);
    ``hint``: "outer" for a reduction whose loads are contiguous along the kept dim, whose tiles
    are as many bytes wide whatever the ``itemsize`` of its narrowest such load;
    ``max_autotune`` (``mode="max-autotune"``) tries more."""
    if kind == "tiled":  # (xnumel, rnumel) are the tile's (ynumel, xnumel)
        return tiled_configs(pow2(xnumel), pow2(rnumel))
    xcap = pow2(xnumel)
    if kind == "pointwise":
        if INTERPRET:
            return [Config(min(xcap, INTERPRETER_BLOCK))]
        if max_autotune:
            return list(dict.fromkeys(Config(min(xcap, x), None, w) for x, w in (
                (1024, 4), (512, 8), (512, 4), (256, 4), (128, 4))))
        # two configs, as Inductor's default mode (``autotune_pointwise``): 8 elements a thread
        # reach the copy bandwidth with one or two loads an element; a kernel of many loads an
        # element holds them all in flight per element, and 2 a thread keep it fast (a 3x3
        # max-pool, 9 loads an output, 8x64x362x362 float32 on an H200: 148 us at 8 a thread, 96 at 2)
        block = max(256, min(xcap // 128, 1024))  # (powers of two: arange needs them)
        return list(dict.fromkeys([Config(min(xcap, block), None, 4),
                                   Config(min(xcap, block // 2), None, 8 if block > 256 else 4)]))
    if kind == "persistent":
        rblock = pow2(rnumel)
        if INTERPRET:
            return [Config(max(1, min(xcap, INTERPRETER_BLOCK // rblock)), rblock)]
        if hint == "outer":  # as many adjacent kept elements a program as fit in registers
            xblocks = [x for x in (64, 32, 16, 8) if x * rblock <= 8192] or [1]
            return list(dict.fromkeys(Config(min(xcap, x), rblock, 8 if x * rblock > 2048 else 4)
                                      for x in xblocks))
        if rblock > 2048:  # one long row per program: warps to spread the row over
            return [Config(1, rblock, w) for w in (8, 16, 32) if rblock // (32 * w) >= 4]
        xblocks = [x for x in (1, 8, 32) if x * rblock <= 8192 and enough_programs(x, xnumel)]
        return list(dict.fromkeys(Config(min(xcap, x), rblock, 4 if x * rblock <= 2048 else 8)
                                  for x in xblocks))
    rcap = pow2(rnumel)  # looped
    if INTERPRET:
        rblock = min(rcap, 1024)
        return [Config(max(1, min(xcap, INTERPRETER_BLOCK // rblock)), rblock)]
    # long rows one per program in big blocks (cross-entropy over 16384x32000 bfloat16 on an
    # H200: 0.41 ms with 2048-element blocks, 0.33 with 4096; one row of 16384: 43 us with
    # 2048 and 8 warps, 32 with 8192 and 16; on an H100 the two shorter-row configs took 0.44
    # and 1.25 ms there: not compiled for long rows), shorter rows several per program
    if hint == "outer":
        shapes = outer_shapes(itemsize)
    elif rcap >= 4096:
        shapes = ((1, 4096, 8), (1, 8192, 16))
    else:
        shapes = ((1, 4096, 8), (8, 512, 8), (64, 64, 4))
    configs = [Config(min(xcap, x), min(rcap, r), w) for x, r, w in shapes
               if enough_programs(x, xnumel)]
    # (few kept elements: the narrowest tile; splitting the rows over programs, Inductor's
    # split reduction, would fill the GPU, and is not done here)
    return list(dict.fromkeys(configs or [Config(min(xcap, 16), min(rcap, 64), 4)]))


# (XBLOCK, YBLOCK, warps) of a 2-D tile: square tiles of 32 or 64 (a 128-byte line of float32
# along each axis, as Inductor's 2-D pointwise configs), and flatter ones for a short axis
TILE_SHAPES = ((64, 64, 8), (32, 32, 4), (128, 16, 4), (16, 128, 4))


def tiled_configs(ycap: int, xcap: int) -> list[Config]:
    if INTERPRET:  # one config, big blocks
        xblock = min(xcap, 128)
        return [Config(xblock, YBLOCK=min(ycap, max(1, INTERPRETER_BLOCK // xblock)))]
    return list(dict.fromkeys(Config(min(xcap, x), None, w, min(ycap, y))
                              for x, y, w in TILE_SHAPES))


def grid(xnumel: int, xblock: int) -> int:
    """How many programs a launch needs (the grid's one dimension; Inductor's ``grid``
    helper): enough blocks of ``xblock`` elements (rows) to cover ``xnumel``, the last one
    partly masked off."""
    return triton.cdiv(xnumel, xblock)


def tiled_grid(ynumel: int, xnumel: int, yblock: int, xblock: int) -> int:
    """How many programs a 2-D tiled launch needs: one per ``(yblock, xblock)`` tile of the
    ``(ynumel, xnumel)`` points, the tiles of the last row and column partly masked off (the
    kernel turns its program id back into the tile's row and column)."""
    return triton.cdiv(ynumel, yblock) * triton.cdiv(xnumel, xblock)


MIN_PROGRAMS = 128  # about one program per SM of an H100 (132)


def enough_programs(xblock: int, xnumel: int) -> bool:
    """Whether rows ``xblock`` at a time still make ``MIN_PROGRAMS`` programs (one row a
    program always counts): with fewer, most of the GPU idles whatever the config, and each
    candidate is one more compile on the first call. A cross-entropy's 16384 losses summed as
    64 rows of 256 had three candidates, 2 to 64 programs; the one of 32 rows a program took
    0.8 s to compile on an H100, the whole first call 1.0 s."""
    return xblock == 1 or xnumel // xblock >= MIN_PROGRAMS


def binary_key(args: tuple) -> tuple:
    """What Triton compiles a separate binary for (``JITFunction.run``'s key): each tensor's
    dtype and 16-byte alignment, each integer's being 1, a multiple of 16, or beyond 32 bits.
    A kernel's tensors have fixed dtypes (it was generated for its buffers), and an integer's
    specialisation is a function of its value: the alignments and the integers themselves."""
    return tuple([a.data_ptr() % 16 == 0 if isinstance(a, torch.Tensor) else a for a in args])


def pointers_key(args: tuple, pointers: int) -> tuple:
    """``binary_key`` of a generated kernel's arguments, whose first ``pointers`` are its
    buffers and the rest integers (``KernelSignature``): no type test per argument. A launch
    computes it every call; on a launch-bound graph its microsecond is a fifth of a launch's
    Python."""
    return (*[not a.data_ptr() & 15 for a in args[:pointers]], *args[pointers:])


def scratch_copy(t: torch.Tensor) -> torch.Tensor:
    """``t``'s size, strides and offset over a copy of its whole storage: a kernel reads there
    what it would read from ``t``, at the same offsets, and its writes land in the copy."""
    copy = torch.empty(0, dtype=t.dtype, device=t.device)
    return copy.set_(t.untyped_storage().clone(), t.storage_offset(), t.size(), t.stride())


# The current CUDA stream of the current device, as the launcher takes it: two C calls, as
# Inductor's ``get_raw_stream`` (Triton's driver goes through two Python layers for it)
_current_raw_stream, _current_device = (torch._C._cuda_getCurrentRawStream,
                                        torch._C._cuda_getDevice) if torch.cuda.is_available() \
    else (None, None)


def with_causes(e: BaseException) -> str:
    """Triton's compile error and its causes: an error inside a helper the kernel calls is the
    cause of the error at the call (which quotes only the call's line)."""
    parts, cause = [str(e)], e.__cause__
    while cause is not None and len(parts) < 8:
        parts.append(f"{type(cause).__name__}: {cause}")
        cause = cause.__cause__
    return "\n  which came from\n".join(parts)


class KernelCompileError(RuntimeError):
    """A generated Triton kernel did not compile: the message names the kernel and its file."""


class CompiledLaunch:
    """One compiled binary, launched straight through its launcher: ``JITFunction.run`` binds
    and specialises the arguments again on every call (tens of microseconds of Python on a
    launch-bound graph); real Inductor's ``CachingAutotuner`` calls the launcher directly too."""

    def __init__(self, kernel: Any, cfg: Config):
        kernel._init_handles()
        self.kernel, self.constexprs = kernel, tuple(
            v for k, v in cfg.kwargs().items() if k != "num_warps")
        # launch hooks (a profiler's): Triton installs empty chains of hooks, to which a
        # profiler adds its own; while there are none the metadata the hooks would get is not
        # computed, as Inductor's launcher skips it without hooks
        self.enter_hook, self.exit_hook = knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook
        # each hook's live list of calls, read on each launch without a call: a chain's own list
        # (a profiler appends to it), a plain function alone, none for None
        self.hook_calls = tuple(_calls(h) for h in (self.enter_hook, self.exit_hook))

    def __call__(self, grid_0: int, args: tuple) -> None:
        k = self.kernel
        stream = _current_raw_stream(_current_device())
        if not (self.hook_calls[0] or self.hook_calls[1]):
            k.run(grid_0, 1, 1, stream, k.function, k.packed_metadata, None, None, None,
                  *args, *self.constexprs)
            return
        bound = (*args, *self.constexprs)
        metadata = k.launch_metadata((grid_0, 1, 1), stream, *bound)
        k.run(grid_0, 1, 1, stream, k.function, k.packed_metadata, metadata, self.enter_hook,
              self.exit_hook, *bound)


def _calls(hook: Any) -> list:
    """The calls a launch hook makes: a ``knobs.HookChain``'s own (live) list, a plain function
    alone, nothing for None."""
    return [] if hook is None else getattr(hook, "calls", [hook])


COMPILED_STAGES = ("ttir", "ttgir", "llir", "ptx")  # Triton's lowering: our source -> ... -> PTX


def dump_compiled(name: str, kernel: Any, cfg: Config) -> None:
    """``MINICOMPILE_DEBUG=1`` on a GPU: each compiled stage of the kernel into the debug folder
    (``kernel.asm`` holds them; the interpreter compiles nothing)."""
    for stage in COMPILED_STAGES:
        text = getattr(kernel, "asm", {}).get(stage)
        if text:
            debug.dump_artifact(f"triton_{stage}", text if isinstance(text, str) else repr(text),
                                title=f"{name} {cfg}")


class TritonLauncher:
    """A callable kernel: ``launcher(*buffers, *sizes, xnumel[, rnumel])``."""

    def __init__(self, name: str, fn: Any, kind: str, source: str, autotune: bool = True,
                 options: dict = COMPILE_OPTIONS, hint: str = "inner",
                 knobs: InductorOptions | None = None, itemsize: int = 4):
        self.name, self.fn, self.kind, self.source, self.options = name, fn, kind, source, options
        self.hint = hint  # a reduction's: "outer" when its loads are contiguous along the kept dim
        self.itemsize = itemsize  # bytes of the narrowest element its loads walk along a row
        self.knobs = knobs or InductorOptions.build()  # the compile's (max_autotune, threads)
        self.autotune = autotune and not INTERPRET
        self.best: dict[tuple[int, int], Config] = {}  # size class -> chosen config
        self.grids: dict[tuple[int, int], tuple[Config, int]] = {}  # sizes -> (config, grid)
        self.binaries: dict[tuple, CompiledLaunch] = {}  # (config, binary_key) -> binary
        self.timings: dict[tuple[int, int], dict[Config, float]] = {}  # size class -> ms per config
        # binary_key -> (binary, grid): a call like an earlier one is one lookup and one launch
        self.ready: dict[tuple, tuple[CompiledLaunch, int]] = {}
        self.pointers: int | None = None  # leading tensor arguments, where the caller knows
        self.compiling: concurrent.futures.Future | None = None  # ``compile_in_background``

    def __call__(self, *args: Any) -> None:
        key = None if INTERPRET else binary_key(args) if self.pointers is None else \
            pointers_key(args, self.pointers)
        ready = self.ready.get(key)
        if ready is not None:
            ready[0](ready[1], args)
            return
        if self.compiling is not None:  # compiled ahead, in the background: wait for it, once
            self.compiling.result()
            self.compiling = None
        sizes = (int(args[-1]), 1) if self.kind == "pointwise" else (int(args[-2]), int(args[-1]))
        chosen = self.grids.get(sizes)
        if chosen is None:
            chosen = self.grids[sizes] = self.config_and_grid(args, *sizes)
        cfg, grid_0 = chosen
        if grid_0:  # (a kernel over zero elements is not launched)
            binary = self.launch(cfg, args, grid_0, key)
            if binary is not None:
                self.ready[key] = (binary, grid_0)

    def config_and_grid(self, args: tuple, xnumel: int, rnumel: int) -> tuple[Config, int]:
        """The config for these sizes' size class (autotuned the first time it is seen) and the
        grid it needs: ``cdiv(xnumel, XBLOCK)`` programs."""
        if xnumel == 0:
            return self.configs(1, max(rnumel, 1))[0], 0
        key = (pow2(xnumel), pow2(rnumel))
        if key not in self.best:
            self.best[key] = self.choose(args, xnumel, rnumel)
        cfg = self.best[key]
        return cfg, cfg.programs(xnumel, rnumel)

    def configs(self, xnumel: int, rnumel: int) -> list[Config]:
        return candidate_configs(self.kind, xnumel, rnumel, self.hint, self.knobs.max_autotune,
                                 self.itemsize)

    def launch(self, cfg: Config, args: tuple, grid_0: int,
               key: tuple | None = None) -> CompiledLaunch | None:
        """Launch ``cfg``'s binary for these arguments (compiled on first use); returns it, for
        the next call like this one to launch directly (None: launched through Triton's
        ``JITFunction.run``). ``key``: ``binary_key(args)`` if already computed."""
        grid = (grid_0,)
        if INTERPRET:
            with INTERPRETER_LOCK:
                self.run_jit(grid, cfg, args)
            return None
        key = (cfg, binary_key(args) if key is None else key)
        binary = self.binaries.get(key)
        if binary is not None:
            binary(grid[0], args)
            return binary
        kernel = self.run_jit(grid, cfg, args)  # compiles (or finds) and launches
        if self.knobs.debug:
            dump_compiled(self.name, kernel, cfg)
        if FAST_LAUNCH:
            binary = self.binaries[key] = CompiledLaunch(kernel, cfg)
        return binary

    def run_jit(self, grid: tuple[int], cfg: Config, args: tuple) -> Any:
        """Launch through ``JITFunction.run``, which compiles on a new specialisation. Triton's
        own error quotes the offending line of a file it does not name: name it, and the
        kernel (the file is in the kernel cache, where the source can be read and rerun).
        An error inside a helper the kernel calls is Triton's error's cause: it is quoted too."""
        try:
            return self.fn[grid](*args, **cfg.kwargs(), **self.options)
        except CompilationError as e:
            path = getattr(getattr(self.fn, "fn", None), "__code__", None)
            raise KernelCompileError(
                f"Triton kernel {self.name} failed to compile ({cfg})\n"
                f"  source: {path.co_filename if path else '<unknown>'}\n"
                f"{with_causes(e)}") from None

    def choose(self, args: tuple, xnumel: int, rnumel: int) -> Config:
        """The fastest candidate, timed on scratch copies of the tensors: a kernel that updates
        a buffer in place (``x[i] = x[i] * 2``) run a hundred times would leave it multiplied a
        hundred times (real Inductor clones the arguments a kernel mutates, likewise)."""
        configs = self.configs(xnumel, rnumel)
        if not self.autotune or len(configs) == 1:
            return configs[0]
        scratch = tuple(scratch_copy(a) if isinstance(a, torch.Tensor) else a for a in args)
        self.precompile(configs, scratch, xnumel)
        warmup, rep = AUTOTUNE_MS
        timings = {c: do_bench(lambda c=c: self.launch(c, scratch, c.programs(xnumel, rnumel)),
                               warmup=warmup, rep=rep)
                   for c in configs}
        best = min(timings, key=timings.get)
        self.timings[(pow2(xnumel), pow2(rnumel))] = timings
        trace_artifact("autotuning", lambda: "\n".join(
            f"  {c}: {t * 1e3:.1f} us{'  <- chosen' if c == best else ''}"
            for c, t in timings.items()),
            title=f"{self.name} (xnumel={xnumel}, rnumel={rnumel})")
        return best

    def precompile(self, configs: list[Config], args: tuple, xnumel: int) -> None:
        """Compile the candidates at once (``compile_ahead``), before timing them one by one.
        A candidate that fails to compile here fails again, with its error, when it is timed.
        (Already built, for a static graph on a GPU, when the graph was generated: then each
        is a cache hit.)"""
        compile_ahead([self.compile_job(c, args, xnumel) for c in configs], self.knobs)

    def compile_jobs(self, arg_types: tuple, device_index: int) -> list[CompileJob]:
        """One job per candidate config the first call will try: compile it for these
        arguments (a dtype for each buffer, the sizes as ints), and build its launcher
        (``compile_ahead``)."""
        if INTERPRET:
            return []
        xnumel, rnumel = (arg_types[-1], 1) if self.kind == "pointwise" else arg_types[-2:]
        if xnumel == 0:  # never launched
            return []
        configs = self.configs(xnumel, rnumel)
        return [self.compile_job(c, arg_types, xnumel, device_index)
                for c in (configs if self.autotune else configs[:1])]

    def compile_job(self, cfg: Config, args: tuple, xnumel: int,
                    device_index: int | None = None) -> CompileJob:
        return CompileJob(self.fn, cfg, args, xnumel, device_index, self.options)

    def __repr__(self) -> str:
        return f"<TritonLauncher {self.name} ({self.kind})>"


@dataclass
class CompileJob:
    """Compile ``cfg``'s binary of ``fn`` for ``args`` (tensors, or dtypes for them); with a
    device, on that device, and build its launcher (a C file built by gcc) too. A job that
    fails leaves the kernel to compile, and report its error, when it is launched."""
    fn: Any
    cfg: Config
    args: tuple
    xnumel: int
    device_index: int | None = None
    options: dict = field(default_factory=lambda: COMPILE_OPTIONS)

    def device(self) -> contextlib.AbstractContextManager:
        return contextlib.nullcontext() if self.device_index is None else \
            torch.cuda.device(self.device_index)

    def warmup(self) -> Any:
        return self.fn.warmup(*self.args, grid=(triton.cdiv(self.xnumel, self.cfg.XBLOCK),),
                              **self.cfg.kwargs(), **self.options)

    def __call__(self) -> None:
        try:
            with self.device():
                kernel = self.warmup()
                if self.device_index is not None:
                    kernel._init_handles()
        except Exception:
            pass

    def worker_job(self) -> dict | None:
        """The job for a compile worker (``compile_workers.py``); None if already compiled."""
        try:
            with self.device():
                return compile_workers.specialization(
                    self.fn, self.args, (triton.cdiv(self.xnumel, self.cfg.XBLOCK),),
                    {**self.cfg.kwargs(), **self.options})
        except Exception:
            return None


def compile_ahead(jobs: list[CompileJob], knobs: InductorOptions) -> None:
    """Compile a graph's kernels, every candidate of each, at once, as soon as the graph is
    generated (Inductor's ``async_compile``): the first call then times candidates already
    built, instead of compiling kernel after kernel as the wrapper reaches them. Worker
    processes compile the binaries into Triton's cache (``compile_workers.py``); then threads
    load each (a cache hit) and build its launcher, with ``gcc`` in a process: the part of
    Triton's work that threads overlap. Without workers, the threads compile too."""
    workers = None if INTERPRET else compile_workers.workers_for(len(jobs), knobs.compile_workers)
    if workers is not None:
        workers.run([j for j in (job.worker_job() for job in jobs) if j is not None])
    start = time.perf_counter()
    threads = min(len(jobs), knobs.compile_threads)
    if threads < 2:
        for job in jobs:
            job()
    else:
        with concurrent.futures.ThreadPoolExecutor(threads) as pool:
            list(pool.map(lambda job: job(), jobs))
    log.debug("%d compile jobs loaded or compiled in %d threads in %.2f s (after workers: %s)",
              len(jobs), threads, time.perf_counter() - start, workers is not None)


_background = concurrent.futures.ThreadPoolExecutor(2, thread_name_prefix="compile_ahead")
_pending: set[concurrent.futures.Future] = set()  # background compiles not yet finished


def compile_in_background(jobs: list[CompileJob],
                          knobs: InductorOptions) -> concurrent.futures.Future:
    """``compile_ahead(jobs)`` in a background thread: a graph's kernels compile while the
    compiler goes on (lowering the backward graph while the forward's kernels compile, running
    the forward while the backward's do). A launcher waits for the future before its first
    launch (``TritonLauncher.compiling``)."""
    def compile_all() -> None:
        try:
            compile_ahead(jobs, knobs)
        except Exception:  # noqa: BLE001 (a kernel not compiled here compiles at its call)
            pass
    future = _background.submit(compile_all)
    _pending.add(future)
    future.add_done_callback(_pending.discard)
    return future


def wait_for_background_compiles() -> None:
    """Return once every background compile has finished: a candidate config no launch has
    asked for yet may still be compiling into Triton's cache after a graph's first call (the
    benchmark's cold run waits here before it deletes the cache folder it made)."""
    concurrent.futures.wait(list(_pending))
