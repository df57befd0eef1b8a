"""Run-time checks of generated kernels (minicompile/inductor/checks.py): an index loaded from a
tensor is checked against its dimension, and an integer divisor against zero, in every CPU
backend; the compiled function raises what eager raises, and never reads outside a tensor.

A kernel without the checks would return neighbouring heap memory for a small out-of-range index
and die of SIGSEGV (or SIGFPE, for ``n // 0``) for others: those probes run in a subprocess, so
that a regression fails the test instead of killing the test process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F

import minicompile as mc
from conftest import record_compiled_graphs
from minicompile import config
from minicompile.inductor.codegen import cpp_build

pytestmark = pytest.mark.cpu_only
needs_cxx = pytest.mark.skipif(shutil.which(cpp_build.CXX) is None, reason="no C++ compiler")

W = torch.randn(5, 3, device="cpu")  # (made at import: CPU under MINICOMPILE_TEST_DEVICE too)

# name -> a function of an int64 index tensor of 2 elements that indexes with it
INDEXING = {
    "embedding": lambda i: F.embedding(i, W) * 2,
    "getitem": lambda i: W[i] + 1,
    "getitem_dim1": lambda i: W[:, i] * 3,
    "index_select": lambda i: torch.index_select(W, 0, i) + 1,
    "index_select_dim1": lambda i: torch.index_select(W, 1, i) + 1,
    "gather": lambda i: torch.gather(W, 0, i.view(-1, 1).expand(-1, 3)) + 1,
    "scatter": lambda i: torch.zeros(5, 3).scatter_(0, i.view(-1, 1).expand(-1, 3), 1.0) + 1,
    # stores through a loaded index (scatter kernels): the same checks as loads
    "index_put": lambda i: torch.zeros(5, 3).index_put((i,), torch.ones(3), accumulate=True) + 1,
    "index_add": lambda i: torch.zeros(5, 3).index_add(0, i, torch.ones(2, 3)) + 1,
    "index_add_1d": lambda i: torch.zeros(5).index_add(0, i, torch.ones(2)) + 1,  # IndexError
    "index_add_middle_dim": lambda i: torch.zeros(2, 5, 3).index_add(1, i, torch.ones(2, 2, 3)),
    "scatter_add": lambda i: torch.zeros(5, 3).scatter_add(0, i.view(-1, 1).expand(-1, 3),
                                                           torch.ones(2, 3)) + 1,
}
BAD = [5, 7, -1, -6]  # past the end, negative (x[-1] wraps, gather raises), before the start


def outcome(fn, *args):
    """``("ok", value)`` or ``("raised", type name, message)``: what a call did."""
    try:
        return ("ok", fn(*args))
    except Exception as e:  # noqa: BLE001 - the exception itself is compared
        return ("raised", type(e).__name__, str(e))


@pytest.fixture(params=["cpp", "reference", "triton"])
def backend(request, monkeypatch):
    if request.param == "cpp" and shutil.which(cpp_build.CXX) is None:
        pytest.skip("no C++ compiler")
    monkeypatch.setattr(config.inductor, "cpu_backend", request.param)
    compiled = record_compiled_graphs(monkeypatch)
    mc.reset()
    yield request.param, compiled
    mc.reset()


def compare(fn, i, backend):
    name, graphs = backend
    expected = outcome(fn, i)
    got = outcome(mc.compile(fn, backend="inductor"), i)
    assert graphs and all(g.backends in ({"cpu": name}, {}) for g in graphs)
    assert mc.metrics.eager_fallbacks == 0
    if expected[0] == "ok":
        assert got[0] == "ok", got
        torch.testing.assert_close(got[1], expected[1])
    else:
        assert got == expected


@pytest.mark.parametrize("op", list(INDEXING))
@pytest.mark.parametrize("bad", BAD)
def test_out_of_range_index_raises_eagers_error(op, bad, backend):
    if op.endswith("dim1") and bad == 5:
        bad = 3  # (dim 1 has 3 elements)
    compare(INDEXING[op], torch.tensor([0, bad]), backend)


@pytest.mark.parametrize("op", list(INDEXING))
def test_in_range_index_keeps_the_result(op, backend):
    """The check never changes a correct program's result (x[-1] still wraps)."""
    compare(INDEXING[op], torch.tensor([2, -1 if op.startswith("getitem") else 1]), backend)


