"""The differential fuzzer on errors that come from data, complex values and signals: programs
whose eager run raises (an index out of range, an integer division by zero) must raise the same
exception type compiled; complex values must match eager or fall back; a check that kills its
process is a reported failure; a reproducer carries the environment its backend needs."""

import importlib.util
import random
from collections import Counter

import pytest
import torch

from minicompile.fuzz.compare import mismatch
from minicompile.fuzz.generate import Builder, generate_program
from minicompile.fuzz.ops import OPS, Op
from minicompile.fuzz.program import InputSpec, Program
from minicompile.fuzz.runner import Outcome, check_program, raised_from_data, run
from minicompile.fuzz.shrink import write_reproducer
from minicompile.fuzz.worker import Worker

pytestmark = pytest.mark.cpu_only  # eager's out-of-range index on a GPU ends the process

INDUCTOR = ["inductor-reference", "inductor-cpp", "inductor-triton"]


def program(body: str, *inputs: InputSpec) -> Program:
    lines = "".join(f"    {line}\n" for line in body.strip().splitlines())
    last = body.strip().splitlines()[-1].split(" = ")[0]
    return Program.parse(f"def fn({', '.join(f'x{i}' for i in range(len(inputs)))}):\n{lines}"
                         f"    return ({last}, )\n", list(inputs))


def far(shape, low=0, high=2**31):  # int64 indices, most of them out of range
    return InputSpec(shape, "int64", low=low, high=high)


RAISING = {  # eager raises because of the values of the indices or divisors drawn
    "index_select": program("v0 = x0.index_select(0, x1)", InputSpec((5, 3)), far((3,))),
    "index_select_dim1": program("v0 = x0.index_select(1, x1)", InputSpec((5, 3)), far((3,))),
    "getitem_negative": program("v0 = x0[:, x1] * 2", InputSpec((5, 3)), far((4,), -9, -3)),
    "gather": program("v0 = torch.gather(x0, 1, x1)", InputSpec((5, 3)), far((5, 1), 3, 9)),
    "scatter_add": program("v0 = x0.scatter_add(0, x1, x2)", InputSpec((5, 3)), far((2, 3)),
                           InputSpec((2, 3))),
    "index_put": program("v0 = x0.index_put((x1,), x2, accumulate=True)", InputSpec((5, 3)),
                         far((3,), 5, 7), InputSpec(())),
    "index_add": program("v0 = x0.index_add(0, x1, x2)", InputSpec((5, 3)), far((2,)),
                         InputSpec((2, 3))),
    "embedding": program("v0 = F.embedding(x1, x0).sum(-1)", InputSpec((7, 4)),
                         far((2, 3), 7, 2**40)),
    "floor_divide": program("v0 = x0 // x1 + 1", InputSpec((4, 5), "int64"),
                            InputSpec((5,), "int64", high=1)),
    "remainder": program("v0 = torch.remainder(x0 * 3, x1)", InputSpec((4, 5), "int64"),
                         InputSpec((4, 1), "int64", low=-1, high=1)),
}


@pytest.mark.parametrize("backend", INDUCTOR)
@pytest.mark.parametrize("name", list(RAISING))
def test_compiled_raises_eagers_error_on_bad_data(name, backend):
    p = RAISING[name]
    eager = run(p.function(), p.make_inputs(0, "cpu"), 0)
    assert raised_from_data(eager.error), eager.error  # the program tests what it says
    outcome = check_program(p, backend, seed=0)
    assert outcome.kind == "ok", outcome.message
    assert outcome.eager_error == type(eager.error).__name__  # compiled raised it too


def test_overflowing_division_matches_eager():
    """``INT64_MIN // -1`` overflows: eager wraps (no error); x86's division instruction traps."""
    p = program("v0 = torch.full_like(x0, -2**63) // x1", InputSpec((6,), "int64"),
                InputSpec((6,), "int64", low=-1, high=0))
    for backend in INDUCTOR:
        assert check_program(p, backend).kind == "ok"


