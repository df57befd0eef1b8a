"""The differential fuzzer (minicompile/fuzz): a seeded smoke run on every CPU backend, the
tracer fuzzer against CPython, proof that the checks catch a wrong backend, the shrinker and its
reproducers, the command line, and regression tests for the bugs the long runs found."""

import importlib.util
import os
import subprocess
import sys

import pytest
import torch

import minicompile as mc
from minicompile.fuzz import runner
from minicompile.fuzz.__main__ import main
from minicompile.fuzz.compare import mismatch, mismatches
from minicompile.fuzz.generate import generate_program
from minicompile.fuzz.program import InputSpec, Program
from minicompile.fuzz.runner import CPU_BACKENDS, GPU_BACKENDS, check_program
from minicompile.fuzz.shrink import shrink, write_reproducer
from minicompile.fuzz.tracer import _difference, check_function, generate_function

pytestmark = pytest.mark.cpu_only  # fuzzed inputs are CPU tensors; --device cuda is the GPU run

SMOKE_PROGRAMS = 40  # per backend: 200 checks, well under a minute on two idle cores


@pytest.mark.parametrize("backend", list(CPU_BACKENDS))
def test_smoke_run_agrees_with_eager(backend):
    if backend == "inductor-triton" and os.environ.get("TRITON_INTERPRET", "0") in ("", "0"):
        pytest.skip("Triton kernels on CPU tensors need TRITON_INTERPRET=1 (off on a GPU machine)")
    failures = []
    for seed in range(SMOKE_PROGRAMS):
        program = generate_program(seed)
        outcome = check_program(program, backend, seed=seed)
        if outcome.kind != "ok":
            failures.append(f"seed {seed}: {outcome.kind}\n{program.source()}{outcome.message}")
    assert not failures, "\n\n".join(failures)


@pytest.mark.gpu
@pytest.mark.parametrize("backend", list(GPU_BACKENDS))
def test_smoke_run_on_the_gpu_agrees_with_eager(backend):
    """CUDA inputs, float16 and bfloat16 among them; inductor writes Triton kernels."""
    failures = []
    for seed in range(SMOKE_PROGRAMS):
        program = generate_program(seed, device="cuda")
        outcome = check_program(program, backend, device="cuda", seed=seed)
        if outcome.kind != "ok":
            failures.append(f"seed {seed}: {outcome.kind}\n{program.source()}{outcome.message}")
    assert not failures, "\n\n".join(failures)


def test_tracer_fuzz_agrees_with_cpython():
    failures = []
    for seed in range(150):
        program = generate_function(seed)
        kind, message = check_function(program)
        mc.reset()
        if kind != "ok":
            failures.append(f"seed {seed}: {kind}\n{program.source}{message}")
    assert not failures, "\n\n".join(failures)


def test_tracer_check_catches_a_different_value_exception_or_side_effect():
    t = torch.ones(2)
    ok = (t, None, [[1], t])
    assert _difference(ok, (t.clone(), None, [[1], t.clone()]), [], []) is None
    assert "return value" in _difference(ok, (t + 1, None, [[1], t]), [], [])
    assert "log argument" in _difference(ok, (t, None, [[2], t]), [], [])
    assert "global LOG" in _difference(ok, ok, [("n", 1)], [])
    raised = (None, KeyError(3), [[], t])
    assert "raised" in _difference(raised, (None, KeyError(4), [[], t]), [], [])
    assert "raised" in _difference(raised, ok, [], [])


def test_generator_covers_dtypes_layouts_and_grads():
    specs = [s for seed in range(300) for s in generate_program(seed).inputs]
    assert {s.dtype for s in specs} == {"float32", "int64", "bool", "complex64"}  # no halves
    assert {s.layout for s in specs} == {"contiguous", "transposed", "sliced", "expanded"}
    assert any(s.requires_grad for s in specs) and not all(s.requires_grad for s in specs)
    assert {1, 7, 13, 17, 31} <= {d for s in specs for d in s.shape}


RELU = Program.parse("def fn(x0):\n    v0 = torch.relu(x0)\n    return (v0, )\n",
                     [InputSpec((5, 3), requires_grad=True)])


def _off_by_a_little(gm, example_inputs):
    return lambda *args: [t + 1e-3 for t in gm(*args)]


