"""The benchmark's report: header line, results table with ratios and a geomean row, JSON, plot."""

from __future__ import annotations

import json
import math
import platform
import sys
from dataclasses import asdict

import torch

import minicompile.config as config

from .helpers import FASTER_THAN_COPY
from .run import Result
from .timing import NOISY_SPREAD

try:
    import triton
    TRITON_VERSION = triton.__version__
except ImportError:  # pragma: no cover
    TRITON_VERSION = "not installed"

COLUMNS = ["case", "size", "eager ms", "torch.compile ms", "minicompile ms", "mc/eager", "mc/tc",
           "GB/s (mc)", "% copy BW", "spread", "cold tc s", "cold mc s"]
COPY_DRIFT = 0.25       # copy bandwidth moving this much between start and end: the load changed


def device_name(device: str) -> str:
    if device == "cuda":
        return torch.cuda.get_device_name()
    try:
        with open("/proc/cpuinfo") as f:
            model = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        model = platform.processor() or platform.machine()
    return f"{model}, {torch.get_num_threads()} threads"


def header(device: str, copy_gbs: float, copy_end_gbs: float | None = None) -> dict:
    """The run's machine and versions; copy bandwidth measured before the cases and, when
    given, again after them (``trust_notes`` compares the two)."""
    backend = config.inductor.cpu_backend if device == "cpu" else config.inductor.cuda_backend
    return {"device": device, "device_name": device_name(device), "torch": torch.__version__,
            "triton": TRITON_VERSION, "python": platform.python_version(),
            "minicompile_backend": backend, "copy_bandwidth_gbs": copy_gbs,
            "copy_bandwidth_end_gbs": copy_end_gbs}


def header_line(h: dict) -> str:
    end = h.get("copy_bandwidth_end_gbs")
    return (f"{h['device']}: {h['device_name']} | torch {h['torch']} | triton {h['triton']} | "
            f"python {h['python']} | minicompile {h['device']} backend: "
            f"{h['minicompile_backend']} | copy bandwidth {h['copy_bandwidth_gbs']:.1f} GB/s"
            + ("" if end is None else f" (after the cases: {end:.1f})"))


def _num(v: float | None, fmt: str = ".4g") -> str:
    return "-" if v is None else format(v, fmt)


def _time(r: Result, key: str) -> str:
    if key in r.ms:
        return _num(r.ms[key])
    return r.status.get(key, "-") if key != "eager" else "-"


def _throughput(r: Result, copy_gbs: float) -> tuple[str, str]:
    """mc's achieved GB/s and its % of copy bandwidth; compute and train rows give TFLOP/s."""
    if r.kind != "memory":
        return (f"{_num(r.tflops('mc'), '.3g')} TF/s" if "mc" in r.ms else "-"), "-"
    gbs = r.gbs("mc")
    return _num(gbs, ".3g"), ("-" if gbs is None else f"{100 * gbs / copy_gbs:.0f}%")


def _spread(r: Result) -> float | None:
    """The widest spread of the row's three timings (``timing.spread``)."""
    return max(r.spread.values()) if r.spread else None


def row(r: Result, copy_gbs: float) -> list[str]:
    gbs, pct = _throughput(r, copy_gbs)
    sp = _spread(r)
    return [r.case, r.size, _time(r, "eager"), _time(r, "tc"), _time(r, "mc"),
            _num(r.ratio("mc", "eager"), ".2f"), _num(r.ratio("mc", "tc"), ".2f"), gbs, pct,
            "-" if sp is None else f"{sp:.0%}" + ("?" if sp > NOISY_SPREAD else ""),
            _num(r.cold_s.get("tc"), ".3g"), _num(r.cold_s.get("mc"), ".3g")]


def trust_notes(results: list[Result], h: dict) -> list[str]:
    """Why some numbers of this run can't be trusted: repeats that disagree, a memory-bound
    case faster than copying its bytes, copy bandwidth that moved during the run."""
    notes = []
    start, end = h["copy_bandwidth_gbs"], h.get("copy_bandwidth_end_gbs")
    if end and abs(end - start) > COPY_DRIFT * max(start, end):
        notes.append(f"copy bandwidth was {start:.1f} GB/s before the cases and {end:.1f} after: "
                     "the machine's load changed during the run, so rows timed at different "
                     "moments don't compare")
    for r in results:
        sp = _spread(r)
        if sp is not None and sp > NOISY_SPREAD:
            notes.append(f"{r.case} {r.size}: repeats spread by {sp:.0%} (more than "
                         f"{NOISY_SPREAD:.0%}): something else ran on the machine; time it again")
        fastest = max((r.gbs(k) or 0 for k in r.ms), default=0) if r.kind == "memory" else 0
        if fastest > FASTER_THAN_COPY * start:
            notes.append(f"{r.case} {r.size}: {fastest / start:.0%} of copy bandwidth, faster "
                         "than copying as many bytes: its data stays in cache, or the copy was "
                         "timed on a busy machine; not a measure of memory bandwidth")
    return notes