def test_an_error_eager_does_not_raise_is_a_mismatch_of_types():
    """Compiled raising another exception type than eager's is a failure, not agreement."""
    from minicompile.fuzz.runner import Run, _compare_errors

    index, division = IndexError("index 9 is out of bounds"), RuntimeError("ZeroDivisionError")
    assert _compare_errors(Run(error=index), Run(error=IndexError("x"))).kind == "ok"
    assert _compare_errors(Run(error=index), Run(error=division)).kind == "mismatch"
    assert _compare_errors(Run(error=index), Run(outputs=[])).kind == "mismatch"


def test_generator_draws_bad_indices_divisors_and_complex_values():
    programs = [generate_program(seed) for seed in range(300)]
    errors = Counter()
    for seed, p in enumerate(programs):
        error = run(p.function(), p.make_inputs(seed, "cpu"), seed).error
        if raised_from_data(error):
            errors["division" if "ZeroDivision" in str(error) else type(error).__name__] += 1
    assert errors["IndexError"] and errors["RuntimeError"] and errors["division"], errors
    assert sum(errors.values()) < len(programs) // 4  # most programs still compute something
    source = "".join(p.source() for p in programs)
    assert "complex64" in source and "F.embedding(" in source
    assert any(s.dtype == "complex64" for p in programs for s in p.inputs)


def test_gpu_programs_draw_no_index_out_of_range_nor_divisor_of_zero(monkeypatch):
    """On the GPU eager's out-of-range index is a device-side assert that ends the process."""
    b = Builder(random.Random(0), "cuda")
    drawn = []
    monkeypatch.setattr(b, "new_input", lambda shape, dtype, **kw: drawn.append(kw))
    for _ in range(50):
        b.index_input((5,), 3)
    assert all(kw.get("low", 0) == 0 and kw["high"] == 3 for kw in drawn)
    b.divisor_input((5,))  # nor a divisor of 0, which eager does not check on the GPU
    assert drawn[-1]["low"] > 0
    b.device = "cpu"
    for _ in range(50):
        b.index_input((5,), 3)
    assert any(kw["high"] > 3 for kw in drawn[51:])
    b.divisor_input((5,))
    assert drawn[-1]["low"] < 0 < drawn[-1]["high"]


def test_a_dead_in_place_op_on_a_temporary_is_dropped_with_what_it_reads():
    """Fuzzer seed 159: ``v4 = torch.remainder(v1, x1); v5 = v4.zero_()`` with nothing reading
    ``v4``: dead code, which graph capture removes (as torch.compile's does), so eager's
    ZeroDivisionError there is not raised compiled. The generator keeps an unread in-place op
    only when it writes into an input's memory."""
    b = Builder(random.Random(0), "cpu")
    x = b.new_input((4,), "float32", requires_grad=False, layout="contiguous")

    def statement(text: str) -> str:
        assert b._try(Op("fixed", lambda t: True, lambda b, x: text.format(x=x)), x)
        return b.program.body[-1].target

    view, temporary = statement("{x}[1:]"), statement("{x} * 2")
    statement(f"{temporary}.zero_()")
    statement(f"{view}.zero_()")
    kept = b.program.returning([x], b.changes_an_input)
    assert [s.expr for s in kept.body] == [f"{x}[1:]", f"{view}.zero_()"]


def test_complex_outputs_compare_their_real_and_imaginary_parts():
    z = torch.randn(6, dtype=torch.complex64)
    assert mismatch(z, z * (1 + 1e-7)) is None
    assert "differ" in mismatch(z, z + 1e-2j)
    assert mismatch(z.conj(), z.conj().resolve_conj()) is None


