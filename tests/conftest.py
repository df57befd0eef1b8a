"""Shared test set-up: the ``gpu`` marker skips without CUDA; every test starts with a fresh cache.

``MINICOMPILE_TEST_DEVICE=cuda`` runs the whole suite on the GPU: tensors a test creates without
naming a device are made on CUDA (``torch.set_default_device``), so every test that compiles with
``backend="inductor"`` runs real Triton kernels. Tests about CPU code generation (marked
``cpu_only``) keep CPU tensors.
"""

import os

import pytest
import torch

if not torch.cuda.is_available():  # Triton kernels run on CPU tensors through its interpreter
    os.environ.setdefault("TRITON_INTERPRET", "1")


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA device; skipped without one")
    config.addinivalue_line("markers", "slow: takes more than a few seconds")
    config.addinivalue_line(
        "markers", "cpu_only: about CPU code generation; keeps CPU tensors under MINICOMPILE_TEST_DEVICE"
    )


# Exercises whose checks build C++ kernels, which take CPU tensors
CPU_ONLY_EXERCISES = ("9.",)


def pytest_collection_modifyitems(config, items):
    for item in items:
        param = getattr(item, "callspec", None)  # notebook cells (nbval) have neither
        module = getattr(item, "module", None)
        if module is not None and module.__name__.startswith("test_grading") and param is not None \
                and param.id.startswith(CPU_ONLY_EXERCISES):
            item.add_marker(pytest.mark.cpu_only)
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs CUDA")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


TEST_DEVICE = os.environ.get("MINICOMPILE_TEST_DEVICE", "cpu")


def _use_test_device():
    """Unplaced tensors, including modules built when test files are imported, go to TEST_DEVICE."""
    if TEST_DEVICE == "cpu":
        return
    if TEST_DEVICE == "cuda" and not torch.cuda.is_available():
        raise pytest.UsageError("MINICOMPILE_TEST_DEVICE=cuda needs a CUDA device")
    torch.set_default_device(TEST_DEVICE)
    # Eager is the oracle: it must not round matmuls and convolutions to TF32 on the GPU.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


_use_test_device()


@pytest.fixture(autouse=True)
def _cpu_only_tests_keep_cpu_tensors(request):
    if TEST_DEVICE == "cpu" or "cpu_only" not in request.keywords:
        yield
        return
    torch.set_default_device("cpu")
    try:
        yield
    finally:
        torch.set_default_device(TEST_DEVICE)


@pytest.fixture(autouse=True)
def _fresh_compiler_state():
    import minicompile as mc

    torch.manual_seed(0)
    mc.metrics.reset()
    try:
        mc.reset()
    except ImportError:  # before dynamo exists
        pass
    yield


@pytest.fixture
def compiled_graphs(monkeypatch):
    """Every CompiledFxGraph the inductor backend makes while the test runs."""
    import minicompile as mc
    import minicompile.inductor.backend as backend_module
    from minicompile.inductor import compile_fx

    graphs = []

    def spy(gm, example_inputs, **kwargs):
        graphs.append(compile_fx.compile_fx_inner(gm, example_inputs, **kwargs))
        return graphs[-1]

    monkeypatch.setattr(backend_module, "compile_fx_inner", spy)
    mc.reset()
    return graphs


def record_defined_kernels(monkeypatch, part=lambda kernel, source: source) -> list:
    """``part(kernel, source)`` of every kernel defined from now on (its source by default;
    the kernel object is a Triton kernel's launcher)."""
    from minicompile.inductor.codegen.wrapper import WrapperCodeGen

    seen: list = []
    define = WrapperCodeGen.define_kernel

    def record(self, name, kernel, source):
        seen.append(part(kernel, source))
        return define(self, name, kernel, source)

    monkeypatch.setattr(WrapperCodeGen, "define_kernel", record)
    return seen


@pytest.fixture
def sources(monkeypatch) -> list[str]:
    """The source of every kernel defined while the test runs."""
    return record_defined_kernels(monkeypatch)


