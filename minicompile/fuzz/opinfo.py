"""The OpInfo sweep: every op of PyTorch's ``op_db``, on the op's own sample inputs, compiled with
minicompile and compared with eager (mirrors test/inductor/test_torchinductor_opinfo.py).

    python -m minicompile.fuzz.opinfo --backend cpp --dtype float32 --dtype float64
    python -m minicompile.fuzz.opinfo --backend triton --ops '^(add|mul|sum)$' --samples 2
    python -m minicompile.fuzz.opinfo --dynamic --dtype float32 --ops '^(add|sum|cat)$'
    python -m minicompile.fuzz.opinfo --dynamic --reuse --dtype float32 --samples 6

A compiler's own tests share its blind spots; OpInfo's samples were written by the people who
wrote the ops: broadcasting corners, zero-size and scalar tensors, keyword arguments, odd dtypes.
For each op and dtype, each of the first ``samples`` sample inputs is checked on its own (a fresh
compile of ``lambda *a, **k: op(*a, **k)``): the outputs and the inputs afterwards, and for the
first ``grad_samples`` of an op that supports autograd, the gradients of a random weighted sum of
the outputs. With ``dynamic``, each compile is ``mc.compile(..., dynamic=True)``: every size is a
symbol in the graphs, the guards and the kernels (sizes 0 and 1 still specialize, as in
torch.compile). With ``reuse``, an op's samples share one compile: a sample of other sizes runs
the graph compiled for an earlier one wherever that graph's guards hold, which tests the guards
and the symbolic kernels at sizes other than those they were traced with. Results are compared
at the dtype's tolerance, a float64 run of eager as the referee (``compare.py``, as Inductor's
harness). Each result is one of

- ``pass``: the same values (or the same exception type as eager);
- ``fallback``: the same values, but minicompile ran some of it eagerly (a graph break or an
  eager fallback, with its reason): acceptable;
- ``wrong``: other values, or no exception where eager raised one;
- ``crash``: an exception eager does not raise, or another type than eager's;
- ``timeout``: the case ran past ``timeout`` seconds; ``signal``: its process died.

Checks run in a worker process (``worker.py``: a signal or a hang in generated code is a result,
not the end of the run); ``-j 2`` runs two.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import signal
import sys
import threading
import traceback
import warnings
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

KINDS = ("pass", "fallback", "wrong", "crash", "timeout", "signal")
FAILURES = ("wrong", "crash", "timeout", "signal")

# Ops whose result eager itself does not fix: random numbers and uninitialised memory (the ops
# test_torchinductor_opinfo.py skips as nondeterministic or seeded).
NONDETERMINISTIC = re.compile(
    r"(^|\.)(rand|randn|randint|rand_like|randn_like|randint_like|normal|bernoulli|multinomial"
    r"|uniform|cauchy|exponential|geometric|log_normal|poisson|rrelu|empty|empty_like|new_empty"
    r"|empty_strided|empty_permuted|new_empty_strided|nonzero_static|svd_lowrank|pca_lowrank"
    r"|lobpcg)(\.|$)|dropout|^sparse\.")
# ... whose names say random, but whose results are not
DETERMINISTIC = {"native_dropout_backward", "nn.functional.feature_alpha_dropout.without_train",
                 "signal.windows.exponential"}

DTYPES = {"float32", "float64", "int64", "int32", "bool", "bfloat16", "float16", "complex64"}


@dataclass
class Request:
    """One op at one dtype: its samples ``0 .. samples - 1`` forward, the first ``grad_samples``
    of them with gradients too."""

    op: str  # OpInfo's full name: ``name`` or ``name.variant_test_name``
    dtype: str
    backend: str  # config.inductor.cpu_backend: "cpp", "triton" or "reference"
    samples: int = 4
    grad_samples: int = 1
    case_timeout: float = 60.0
    dynamic: bool = False  # compile with dynamic=True: symbolic sizes from the first call
    reuse: bool = False  # the samples of a mode share one compile (its guards decide reuse)


@dataclass
class Result:
    op: str
    dtype: str
    backend: str
    sample: int  # -1: the whole request (a timeout or a death of its worker)
    mode: str  # "forward" or "grad"
    kind: str
    message: str = ""
    sample_repr: str = ""
    dynamic: bool = False
    reuse: bool = False

    @property
    def setting(self) -> str:
        """The dtype, "dyn" where sizes were symbolic, "reuse" where samples shared a compile
        (the summary's rows)."""
        return self.dtype + (" dyn" if self.dynamic else "") + (" reuse" if self.reuse else "")


def full_name(op) -> str:
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


@functools.cache
def op_table() -> dict[str, Any]:
    """``op_db`` by full name (imported on demand: it needs ``expecttest``). Importing torch's
    test utilities freezes ``torch.backends`` flags for the whole process (their own tests'
    rule: ``disable_global_flags``); the sweep runs in the caller's process, so a caller that
    could set ``torch.backends.cudnn.enabled`` before still can after."""
    import torch

    frozen = torch.backends.flags_frozen()
    from torch.testing._internal.common_methods_invocations import op_db
    if not frozen and torch.backends.flags_frozen():  # (a global of torch.backends's code)
        torch.backends.flags_frozen.__globals__["__allow_nonbracketed_mutation_flag"] = True
    return {full_name(op): op for op in op_db}


class CaseTimeout(BaseException):
    """A case ran past its time (a BaseException: the compiler under test must not catch it)."""


@dataclass
class Run:
    outputs: list = field(default_factory=list)
    inputs: list = field(default_factory=list)
    grads: list = field(default_factory=list)
    error: BaseException | None = None


def _tensors(tree: Any) -> list:
    """The tensors of ``tree``, a sparse one as its dense values (what the comparison reads)."""
    import torch
    import torch.utils._pytree as pytree
    return [x if x.layout == torch.strided else x.to_dense()
            for x in pytree.tree_leaves(tree) if _is_tensor(x)]


def _is_tensor(x: Any) -> bool:
    import torch
    return isinstance(x, torch.Tensor)


def _call_args(sample, convert: Callable) -> tuple[tuple, dict]:
    """The sample's arguments, each tensor through ``convert`` (a fresh copy for each run: an op
    may write into its inputs)."""
    import torch
    import torch.utils._pytree as pytree
    return pytree.tree_map_only(torch.Tensor, convert,
                                ((sample.input, *sample.args), dict(sample.kwargs)))


def _copy(t):
    return t.detach().clone().requires_grad_(t.requires_grad)


def _float64(t):
    import torch
    wide = (torch.complex128 if t.is_complex() else
            torch.float64 if t.is_floating_point() else t.dtype)
    return t.detach().to(wide).requires_grad_(t.requires_grad)


def run_sample(fn: Callable, sample, grad: bool, convert: Callable = _copy, seed: int = 0) -> Run:
    """Call ``fn`` on the sample; with ``grad``, the gradients of a random weighted sum of its
    floating outputs with respect to the sample's tensors that require grad."""
    import torch
    args, kwargs = _call_args(sample, convert)
    result = Run()
    try:
        out = fn(*args, **kwargs)
        if grad and sample.output_process_fn_grad is not None:
            out = sample.output_process_fn_grad(out)
        result.outputs = _tensors(out)
        result.inputs = _tensors((args, kwargs))
        if grad:
            outs = [o for o in result.outputs if o.requires_grad]
            wrt = [t for t in _tensors((args, kwargs)) if t.requires_grad]
            if outs and wrt:
                gen = torch.Generator().manual_seed(seed)
                weights = [torch.randn(o.shape, generator=gen, dtype=torch.float64).to(o)
                           for o in outs]
                result.grads = list(torch.autograd.grad(outs, wrt, weights, allow_unused=True))
    except Exception as e:
        result.error = e
    return result


def compare_runs(eager: Run, actual: Run, reference: Callable[[], Run]) -> list[str]:
    """What differs between eager's run and the compiled one (``compare.mismatches``); a
    floating difference is refereed by ``reference()``, eager in float64."""
    from .compare import mismatches
    labels = (("outputs", "output"), ("inputs", "input after the call"), ("grads", "grad"))

    def problems(ref: Run | None) -> list[str]:
        return [p for what, label in labels for p in mismatches(
            label, getattr(eager, what), getattr(actual, what),
            None if ref is None else getattr(ref, what))]
    found = problems(None)
    if found:
        ref = reference()
        if ref.error is None:
            found = problems(ref)
    return found


def compile_op(op, dynamic: bool = False) -> Callable:
    import minicompile as mc
    fn = op.get_op()
    return mc.compile(lambda *a, **k: fn(*a, **k), dynamic=dynamic or None)


def check_sample(op, sample, grad: bool, dynamic: bool = False,
                 shared: Callable | None = None) -> tuple[str, str]:
    """(kind, message) for one sample: compiled once, afresh, and called once; or called on
    ``shared``, the compile of the samples before it (a graph compiled for other sizes runs it
    where its guards hold)."""
    import minicompile as mc
    fn = op.get_op()
    if shared is None:
        mc.reset()
    mc.metrics.reset()
    compiled = shared or compile_op(op, dynamic)
    eager = run_sample(fn, sample, grad)
    actual = run_sample(compiled, sample, grad)
    fallback = mc.metrics.fallback_reasons[:1] or [  # (a kernel that failed: a backend's bug)
        f"reference backend: {e}" for e in mc.metrics.backend_fallbacks[:1]] or (
        ["graph break"] if mc.metrics.graph_breaks else [])
    if shared is None:
        mc.reset()
    if eager.error is not None or actual.error is not None:
        if eager.error is None:
            return "crash", _error_text(actual.error)
        if actual.error is None:
            return "wrong", f"eager raised {eager.error!r}, compiled did not"
        if type(actual.error) is not type(eager.error):
            return "crash", (f"eager raised {type(eager.error).__name__}, compiled "
                             + _error_text(actual.error))
        return "pass", f"both raised {type(eager.error).__name__}"
    problems = compare_runs(eager, actual, lambda: run_sample(fn, sample, grad, _float64))
    if problems:
        return "wrong", "; ".join(problems)[:2000]
    return ("fallback", str(fallback[0])[:500]) if fallback else ("pass", "")


def _error_text(error: BaseException) -> str:
    lines = traceback.format_exception(error)
    return f"{type(error).__name__}: {str(error)[:1500]}\n" + "".join(lines[-6:])[:3000]


def _alarm(seconds: float):
    def expire(signum, frame):
        raise CaseTimeout(f"the case ran past {seconds:g} s")
    signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)