@needs_cxx
def test_a_failed_call_leaves_the_compiled_function_usable(backend):
    fn = INDEXING["embedding"]
    compiled = mc.compile(fn, backend="inductor")
    with pytest.raises(IndexError, match="index out of range in self"):
        compiled(torch.tensor([0, 9]))
    torch.testing.assert_close(compiled(torch.tensor([4, 0])), fn(torch.tensor([4, 0])))


# --- what the generated C++ says ---------------------------------------------------------------

def kernel_source(graphs) -> str:
    return "\n".join(g.source for g in graphs)


@needs_cxx
def test_the_check_is_in_the_kernel(monkeypatch):
    """The error comes from the C++ kernel's check, not from a fall back to eager."""
    monkeypatch.setattr(config.inductor, "cpu_backend", "cpp")
    graphs = record_compiled_graphs(monkeypatch)
    mc.reset()
    compiled = mc.compile(INDEXING["gather"], backend="inductor")
    compiled(torch.tensor([0, 1]))
    source = kernel_source(graphs)
    assert "mc::checked_index(" in source and "return error.finish();" in source


# what each backend writes for an index it proves in range, and for a checked one (each group:
# one of its words; Triton checks the index and masks the load to its bounds, or checks an
# index tensor it reads whole on the host: test_triton_checks.py)
HOST = "checked on the host before the launch"
CHECK_TEXT = {"cpp": ("// no check", [("checked_index(", "wrapped_index(")]),
              "triton": ("# no check", [("check_index(", HOST), ("_in_bounds", HOST)])}

PROVABLE = {
    "arange": lambda i: W[torch.arange(4)] * 2,  # 0..3 into 5 rows
    "modulo": lambda i: W[i % 5] * 2,  # a modulo by the size
    "clamp": lambda i: W[i.clamp(-5, 4)] * 2,  # negative ones wrap: no check, still the wrap
    "gather_modulo": lambda i: torch.gather(W, 0, (i % 5).view(-1, 1).expand(-1, 3)),
    "arange_plus_one": lambda i: W[torch.arange(4) + 1] + i.sum(),
}
UNPROVABLE = {
    "loaded": lambda i: W[i] * 2,
    "modulo_too_large": lambda i: W[i % 6] * 2,
    "clamp_too_wide": lambda i: W[i.clamp(0, 5)] * 2,
    "clamp_one_side": lambda i: W[i.clamp(min=0)] * 2,
    "gather_negative_wraps_not": lambda i: torch.gather(W, 0, i.clamp(-1, 4).view(-1, 1)),
}


@pytest.mark.parametrize("fn", list(PROVABLE.values()), ids=list(PROVABLE))
def test_a_provably_in_range_index_is_not_checked(fn, backend):
    """An index made by ``arange``, ``% size`` or a clamp into the dim needs no check: the kernel
    says why in a comment and has no check (in Triton, no bounds term in the load's mask)."""
    name, graphs = backend
    i = torch.tensor([-3, 12, 7, 4])
    torch.testing.assert_close(mc.compile(fn, backend="inductor")(i), fn(i))
    if name in CHECK_TEXT:
        unchecked, checks = CHECK_TEXT[name]
        source = kernel_source(graphs)
        assert unchecked in source and not any(c in source for g in checks for c in g), source