def use_cpu_backend(monkeypatch, name: str, needs_interpreter: bool = True) -> None:
    """Compile with the CPU code generator ``name`` (``config.inductor.cpu_backend``) from now
    on, or skip the test where it cannot run: Triton kernels on CPU tensors need Triton's
    interpreter (``needs_interpreter``: not where the test's tensors are CUDA ones), the C++
    backend a compiler."""
    import shutil

    import minicompile as mc
    from minicompile import config
    from minicompile.inductor.codegen import cpp_build

    if name == "triton":
        pytest.importorskip("triton")
        if needs_interpreter and os.environ.get("TRITON_INTERPRET", "0") in ("", "0"):
            pytest.skip("Triton kernels on CPU tensors need TRITON_INTERPRET=1")
    elif name == "cpp" and shutil.which(cpp_build.CXX) is None:
        pytest.skip("no C++ compiler")
    monkeypatch.setattr(config.inductor, "cpu_backend", name)
    mc.reset()


def record_compiled_graphs(monkeypatch) -> list:
    """The compiled graphs of every inductor compile from now on, to check which backend
    generated them (a fall back to eager or to the reference backend would pass a comparison)."""
    from minicompile.inductor import backend as inductor_backend

    compiled = []
    inner = inductor_backend.compile_fx_inner

    def record(*args, **kwargs):
        compiled.append(inner(*args, **kwargs))
        return compiled[-1]

    monkeypatch.setattr(inductor_backend, "compile_fx_inner", record)
    return compiled


# the backends a test of generated kernels runs on: each CPU backend, or Triton alone on the GPU
KERNEL_BACKENDS = ["reference", "cpp", "triton"] if TEST_DEVICE == "cpu" else ["triton"]


@pytest.fixture(params=KERNEL_BACKENDS)
def kernel_backend(request, monkeypatch):
    """``(backend name, compiled graphs)``: the test's compiles use that CPU backend, and the
    graphs they make are recorded (to check what generated them)."""
    import shutil

    import minicompile as mc
    from minicompile import config
    from minicompile.inductor.codegen import cpp_build

    if request.param == "cpp" and shutil.which(cpp_build.CXX) is None:
        pytest.skip("no C++ compiler")
    monkeypatch.setattr(config.inductor, "cpu_backend", request.param)
    graphs = record_compiled_graphs(monkeypatch)
    mc.reset()
    yield request.param, graphs
    mc.reset()


def check_layer_norm_backward(m: int, n: int) -> None:
    """``F.layer_norm`` over rows of ``n``, compiled with the inductor backend, its backward run
    on a random gradient: the input's, weight's and bias's gradients against eager's."""
    import torch.nn.functional as F

    import minicompile as mc

    x = torch.randn(m, n, requires_grad=True)
    w, b = torch.randn(n, requires_grad=True), torch.randn(n, requires_grad=True)
    grad = torch.randn(m, n)
    fn = lambda x, w, b: F.layer_norm(x, (n,), w, b)  # noqa: E731
    mc.compile(fn, backend="inductor")(x, w, b).backward(grad)
    x2, w2, b2 = (t.detach().clone().requires_grad_() for t in (x, w, b))
    fn(x2, w2, b2).backward(grad)
    for got, want in ((x.grad, x2.grad), (w.grad, w2.grad), (b.grad, b2.grad)):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)


EMPTY_REDUCTIONS = """
import sys, torch, minicompile as mc
from minicompile import config
config.inductor.cpu_backend = sys.argv[1]
fns = [lambda x: x.sum(), lambda x: x.sum(1), lambda x: torch.var_mean(x), lambda x: x.amax(1)]
for shape in [(3, 0), (0, 3), (0, 5), (2, 0, 4)]:
    for fn in fns[:2] + fns[2:] * (shape[0] == 0):
        mc.reset()
        torch.testing.assert_close(mc.compile(fn)(torch.randn(shape)), fn(torch.randn(shape)),
                                   equal_nan=True)
"""


def check_empty_reductions(backend: str) -> None:
    """Reductions over empty tensors, compiled with the CPU code generator ``backend``, against
    eager, in a child process: reading an empty tensor's (null) storage is a segfault."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", EMPTY_REDUCTIONS, backend], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
