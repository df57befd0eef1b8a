"""Kernel strategies chosen from a loop nest's structure (the pattern suite's shapes): each test
runs on the C++ backend and on Triton (``TRITON_INTERPRET=1``), checks against eager on odd
sizes and non-contiguous inputs, and checks that the strategy really shows in the generated
source (a test that passes by falling back to eager would prove nothing)."""

from __future__ import annotations

import re

import pytest
import torch
import torch.nn.functional as F

import minicompile as mc
from conftest import record_defined_kernels, use_cpu_backend

BACKENDS = ["cpp", "triton"]


@pytest.fixture(params=BACKENDS)
def backend(request, monkeypatch):
    use_cpu_backend(monkeypatch, request.param)
    mc.metrics.reset()
    yield request.param
    mc.reset()


def check(fn, *args, rtol=1e-4, atol=1e-5, **compile_kwargs):
    compiled = mc.compile(fn, backend="inductor", **compile_kwargs)
    torch.testing.assert_close(compiled(*args), fn(*args), rtol=rtol, atol=atol, equal_nan=True)
    assert mc.metrics.eager_fallbacks == 0
    return compiled


def _calls_pow(source: str) -> bool:
    return any(call in source for call in ("mc::pow(", "libdevice.pow(", "triton_helpers.pow("))


# --- x ** n as multiplications --------------------------------------------------------------------

@pytest.mark.parametrize("exponent", [2, 3, 3.0, -2, 7, 0.5])
def test_small_integer_power_is_multiplications(backend, sources, exponent):
    x = torch.randn(37, 29).abs() + 0.5
    check(lambda x: x ** exponent - 1, x)
    assert sources and not any(_calls_pow(s) for s in sources), sources


def test_other_powers_still_call_pow(backend, sources):
    x = torch.rand(37, 29) + 0.5
    check(lambda x: x ** 2.5 + x ** 40, x, rtol=1e-4, atol=1e-4)
    assert any(_calls_pow(s) for s in sources)


def test_gelu_tanh_matches_eager(backend):
    x, b = torch.randn(129, 77) * 4, torch.randn(77)
    check(lambda x, b: F.gelu(x + b, approximate="tanh"), x, b)
    check(lambda x: F.gelu(x.t(), approximate="tanh"), torch.randn(33, 65))  # non-contiguous


# --- outer reductions: the kept dim contiguous --------------------------------------------------

@pytest.fixture
def launchers(monkeypatch) -> list:
    """Every kernel object defined while the test runs (Triton: its launcher)."""
    return record_defined_kernels(monkeypatch, lambda kernel, source: kernel)


@pytest.mark.parametrize("fn, x, hint", [
    (lambda x: x.sum(0), torch.randn(67, 33), "outer"),              # looped: 67 rows
    (lambda x: x.sum(0), torch.randn(37, 33), "outer"),              # persistent
    (lambda x: x.amax(0), torch.randn(3001, 35), "outer"),           # looped
    (lambda x: x.t().sum(-1), torch.randn(67, 33), "outer"),         # a transposed view
    (lambda x: x.sum(-1), torch.randn(67, 33), "inner"),
    (lambda x: x.sum((0, 2)), torch.randn(3, 5, 2001), "inner"),     # rows contiguous in parts
    (lambda x: torch.var_mean(x, (0, 2, 3)),                         # channels-last statistics
     torch.randn(4, 8, 5, 7).to(memory_format=torch.channels_last), "outer"),
])
def test_reduction_hint_from_load_strides(backend, launchers, fn, x, hint):
    check(fn, x, rtol=1e-4, atol=1e-4)
    if backend == "triton":
        assert launchers[0].hint == hint
        assert ("# outer reduction" in launchers[0].source) == (hint == "outer")


@pytest.mark.parametrize("rows", [64, 65, 512])
def test_outer_rows_past_the_limit_loop(monkeypatch, launchers, rows):
    """An outer reduction keeps its rows in one block only up to ``OUTER_PERSISTENT_RNUMEL``:
    longer, the block would be a few kept elements wide (uncoalesced), so it loops in wide tiles.
    An inner one of the same length stays in one block."""
    use_cpu_backend(monkeypatch, "triton")
    from minicompile.inductor.codegen.triton_kernel import OUTER_PERSISTENT_RNUMEL

    x = torch.randn(rows, 40, dtype=torch.bfloat16)
    check(lambda a: a.sum(0), x, rtol=1e-2, atol=1e-1)
    check(lambda a: a.t().sum(0), x, rtol=1e-2, atol=1e-1)  # inner: rows contiguous
    outer, inner = launchers
    assert outer.hint == "outer" and inner.hint == "inner"
    assert outer.kind == ("looped" if rows > OUTER_PERSISTENT_RNUMEL else "persistent")
    assert inner.kind == "persistent"
    mc.reset()