@pytest.mark.parametrize("fn", list(UNPROVABLE.values()), ids=list(UNPROVABLE))
@pytest.mark.parametrize("values", [[0, 4, 2], [0, 5, -1]], ids=["in_range", "out_of_range"])
def test_an_index_not_proven_in_range_keeps_its_check(fn, values, backend):
    """A loaded index, or one whose range reaches past the dim, stays checked: eager's result
    where it is in range, eager's error where it is not."""
    name, graphs = backend
    compare(fn, torch.tensor(values), backend)
    if name in CHECK_TEXT:
        unchecked, checks = CHECK_TEXT[name]
        source = kernel_source(graphs)
        assert unchecked not in source and all(any(c in source for c in g) for g in checks), \
            source


# --- probes that would crash the process without the checks -------------------------------------

PROBE = r"""
import json, sys
import torch, torch.nn.functional as F
import minicompile as mc
from minicompile import config
config.inductor.cpu_backend = sys.argv[1]
W = torch.randn(5, 3, device="cpu")
def embedding(i): return F.embedding(i, W) * 2
def getitem(i): return W[i] + 1
def floordiv(i): return (i + 1) // (i - 7)
def remainder(i): return (i + 1) % (i - 7)
def fmod(i): return torch.fmod(i + 1, i - 7)
def truncdiv(i): return torch.div(i + 1, i - 7, rounding_mode="trunc")
def floordiv32(i): return (i.int() + 1) // (i.int() - 7)
def int_min(i): return ((i * 0 + (-2 ** 63)) // (i * 0 - 1), (i * 0 + (-2 ** 63)) % (i * 0 - 1))
results = []
for name, value in json.loads(sys.argv[2]):
    fn = globals()[name]
    i = torch.tensor([0, value])
    try:
        out = mc.compile(fn, backend="inductor")(i)
        out = [o.tolist() for o in out] if isinstance(out, tuple) else out.tolist()
        results.append(["ok", out])
    except Exception as e:
        results.append(["raised", type(e).__name__, str(e)])
    print(json.dumps(results[-1]), flush=True)
"""


def run_probe(backend: str, cases: list) -> list:
    """Compile and call each ``(function name, index value)`` of ``PROBE`` in a subprocess."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    result = subprocess.run([sys.executable, "-c", PROBE, backend, json.dumps(cases)],
                            capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, (result.returncode, result.stderr[-2000:])
    return [json.loads(line) for line in result.stdout.splitlines()]


def eager(name: str, value: int) -> list:
    W_ = torch.randn(5, 3)
    fns = {"embedding": lambda i: F.embedding(i, W_), "getitem": lambda i: W_[i],
           "floordiv": lambda i: (i + 1) // (i - 7), "remainder": lambda i: (i + 1) % (i - 7),
           "fmod": lambda i: torch.fmod(i + 1, i - 7),
           "truncdiv": lambda i: torch.div(i + 1, i - 7, rounding_mode="trunc"),
           "floordiv32": lambda i: (i.int() + 1) // (i.int() - 7)}
    got = outcome(fns[name], torch.tensor([0, value]))
    return ["ok", got[1].tolist()] if got[0] == "ok" else list(got)


PROBE_BACKENDS = [pytest.param("cpp", marks=needs_cxx), "triton"]


@pytest.mark.parametrize("backend_name", PROBE_BACKENDS)
def test_far_out_of_range_index_and_zero_divisor_raise_instead_of_a_signal(backend_name):
    cases = [["embedding", 2 ** 40], ["getitem", -2 ** 40], ["getitem", 2 ** 62],
             ["floordiv", 7], ["remainder", 7], ["fmod", 7], ["truncdiv", 7], ["floordiv32", 7],
             ["floordiv", 3]]
    got = run_probe(backend_name, cases)
    assert len(got) == len(cases)
    for (name, value), result in zip(cases, got):
        expected = eager(name, value)
        if expected[0] == "ok":
            assert result == expected, (name, value)
        else:
            assert result[:2] == expected[:2], (name, value, result)
            if name not in ("embedding",):
                assert result == expected, (name, value)


@pytest.mark.parametrize("backend_name", PROBE_BACKENDS)
def test_most_negative_integer_divided_by_minus_one_is_no_signal(backend_name):
    """Eager's own ``//`` wraps to the same value and ``%`` gives 0 (x86's divide traps)."""
    (result,) = run_probe(backend_name, [["int_min", 0]])
    assert result == ["ok", [[-2 ** 63, -2 ** 63], [0, 0]]]


# A reduction with no identity (max, min, argmax, argmin) over zero elements has no answer: eager
# raises, and a kernel would return -inf or read an element that is not there (SIGSEGV for a
# full max). Each case: (expression of x, shapes to call it with); compiled with dynamic=True the
# second shape makes ``x[2:]`` empty only at run time (its size is ``s0 - 2``).
EMPTY_REDUCTION_PROBE = r"""
import json, sys
import torch
import minicompile as mc
from minicompile import config
config.inductor.cpu_backend = sys.argv[1]
for expr, shapes, dynamic in json.loads(sys.argv[2]):
    fn = eval("lambda x: " + expr)
    compiled = mc.compile(fn, backend="inductor", dynamic=dynamic)
    for shape in shapes:
        x = torch.randn(shape)
        results = []
        for f in (fn, compiled):
            try:
                results.append(["ok", f(x).tolist()])
            except Exception as e:
                results.append(["raised", type(e).__name__, str(e)])
        print(json.dumps(results), flush=True)
