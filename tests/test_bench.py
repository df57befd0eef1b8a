"""The benchmark CLI runs end to end on tiny CPU sizes and prints a parseable table.

No timing is asserted (a timing is a benchmark, never a test assertion): only that the row is
there, the compilers agreed with eager, and the ratios are numbers.
"""

import json

import pytest

from minicompile.bench.cli import main
from minicompile.bench.report import COLUMNS


def test_help_prints_usage(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "usage: python -m minicompile.bench" in out
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
    # case, size (two words: "4K f32"), eager, tc, mc, mc/eager, mc/tc, GB/s, %, cold tc, cold mc
    cells = rows[0]
    times, ratios, colds = cells[3:6], cells[6:8], cells[10:12]
    for cell in times + ratios + colds:
        assert float(cell) > 0, cells  # "WRONG" / "ERROR" / "-" would not parse
    assert cells[9].endswith("%")
    geomean = next(line.split() for line in lines if line.startswith("geomean"))
    assert [float(c) for c in geomean[1:3]] == [float(c) for c in ratios]

    data = json.loads(json_path.read_text())
    (result,) = data["results"]
    assert result["status"] == {"tc": "ok", "mc": "ok"}
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
