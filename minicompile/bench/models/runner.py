"""Runs one model of a suite in one mode (the role of PyTorch's benchmarks/dynamo/common.py):
eager is the oracle, then real ``torch.compile``, then minicompile, in one process.

For a model, mode (inference | training) and precision (float32 | bfloat16 autocast):

1. eager runs first, and for float32 a float64 copy of the model too (accuracy.py's judge);
2. ``torch._dynamo.explain`` and ``mc.explain`` count graphs and graph breaks, each on its own
   copy of the model;
3. each compiler (run.py's COMPILERS: caches off, first call timed as the cold compile) runs the
   same step from the same initial weights, and its result is checked against eager;
4. the steps that passed are timed in turns (timing.py), and the peak memory of one step taken.

Training is one step as real code writes it, all inside the compiled function: forward, loss,
backward, ``optimizer.step()``, ``zero_grad``. What is compared is the loss and each parameter's
gradient, recovered from its SGD update ``(before - after) / lr``: the update itself is too small
next to the weight for a tolerance to see a wrong gradient.
"""

from __future__ import annotations

import contextlib
import copy
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

import minicompile as mc

from ..run import COMPILERS
from ..timing import first_call_s, sync, time_in_turns
from .accuracy import same
from .zoo import ModelSpec, Size, tensors_of, to_device, to_float64

LR = 0.01                      # SGD, no momentum: the update is -LR * grad
# tolerances of the check against eager (PyTorch's harness: 1e-3 inference, 1e-2 training);
# where float32 differs by more, the float64 run decides (accuracy.same)
TOLERANCE = {"inference": 1e-3, "training": 1e-2}
STEPS_PER_RUN = 4 + len(COMPILERS)  # eager, explain x2, each compiler, timing


@dataclass
class ModelResult:
    model: str
    suite: str
    family: str
    mode: str                                  # inference | training
    dtype: str                                 # float32 | bfloat16 (autocast)
    device: str
    # pass: right, every frame compiled; fallback: right, but frames ran eagerly or no graph was
    # compiled at all (reason: the break that did it); fail: wrong result | fail: crash (reason:
    # the difference, the exception)
    status: str = "not run"
    reason: str = ""
    eager_frames: int = 0                      # minicompile's frames left to eager (fallbacks)
    mc_graphs: int | None = None               # mc.explain
    mc_breaks: int | None = None
    dynamo_graphs: int | None = None           # torch._dynamo.explain
    dynamo_breaks: int | None = None
    break_reasons: list[str] = field(default_factory=list)   # mc.explain, first line of each
    tc_status: str = "not run"                 # torch.compile: pass | fail: ... (not the oracle)
    tc_reason: str = ""
    ms: dict[str, float] = field(default_factory=dict)       # eager / tc / mc -> median ms
    cold_s: dict[str, float] = field(default_factory=dict)   # tc / mc -> first call seconds
    peak_mb: dict[str, float] = field(default_factory=dict)  # eager / tc / mc -> one step

    def speedup(self, base: str) -> float | None:
        """``base`` time over minicompile's: above 1 means minicompile is faster."""
        if "mc" in self.ms and base in self.ms:
            return self.ms[base] / self.ms["mc"]
        return None


# ---- one step of a model, any precision ----------------------------------------------------

@dataclass
class Runner:
    """A model copy with its optimizer, and how to run one step of it with a given function."""
    spec: ModelSpec
    mode: str
    model: torch.nn.Module
    inputs: dict
    autocast: torch.dtype | None
    optimizer: torch.optim.Optimizer | None = None

    def __post_init__(self):
        self.model.train(self.mode == "training")
        if self.mode == "training":
            self.optimizer = torch.optim.SGD(self.model.parameters(), lr=LR)

    @property
    def fn(self) -> Callable:
        return self.spec.train_step if self.mode == "training" else self.spec.forward

    def args(self) -> tuple:
        if self.mode == "training":
            return self.model, self.optimizer, self.inputs
        return self.model, self.inputs

    def context(self) -> contextlib.ExitStack:
        stack = contextlib.ExitStack()
        if self.mode == "inference":
            stack.enter_context(torch.no_grad())
        if self.autocast is not None:
            device = next(iter(self.inputs.values())).device.type
            stack.enter_context(torch.autocast(device, dtype=self.autocast))
        return stack

    def step(self, fn: Callable | None = None) -> Any:
        with self.context():
            return (fn or self.fn)(*self.args())

    def copy(self, dtype: torch.dtype | None = None) -> "Runner":
        """The same weights, a fresh optimizer; ``dtype=float64``: the judge's copy (no autocast)."""
        model, inputs, autocast = copy.deepcopy(self.model), self.inputs, self.autocast
        if dtype is not None:
            model, inputs, autocast = model.to(dtype), to_float64(inputs), None
        return Runner(self.spec, self.mode, model, inputs, autocast)

    def params(self) -> list[torch.Tensor]:
        return [p.detach().clone() for p in self.model.parameters()]


