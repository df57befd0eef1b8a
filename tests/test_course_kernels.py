"""The course's kernel-anatomy helpers (notebooks 07-09): the roofline's peaks and bytes, the
sectors a warp touches in minicompile's real transpose kernels, the persistent and looped
reductions forced at one size, and the occupancy arithmetic. Kernels are checked against eager."""

import pytest
import torch

from minicompile import config
from minicompile.course import coalescing, occupancy, reduction_choice, roofline
from minicompile.viz.codegen import our_kernels, output_code

pytest.importorskip("triton")
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"  # CPU tensors: Triton's interpreter


@pytest.fixture
def triton_cpu(monkeypatch):
    monkeypatch.setattr(config.inductor, "cpu_backend", "triton")  # (conftest interprets)


# --- roofline -------------------------------------------------------------------------------

@pytest.mark.parametrize("name, gbs", [("NVIDIA H100 80GB HBM3", 3350), ("NVIDIA H100 PCIe", 2000),
                                       ("NVIDIA H200", 4800), ("NVIDIA H200 NVL", 4800)])
def test_gpu_peaks_come_from_the_row_of_that_gpu(name, gbs):
    peaks = roofline.gpu_peaks(name)
    assert peaks.gbs == gbs
    assert peaks.ridge == pytest.approx(next(iter(peaks.flops.values())) / (gbs * 1e9))


def test_an_unknown_gpu_has_no_datasheet_row():
    assert roofline.gpu_peaks("NVIDIA A100-SXM4-80GB") is None


def test_workloads_count_the_compulsory_bytes_and_compute_eagers_values():
    pointwise = roofline.pointwise_workload(1 << 12, "cpu")
    reduction = roofline.reduction_workload(64, 128, "cpu")
    assert pointwise.nbytes == 2 * 4 * (1 << 12)  # x read once, the result written once
    assert reduction.nbytes == 4 * (64 * 128 + 64)
    assert roofline.pointwise_workload(1000, "cpu").nbytes == 2 * 4 * 1000  # (counted whole)
    assert roofline.reduction_workload(5, 7, "cpu").nbytes == 4 * (5 * 7 + 5)
    point = roofline.measure(pointwise, "cpu")
    assert point.intensity == pytest.approx(0.25)
    assert point.gbs == pytest.approx(pointwise.nbytes / point.seconds / 1e9)
    peaks = roofline.Peaks("cpu", "test", 10.0, {"float32": 1e11}, "given")
    text = roofline.table(peaks, [point])
    assert "x*2+3" in text and "memory" in text
    fig = roofline.plot_roofline(peaks, [point])
    flops_view, gbs_view = fig.axes
    assert flops_view.collections[0].get_offsets()[0][1] == pytest.approx(point.flops_per_s)
    assert gbs_view.collections[0].get_offsets()[0][1] == pytest.approx(point.gbs)
    fig.clf()


# --- coalescing -----------------------------------------------------------------------------

def test_the_flat_transpose_reads_a_sector_per_lane_and_the_tile_coalesces(triton_cpu):
    flat, tiled = coalescing.transpose_kernels(48, 40, DEVICE)
    assert "y0 = " in tiled and "y0 = " not in flat
    found = {(a.kind, "y0" in a.index): a for a in coalescing.warp_accesses(flat)}
    assert found["load", False].sectors == 32 and found["store", False].sectors == 4
    assert [a.sectors for a in coalescing.warp_accesses(tiled)] == [4, 4]
    assert found["load", False].efficiency == pytest.approx(1 / 8)


def test_kernel_accesses_keep_nested_parentheses():
    source = "    tmp0 = tl.load(in_ptr0 + ((xindex // 48) + 40*(xindex % 48)), xmask)\n" \
             "    tl.store(out_ptr0 + (xindex), tmp0, xmask)"
    assert coalescing.kernel_accesses(source) == [
        ("load", "in_ptr0", "(xindex // 48) + 40*(xindex % 48)"), ("store", "out_ptr0", "xindex")]


def test_flat_and_tiled_transposes_equal_eager(triton_cpu):
    import minicompile as mc

    x = torch.randn(31, 17, device=DEVICE)
    with coalescing.without_tiling():
        torch.testing.assert_close(mc.compile(coalescing.transpose)(x), x.t().contiguous())
    torch.testing.assert_close(mc.compile(coalescing.transpose)(x), x.t().contiguous())


# --- persistent or looped -------------------------------------------------------------------

@pytest.mark.parametrize("kind, prefix", [("persistent", "triton_per_"), ("looped", "triton_red_")])
def test_a_forced_reduction_kind_writes_that_kernel_and_equals_eager(triton_cpu, kind, prefix):
    import minicompile as mc

    x = torch.randn(3, 300, device=DEVICE)
    x[1, 7] = float("nan")
    with reduction_choice.forced_reduction(kind):
        (name,) = our_kernels(output_code(reduction_choice.softmax, x))
        out = mc.compile(reduction_choice.softmax)(x)
    assert name.startswith(prefix)
    torch.testing.assert_close(out, torch.softmax(x, -1), equal_nan=True)


