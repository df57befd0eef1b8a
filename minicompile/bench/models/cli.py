"""``bash course.sh bench --suite huggingface|timm|all``: the model suites.

    bash course.sh bench --suite huggingface --device cpu --markdown models.md
    bash course.sh bench --suite all --device cuda --json models.json --markdown models.md
    bash course.sh bench --suite timm --models resnet18,convnext_atto --modes inference
    bash course.sh bench --suite timm --models timm:levit_128s,timm:cait_xxs24_224  # any timm model

Each model runs in each mode (inference, training) and precision (float32; on CUDA also bfloat16
autocast): eager, real torch.compile and minicompile in one process (runner.py). On CUDA every
model runs in a child process of its own by default (``--isolate``), so that a crash that takes
the process or the CUDA context with it (a segfault, an illegal memory access) costs one row, and
a model that hangs is stopped after ``--timeout`` seconds.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import platform
import signal
import subprocess
import sys
import tempfile
from typing import Iterator

import torch

from ..progress import Progress
from ..report import device_name
from ..run import warm_up
from ..timing import keep_freed_memory
from . import huggingface, timm_models
from .report import argv_line, read_json, summary, write
from .runner import STEPS_PER_RUN, ModelResult, run_model
from .zoo import SIZES, ModelSpec

SUITES = {"huggingface": huggingface.specs, "timm": timm_models.specs}
MODES = ("inference", "training")
DTYPES = ("float32", "bfloat16")


def wanted(argv: list[str]) -> bool:
    """Whether ``bash course.sh bench`` was asked for a model suite."""
    for i, arg in enumerate(argv):
        value = arg.split("=", 1)[1] if arg.startswith("--suite=") else \
            argv[i + 1] if arg == "--suite" and i + 1 < len(argv) else None
        if value in (*SUITES, "all"):
            return True
    return False


def _list(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def parse_args(argv: list[str]) -> argparse.Namespace:
    cuda = torch.cuda.is_available()
    p = argparse.ArgumentParser(
        prog="bash course.sh bench --suite huggingface|timm|all",
        description="Real models, each from a small config with random weights: eager is the "
                    "oracle, then torch.compile, then minicompile; pass/fail, graph breaks next "
                    "to real Dynamo's, speed-ups, cold compile time, peak memory.")
    p.add_argument("--suite", choices=[*SUITES, "all"], required=True)
    p.add_argument("--device", choices=["cpu", "cuda"], default="cuda" if cuda else "cpu")
    p.add_argument("--models", type=_list, default=[], help="comma-separated names (default: all)")
    p.add_argument("--modes", type=_list, default=list(MODES))
    p.add_argument("--dtypes", type=_list, default=None,
                   help="float32,bfloat16 (bfloat16: autocast, CUDA only; default: float32 on "
                        "the CPU, both on CUDA)")
    p.add_argument("--size", choices=list(SIZES), default=None,
                   help="model sizes (default: the device's)")
    p.add_argument("--quick", action="store_true", help="fewer timing repetitions")
    p.add_argument("--json", metavar="PATH", help="write every result to a JSON file")
    p.add_argument("--markdown", metavar="PATH", help="write the tables to a markdown file")
    p.add_argument("--isolate", action=argparse.BooleanOptionalAction, default=None,
                   help="each model in a child process (default: on CUDA)")
    p.add_argument("--timeout", type=float, default=1800, help="seconds per isolated model")
    p.add_argument("--resume", action="store_true",
                   help="keep the rows already in --json and run only the models whose "
                        "modes and dtypes are missing there (a long suite in several commands)")
    args = p.parse_args(argv)
    args.dtypes = args.dtypes or (["float32", "bfloat16"] if args.device == "cuda" else ["float32"])
    args.size = args.size or args.device
    args.isolate = args.device == "cuda" if args.isolate is None else args.isolate
    if args.device == "cuda" and not cuda:
        p.error("--device cuda but torch.cuda.is_available() is False")
    for given, known in ((args.modes, MODES), (args.dtypes, DTYPES)):
        if not set(given) <= set(known):
            p.error(f"unknown {', '.join(sorted(set(given) - set(known)))}; known: "
                    f"{', '.join(known)}")
    if args.resume and not args.json:
        p.error("--resume reads and extends the file of --json")
    if "bfloat16" in args.dtypes and args.device != "cuda":
        p.error("bfloat16 autocast runs on CUDA only here")
    # timm:NAME: any other timm model, built the suite's way (timm_models.beyond_the_suite)
    beyond = [m.split(":", 1)[1] for m in args.models if m.startswith("timm:")]
    args.models = [m.split(":", 1)[1] if m.startswith("timm:") else m for m in args.models]
    suites = [*SUITES] if args.suite == "all" else [args.suite]
    if beyond and "timm" not in suites:
        p.error("timm:NAME models are in the timm suite: --suite timm or all")
    specs = [s for suite in suites
             for s in (SUITES[suite](beyond) if suite == "timm" and beyond else SUITES[suite]())]
    known = {s.name for s in specs}
    unknown = [m for m in args.models if m not in known]
    if unknown:
        p.error(f"unknown model(s) {', '.join(unknown)}; known: {', '.join(sorted(known))} "
                "(and timm:NAME for any other timm model)")
    args.specs = [s for s in specs if not args.models or s.name in args.models]
    return args


def rows_not_run(spec: ModelSpec, args: argparse.Namespace, status: str, reason: str,
                 done: list[ModelResult] = ()) -> list[ModelResult]:
    """A row for each mode and precision not in ``done``: ``status`` and ``reason`` say why."""
    ran = {(r.mode, r.dtype) for r in done}
    return [ModelResult(spec.name, spec.suite, spec.family, mode, dtype, args.device,
                        status=status, reason=reason)
            for mode in args.modes for dtype in args.dtypes if (mode, dtype) not in ran]


def run_in_process(spec: ModelSpec, args: argparse.Namespace,
                   progress: Progress) -> Iterator[ModelResult]:
    if spec.unavailable:
        yield from rows_not_run(spec, args, "skipped", spec.unavailable)
        return
    budget = "quick" if args.quick else "full"
    for mode in args.modes:
        for dtype in args.dtypes:
            yield run_model(spec, mode, dtype, args.device, SIZES[args.size], budget, progress)


def name_for_command(spec: ModelSpec) -> str:
    """How ``--models`` names the model: ``timm:NAME`` for a timm model beyond the suite."""
    return f"timm:{spec.name}" if spec.family == timm_models.BEYOND else spec.name


def run_isolated(spec: ModelSpec, args: argparse.Namespace,
                 argv: list[str]) -> Iterator[ModelResult]:
    """One model in a child process with the same arguments. A crash or a timeout is a row for
    each run the child had not finished (it writes its JSON after each run)."""
    with tempfile.TemporaryDirectory(prefix="minicompile-models-") as tmp:
        out, log = os.path.join(tmp, "result.json"), os.path.join(tmp, "log.txt")
        cmd = [sys.executable, "-m", "minicompile.bench", *child_argv(argv),
               "--models", name_for_command(spec), "--no-isolate", "--json", out]
        with open(log, "w") as f:  # its own session: a timeout stops its workers too
            child = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT,
                                     start_new_session=True, preexec_fn=die_with_parent)
            try:
                code = child.wait(timeout=args.timeout)
                why = None
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait()
                code, why = None, f"timed out after {args.timeout:.0f} s"
        done = read_json(out)[1] if os.path.exists(out) else []
        if code != 0 and why is None:
            with open(log) as f:
                tail = [line.strip() for line in f if line.strip()][-1:] or [""]
            why = f"process exited with {code}: {tail[0][:200]}"
        yield from done
        yield from rows_not_run(spec, args, "fail: crash", why or "no result", done)


PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_parent() -> None:
    """In the child, before it starts: be killed when the benchmark's process ends (a command
    stopped from outside must not leave a model running on the GPU). Linux only."""
    try:
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def child_argv(argv: list[str]) -> list[str]:
    """``argv`` without the options the parent sets for each child."""
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg in ("--models", "--json", "--markdown", "--timeout"):
            skip = True
        elif not arg.startswith(("--models=", "--json=", "--markdown=", "--timeout=", "--isolate",
                                 "--no-isolate", "--resume")):
            out.append(arg)
    return out


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    if args.device == "cpu":
        keep_freed_memory()  # (timing.py: page faults that depend on the heap's history)
    results: list[ModelResult] = []
    if args.resume and os.path.exists(args.json):
        results = read_json(args.json)[1]
    wanted = {(mode, dtype) for mode in args.modes for dtype in args.dtypes}
    have: dict[str, set] = {}
    for r in results:
        have.setdefault(r.model, set()).add((r.mode, r.dtype))
    done = {model for model, runs in have.items() if wanted <= runs}
    todo = [s for s in args.specs if s.name not in done]
    redo = {s.name for s in todo}  # a model cut short runs again: its old rows go
    results = [r for r in results if r.model not in redo or (r.mode, r.dtype) not in wanted]
    runs = len(args.modes) * len(args.dtypes)
    print(f"minicompile.bench: {len(todo)} model(s) x {runs} run(s) on {args.device}, "
          f"{args.size} sizes" + (f" ({len(done)} done before)" if done else ""), file=sys.stderr)
    progress = Progress(len(todo) * (1 if args.isolate else runs * STEPS_PER_RUN) + 1)
    progress("warm-up compile (one-time process costs)")
    if not args.isolate:
        warm_up(args.device)
    for spec in todo:
        if args.isolate:
            progress(spec.name)
        rows = run_isolated(spec, args, argv) if args.isolate else \
            run_in_process(spec, args, progress)
        for row in rows:
            results.append(row)
            if args.json:  # written as it goes: a run cut short keeps what it measured
                write(args.json, results, header(args))
    progress.close()
    for path in filter(None, (args.json, args.markdown)):
        write(path, results, header(args))
    print(summary(results))
    return 0


def header(args: argparse.Namespace) -> dict:
    return {"device": args.device, "device_name": device_name(args.device),
            "torch": torch.__version__, "python": platform.python_version(),
            "size": args.size, "argv": argv_line()}