def results(runner: Runner, out: Any, before: list[torch.Tensor] | None) -> list[torch.Tensor]:
    """What is compared: the outputs (inference); the loss and every gradient (training)."""
    if runner.mode == "inference":
        return [t.detach() for t in tensors_of(out)]
    grads = [(b - p.detach()) / LR for b, p in zip(before, runner.model.parameters())]
    return [out.detach().reshape(1).to(grads[0].dtype), *grads]


def result_names(runner: Runner, count: int) -> list[str]:
    if runner.mode == "inference":
        return [f"output {i}" for i in range(count)]
    return ["loss", *[f"grad of {n}" for n, _ in runner.model.named_parameters()]]


# ---- measurements ---------------------------------------------------------------------------

def peak_memory_mb(step: Callable[[], Any], device: str) -> float | None:
    """Memory one step adds at its peak: CUDA's max_memory_allocated over the step; on the CPU
    the rise of the process's peak resident set (VmHWM, reset through /proc/self/clear_refs),
    which counts what the allocator took from the system, not each tensor."""
    if device == "cuda":
        sync(device)
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        step()
        sync(device)
        return (torch.cuda.max_memory_allocated() - base) / 2**20
    try:
        base = _status_kb("VmRSS")
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset VmHWM to the current resident set
        step()
        return (_status_kb("VmHWM") - base) / 1024
    except OSError:  # not Linux
        return None


def _status_kb(key: str) -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(key + ":"))


def explain_counts(explain: Callable, runner: Runner) -> Any:
    """Graph and break counts of ``explain`` on a copy of the model (explain runs the step)."""
    other = runner.copy()
    with other.context():
        return explain(other.fn)(*other.args())


def break_text(b: Any) -> str:
    """One line for a break of mc.explain: its reason, and where in the user's code (the path
    from the package folder on: ``transformers/utils/output_capturing.py:50 in get: ...``)."""
    where = b.user_line or ""
    where = where.split("site-packages/")[-1]
    return f"{b.reason.splitlines()[0][:200]}" + (f" at {where[:160]}" if where else "")


def first_line(e: BaseException) -> str:
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    return f"{type(e).__name__}: {'; '.join(lines[:2])}"[:240]


# ---- the run --------------------------------------------------------------------------------

def run_model(spec: ModelSpec, mode: str, dtype: str, device: str, size: Size, budget: str,
              progress: Callable[[str], None], compilers: tuple[str, ...] = tuple(COMPILERS),
              timed: bool = True) -> ModelResult:
    """One row. ``compilers``: keys of run.COMPILERS to run (the tests run minicompile alone,
    untimed: ``compilers=("mc",), timed=False``)."""
    r = ModelResult(spec.name, spec.suite, spec.family, mode, dtype, device)
    label = f"{spec.name} {mode} {dtype}"
    try:
        run_checked(r, spec, size, budget, label, progress, compilers, timed)
    except Exception as e:  # noqa: BLE001 -- the eager model itself failed: nothing to judge
        r.status, r.reason = "fail: crash", f"eager: {first_line(e)}"
    return r