@pytest.mark.cpu_only
def test_the_cpp_transpose_is_tiled_unless_tiling_is_off(monkeypatch):
    monkeypatch.setattr(config.inductor, "cpu_backend", "cpp")  # (also under the Triton pass)
    x = torch.randn(64, 48, device="cpu")
    with coalescing.without_tiling():
        flat = output_code(coalescing.transpose, x)
    assert "2-D tiles" in output_code(coalescing.transpose, x) and "2-D tiles" not in flat
    gbs = coalescing.transpose_bandwidth(64, "cpu")  # (each kernel checked against eager)
    assert set(gbs) == {"minicompile, flat", "minicompile, 2-D tile", "eager",
                        "copy (no transpose)"} and min(gbs.values()) > 0


def test_the_rules_are_read_from_the_installed_sources():
    real = reduction_choice.inductor_rule()
    assert real.where.startswith("torch/_inductor/") and "persistent" in real.source
    ours = reduction_choice.minicompile_rule()
    assert ours.where.startswith("minicompile/inductor/codegen/triton_kernel.py:")
    assert "PERSISTENT_RNUMEL" in ours.source


# --- occupancy ------------------------------------------------------------------------------

LIMITS = occupancy.SMLimits("compute capability 9.0")


@pytest.mark.parametrize("regs, shared, warps, blocks, limiter", [
    (32, 0, 4, 16, "registers and warps"),  # 32 x 32 x 4 = 4096 registers a block
    (33, 0, 4, 12, "registers"),  # 33 a thread round up to 40 (1280 a warp)
    (128, 0, 4, 4, "registers"),
    (96, 65536, 4, 3, "shared memory"),  # 228 KB / (64 + 1) KB
    (16, 0, 1, 32, "blocks"),
])
def test_occupancy_is_the_tightest_limit(regs, shared, warps, blocks, limiter):
    occ = occupancy.occupancy(regs, shared, warps, LIMITS)
    assert (occ.blocks, occ.limiter) == (blocks, limiter)
    assert occ.fraction == pytest.approx(blocks * warps / 64)


@pytest.mark.gpu
def test_template_stats_read_the_compiled_kernels():
    a, b = torch.randn(256, 256, device="cuda"), torch.randn(256, 256, device="cuda")
    rows = occupancy.template_stats(a, b)
    assert all(r["regs/thread"] > 0 and r["ms"] > 0 for r in rows if "error" not in r)
    (launcher,) = occupancy.kernel_launchers(lambda x: torch.softmax(x, -1), a)
    stats = occupancy.launcher_stats(launcher)
    assert stats and all(r["regs/thread"] > 0 for r in stats)
    assert "occupancy" in occupancy.format_stats(stats)


@pytest.mark.gpu
def test_the_gpu_measurements_run_and_check_their_kernels():
    assert roofline.gpu_peaks(torch.cuda.get_device_name()) is not None  # an H100 or H200
    point = roofline.measure(roofline.matmul_workload(256, "cuda"), "cuda")
    assert point.intensity == pytest.approx(256 / 6)
    assert min(coalescing.transpose_bandwidth(1024, "cuda").values()) > 0
    sweep = reduction_choice.reduction_sweep([256, 4096], 1 << 16, "cuda")
    assert all(len(v) == 2 and min(v) > 0 for v in sweep.values())


def test_format_stats_reports_throughput_and_configs_that_do_not_fit():
    occ = occupancy.occupancy(128, 65536, 4, LIMITS)
    rows = [{"config": (64, 64, 32, 4, 3), "regs/thread": 128, "spills": 0, "shared KB": 64.0,
             "occupancy": occ, "ms": 2.0},
            {"config": (256, 256, 64, 8, 4), "error": "out of resource: shared memory"}]
    text = occupancy.format_stats(rows, ("TFLOP/s", 2 * 4096 ** 3 / 1e12))
    assert f"{2 * 4096 ** 3 / 2e-3 / 1e12:.3g}" in text and str(occ) in text
    assert "out of resource" in text


def test_kernel_launchers_are_the_compiled_kernels_of_the_function(triton_cpu):
    x = torch.randn(4, 37, device=DEVICE)
    launchers = occupancy.kernel_launchers(lambda x: torch.softmax(x * 2, -1), x)
    assert [k.kind for k in launchers] == ["persistent"]
    if DEVICE == "cpu":  # the interpreter compiles nothing: no binaries, no registers
        assert occupancy.launcher_stats(launchers[0]) == []