def check_request(request: Request, *_ignored) -> list[Result]:
    """Every case of ``request``, in this process (the worker's ``check``)."""
    import torch
    import minicompile as mc
    from minicompile import config
    op = op_table()[request.op]
    dtype = getattr(torch, request.dtype)
    saved = config.inductor.cpu_backend
    config.inductor.cpu_backend = request.backend
    results = []
    modes = [("forward", False, request.samples)]
    if op.supports_autograd and (dtype.is_floating_point or dtype.is_complex):
        modes.append(("grad", True, request.grad_samples))
    try:
        for mode, grad, count in modes:
            torch.manual_seed(0)  # the same samples on every run
            samples = op.sample_inputs("cpu", dtype, requires_grad=grad)
            if request.reuse:
                mc.reset()
            shared = compile_op(op, request.dynamic) if request.reuse and count else None
            for index, sample in enumerate(_strided_samples(samples, count)):
                result = Result(request.op, request.dtype, request.backend, index, mode, "",
                                dynamic=request.dynamic, reuse=request.reuse)
                result.sample_repr = _describe(sample)
                try:
                    _alarm(request.case_timeout)
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        result.kind, result.message = check_sample(op, sample, grad,
                                                                  request.dynamic, shared)
                except CaseTimeout as e:
                    result.kind, result.message = "timeout", str(e)
                except Exception as e:  # the sweep's own machinery, or sample generation
                    result.kind, result.message = "crash", "the check raised: " + _error_text(e)
                finally:
                    signal.setitimer(signal.ITIMER_REAL, 0)
                results.append(result)
    except Exception as e:  # the op's sample generator itself failed: not minicompile's
        results.append(Result(request.op, request.dtype, request.backend, -1, "samples",
                              "pass", f"no samples: {e!r}"[:300], dynamic=request.dynamic,
                              reuse=request.reuse))
    finally:
        config.inductor.cpu_backend = saved
        if request.reuse:
            mc.reset()
    return results


