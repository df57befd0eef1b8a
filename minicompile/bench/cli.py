"""``bash course.sh bench``: eager vs real torch.compile vs minicompile, side by side.

    bash course.sh bench                          # every case, on CUDA when there is a GPU
    bash course.sh bench --device cpu --quick     # small sizes, fewer repetitions
    bash course.sh bench --cases softmax,layernorm --json out.json --plot out.png
    bash course.sh bench --suite patterns         # 36 kernel patterns (patterns.py)
    bash course.sh bench --suite scaling --max-size 64   # compile time against size
    bash course.sh bench --suite huggingface|timm|all   # real models: see models/cli.py
    bash course.sh bench --suite overhead          # launch-bound work: CUDA graphs
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
from dataclasses import asdict

import torch

from .cases import CASES
from .patterns import PATTERNS
from .models import cli as models_cli
from .progress import Progress
from .report import format_table, header, plot, write_json
from . import overhead, scaling
from .run import CHECKED, COMPILERS, run_case, steps_per_case, warm_up
from .timing import copy_bandwidth_gbs, keep_freed_memory

# elements per buffer of the copy-bandwidth measurement: far larger than any cache
COPY_NUMEL = {"cuda": {"full": 1 << 28, "quick": 1 << 26, "tiny": 1 << 20},
              "cpu": {"full": 1 << 26, "quick": 1 << 24, "tiny": 1 << 20}}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="bash course.sh bench",
        description="Time eager PyTorch, real torch.compile (inductor) and minicompile "
                    "(mc.compile(fn, backend='inductor')) in one process; outputs are checked "
                    "against eager before timing. Cases: " + ", ".join(CASES) + ".")
    p.add_argument("--device", choices=["cpu", "cuda"],
                   default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--quick", action="store_true", help="smaller sizes, fewer repetitions")
    p.add_argument("--tiny", action="store_true", help=argparse.SUPPRESS)  # the test's sizes
    p.add_argument("--cases", default=None,
                   help="comma-separated case names (default: all; scaling: "
                        f"{', '.join(scaling.SIZES)})")
    p.add_argument("--suite", choices=["kernels", "patterns", "scaling", "overhead",
                                       "huggingface", "timm", "all"],
                   default="kernels",
                   help="kernels: the cases' run times (default); patterns: the kernel patterns "
                        "of patterns.py (reduction axes, layouts, scans, norms' backward, "
                        "optimizer updates, gathers, pooling, epilogues) timed as the cases are; "
                        "scaling: compile seconds and peak memory of a training step against its "
                        "size (N-layer MLP, LSTM unrolled T steps; CPU); overhead: launch-bound "
                        "steps with and without CUDA graphs (mode='reduce-overhead'); "
                        "huggingface, timm, all: real models, with options of their own "
                        "(docs/models.md)")
    p.add_argument("--max-size", type=int, metavar="N",
                   help="scaling: skip sizes (layers, steps) above N")
    p.add_argument("--compilers", default=",".join(COMPILERS),
                   help="which compilers beside eager (tc = torch.compile, mc = minicompile; "
                        "the patterns, kernels and scaling suites)")
    p.add_argument("--index-checks", action="store_true",
                   help="time minicompile a second time with its Triton kernels' index and "
                        "divisor checks compiled in as device asserts (columns 'checked ms', "
                        "'checked/mc': the checks' cost, in the same process)")
    p.add_argument("--json", metavar="PATH", help="write every number to a JSON file")
    p.add_argument("--plot", metavar="PATH", help="save a time and GB/s plot (matplotlib Agg)")
    args = p.parse_args(argv)
    known = suite_cases(args.suite)
    args.cases = [c.strip() for c in (args.cases or ",".join(known)).split(",") if c.strip()]
    args.compilers = [c.strip() for c in args.compilers.split(",") if c.strip()]
    if any(c not in COMPILERS for c in args.compilers):
        p.error(f"unknown compiler in {args.compilers}; known: {', '.join(COMPILERS)}")
    unknown = [c for c in args.cases if c not in known]
    if unknown:
        p.error(f"unknown case(s) {', '.join(unknown)}; known: {', '.join(known)}")
    if args.device == "cuda" and not torch.cuda.is_available():
        p.error("--device cuda but torch.cuda.is_available() is False")
    return args


def suite_cases(suite: str) -> dict:
    return {"scaling": scaling.SIZES, "patterns": PATTERNS,
            "overhead": overhead.CASES}.get(suite, CASES)


def main_scaling(args: argparse.Namespace) -> int:
    warm_up("cpu")  # one-time costs (imports, toolchain checks) stay out of the first size
    results = scaling.run(args.max_size, args.cases, args.compilers)
    print(scaling.format_table(results))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"argv": sys.argv[1:], "results": [asdict(r) for r in results]}, f, indent=2)
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if models_cli.wanted(argv):  # the model suites have their own options
        return models_cli.main(argv)
    args = parse_args(argv)
    if args.suite == "scaling":
        return main_scaling(args)
    if args.suite == "overhead":
        return overhead.main(args.device, "quick" if args.quick else "full", args.cases)
    budget = "tiny" if args.tiny else "quick" if args.quick else "full"
    scale = "tiny" if args.tiny else f"{args.device}-quick" if args.quick else args.device
    cases = suite_cases(args.suite)
    plan = [(name, size) for name in args.cases for size in cases[name].sizes[scale]]
    if args.device == "cpu":
        keep_freed_memory()  # (timing.py: page faults that depend on the heap's history)

    def copy_gbs() -> float:  # before and after the cases: a load that changed shows
        return copy_bandwidth_gbs(args.device, COPY_NUMEL[args.device][budget], budget)

    copy_start = copy_gbs()
    print(f"minicompile.bench: {len(plan)} case(s) on {args.device}, {budget} sizes", file=sys.stderr)
    compilers = {key: COMPILERS[key] for key in args.compilers}
    if args.index_checks:
        compilers["checked"] = CHECKED
    progress = Progress(1 + steps_per_case(compilers) * len(plan))
    progress("warm-up compile (one-time process costs)")
    warm_up(args.device, compilers)
    results = []
    for name, size in plan:
        workload = cases[name].make(args.device, *size)
        results.append(run_case(name, workload, args.device, budget, progress, compilers))
        del workload  # free the large inputs before the next case
        gc.collect()
        if args.device == "cuda":
            torch.cuda.empty_cache()
    progress.close()
    h = header(args.device, copy_start, copy_gbs())

    print(format_table(results, h))
    if args.json:
        write_json(args.json, results, h)
    if args.plot:
        plot(args.plot, results, h)
    return 0