def test_outer_reduction_dynamic_and_strided(backend):
    f = lambda x: (x * 2).sum(0)  # noqa: E731
    compiled = mc.compile(f, dynamic=True)
    for x in (torch.randn(37, 21), torch.randn(129, 45), torch.randn(64, 90)[:, ::3]):
        torch.testing.assert_close(compiled(x), f(x), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("fn, x", [
    # a squeeze-excite's pooling of a channels-last batch: C is the contiguous dim
    (lambda x: x.mean((2, 3)), torch.randn(8, 64, 28, 28).to(memory_format=torch.channels_last)),
    (lambda x: (x * x.sigmoid()).sum((2, 3), keepdim=True),
     torch.randn(4, 80, 33, 30).to(memory_format=torch.channels_last)),  # masked last chunk
    (lambda x: x.t().amax(-1), torch.randn(3000, 300)),  # a transposed view
])
def test_split_of_an_outer_reduction_in_memory_keeps_it_outer(monkeypatch, launchers, fn, x):
    """A reduction over the last dims whose kept dim is the contiguous one in memory is an
    outer reduction although no kept dim comes after a reduced one: on a GPU with few outputs
    it is split, and its partials are laid out split-major, so both passes read coalesced
    along the kept dim. (Split as an inner one, the partials' index put the split fastest:
    each program read elements a channel apart, and EfficientNet's squeeze-excite backward
    took 0.46 ms a kernel on an H200.)"""
    use_cpu_backend(monkeypatch, "triton")
    from minicompile.inductor.lowerings import reductions
    monkeypatch.setattr(reductions, "device_programs", lambda device: 256)
    check(fn, x, rtol=1e-4, atol=1e-4)
    assert [k.hint for k in launchers] == ["outer", "outer"], [k.source for k in launchers]
    mc.reset()


def test_outer_configs_are_wide_in_x(monkeypatch):
    """On a GPU an outer reduction's candidates own many adjacent kept elements (coalesced
    loads), an inner one's one row each in long blocks."""
    pytest.importorskip("triton")
    from minicompile.inductor.runtime import triton_heuristics as th

    monkeypatch.setattr(th, "INTERPRET", False)
    for kind, r in (("looped", 8192), ("persistent", 512)):
        outer = th.candidate_configs(kind, 8192, r, "outer")
        assert outer and all(c.XBLOCK >= 8 for c in outer), outer
        assert all(c.XBLOCK * c.RBLOCK <= 8192 for c in outer)
    assert th.candidate_configs("looped", 8192, 8192)[0].XBLOCK == 1
    assert th.candidate_configs("looped", 256, 100_000, "outer")  # few columns: still one


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_outer_tiles_are_sized_in_bytes(monkeypatch, launchers, dtype):
    """A 16-bit outer reduction's launcher knows its loads' element size, and its tiles are
    twice as many elements wide as float32's: each loop step reads the same bytes per row
    (a 64-wide tile of bfloat16 read half a float32 tile's bytes). Values equal eager's."""
    use_cpu_backend(monkeypatch, "triton")
    from minicompile.inductor.runtime import triton_heuristics as th

    x = torch.randn(3001, 35).to(dtype)
    check(lambda a: (a.amax(0), a.sum(0)), x, rtol=1e-2, atol=1e-1)
    assert launchers[0].hint == "outer" and launchers[0].itemsize == dtype.itemsize
    monkeypatch.setattr(th, "INTERPRET", False)
    f32 = th.candidate_configs("looped", 1 << 20, 4096, "outer")
    ours = th.candidate_configs("looped", 1 << 20, 4096, "outer", itemsize=dtype.itemsize)
    assert [c.XBLOCK * dtype.itemsize for c in ours] == [c.XBLOCK * 4 for c in f32]
    assert [c.RBLOCK for c in ours] == [c.RBLOCK for c in f32]
    mc.reset()


# --- argmax rows kept in registers up to the multi-pass limit ----------------------------------

def _argmax_rows(n: int) -> torch.Tensor:
    """Rows where the first maximum must win: a NaN, all equal, two equal maxima far apart,
    all -inf, and random rows."""
    x = torch.randn(6, n)
    x[1, n // 2] = float("nan")
    x[2] = 3.0
    x[3, 5] = x[3, n - 3] = 50.0
    x[4] = float("-inf")
    return x


@pytest.mark.parametrize("n, kind", [(5000, "persistent"), (33001, "looped")])
def test_argmax_row_in_registers_up_to_the_multipass_limit(monkeypatch, launchers, sources, n,
                                                            kind):
    """A row of 5000 (past ``PERSISTENT_RNUMEL``, within ``PERSISTENT_MULTIPASS_RNUMEL``) is one
    block: a max, then the smallest index holding it, no per-element ``argmax_combine``. Past
    the limit the loop combines value and index lane by lane. Both give eager's indices, the
    first maximum (or NaN) of each row."""
    use_cpu_backend(monkeypatch, "triton")
    x = _argmax_rows(n)
    check(lambda a: (a.argmax(1), a.argmin(1)), x)
    assert _kinds(launchers) == [kind], _kinds(launchers)
    assert ("argmax_combine" in sources[0]) == (kind == "looped"), sources[0]
    mc.reset()


def test_row_invariant_load_is_one_per_row(monkeypatch, sources):
    """var_mean shifts each row by its first element, ``x[i, 0]``, read by every element of the
    row: a persistent kernel loads it once per row (masked by ``xmask`` alone, an (XBLOCK, 1)
    value), not once per lane. Values equal eager's, with a large mean and an odd row."""
    use_cpu_backend(monkeypatch, "triton")
    for x in (torch.randn(37, 129) + 1000, torch.randn(5, 3001) * 0.01 + 50):
        check(lambda a: torch.var_mean(a, 1), x, rtol=1e-4, atol=1e-4, dynamic=False)
    loads = re.findall(r"tl\.load\(in_ptr0 \+ \(([^)]*)\), ([^)]*)\)", "\n".join(sources))
    row = [mask for address, mask in loads if "rindex" not in address]
    assert loads and row, loads
    assert all("rmask" not in mask for mask in row), loads
    mc.reset()


# --- 2-D tiled pointwise kernels: loads and stores contiguous along different dims --------------

def _kinds(launchers) -> list[str]:
    return [getattr(k, "kind", None) for k in launchers]


@pytest.mark.parametrize("fn, args, tiled", [
    (lambda x, y: x.t() + y, (torch.randn(67, 33), torch.randn(33, 67)), True),
    (lambda x, y: x.permute(2, 0, 1) * y, (torch.randn(4, 5, 67), torch.randn(67, 4, 5)), True),
    (lambda x: x.contiguous(),                                        # NHWC -> NCHW
     (torch.randn(2, 16, 5, 7).to(memory_format=torch.channels_last),), True),
    (lambda x: x.t().contiguous().bfloat16(), (torch.randn(40, 129),), True),
    # strided and transposed: eager writes it column-major too, reading and writing in one order
    (lambda x: x.t()[::2] + 1, (torch.randn(33, 64),), False),
    (lambda x: x.t()[::2].contiguous() + 1, (torch.randn(33, 64),), True),  # row-major asked for
    (lambda x, y: x + y, (torch.randn(67, 33), torch.randn(67, 33)), False),
    (lambda x, b: x + b, (torch.randn(67, 33), torch.randn(33)), False),  # a broadcast is no tile
])
def test_tiled_pointwise(backend, launchers, sources, fn, args, tiled):
    check(fn, *args)
    if backend == "triton":
        assert ("tiled" in _kinds(launchers)) == tiled, _kinds(launchers)
    else:  # C++: tiles of the row loops (where the rows are long enough to have row loops)
        assert not any("// 2-D tiles" in s for s in sources) or tiled


def test_tiled_source_names_its_tile(backend, sources):
    check(lambda x, y: y + x.t(), torch.randn(31, 17), torch.randn(17, 31))  # y row-major first
    if backend == "cpp" and torch.empty(0).device.type == "cpu":  # (CUDA tensors: Triton's)
        (source,) = sources
        assert "// 2-D tiles" in source and "x0 < x0_end" in source
    else:
        (source,) = sources
        assert "# 2-D tile: xindex = 31*y0 + x0" in source
        assert "33*x0" not in source and "17*x0" in source  # x read along y0, a column apart


@pytest.mark.parametrize("shape", [(64, 48), (37, 50)])
def test_cpp_tile_reads_across_rows_from_its_copy(monkeypatch, sources, shape):
    """A C++ tile copies the elements it reads across its rows into a local array first, then
    reads that array consecutively (Inductor's ``transpose_mxn``): the loop is a plain vector
    loop, not gathers. A whole tile (constant ends) transposes 16 rows of 16 consecutive
    elements in registers; tiles at the edges of dims that are not multiples of 16 copy
    element by element."""
    use_cpu_backend(monkeypatch, "cpp")
    x, y = torch.randn(*shape), torch.randn(*shape[::-1])
    check(lambda x, y: x.t() * 2 + y, x, y)
    check(lambda x: x.permute(1, 0).contiguous().bfloat16(), x)
    full = all(n % 16 == 0 for n in shape)
    for source in sources:  # (which input is read across the rows: the output's layout says)
        read = re.search(r"= (in_ptr\d)_tile0\[16\*\(x1 - x1_tile\) \+ \(x0 - x0_tile\)\];", source)
        assert read, source
        assert re.search(rf"mc::transpose16<uint32_t>\({read.group(1)} \+ [^;]+, \d+, "
                         rf"{read.group(1)}_tile0\);", source), source
        copied = f"{read.group(1)}_tile0[16*(x1 - x1_tile) + (x0 - x0_tile)] = {read.group(1)}["
        assert (copied in source) == (not full), source
        assert "x1_end = x1_tile + 16;" in source, source
        assert ("// a whole tile" not in source and "std::min" not in source) == full


@pytest.mark.parametrize("fn, x", [
    (lambda x: x.contiguous(), torch.randn(2, 48, 32, 32).to(memory_format=torch.channels_last)),
    (lambda x: x.contiguous(), torch.randn(2, 64, 9, 9).to(memory_format=torch.channels_last)),
    (lambda x: x.t().contiguous(), torch.randn(64, 48).bfloat16()),
    (lambda x: x.t().contiguous(), torch.randn(64, 48).double()),
    (lambda x: x.t().contiguous(), torch.randint(-100, 100, (64, 48), dtype=torch.int8)),
    (lambda x: x.t()[:, 3:35].contiguous(), torch.randn(64, 64)),  # an offset, part of a row
    (lambda x: x.permute(2, 0, 1).contiguous(), torch.randn(16, 32, 48)),
])
def test_cpp_tiles_transposed_in_registers_copy_every_bit(monkeypatch, sources, fn, x):
    """Whole tiles of 1-, 2-, 4- and 8-byte elements transposed in registers (``mc::transpose16``
    moves bits), NHWC channel blocks included (``x1 // 64`` and ``x1 % 64`` are consecutive
    over a tile), give eager's tensor to the bit."""
    use_cpu_backend(monkeypatch, "cpp")
    out = mc.compile(fn)(x)
    assert torch.equal(out.view(-1).view(torch.uint8), fn(x).reshape(-1).view(torch.uint8))
    assert any("mc::transpose16<" in s for s in sources), sources


def test_transpose_with_dynamic_shapes_stays_correct(backend, launchers):
    """A symbolic size has no compile-time split: the kernel stays flat, and right."""
    f = lambda x, y: x.t() * 2 + y  # noqa: E731
    compiled = mc.compile(f, dynamic=True)
    for m, n in ((37, 21), (8, 65)):
        x, y = torch.randn(m, n), torch.randn(n, m)
        torch.testing.assert_close(compiled(x, y), f(x, y))


@pytest.mark.parametrize("dynamic", [False, True])
def test_static_sizes_are_constants_in_the_kernel(monkeypatch, sources, dynamic):
    """A static kernel states its sizes (``ynumel = 70``, ``xnumel = 35``: an NHWC -> NCHW copy
    of 5 x 7 images) over the arguments of those names, so that Triton's alignment analysis
    knows them; with symbolic sizes the arguments stay. Values equal eager's either way."""
    use_cpu_backend(monkeypatch, "triton")
    x = torch.randn(2, 35, 5, 7).to(memory_format=torch.channels_last)
    check(lambda t: t.contiguous() + 1, x, dynamic=dynamic)
    check(lambda t: t.sum(-1), torch.randn(9, 1500), dynamic=dynamic)
    tiled, looped = sources
    constants = [re.findall(r"^    (\w+numel) = (\d+)$", s, re.M) for s in sources]
    if dynamic:
        assert constants == [[], []], constants
    else:
        assert "2-D tile" in tiled and constants[0] == [("ynumel", "70"), ("xnumel", "35")]
        assert "for roffset" in looped and constants[1] == [("xnumel", "9"), ("rnumel", "1500")]
    mc.reset()


def test_tile_configs_cover_both_axes(monkeypatch):
    pytest.importorskip("triton")
    from minicompile.inductor.runtime import triton_heuristics as th

    monkeypatch.setattr(th, "INTERPRET", False)
    configs = th.candidate_configs("tiled", 8192, 8192)
    assert all(c.YBLOCK and c.XBLOCK >= 16 and c.YBLOCK >= 16 for c in configs), configs
    assert configs[0].programs(8192, 8192) == (8192 // configs[0].YBLOCK) * \
        (8192 // configs[0].XBLOCK)
    small = th.candidate_configs("tiled", 3, 5)  # capped at the sizes' powers of two
    assert all(c.XBLOCK <= 8 and c.YBLOCK <= 4 for c in small)


# --- 16-bit floats: converted on their bits, so the loops vectorise ----------------------------

@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_conversions_on_special_values(backend, sources, dtype):
    info = torch.finfo(dtype)
    special = torch.tensor([0.0, -0.0, float("nan"), float("inf"), -float("inf"), info.max,
                            info.tiny, 1 + info.eps / 2, 1 + 3 * info.eps / 2,
                            -(1 + info.eps / 2), 65519.0, 1e-8]
                           + ([info.tiny / 4] if backend == "cpp" else []))  # a subnormal
    # (Triton's bfloat16 rounding under the interpreter flushes a subnormal result to zero)
    x = torch.cat([special, torch.randn(1000) * 100]).to(dtype)
    y = torch.cat([torch.ones(len(special)), torch.rand(1000)]).to(dtype)
    check(lambda x, y: (x * y + x).to(torch.float32).to(dtype) * 0.5, x, y, rtol=0, atol=0)
    check(lambda x: F.silu(x) * x, torch.randn(129, 33).to(dtype), rtol=1e-2, atol=1e-2)
    if backend == "cpp":  # no struct temporaries in the loop (cpp_prefix.h: they stop omp simd)
        assert all("static_cast<mc::" not in s for s in sources), sources


def test_bfloat16_stores_round_bit_for_bit_as_eager(monkeypatch):
    """Floats computed in a C++ kernel and stored as bfloat16 (on a CPU with AVX512-BF16,
    sixteen at a time by one instruction: cpp_blocks.py): ties to even, past the largest,
    subnormals (which the instruction would read as zero) and NaNs with payloads (which it
    would keep), each vector of them among ordinary values, bit for bit as eager's conversion
    (a NaN as a NaN: eager's own vector and scalar conversions write different NaN bits).
    (Triton's interpreter rounds subnormals otherwise: see the test above.)"""
    use_cpu_backend(monkeypatch, "cpp")
    mc.reset()
    torch.manual_seed(0)
    bits = torch.randint(-2 ** 31, 2 ** 31 - 1, (4096,), dtype=torch.int64).to(torch.int32)
    odd = torch.tensor([0x00012345, -0x7ffedcbb, 0x7fa00001, -0x005fffff, 0x3f808000,
                        0x3f818000, 0x7f7fffff, 0x00000001], dtype=torch.int32)
    x = torch.cat([bits, odd, torch.randn(1000)[None].view(torch.int32)[0]]).view(torch.float32)
    got = mc.compile(lambda x: (x * 1).to(torch.bfloat16))(x)
    expected = (x * 1).to(torch.bfloat16)
    nan = expected.isnan()
    assert torch.equal(got.isnan(), nan)
    assert torch.equal(got[~nan].view(torch.int16), expected[~nan].view(torch.int16))


def test_float16_rounding_of_every_value_and_every_tie(backend, sources):
    """Every float16, the midpoints between neighbours (ties: to even) and the floats just
    either side of them, past the largest finite one and down among the subnormals: rounded
    to float16 inside a kernel and stored as float16, bit for bit as eager's conversion."""
    h = torch.arange(-2 ** 15, 2 ** 15, dtype=torch.int32).to(torch.int16).view(torch.float16)
    v = h.float()[torch.isfinite(h)].double().sort().values
    mids = ((v[:-1] + v[1:]) / 2).float()
    x = torch.cat([h.float(), mids, mids.nextafter(torch.tensor(float("inf"))),
                   mids.nextafter(torch.tensor(-float("inf"))),
                   torch.tensor([65520.0, 65519.996, 2.0 ** 115, -3e38, 2.0 ** -25, 2.0 ** -140])])
    check(lambda x: ((x.half().float() * 1).half(), x.half()), x, rtol=0, atol=0)
    if backend == "cpp" and not x.is_cuda:  # a store rounds by itself: no second rounding
        # before it (CUDA tensors, MINICOMPILE_TEST_DEVICE=cuda: Triton writes the kernels)
        assert any("mc::round_to<mc::float16>" in s for s in sources), sources
        assert not any(re.search(r"auto (tmp\d+) = mc::round_to.*\n.*store_float\(.*\1\)", s)
                       for s in sources), sources