def geomean(values: list[float]) -> float | None:
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def geomean_row(results: list[Result]) -> list[str]:
    def of(key, base):
        return geomean([x for x in (r.ratio(key, base) for r in results) if x is not None])
    return ["geomean", "", "", "", "", _num(of("mc", "eager"), ".2f"), _num(of("mc", "tc"), ".2f"),
            "", "", "", "", ""]


# with ``--index-checks``: minicompile timed again with its kernels' checks compiled in
CHECKED_COLUMNS = ["checked ms", "checked/mc"]


def checked_cells(r: Result) -> list[str]:
    return [_time(r, "checked"), _num(r.ratio("checked", "mc"), ".2f")]


def format_table(results: list[Result], h: dict) -> str:
    rows = [COLUMNS] + [row(r, h["copy_bandwidth_gbs"]) for r in results] + [geomean_row(results)]
    if any("checked" in r.status for r in results):
        rows[0] = rows[0] + CHECKED_COLUMNS
        rows[1:-1] = [cells + checked_cells(r) for cells, r in zip(rows[1:-1], results)]
        rows[-1] = rows[-1] + ["", _num(geomean([x for x in (r.ratio("checked", "mc")
                                                             for r in results) if x]), ".2f")]
    widths = [max(len(rw[i]) for rw in rows) for i in range(len(rows[0]))]

    def line(cells):  # text columns left, numbers right
        return "  ".join(c.ljust(w) if i < 2 else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths)))

    rule = "  ".join("-" * w for w in widths)
    out = [header_line(h), "", line(rows[0]), rule, *map(line, rows[1:-1]), rule, line(rows[-1])]
    notes = [f"  {r.case} {r.size}: {n}" for r in results for n in r.notes]
    untrusted = [f"  {n}" for n in trust_notes(results, h)]
    legend = ("ms: median per call (lower is better); mc/eager, mc/tc: time ratios, below 1 means "
              "minicompile is faster; GB/s: fewest bytes / time (compute and training rows: "
              "TFLOP/s); spread: (slowest - fastest) / median of the repeats, the widest of the "
              "row's three, '?' above " f"{NOISY_SPREAD:.0%}" "; cold: first-call seconds after "
              "a reset, caches off")
    return "\n".join(out + ([""] + ["notes:"] + notes if notes else [])
                     + ([""] + ["can't be trusted:"] + untrusted if untrusted else [])
                     + ["", legend])


def write_json(path: str, results: list[Result], h: dict) -> None:
    data = {"header": h, "argv": sys.argv[1:], "results": []}
    for r in results:
        d = asdict(r)
        d.update({"mc_over_eager": r.ratio("mc", "eager"), "mc_over_tc": r.ratio("mc", "tc"),
                  "checked_over_mc": r.ratio("checked", "mc"),
                  "gbs": {k: r.gbs(k) for k in r.ms} if r.kind == "memory" else {},
                  "tflops": {k: r.tflops(k) for k in r.ms} if r.kind != "memory" else {}})
        data["results"].append(d)
    with open(path, "w") as f:
        json.dump(data, f, indent=2)


def plot(path: str, results: list[Result], h: dict) -> None:
    """Time per case (log scale) and achieved GB/s per memory-bound case against copy bandwidth."""
    import matplotlib  # only --plot needs matplotlib; Agg draws to a file without a display
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = [("eager", "eager", "#999999"), ("tc", "torch.compile", "#ee854a"),
            ("mc", "minicompile", "#4878d0")]
    memory = [r for r in results if r.kind == "memory"]
    fig, (ax_t, ax_b) = plt.subplots(1, 2, figsize=(13, 0.5 * len(results) + 2))
    for ax, rows, value, xlabel in (
            (ax_t, results, lambda r, k: r.ms.get(k), "median time (ms, log)"),
            (ax_b, memory, lambda r, k: r.gbs(k), "achieved GB/s")):
        labels = [f"{r.case}\n{r.size}" for r in rows]
        for j, (key, name, color) in enumerate(keys):
            ys = [i + (j - 1) * 0.27 for i in range(len(rows))]
            ax.barh(ys, [value(r, key) or 0 for r in rows], height=0.27, label=name, color=color)
        ax.set_yticks(range(len(rows)), labels, fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel(xlabel)
    ax_t.set_xscale("log")
    ax_b.axvline(h["copy_bandwidth_gbs"], color="black", linestyle="--", label="copy bandwidth")
    ax_b.legend(fontsize=8, loc="lower right")
    fig.suptitle(header_line(h), fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
