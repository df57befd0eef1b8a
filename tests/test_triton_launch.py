"""The Triton launcher's direct path (runtime/triton_heuristics.py: ``CompiledLaunch``): a binary
compiled for one specialization (16-byte aligned pointers, sizes that are multiples of 16, a size
of 1) must never be reused for arguments outside it."""

import ast
import os

import pytest
import torch
from triton.compiler.errors import CompilationError

import minicompile as mc
from minicompile.inductor.codecache import PyCodeCache
from minicompile.inductor.runtime.triton_heuristics import (KernelCompileError, TritonLauncher,
                                                            binary_key, pointers_key)

def test_pointers_key_is_binary_key_of_a_generated_kernels_arguments():
    x = torch.zeros(64)
    for args in ((x, x[1:], 32, 1), (x[3:], x, 17, 48), (x, x, x[4:], 33)):
        tensors = sum(isinstance(a, torch.Tensor) for a in args)
        assert pointers_key(args, tensors) == binary_key(args)


def test_binary_key_separates_what_triton_compiles_apart():
    """A kernel's tensors have fixed dtypes; what else Triton specialises on must change the key."""
    x = torch.zeros(64)
    assert binary_key((x, 32)) != binary_key((x[1:], 32))  # alignment of the pointer
    assert binary_key((x, 32)) != binary_key((x, 33))  # multiple of 16
    assert binary_key((x, 1)) != binary_key((x, 17))  # the size 1
    assert binary_key((x, 32)) != binary_key((x, 2**31))  # beyond 32 bits
    assert binary_key((x, 32)) == binary_key((x[16:], 32))  # another aligned pointer: the same


@pytest.mark.gpu
def test_one_compiled_function_over_sizes_and_offsets():
    """Alternate specializations on one compiled graph: every call equals eager."""
    f = mc.compile(lambda x, y: torch.sin(x) * 2 + y, dynamic=True)
    base = torch.randn(5000, device="cuda")
    for n in (1024, 1000, 1, 4096, 37, 1024, 1000):
        for off in (0, 1, 4, 0):
            x, y = base[off:off + n], base[off + 7:off + 7 + n]
            torch.testing.assert_close(f(x, y), torch.sin(x) * 2 + y)


@pytest.mark.gpu
def test_reductions_over_sizes():
    f = mc.compile(lambda x: torch.softmax(x, -1) + x.sum(-1, keepdim=True), dynamic=True)
    for m, n in ((8, 64), (7, 33), (1, 1), (16, 1024), (3, 5000), (8, 64)):
        x = torch.randn(m, n, device="cuda")
        torch.testing.assert_close(f(x), torch.softmax(x, -1) + x.sum(-1, keepdim=True))


BROKEN_KERNEL = """
import triton
import triton.language as tl


@triton.jit
def triton_poi_broken_0(out_ptr, xnumel, XBLOCK: tl.constexpr):
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
    tl.store(out_ptr + xindex, no_such_name, xindex < xnumel)
"""


def broken_launcher():
    module = PyCodeCache.load(BROKEN_KERNEL, "triton_poi_broken_0")
    return TritonLauncher("triton_poi_broken_0", module.triton_poi_broken_0, "pointwise",
                          BROKEN_KERNEL, autotune=False), module.__file__


class FailsToCompile:
    """A JIT function whose compile fails, as Triton reports it (the interpreter compiles
    nothing, so on CPU the failure is simulated; the gpu test below gets a real one)."""

    def __init__(self, jit):
        self.fn = jit.fn

    def __getitem__(self, grid):
        def run(*args, **kwargs):
            node = ast.parse("tl.store(out_ptr, no_such_name)").body[0]
            raise CompilationError(BROKEN_KERNEL, node, "NameError: no_such_name")
        return run


def test_kernel_compile_error_names_the_kernel_and_its_file():
    launcher, path = broken_launcher()
    launcher.fn = FailsToCompile(launcher.fn)
    with pytest.raises(KernelCompileError) as info:
        launcher(torch.empty(8), 8)
    message = str(info.value)
    assert "Triton kernel triton_poi_broken_0 failed to compile" in message
    assert f"source: {path}" in message and "no_such_name" in message
    assert info.value.__context__ is None or info.value.__suppress_context__


@pytest.mark.gpu
def test_real_kernel_compile_error_names_the_kernel_and_its_file():
    launcher, path = broken_launcher()
    with pytest.raises(KernelCompileError, match=f"triton_poi_broken_0.*\n  source: {path}"):
        launcher(torch.empty(8, device="cuda"), 8)