def _strided_samples(samples, count: int) -> list:
    """The first ``count`` samples whose tensors are all strided CPU tensors."""
    import torch
    import torch.utils._pytree as pytree
    kept = []
    for sample in samples:
        if len(kept) >= count:
            break
        leaves = pytree.tree_leaves(((sample.input, *sample.args), sample.kwargs))
        if all(t.layout == torch.strided and t.device.type == "cpu"
               for t in leaves if _is_tensor(t)):
            kept.append(sample)
    return kept


def _describe(sample) -> str:
    def one(x: Any) -> str:
        if _is_tensor(x):
            s = f"T{tuple(x.shape)}:{str(x.dtype).removeprefix('torch.')}"
            return s + ("" if x.is_contiguous() else f"@stride{tuple(x.stride())}")
        if isinstance(x, (list, tuple)):
            return "[" + ", ".join(one(y) for y in x) + "]"
        return repr(x)
    kwargs = ", ".join(f"{k}={one(v)}" for k, v in sample.kwargs.items())
    return f"({one(sample.input)}, {', '.join(one(a) for a in sample.args)}; {kwargs})"[:400]


# --- the sweep: requests to worker processes, results into a table ------------------------------

def worker_command() -> list[str]:
    return [sys.executable, "-m", "minicompile.fuzz.opinfo", "--serve"]


