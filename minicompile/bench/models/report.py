"""The model suites' report: a markdown table per suite, mode and precision, a summary, JSON.

Columns follow PyTorch's dashboard: pass or fail, graph and break counts next to real Dynamo's,
speed-ups (eager time over minicompile's, torch.compile's over minicompile's: above 1, minicompile
is faster), cold compile seconds, peak memory of one step.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import asdict

from .runner import ModelResult

COLUMNS = ["model", "status", "mc graphs/breaks", "dynamo graphs/breaks", "eager ms", "tc ms",
           "mc ms", "eager/mc", "tc/mc", "cold tc s", "cold mc s", "peak MB eager/tc/mc"]


def _num(v: float | None, fmt: str = ".3g") -> str:
    return "-" if v is None else format(v, fmt)


def _pair(a: int | None, b: int | None) -> str:
    return "-" if a is None else f"{a}/{b}"


def row(r: ModelResult) -> list[str]:
    peak = "/".join(_num(r.peak_mb.get(k), ".0f") for k in ("eager", "tc", "mc"))
    status = r.status if r.tc_status in ("pass", "not run") else f"{r.status} (tc: {r.tc_status})"
    listed = f" ({len(r.break_reasons)} listed)" if r.break_reasons else ""
    return [r.model, status, _pair(r.mc_graphs, r.mc_breaks) + listed,
            _pair(r.dynamo_graphs, r.dynamo_breaks),
            *(_num(r.ms.get(k)) for k in ("eager", "tc", "mc")),
            _num(r.speedup("eager"), ".2f"), _num(r.speedup("tc"), ".2f"),
            _num(r.cold_s.get("tc")), _num(r.cold_s.get("mc")), peak]


def geomean(values: list[float]) -> float | None:
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def summary(results: list[ModelResult]) -> str:
    passed = sum(r.status == "pass" for r in results)
    fallback = sum(r.status == "fallback" for r in results)
    skipped = sum(r.status == "skipped" for r in results)
    failed = len(results) - passed - fallback - skipped
    # breaks are compared where minicompile compiled every frame: a frame left to eager has no
    # graph and so "fewer" breaks, which would flatter it
    compared = [(r.mc_breaks, r.dynamo_breaks) for r in results if r.status == "pass"
                and r.mc_breaks is not None and r.dynamo_breaks is not None]
    same_breaks = sum(mc == dyn for mc, dyn in compared)
    fewer = sum(mc < dyn for mc, dyn in compared)
    more = sum(mc > dyn for mc, dyn in compared)
    timed = [r for r in results if r.status == "pass"]
    ratios = {base: geomean([x for r in timed if (x := r.speedup(base)) is not None])
              for base in ("eager", "tc")}
    skip = f", {skipped} skipped" if skipped else ""
    return (f"{len(results)} runs: {passed} pass, {fallback} fallback (right result, frames run "
            f"eagerly), {failed} fail{skip}. Graph breaks against real Dynamo (passing runs): "
            f"{same_breaks} equal, {fewer} fewer, {more} more. Geomean speed-up over the "
            f"passing runs: eager/mc {_num(ratios['eager'], '.2f')}, "
            f"tc/mc {_num(ratios['tc'], '.2f')}.")


def markdown(results: list[ModelResult], header: dict) -> str:
    out = [f"Device: {header['device_name']} | torch {header['torch']} | python "
           f"{header['python']}", "", f"Command: `{header['argv']}`", "", summary(results)]
    groups: dict[tuple, list[ModelResult]] = {}
    for r in results:
        groups.setdefault((r.suite, r.mode, r.dtype), []).append(r)
    for (suite, mode, dtype), rows in groups.items():
        out += ["", f"### {suite}, {mode}, {dtype} ({summary(rows)})", "",
                "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
        out += ["| " + " | ".join(row(r)) + " |" for r in rows]
    reasons = [f"- {r.model} {r.mode} {r.dtype}: {r.status}: {r.reason}"
               + (f" (torch.compile: {r.tc_status}: {r.tc_reason})" if r.tc_reason else "")
               for r in results if r.reason or r.tc_reason]
    if reasons:
        out += ["", "Reasons (minicompile's first; torch.compile's where it failed too):", "",
                *reasons]
    legend = ("ms: median time of one step; eager/mc, tc/mc: speed-ups of minicompile (above 1: "
              "faster); graphs/breaks: explain()'s counts (breaks = graphs - 1, a frame left to "
              "eager adds none), and how many break reasons mc.explain listed (code run natively "
              "between graphs, or inside a frame left to eager); cold: first call after a reset with caches off (training: "
              "backward and optimizer step included); peak MB: one steady step, "
              + ("CUDA max_memory_allocated" if header["device"] == "cuda" else
                 "rise of the process's peak resident set (VmHWM), ~0 where freed heap is reused")
              + ".")
    return "\n".join(out + ["", legend]) + "\n"


def write(path: str, results: list[ModelResult], header: dict) -> None:
    """Markdown when ``path`` ends in .md, JSON otherwise."""
    with open(path, "w") as f:
        if path.endswith(".md"):
            f.write(markdown(results, header))
        else:
            json.dump({"header": header, "results": [asdict(r) for r in results]}, f, indent=2)


def read_json(path: str) -> tuple[dict, list[ModelResult]]:
    with open(path) as f:
        data = json.load(f)
    return data["header"], [ModelResult(**r) for r in data["results"]]


def argv_line() -> str:
    return "bash course.sh bench " + " ".join(sys.argv[1:])


def main(argv: list[str] | None = None) -> int:
    """``bash course.sh python -m minicompile.bench.models.report a.json b.json --markdown out.md``: one report
    from several runs' JSON (the suites run as separate commands, or on separate venvs)."""
    p = argparse.ArgumentParser(prog="bash course.sh python -m minicompile.bench.models.report")
    p.add_argument("json", nargs="+", help="files written by --json")
    p.add_argument("--markdown", metavar="PATH", required=True)
    args = p.parse_args(argv)
    runs = [read_json(path) for path in args.json]
    header = dict(runs[0][0])
    header["argv"] = "; ".join(h["argv"] + f" (torch {h['torch']})" for h, _ in runs)
    write(args.markdown, [r for _, rows in runs for r in rows], header)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