def test_autotuning_times_a_kernel_that_updates_in_place_on_copies(monkeypatch):
    """Timing runs a kernel many times; one that doubles a buffer in place must leave it doubled
    once (on the GPU an in-place update of a graph input came back as zeros: 2**64 * x in int64).
    The interpreter does not autotune: two configs and a timer are simulated."""
    from minicompile.inductor.runtime import triton_heuristics as th

    source = """
import triton
import triton.language as tl


@triton.jit
def triton_poi_double_0(in_out_ptr0, xnumel, XBLOCK: tl.constexpr):
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
    xmask = xindex < xnumel
    tl.store(in_out_ptr0 + xindex, tl.load(in_out_ptr0 + xindex, xmask) * 2, xmask)
"""
    module = PyCodeCache.load(source, "triton_poi_double_0")
    launcher = TritonLauncher("triton_poi_double_0", module.triton_poi_double_0, "pointwise",
                              source, autotune=False)
    launcher.autotune = True
    monkeypatch.setattr(th, "candidate_configs",
                        lambda kind, x, r, *options: [th.Config(8), th.Config(16)])
    timed = []

    def fake_do_bench(fn, warmup, rep):
        for _ in range(5):
            fn()
        timed.append(fn)
        return float(len(timed))

    monkeypatch.setattr(th, "do_bench", fake_do_bench)
    if not th.INTERPRET and not torch.cuda.is_available():
        pytest.skip("Triton kernels run on a GPU or under TRITON_INTERPRET=1")
    x = torch.arange(37, device="cpu" if th.INTERPRET else "cuda")
    expected = x * 2
    launcher(x, 37)
    assert len(timed) == 2 and torch.equal(x, expected)
    t = torch.arange(40)[::2]  # a strided view: its copy keeps the strides and the offsets
    copy = th.scratch_copy(t)
    assert copy.stride() == t.stride() and copy.data_ptr() != t.data_ptr() and torch.equal(copy, t)


@pytest.mark.gpu
def test_kernels_compile_ahead_of_the_first_call(monkeypatch):
    """A static graph's kernels, every candidate config of each, start compiling in the
    background when the graph is generated (before its first call); the first call waits for
    them and is right. A dynamic graph's do not (its sizes are not known yet)."""
    from minicompile.inductor.codegen import triton as triton_codegen

    jobs, futures = [], []
    ahead = triton_codegen.compile_in_background

    def record(js, *knobs):
        jobs.append(len(js))
        futures.append(ahead(js, *knobs))
        return futures[-1]

    monkeypatch.setattr(triton_codegen, "compile_in_background", record)
    fn = lambda x: torch.softmax(x * 2, -1) + 1  # noqa: E731
    x = torch.randn(64, 1000, device="cuda")
    mc.reset()
    compiled = mc.compile(fn)
    torch.testing.assert_close(compiled(x), fn(x))
    assert jobs and jobs[0] >= 1 and all(f.done() for f in futures)
    jobs.clear()
    mc.reset()
    torch.testing.assert_close(mc.compile(fn, dynamic=True)(x), fn(x))
    assert jobs == []


def test_the_cold_benchmark_run_waits_for_background_compiles(monkeypatch, tmp_path):
    """A candidate config no launch has asked for may still be compiling into Triton's cache
    after a graph's first call; the benchmark's cold run deletes its cache folder on leaving,
    so it waits for them first (poolformer_s12 crashed there: 'Directory not empty')."""
    import threading

    from minicompile.bench.timing import cold_minicompile
    from minicompile.inductor.options import InductorOptions
    from minicompile.inductor.runtime import triton_heuristics as th

    started, written = threading.Event(), []

    def slow_compile(jobs, knobs):  # a compile that writes into the cache after a while
        started.wait()
        written.append(os.environ["TRITON_CACHE_DIR"])
        path = os.path.join(written[-1], "late")
        os.makedirs(written[-1], exist_ok=True)
        open(path, "w").close()

    monkeypatch.setattr(th, "compile_ahead", slow_compile)
    with cold_minicompile():
        future = th.compile_in_background([], InductorOptions.build())
        started.set()  # (it starts only once the call that asked for it has returned)
    assert future.done() and written and not os.path.exists(written[0])


def test_candidate_configs_leave_programs_enough(monkeypatch):
    """Rows several at a time are a candidate only where they still make ``MIN_PROGRAMS``
    programs: each candidate is one more compile on the first call, and with fewer programs
    the GPU idles whatever the config. One row a program is always a candidate."""
    from minicompile.inductor.runtime import triton_heuristics as th

    monkeypatch.setattr(th, "INTERPRET", False)
    xblocks = lambda kind, x, r: [c.XBLOCK for c in th.candidate_configs(kind, x, r)]  # noqa: E731
    assert xblocks("persistent", 64, 256) == [1]  # a split sum: 64 rows
    assert xblocks("persistent", 8192, 256) == [1, 8, 32]
    assert xblocks("persistent", 8 * th.MIN_PROGRAMS, 256) == [1, 8]
    assert xblocks("looped", 100, 2000) == [1]
    assert xblocks("looped", 100_000, 2000) == [1, 8, 64]
    assert xblocks("looped", 4, 50_000) == [1, 1]  # long rows: one a program, two block sizes


@pytest.mark.gpu
def test_launch_hooks_added_after_compiling_see_every_direct_launch():
    """A profiler adds its hook to Triton's chain after kernels were compiled and launched: the
    direct launch must still call it, with the kernel's metadata, and stop once it is removed."""
    from triton import knobs
    f = mc.compile(lambda x: torch.sin(x) * 2 + 1)
    x = torch.randn(4096, device="cuda")
    f(x), f(x)  # compiled, then launched directly
    seen = []
    chain = knobs.runtime.launch_enter_hook
    hook = (lambda metadata: seen.append(metadata.data["name"]))
    if hasattr(chain, "add"):
        chain.add(hook)
    else:  # older Triton: one hook, not a chain
        pytest.skip("this Triton's launch hook is not a chain")
    try:
        torch.testing.assert_close(f(x), torch.sin(x) * 2 + 1)
        torch.cuda.synchronize()
        assert seen and all("triton" in name for name in seen), seen
    finally:
        chain.remove(hook)
    n = len(seen)
    f(x)
    torch.cuda.synchronize()
    assert len(seen) == n