def requests_for(names: list[str], dtypes: list[str], backend: str, samples: int,
                 grad_samples: int, case_timeout: float, dynamic: bool = False,
                 reuse: bool = False) -> tuple[list[Request], list[str]]:
    """The requests for ``names`` x ``dtypes`` the op supports on CPU, and the names skipped
    (random or nondeterministic ops)."""
    import torch
    table = op_table()
    requests, skipped = [], []
    for name in names:
        if NONDETERMINISTIC.search(name) and name not in DETERMINISTIC:
            skipped.append(name)
            continue
        supported = table[name].supported_dtypes("cpu")
        requests += [Request(name, d, backend, samples, grad_samples, case_timeout, dynamic,
                             reuse)
                     for d in dtypes if getattr(torch, d) in supported]
    return requests, skipped


def sweep(requests: list[Request], jobs: int = 1, request_timeout: float = 600.0,
          progress: Callable[[Result], None] | None = None) -> list[Result]:
    """Check every request in ``jobs`` worker processes; the results in the requests' order."""
    from .worker import Worker
    pending = list(enumerate(requests))
    done: dict[int, list[Result]] = {}
    lock = threading.Lock()

    def work() -> None:
        with Worker(timeout=request_timeout, command=worker_command()) as worker:
            while True:
                with lock:
                    if not pending:
                        return
                    index, request = pending.pop(0)
                reply = worker.check(request, request.backend)
                if not isinstance(reply, list):  # an Outcome: the worker timed out or died
                    reply = [Result(request.op, request.dtype, request.backend, -1, "all",
                                    reply.kind, reply.message, dynamic=request.dynamic,
                                    reuse=request.reuse)]
                with lock:
                    done[index] = reply
                    for result in reply:
                        if progress:
                            progress(result)
    threads = [threading.Thread(target=work) for _ in range(max(jobs, 1))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [r for i in sorted(done) for r in done[i]]


def summary(results: list[Result]) -> str:
    """Counts by (backend, dtype, dynamic) and kind, then each failing op with its first
    message."""
    counts: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for r in results:
        counts[r.backend, r.setting][r.kind] += 1
    lines = [f"{'backend':8} {'dtype':17} " + " ".join(f"{k:>8}" for k in KINDS)]
    for (backend, setting), c in sorted(counts.items()):
        lines.append(f"{backend:8} {setting:17} " + " ".join(f"{c[k]:8d}" for k in KINDS))
    failing = [r for r in results if r.kind in FAILURES]
    if failing:
        lines.append("")
        seen = set()
        for r in failing:
            key = (r.op, r.setting, r.mode, r.kind)
            if key not in seen:
                seen.add(key)
                first = r.message.strip().splitlines()[0][:160] if r.message.strip() else ""
                lines.append(f"{r.kind:8} {r.op} {r.setting} {r.mode} #{r.sample} "
                             f"{r.sample_repr[:80]}: {first}")
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m minicompile.fuzz.opinfo",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", default="cpp", choices=["cpp", "triton", "reference"])
    parser.add_argument("--dtype", action="append", choices=sorted(DTYPES),
                        help="repeatable (default: float32 and float64)")
    parser.add_argument("--ops", default="", help="a regex the ops' full names must match")
    parser.add_argument("--samples", type=int, default=4, help="forward samples per op/dtype")
    parser.add_argument("--grad-samples", type=int, default=1, help="samples checked with grad")
    parser.add_argument("-j", "--jobs", type=int, default=1, help="worker processes")
    parser.add_argument("--dynamic", action="store_true",
                        help="compile with dynamic=True: symbolic sizes in graphs and kernels")
    parser.add_argument("--reuse", action="store_true",
                        help="one compile for an op's samples: later samples (other sizes) run "
                             "the graphs of earlier ones where the guards hold")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per case")
    parser.add_argument("--out", help="write every result here, one JSON object a line")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.backend == "triton":  # Triton kernels on CPU tensors: its interpreter, set early
        os.environ.setdefault("TRITON_INTERPRET", "1")
    if args.serve:
        from .worker import serve
        serve(check_request)
        return 0
    names = [n for n in op_table() if re.search(args.ops, n)]
    requests, skipped = requests_for(names, args.dtype or ["float32", "float64"], args.backend,
                                     args.samples, args.grad_samples, args.timeout,
                                     args.dynamic, args.reuse)
    print(f"{len(requests)} op/dtype requests; skipped as random or nondeterministic: "
          f"{', '.join(skipped) or 'none'}", file=sys.stderr)
    out = open(args.out, "w") if args.out else None
    count = Counter()

    def progress(result: Result) -> None:
        count[result.kind] += 1
        if out:
            out.write(json.dumps(asdict(result)) + "\n")
            out.flush()
        if result.kind in FAILURES:
            print(f"{result.kind}: {result.op} {result.setting} {result.mode} #{result.sample}",
                  file=sys.stderr, flush=True)
    # a request's budget: every case at its limit, and a worker's start
    budget = args.timeout * (args.samples + args.grad_samples) + 120
    results = sweep(requests, args.jobs, budget, progress)
    if out:
        out.close()
    print(summary(results))
    return 1 if any(r.kind in FAILURES for r in results) else 0


if __name__ == "__main__":  # through the package's module, so that pickled results name it
    from minicompile.fuzz import opinfo
    sys.exit(opinfo.main())