def run_checked(r: ModelResult, spec: ModelSpec, size: Size, budget: str, label: str,
                progress: Callable[[str], None], compilers: tuple[str, ...], timed: bool) -> None:
    model, inputs = spec.build(size)
    autocast = torch.bfloat16 if r.dtype == "bfloat16" else None
    base = Runner(spec, r.mode, model.to(r.device), to_device(inputs, r.device), autocast)
    before = base.params() if r.mode == "training" else None

    progress(f"{label}: eager")
    eager = base.copy()
    expected = results(eager, eager.step(), before)
    names = result_names(base, len(expected))
    try:  # the float64 judge (for bfloat16 autocast too)
        judge = base.copy(torch.float64)
        fp64 = results(judge, judge.step(), [b.double() for b in before or []])
    except Exception:  # noqa: BLE001 -- an op without a float64 kernel: tolerance (or cosine)
        fp64 = None

    progress(f"{label}: torch._dynamo.explain")
    if "tc" in compilers:
        try:
            ex = explain_counts(torch._dynamo.explain, base)
            r.dynamo_graphs, r.dynamo_breaks = ex.graph_count, ex.graph_break_count
        except Exception:  # noqa: BLE001 -- counts stay empty; torch.compile's own run says more
            pass
        torch._dynamo.reset()
    progress(f"{label}: mc.explain")
    try:
        ex = explain_counts(mc.explain, base)
        r.mc_graphs, r.mc_breaks = ex.graph_count, ex.graph_break_count
        r.break_reasons = [break_text(b) for b in ex.break_reasons]
    except Exception as e:  # noqa: BLE001
        r.break_reasons = [f"mc.explain raised {first_line(e)}"]
    mc.reset()

    steps = {"eager": eager.step}
    for key in compilers:
        progress(f"{label}: {COMPILERS[key].name}")
        runner = base.copy()
        status, why, compiled = check_compiler(r, key, runner, expected, fp64, names)
        if key == "tc":
            r.tc_status, r.tc_reason = status, why
        else:
            r.status, r.reason = status, why
        if compiled is not None:
            steps[key] = lambda runner=runner, compiled=compiled: runner.step(compiled)

    progress(f"{label}: timing")
    if timed:
        r.ms = time_in_turns(steps, r.device, budget)
        r.peak_mb = {key: mb for key, step in steps.items()
                     if (mb := peak_memory_mb(step, r.device)) is not None}
    for key in compilers:
        COMPILERS[key].reset()


def fallback_reason(r: ModelResult, reasons: list[str] = ()) -> str:
    """Why a frame ran eagerly: what the compiled run recorded (``mc.metrics.fallback_reasons``:
    a frame's break, or a graph no compiler stage could compile), else the break that left a
    frame to eager (explain lists those last), else the first break."""
    if reasons and reasons[0].strip():
        return reasons[0].strip().splitlines()[0][:300]
    eager = [b for b in r.break_reasons if "runs eagerly" in b or "internal error" in b]
    return (eager or r.break_reasons or ["a frame ran eagerly"])[0]


def check_compiler(r: ModelResult, key: str, runner: Runner, expected: list, fp64: list | None,
                   names: list[str]) -> tuple[str, str, Callable | None]:
    """Compile cold, run the first step, judge it: (status, why not a pass, the compiled
    function where its result was right)."""
    compiler = COMPILERS[key]
    compiler.reset()
    mc.metrics.reset()
    dynamo_counters().clear()  # (``dynamo_fallback_reason`` reads them)
    before = runner.params() if r.mode == "training" else None
    try:
        compiled = compiler.compile(runner.fn)
        with compiler.cold():
            out, r.cold_s[key] = first_call_s(lambda: runner.step(compiled), r.device)
        ok, why = same(expected, results(runner, out, before), fp64,
                       TOLERANCE[r.mode], use_cosine=runner.autocast is not None, names=names,
                       reduced_precision=runner.autocast is not None)
    except Exception as e:  # noqa: BLE001 -- one model's crash must not stop the suite
        return "fail: crash", first_line(e), None
    if not ok:
        return "fail: wrong result", why, None
    if key == "mc":
        r.eager_frames = mc.metrics.eager_fallbacks
    if key == "mc" and (r.eager_frames or not mc.metrics.graphs_compiled):
        return "fallback", fallback_reason(r, mc.metrics.fallback_reasons), compiled  # right, but (part of) it ran eagerly
    if key == "tc" and (why := dynamo_fallback_reason()):
        return "fallback", why, compiled
    return "pass", "", compiled


def dynamo_counters() -> Any:
    from torch._dynamo.utils import counters

    return counters


def dynamo_fallback_reason() -> str:
    """Why real torch.compile ran a graph eagerly after all, '' if it did not: when its backend
    fails on a graph (AOT autograd meeting ``.tolist()`` in a custom op's backward), Dynamo
    counts the failure (``counters["aot_autograd"]["not_ok"]``), adds a graph break and runs the
    frame's code natively: a right result, nothing compiled. ``check_compiler`` clears the
    counters before each run."""
    counters = dynamo_counters()
    failed = [k for k in counters["unimplemented"] if k.startswith("Backend compiler")]
    if not failed and not counters["aot_autograd"]["not_ok"]:
        return ""
    lines = [line.strip() for line in (failed or [""])[0].splitlines()]
    said = next((line.removeprefix("Explanation:").strip() for line in lines
                 if line.startswith("Explanation:")), "")
    return said or "its backend failed on a graph, which ran eagerly"
