"""The benchmark CLI runs end to end on tiny CPU sizes and prints a parseable table.

No timing is asserted (a timing is a benchmark, never a test assertion): only that the row is
there, the compilers agreed with eager, and the ratios are numbers.
"""

import json
import subprocess
import sys
from types import SimpleNamespace

import pytest
import torch
from torch.autograd import DeviceType

from minicompile.bench import bandwidth_table, profile_kernels
from minicompile.bench.cli import main
from minicompile.bench.helpers import kernel_rows, say_if_noisy
from minicompile.bench.report import COLUMNS, format_table, trust_notes
from minicompile.bench.run import Result as BenchResult
from minicompile.bench.timing import spread


def test_help_prints_usage(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "usage: bash course.sh bench" in out
    for flag in ("--device", "--quick", "--cases", "--json", "--plot"):
        assert flag in out
    assert "--tiny" not in out  # the test's sizes stay out of the usage


def test_unknown_case_is_an_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--device", "cpu", "--cases", "no_such_case"])
    assert exit_info.value.code == 2
    assert "unknown case" in capsys.readouterr().err


def test_pointwise_row_and_ratios(capsys, tmp_path):
    json_path = tmp_path / "bench.json"
    assert main(["--device", "cpu", "--tiny", "--cases", "pointwise",
                 "--json", str(json_path)]) == 0
    out = capsys.readouterr().out
    assert "minicompile cpu backend:" in out and "copy bandwidth" in out

    lines = out.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("case "))
    for name in COLUMNS:
        assert name in lines[head]
    rows = [line.split() for line in lines if line.startswith("pointwise ")]
    assert len(rows) == 1
    # case, size (two words: "4K f32"), eager, tc, mc, mc/eager, mc/tc, GB/s, %, spread,
    # cold tc, cold mc
    cells = rows[0]
    times, ratios, colds = cells[3:6], cells[6:8], cells[11:13]
    for cell in times + ratios + colds:
        assert float(cell) >= 0, cells  # "WRONG" / "ERROR" / "-" would not parse
    assert cells[9].endswith("%") and float(cells[10].rstrip("%?")) >= 0
    geomean = next(line.split() for line in lines if line.startswith("geomean"))
    assert [float(c) for c in geomean[1:3]] == [float(c) for c in ratios]

    data = json.loads(json_path.read_text())
    (result,) = data["results"]
    assert result["status"] == {"tc": "ok", "mc": "ok"}
    # the unrounded measurements behind the row (the table rounds: a tiny time can print as 0.00)
    ms, cold = result["ms"], result["cold_s"]
    assert all(ms[k] > 0 for k in ("eager", "tc", "mc")) and all(v > 0 for v in cold.values())
    assert float(ratios[0]) == pytest.approx(ms["mc"] / ms["eager"], abs=0.006)
    assert float(ratios[1]) == pytest.approx(ms["mc"] / ms["tc"], abs=0.006)
    assert result["bytes"] == 2 * 4096 * 4  # read 4K float32 once, write once


def test_wrong_result_is_reported_and_not_timed(monkeypatch):
    """A compiler whose output differs from eager shows WRONG in its column and gets no time."""
    from minicompile.bench import run
    from minicompile.bench.cases import CASES
    from minicompile.bench.report import row

    def off_by_a_little(fn):
        return lambda *args: fn(*args) + 1e-2

    monkeypatch.setattr(run, "COMPILERS", {
        "mc": run.Compiler("minicompile", lambda: None, off_by_a_little)})
    workload = CASES["pointwise"].make("cpu", *CASES["pointwise"].sizes["tiny"][0])
    result = run.run_case("pointwise", workload, "cpu", "tiny", progress=lambda what: None)
    assert result.status == {"mc": "WRONG"}
    assert "mc" not in result.ms and "eager" in result.ms
    assert any("WRONG" in note for note in result.notes)
    cells = row(result, copy_gbs=1.0)
    assert cells[4] == "WRONG" and cells[5] == "-"  # minicompile ms, mc/eager


def _event(key, device_type, count, cpu_us, device_us):
    """A stand-in for one row of ``torch.profiler``'s ``key_averages()``."""
    return SimpleNamespace(key=key, device_type=device_type, count=count,
                           self_cpu_time_total=cpu_us, self_device_time_total=device_us)


def test_gpu_profile_lists_each_kernel_once():
    """The ATen op carries the device time of the kernel it launched: only the kernel is a row
    (the profile used to show ``aten::mm`` and its gemm kernel as two rows)."""
    events = [_event("aten::mm", DeviceType.CPU, 5, 40.0, 80.0),
              _event("sm80_xmma_gemm_f32f32", DeviceType.CUDA, 5, 0.0, 80.0),
              _event("aten::add", DeviceType.CPU, 10, 20.0, 15.0),
              _event("triton_poi_fused_add_0", DeviceType.CUDA, 10, 0.0, 15.0),
              _event("cudaLaunchKernel", DeviceType.CPU, 15, 30.0, 0.0),
              _event("Memcpy HtoD (Pageable -> Device)", DeviceType.CUDA, 5, 0.0, 5.0)]
    assert kernel_rows(events, reps=5, on_gpu=True) == [
        ("sm80_xmma_gemm_f32f32", 1, 16.0), ("triton_poi_fused_add_0", 2, 3.0)]
    cpu_rows = kernel_rows(events, reps=5, on_gpu=False)
    assert [name for name, _, _ in cpu_rows] == ["aten::mm", "aten::add"]