"""

EMPTY_REDUCTIONS = [
    ["x.max()", [[0, 3]], False],
    ["x.min()", [[0, 3]], False],
    ["(x * 2).max()", [[0, 3]], False],
    ["x.sum(1).max()", [[0, 3]], False],
    ["x.reshape(-1).max(0).values", [[0, 3]], False],
    ["x.argmin()", [[0, 3]], False],
    ["x.amax(1) + 1", [[3, 0]], False],
    ["x.amax(1) + 1", [[0, 3]], False],  # over 3 elements, for no row: an empty result
    ["x.softmax(1)", [[3, 0]], False],  # a max inside, but eager returns an empty tensor
    ["x[2:].amax(0)", [[5, 3], [2, 3]], True],
]


@pytest.mark.parametrize("backend_name", PROBE_BACKENDS)
def test_max_over_no_elements_raises_like_eager(backend_name):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    result = subprocess.run([sys.executable, "-c", EMPTY_REDUCTION_PROBE, backend_name,
                             json.dumps(EMPTY_REDUCTIONS)],
                            capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, (result.returncode, result.stderr[-2000:])
    got = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(got) == sum(len(shapes) for _, shapes, _ in EMPTY_REDUCTIONS)
    for eager_result, compiled_result in got:
        assert compiled_result == eager_result


# --- on the GPU: device asserts ------------------------------------------------------------------

GPU_PROBE = r"""
import torch, torch.nn.functional as F
import minicompile as mc
w = torch.randn(50, 16, device="cuda")
fn = lambda i: F.embedding(i, w) * 2
compiled = mc.compile(fn)
i = torch.tensor([3, 49, 7], device="cuda")
torch.testing.assert_close(compiled(i), fn(i))
print("in range: ok", flush=True)
compiled(torch.tensor([3, 50], device="cuda"))
torch.cuda.synchronize()
print("out of range: no error", flush=True)
"""


@pytest.mark.gpu
def test_out_of_range_index_on_the_gpu_is_a_device_assert():
    """With MINICOMPILE_TRITON_ASSERTS=1, a Triton kernel with a checked index is compiled with
    its device asserts (Triton's debug flag): an in-range call gives eager's result, an out-of-range one fails as eager's CUDA
    kernels do, with a device-side assert (which ends the process's CUDA context: a subprocess)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), MINICOMPILE_TRITON_ASSERTS="1")
    env.pop("TRITON_INTERPRET", None)
    result = subprocess.run([sys.executable, "-c", GPU_PROBE], capture_output=True, text=True,
                            env=env, timeout=600)
    assert "in range: ok" in result.stdout, result.stderr[-3000:]
    assert "out of range: no error" not in result.stdout
    assert result.returncode != 0 and "assert" in result.stderr.lower(), result.stderr[-3000:]


@pytest.mark.gpu
def test_launcher_compiles_checked_kernels_with_device_asserts(monkeypatch):
    from minicompile.inductor.codegen.wrapper import WrapperCodeGen
    from minicompile.inductor.runtime.triton_heuristics import CHECKED_OPTIONS, COMPILE_OPTIONS

    monkeypatch.setattr(mc.config.inductor, "triton_device_asserts", True)
    seen = []
    define = WrapperCodeGen.define_kernel
    monkeypatch.setattr(WrapperCodeGen, "define_kernel",
                        lambda self, n, k, src: seen.append(k) or define(self, n, k, src))
    mc.reset()
    w, x = torch.randn(50, 16, device="cuda"), torch.randn(50, 16, device="cuda")
    i = torch.tensor([1, 2], device="cuda")
    torch.testing.assert_close(mc.compile(lambda i: F.embedding(i, w) + 1)(i), F.embedding(i, w) + 1)
    torch.testing.assert_close(mc.compile(lambda x: x.sin() * 2)(x), x.sin() * 2)
    options = [k.options for k in seen]
    assert CHECKED_OPTIONS in options and COMPILE_OPTIONS in options
    mc.reset()


EMPTY_DIM_PROBE = r"""
import json, sys, torch, torch.nn.functional as F
import minicompile as mc
mc.config.inductor.cpu_backend = sys.argv[1]
cases = {
    "embedding": (lambda w, i: F.embedding(i, w), (torch.randn(0, 3), torch.zeros(2, dtype=torch.long))),
    "getitem": (lambda w, i: w[i] * 2, (torch.randn(0, 4), torch.zeros(3, dtype=torch.long))),
    "gather": (lambda w, i: torch.gather(w, 1, i), (torch.randn(3, 0), torch.zeros(3, 2, dtype=torch.long))),
    "index_select": (lambda w, i: w.index_select(0, i) + 1, (torch.randn(0, 5), torch.ones(4, dtype=torch.long))),
    "dynamic": (lambda w, i: w[i] + 1, (torch.randn(0, 4), torch.zeros(3, dtype=torch.long))),
}
for name, (fn, args) in cases.items():
    mc.reset()
    f = mc.compile(fn, dynamic=(name == "dynamic"))
    if name == "dynamic":  # compiled for a non-empty size first, then called with an empty one
        f(torch.randn(5, 4), torch.zeros(3, dtype=torch.long))
    try:
        f(*args)
        print(json.dumps([name, "ok"]), flush=True)
    except Exception as e:
        print(json.dumps([name, "raised", type(e).__name__]), flush=True)
"""


@pytest.mark.parametrize("backend_name", PROBE_BACKENDS)
def test_an_index_into_an_empty_dim_raises_instead_of_reading(backend_name):
    """No element of an empty dimension exists: a failed check can't fall back to index 0
    (the kernel read past the tensor: SIGSEGV for embedding from a weight of 0 rows)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    result = subprocess.run([sys.executable, "-c", EMPTY_DIM_PROBE, backend_name],
                            capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, (result.returncode, result.stderr[-2000:])
    got = [json.loads(line) for line in result.stdout.splitlines()]
    assert [g[0] for g in got] == ["embedding", "getitem", "gather", "index_select", "dynamic"]
    for name, outcome_, *error in got:  # eager raises for each (IndexError or RuntimeError)
        assert outcome_ == "raised" and error[0] in ("IndexError", "RuntimeError"), (name, error)