@pytest.mark.parametrize("backend", INDUCTOR)
def test_complex_programs_match_eager_or_fall_back(backend):
    p = program("""
v0 = torch.polar(x0.abs(), x1)
v1 = v0 * v0 + x2
v2 = v1.logsumexp(dim=0) + v1.std(dim=0)
v3 = torch.view_as_real(v2 * 1j).sum(-1) + v1.abs().amax(0)""",
                InputSpec((5, 3), requires_grad=True), InputSpec((3,)),
                InputSpec((5, 3), "complex64", layout="transposed"))
    assert check_program(p, backend).kind == "ok"


KILLS_ITSELF = program("v0 = x0 + __import__('os').kill(__import__('os').getpid(), 11)",
                       InputSpec((3,)))
RELU = program("v0 = torch.relu(x0)", InputSpec((3,)))


def test_a_check_that_kills_its_process_is_a_signal_and_the_next_check_runs():
    with Worker() as worker:
        outcome = worker.check(KILLS_ITSELF, "inductor-cpp")
        assert outcome.kind == "signal" and "SIGSEGV" in outcome.message, outcome
        assert worker.check(RELU, "inductor-cpp").kind == "ok"  # in a fresh worker


def test_reproducers_set_their_backend_and_check_a_signal_in_a_worker(tmp_path):
    path = write_reproducer(tmp_path, RELU, Outcome("mismatch"), "inductor-triton", "cpu", 0, 7)
    text = path.read_text()
    assert "os.environ['MINICOMPILE_CPU_BACKEND'] = 'triton'" in text
    assert "os.environ['TRITON_INTERPRET'] = '1'" in text
    cpp = write_reproducer(tmp_path, RELU, Outcome("mismatch"), "inductor-cpp", "cpu", 0, 8)
    assert "TRITON_INTERPRET" not in cpp.read_text()
    # (a program that killed the fuzzer's worker: its reproducer checks in a worker too, so that
    # the test fails with the signal's name instead of ending pytest)
    path = write_reproducer(tmp_path, RELU, Outcome("signal"), "inductor-cpp", "cpu", 0, 9)
    assert "with Worker() as worker:" in path.read_text()
    spec = importlib.util.spec_from_file_location("reproducer", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.test_fuzz_9_inductor_cpp_cpu()  # the program is fine: the reproducer passes


# fuzzer seed 34100333: the quotient's first element divides by 0, and nothing reads it
QUOTIENT_TAIL = program("v0 = torch.div(x0, x1, rounding_mode='trunc')[1:]",
                        InputSpec((5,), "int64"),
                        InputSpec((5,), "int64", low=-7, high=8, harmless=("nonzero",)))
ZERO_FIRST = 72  # a seed whose divisor is 0 at element 0 only


def test_an_error_only_in_elements_nothing_reads_need_not_be_raised():
    """Compiled code computes only the elements it reads: eager's ZeroDivisionError from
    element 0 is not raised. The compiled result is then judged against eager's on harmless
    inputs (the zero divisor made 1), so a wrong value is still a mismatch."""
    from minicompile.fuzz.runner import _check_call

    x0, x1 = QUOTIENT_TAIL.make_inputs(ZERO_FIRST, "cpu")
    assert x1[0] == 0 and (x1[1:] != 0).all()  # the case this test is about
    assert raised_from_data(run(QUOTIENT_TAIL.function(), [x0, x1], 0).error)

    def reads_the_tail(x0, x1):
        return (torch.div(x0[1:], x1[1:], rounding_mode="trunc"),)

    def wrong(x0, x1):
        return (torch.div(x0[1:], x1[1:], rounding_mode="floor"),)

    assert _check_call(QUOTIENT_TAIL, reads_the_tail, "cpu", ZERO_FIRST).kind == "ok"
    assert _check_call(QUOTIENT_TAIL, wrong, "cpu", ZERO_FIRST).kind == "mismatch"
    for backend in INDUCTOR:
        assert check_program(QUOTIENT_TAIL, backend, seed=ZERO_FIRST).kind == "ok", backend