@pytest.mark.cpu_only  # the CPU profile's rows: a CUDA tensor's profile lists kernels instead
def test_cpu_profile_counts_aten_ops_per_iteration():
    x = torch.randn(1000)
    rows = profile_kernels(lambda x: (x.cos() + 1).sin(), x, reps=4)
    calls = {name: n for name, n, _ in rows}
    assert calls["aten::cos"] == calls["aten::add"] == calls["aten::sin"] == 1


@pytest.mark.gpu
def test_gpu_profile_has_no_aten_rows():
    x = torch.randn(1 << 20, device="cuda")
    rows = profile_kernels(lambda x: (x.cos() + 1).sin(), x, reps=4)
    assert rows and not any(name.startswith("aten::") for name, _, _ in rows)
    assert sum(n for _, n, _ in rows) == 3  # three kernels per call


def test_bandwidth_table_reports_gbs_against_copy():
    table = bandwidth_table({"fused": 1e-3, "unfused": 4e-3}, nbytes=2_000_000, copy_gbs=4.0)
    fused, unfused = (line.split() for line in table.splitlines()[1:3])
    assert fused[-2:] == ["2.0", "50%"] and unfused[-2:] == ["0.5", "12%"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_cpu_timing_keeps_freed_memory():
    """After keep_freed_memory, a 4 MB buffer freed and allocated again is the same memory, not
    fresh pages to fault in. Run in a child process: the settings last for the process."""
    code = (
        "import resource, torch\n"
        "from minicompile.bench.timing import keep_freed_memory\n"
        "assert keep_freed_memory()\n"
        "y = torch.randn(1024, 1024)\n"
        "for _ in range(20): (y + 1).exp()\n"  # (the heap grows to its size once)
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
        "for _ in range(20): (y + 1).exp()\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert int(out.stdout) < 100, out.stdout  # without it, up to 2 x 1024 faults per call


def test_the_progress_bar_starts_no_thread():
    """tqdm's bar starts a monitor thread by default; the benchmark's does not, so the process
    runs the cases single-threaded, as they would run without it (small CPU products take the
    one-thread region only then: ``codegen/library_threads.py``)."""
    import threading
    import time

    pytest.importorskip("tqdm")
    from minicompile.bench.progress import Progress

    before = threading.active_count()
    bar = Progress(3)
    bar("a case")
    time.sleep(0.05)
    assert threading.active_count() == before
    bar.bar.close()


def test_scaling_suite_flags_and_plan(capsys):
    from minicompile.bench import scaling
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for flag in ("--suite", "--max-size", "--compilers"):
        assert flag in out
    assert scaling.plan(8, ["mlp", "lstm"]) == [("lstm", 4), ("lstm", 8)]
    assert [n for _, n in scaling.plan(None, ["mlp"])] == [25, 50, 100, 200]
    with pytest.raises(SystemExit) as exit_info:
        main(["--suite", "scaling", "--cases", "softmax"])  # a kernel case, not a scaling one
    assert exit_info.value.code == 2


def test_scaling_row_checks_gradients(monkeypatch):
    """One small size, minicompile only, on the reference backend (no C++ compiles): the first
    call's loss and gradients agree with eager, and the row's cells are numbers."""
    import minicompile as mc
    from minicompile.bench import scaling
    monkeypatch.setattr(mc.config.inductor, "cpu_backend", "reference")
    result = scaling.measure("lstm", 2, ["mc"])
    assert result.status == {"mc": "ok"}, result.notes
    cells = scaling.row(result)
    assert cells[:2] == ["lstm", "T=2"] and float(cells[3]) > 0 and float(cells[6]) > 0
    assert cells[2] == "-"  # torch.compile not asked for
    assert "lstm  T=2" in scaling.format_table([result])


def _timed(case="layernorm", size="4x8", ms=1.0, spread=0.02, nbytes=0):
    return BenchResult(case, size, "memory", bytes=nbytes, ms={"eager": ms, "mc": ms},
                      spread={"eager": spread, "mc": spread})


def test_spread_is_the_range_over_the_median():
    assert spread([1.0, 1.1, 1.3]) == pytest.approx(0.3 / 1.1)
    assert spread([2.0, 2.0]) == 0.0


def test_a_quiet_run_is_trusted():
    h = {"copy_bandwidth_gbs": 30.0, "copy_bandwidth_end_gbs": 29.0}
    assert trust_notes([_timed(nbytes=10_000_000)], h) == []  # 10 GB/s: a third of copy


@pytest.mark.parametrize("result,end,says", [
    (_timed(spread=0.4), 30.0, "repeats spread by 40%"),
    (_timed(nbytes=100_000_000), 30.0, "333% of copy bandwidth"),  # 100 GB/s against 30
    (_timed(), 2.1, "copy bandwidth was 30.0 GB/s before the cases and 2.1 after"),
])
def test_untrustworthy_numbers_are_flagged(result, end, says):
    """Repeats that disagree, a memory-bound case faster than a copy (the CPU benchmark's
    layernorm at 1716% of a copy timed on a busy machine), copy bandwidth that moved."""
    h = {"copy_bandwidth_gbs": 30.0, "copy_bandwidth_end_gbs": end}
    notes = trust_notes([result], h)
    assert any(says in n for n in notes), notes
    assert "can't be trusted" in format_table([result], {**h, **_HEADER})


def test_bandwidth_table_marks_a_time_faster_than_copy():
    table = bandwidth_table({"fused": 1e-3, "eager": 1e-2}, 100_000_000, copy_gbs=30.0)
    fused, eager = table.splitlines()[1:3]
    assert fused.endswith(" ?") and not eager.endswith("?") and "in cache" in table


_HEADER = {"device": "cpu", "device_name": "cpu", "torch": "t", "triton": "t", "python": "p",
           "minicompile_backend": "cpp"}


def test_a_notebook_timing_says_when_its_repeats_disagree(capsys):
    say_if_noisy("softmax", 0.02)
    assert capsys.readouterr().out == ""
    say_if_noisy("softmax", 0.35)
    assert "softmax's repeats spread by 35%" in capsys.readouterr().out


@pytest.mark.slow
def test_pattern_suite_runs_and_checks_every_pattern(capsys, tmp_path):
    """Every pattern of ``--suite patterns`` at the test's odd sizes: minicompile agrees with
    eager (an in-place update checked from restored inputs, a backward's gradients too). Real
    torch.compile is left out here: its compiles would take minutes."""
    from minicompile.bench.patterns import PATTERNS

    assert len(PATTERNS) >= 30
    json_path = tmp_path / "patterns.json"
    assert main(["--suite", "patterns", "--device", "cpu", "--tiny", "--compilers", "mc",
                 "--json", str(json_path)]) == 0
    results = json.loads(json_path.read_text())["results"]
    assert [r["case"] for r in results] == list(PATTERNS)
    bad = {r["case"]: r["notes"] for r in results if r["status"].get("mc") != "ok"}
    assert not bad, bad
    assert all(set(r["status"]) == {"mc"} for r in results)  # --compilers mc: no torch.compile
    adamw = next(r for r in results if r["case"] == "adamw_update")
    assert adamw["bytes"] == 7 * 4 * 33 * 67  # read p g m v, write p m v


def test_index_checks_time_minicompile_again_with_its_checks_on(capsys, tmp_path, monkeypatch):
    """``--index-checks``: minicompile a second time, its kernels' checks compiled in, in the
    same turns; the table and the JSON give its time and its ratio to minicompile's."""
    from minicompile.inductor.options import InductorOptions

    built = []
    build = InductorOptions.build.__func__
    monkeypatch.setattr(InductorOptions, "build", classmethod(
        lambda cls, *a, **kw: built.append(build(cls, *a, **kw)) or built[-1]))
    json_path = tmp_path / "bench.json"
    assert main(["--device", "cpu", "--tiny", "--cases", "pointwise", "--index-checks",
                 "--json", str(json_path)]) == 0
    out = capsys.readouterr().out
    head = next(line for line in out.splitlines() if line.startswith("case "))
    assert head.split()[-3:] == ["checked", "ms", "checked/mc"]
    (result,) = json.loads(json_path.read_text())["results"]
    assert result["status"] == {"tc": "ok", "mc": "ok", "checked": "ok"}
    assert result["checked_over_mc"] == pytest.approx(result["ms"]["checked"] / result["ms"]["mc"])
    row = next(line.split() for line in out.splitlines() if line.startswith("pointwise "))
    assert float(row[-1]) == pytest.approx(result["checked_over_mc"], abs=0.006)
    assert {o.triton_device_asserts for o in built} == {False, True}  # both were compiled


def test_conv_layouts_kinds_and_timing():
    """``bench/conv_layouts.py`` sorts convolutions into the kinds layout_opt.py speaks of, and
    times one in both layouts."""
    from minicompile.bench.conv_layouts import Conv, median_us

    depthwise = Conv((2, 8, 5, 5), (8, 1, 3, 3), (1, 1), (1, 1), (1, 1), 8)
    pointwise = Conv((2, 8, 20, 20), (4, 8, 1, 1), (1, 1), (0, 0), (1, 1), 1)
    dense = Conv((2, 8, 5, 5), (4, 8, 3, 3), (1, 1), (1, 1), (1, 1), 1)
    assert [c.kind() for c in (depthwise, pointwise, dense)] == ["grouped", "1x1", "dense"]
    assert [c.pixels() for c in (depthwise, pointwise)] == ["<=64", ">256"]
    assert median_us(depthwise, torch.channels_last) > 0