def _detached(gm, example_inputs):
    return lambda *args: [t.detach() for t in gm(*args)]


@pytest.mark.parametrize("wrong, what", [(_off_by_a_little, "output[0]"), (_detached, "grad")])
def test_a_wrong_backend_is_caught(monkeypatch, wrong, what):
    monkeypatch.setitem(CPU_BACKENDS, "wrong", (wrong, None))
    outcome = check_program(RELU, "wrong")
    assert outcome.kind == "mismatch" and what in outcome.message, outcome.message
    assert check_program(RELU, "eager").kind == "ok"


def test_a_backend_that_raises_is_a_crash(monkeypatch):
    def raising(gm, example_inputs):
        raise RuntimeError("codegen exploded")

    monkeypatch.setitem(CPU_BACKENDS, "raising", (raising, None))
    outcome = check_program(RELU, "raising")
    assert outcome.kind == "crash" and "codegen exploded" in outcome.message


def test_shrinker_keeps_only_what_fails_and_writes_a_runnable_reproducer(tmp_path):
    program = next(p for p in map(generate_program, range(100, 200))
                   if len(p.body) >= 4 and any(".sum(" in s.expr for s in p.body))
    small = shrink(program, lambda p: any(".sum(" in s.expr for s in p.body))
    assert len(small.body) < len(program.body)
    assert all(".sum(" in s.expr for s in small.body[-1:])
    outcome = check_program(small, "eager")
    path = write_reproducer(tmp_path, small, outcome, "eager", "cpu", 0, 123)
    spec = importlib.util.spec_from_file_location("reproducer", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    written = Program.parse(module.SOURCE, module.INPUTS)
    assert [s.expr for s in written.body] == [s.expr for s in small.body]
    assert written.outputs == small.outputs and written.inputs == small.inputs
    module.test_fuzz_123_eager_cpu()  # the program is fine in eager: the reproducer passes


def test_a_triton_reproducer_sets_the_interpreter_it_needs(tmp_path):
    """Without TRITON_INTERPRET the Triton CPU backend falls back to eager, and a reproducer of
    a Triton bug passed with the bug still there: it now sets the variable before importing."""
    path = write_reproducer(tmp_path, RELU, runner.Outcome("mismatch"), "inductor-triton", "cpu",
                            0, 7)
    code = (f"exec(open({str(path)!r}).read()); test_fuzz_7_inductor_triton_cpu(); "
            "import minicompile as mc; print(mc.metrics.eager_fallbacks)")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=env, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split()[-1] == "0"  # compiled by the Triton backend, not eager


def test_command_line_reports_and_exits_nonzero_on_a_mismatch(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(CPU_BACKENDS, "wrong", (_off_by_a_little, None))
    assert main(["-n", "2", "--seed", "7", "--backend", "wrong", "--out", str(tmp_path),
                 "--in-process"]) == 1  # (the backend exists in this process only)
    assert "fuzz: 2 programs, " in capsys.readouterr().out
    reproducers = list(tmp_path.glob("test_fuzz_*_wrong_cpu.py"))
    assert reproducers, "a failing program is written out as a pytest test"


def test_command_line_smoke_in_a_subprocess():
    result = subprocess.run([sys.executable, "-m", "minicompile.fuzz", "-n", "3", "--seed", "1",
                             "--backend", "eager", "--backend", "aot_eager", "--no-shrink"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "fuzz: 3 programs, 0 mismatches, 0 crashes" in result.stdout
    bad = subprocess.run([sys.executable, "-m", "minicompile.fuzz", "--backend", "nope"],
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "unknown backend" in bad.stderr


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message given without a GPU")
def test_command_line_without_a_gpu_says_so(capsys):
    assert main(["--device", "cuda", "-n", "1"]) == 2
    assert "needs a CUDA GPU" in capsys.readouterr().err


# --- bugs the long runs found -------------------------------------------------------------------
def _expanded_input_filled(x):
    return (x.fill_(True),)


def _expanded_intermediate_zeroed(x):
    v = x.amax(dim=0, keepdim=True).unsqueeze(0).expand(3, 5)
    v.zero_()
    return (v,)


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.parametrize("fn, make", [
    (_expanded_input_filled, lambda: torch.zeros(1, dtype=torch.bool).expand(16)),
    (_expanded_intermediate_zeroed, lambda: torch.tensor([0.7])),
])
def test_write_to_a_tensor_that_overlaps_itself(fn, make, backend):
    """``fill_``/``zero_`` on an expanded tensor (eager allows it) used to crash: the copy back
    into the input, or the store of the dense result into the stride-0 layout, overlapped."""
    expected_input, actual_input = make(), make()
    expected = fn(expected_input)
    actual = mc.compile(fn, backend=backend)(actual_input)
    torch.testing.assert_close(actual, expected)
    torch.testing.assert_close(actual_input, expected_input)


@pytest.mark.parametrize("op", ["__or__", "__and__", "__xor__"])
def test_cpp_bitwise_ops_on_bools_stay_bools(op, monkeypatch):
    """C++ promotes ``bool | bool`` to int, and ``~1`` is true: ``~(x | y)`` came out all true."""
    monkeypatch.setattr(mc.config.inductor, "cpu_backend", "cpp")

    def fn(x, y):
        v = getattr(x, op)(y)
        return torch.stack([v, ~v], dim=-2)

    x, y = torch.tensor([[True, False, True]]), torch.tensor([False, False, True])
    torch.testing.assert_close(mc.compile(fn)(x, y), fn(x, y))


# --- the float64 referee on ill-conditioned points ------------------------------------------

STD_OF_EQUAL_ELEMENTS = Program.parse(
    "def fn(x0):\n    v0 = x0.std(dim=2, keepdim=True)  # (1, 1, 1) float32\n    return (v0, )\n",
    [InputSpec(shape=(1, 1, 7), dtype="float32", layout="expanded", requires_grad=True, high=8,
               expand_dims=(0, 2))])


def referee_runs(program, seed=500393):
    """Eager float32, float64, and (eager, float64) at the neighbouring points."""
    inputs = lambda: program.make_inputs(seed, "cpu")  # noqa: E731
    return (runner.run(program.function(), inputs(), seed),
            runner.run(program.function(), runner._float64(inputs()), seed),
            [runner._neighbour(program, "cpu", seed, k) for k in range(runner.NEIGHBOURS)])


def near(neighbours, what):
    return [(getattr(low, what), getattr(high, what)) for low, high in neighbours]


@pytest.mark.parametrize("eager_grad, compiled_grad", [
    (None, -0.154),  # eager's summation order leaves -0.048, another order -0.154 (as on CUDA)
    (None, float("nan")),  # or 0/0 exactly
    (0.0, None),  # eager rounds its way to float64's 0; compiled keeps eager's noise
])
def test_referee_accepts_the_gradient_of_std_over_equal_elements(eager_grad, compiled_grad):
    """std's gradient over 7 equal elements is 0/0: float64 gives 0, float32 whatever its
    rounding leaves. Eager is far from float64 (or float64 itself moves when the inputs move
    by an ulp): the value is decided by rounding, so any compiled value is accepted."""
    eager, ref, nudged = referee_runs(STD_OF_EQUAL_ELEMENTS)
    assert bool((ref.grads[0] == 0).all()) and bool((eager.grads[0].abs() > 0.01).all())
    e = eager.grads[0] if eager_grad is None else torch.full_like(eager.grads[0], eager_grad)
    a = eager.grads[0] if compiled_grad is None else torch.full_like(e, compiled_grad)
    assert mismatches("grad", [e], [a], ref.grads, near(nudged, "grads")) == []


def test_referee_rejects_a_wrong_result_at_a_well_conditioned_point():
    program = Program.parse("def fn(x0):\n    v0 = x0.sin() * 3\n    return (v0, )\n",
                            [InputSpec(shape=(4, 5), dtype="float32", requires_grad=True)])
    eager, ref, nudged = referee_runs(program)
    wrong = eager.outputs[0].detach().clone()
    wrong[1, 2] += 0.01
    assert mismatches("output", eager.outputs, [wrong], ref.outputs, near(nudged, "outputs"))


CANCELLING_GRADIENT = Program.parse("""\
def fn(x0, x1):
    v0 = F.gelu(x0)  # (1, 1) float32
    v3 = torch.linalg.vector_norm(x1, dim=1, keepdim=False)  # (16,) float32
    v4 = v0 ** 2  # (1, 1) float32
    v6 = torch.cumprod((v3.tanh() + 1), dim=0)  # (16,) float32
    return (v4, v6, )
""", [InputSpec(shape=(1, 1), dtype="float32"),
      InputSpec(shape=(16, 15), dtype="float32", requires_grad=True)])


@pytest.mark.parametrize("backend", ["inductor-cpp", "inductor-triton"])
def test_referee_accepts_another_rounding_amplified_by_cancellation(backend):
    """Fuzzer seed 4001238: the gradient through ``cumprod(tanh(v) + 1)`` goes through
    1 - tanh(v)^2 ~ 0.01, which amplifies the rounding of tanh(v) a hundredfold: eager (ATen's
    tanh, within 1 ulp) is ~1e-5 relative from float64, the kernels (glibc's vector tanh, numpy's
    under the interpreter) 2.7 times that. No formula differs; the referee allows
    ``ERROR_MULTIPLIER`` (4) times eager's error."""
    assert runner.check_program(CANCELLING_GRADIENT, backend, "cpu", seed=4001238).kind == "ok"


STD_OF_SILU_OF_EQUAL_ELEMENTS = Program.parse("""\
def fn(x0):
    v4 = F.silu(x0 * -2.0)  # (2, 13) float32
    v6 = v4.std(dim=1, keepdim=True)  # (2, 1) float32
    return (v6, )
""", [InputSpec(shape=(2, 13), dtype="float32", layout="expanded", requires_grad=True, high=8,
                expand_dims=(0, 1))])


@pytest.mark.parametrize("backend", ["aot_eager", "inductor-cpp"])
def test_referee_moves_each_element_both_ways(backend):
    """Fuzzer seed 5003515: std over 13 equal values, a gradient of 0/0. Eager gets exactly 0
    and so does float64; the decomposed std leaves ~1e-8 and a gradient of -0.02. Nudged by one
    fixed pattern, float64 moved a third of the elements too little to call them ill-conditioned
    (those whose nudge was zero); each element now moves up and down in one of three patterns."""
    assert runner.check_program(STD_OF_SILU_OF_EQUAL_ELEMENTS, backend, "cpu",
                                seed=5003515).kind == "ok"


def test_referee_one_ill_conditioned_element_does_not_excuse_the_others():
    """float64 is nan at one element where eager is finite: that element is not judged, but
    the wrong value at another still is (eager's infinite error there used to widen the
    bound for every element)."""
    e = torch.tensor([1.0, 2.0, 0.3])
    ref = torch.tensor([1.0, 2.0, float("nan")], dtype=torch.float64)
    assert mismatch(e, torch.tensor([1.0, 2.0, 7.0]), ref) is None
    assert mismatch(e, torch.tensor([1.0, 2.5, 0.3]), ref) is not None


def test_no_index_drawn_into_a_data_dependent_shape_on_the_gpu():
    """Fuzzer seed 901165 (CUDA): ``v0 = x0[x0]; v0.index_select(0, x1)`` with indices drawn below
    the example's size of ``v0``; other inputs give ``v0`` fewer elements, and on the GPU eager's
    out-of-bounds index is a device-side assert that ends the process. The generator tracks the
    values whose shape depends on data and draws no index into them for CUDA programs."""
    import random

    from minicompile.fuzz.generate import Builder
    from minicompile.fuzz.ops import OPS, _index

    b = Builder(random.Random(0), "cpu")
    x = b.new_input((13,), "float32", requires_grad=False, layout="contiguous")
    assert b._try(next(op for op in OPS if op.name == "boolean_mask"), x)
    masked = list(b.values)[-1]
    assert b._try(next(op for op in OPS if op.name == "unary_float"), masked)
    derived = list(b.values)[-1]
    assert {masked, derived} <= b.data_dependent and x not in b.data_dependent
    b.device = "cuda"  # as for a GPU program (the examples stay CPU tensors here)
    assert all(_index(b, v) is None for v in (masked, derived))
    b.device = "cpu"  # on the CPU eager raises IndexError, which the check compares
    assert any(_index(b, masked) is not None for _ in range(20))
