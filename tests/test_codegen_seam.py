"""The code-generation seam: kernel objects, backends, the wrapper program, compiled graphs.

Every backend runs the scheduler's kernels one at a time with local values forwarded between
fused members, so a wrong fusion decision gives a wrong answer here (and in every test that
compiles with ``backend="inductor"``)."""

import os

import pytest
import torch
import torch.nn.functional as F

import minicompile as mc
from minicompile import config
from minicompile.inductor import compile_fx, fusion
from minicompile.inductor.codegen import BACKENDS
from minicompile.inductor.codegen.cpp import CppScheduling
from minicompile.inductor.codegen.reference import BlockHandler
from minicompile.inductor.executor import TorchHandler
from minicompile.inductor.ir import PrintHandler, RecordReadWrites
from minicompile.inductor.kernel_group import RINDEX, XINDEX
from minicompile.inductor.ops_handler import missing_ops
from minicompile.viz.schedule import run_scheduled, schedule_function


@pytest.mark.parametrize("handler", [PrintHandler, TorchHandler, BlockHandler,
                                     RecordReadWrites({})], ids=lambda h: getattr(
                                         h, "__name__", type(h).__name__))
def test_every_handler_implements_every_op(handler):
    assert missing_ops(handler) == []


def test_kernel_object_records_tile_members_and_locals():
    s = schedule_function(lambda x: torch.softmax(x * 2, -1), torch.randn(6, 10))
    (group,) = s.kernel_groups
    assert (group.kind, group.numel, group.rnumel) == ("reduction", 6, 10)
    assert group.stored == [s.graph.graph_outputs[0].get_name()]
    assert set(group.local) == set(group.written_names()) - set(group.stored)
    # the elementwise members index by (xindex, rindex); the reductions' results are per row
    levels = {m.get_name(): m.level for m in group.members}
    assert levels[group.stored[0]] == "element"
    for m in group.members:
        free = set().union(*[e.free_symbols for e in m.index + m.rindex])
        assert free <= {XINDEX, RINDEX}
    # long rows: max, then the sum of exponentials, then the division: three loops over a row
    assert [p.kind for p in group.phases()] == ["loop", "loop", "loop"]


@pytest.mark.parametrize("fn, kinds", [
    # the mean's division (row code) comes between the two reductions in program order; the
    # amax does not read it: one pass over the row for both
    (lambda x: x.mean(1) + x.amax(1), ["loop", "row"]),
    # the sum of squares reads the mean: a second pass; the amax, after it in the program,
    # joins the first
    (lambda x: (x - x.mean(1, keepdim=True)).square().sum(1) + x.amax(1),
     ["loop", "loop", "row"]),
], ids=["independent", "dependent"])
def test_independent_reductions_of_a_row_share_one_loop(fn, kinds):
    s = schedule_function(fn, torch.randn(6, 3000))
    (group,) = s.kernel_groups
    phases = group.phases()
    assert [p.kind for p in phases] == kinds, group.describe()
    first = {m.node.data.reduction_type for m in phases[0].members if m.is_reduction()}
    assert first == {"sum", "max"}, group.describe()  # the mean's sum and the amax


@pytest.mark.parametrize("fn, shape", [
    (lambda x: x - x.sum(1, keepdim=True).t(), (8, 8)),  # row j reads the sum of row j
    # a value read at another point (returned too, so it stays a buffer of its own)
    (lambda x: (x + (y := x.cos() * 2).t(), y), (9, 9)),
    (lambda x: x.softmax(0), (12, 7)),
])
def test_a_fusion_rule_broken_on_purpose_gives_a_wrong_answer(monkeypatch, fn, shape):
    """Let every pair that shares loops fuse, whatever it reads: the kernels forward values
    between members, so a read of another row's (or point's) value is wrong, not slow."""
    x = torch.randn(*shape)
    torch.testing.assert_close(run_scheduled(schedule_function(fn, x), x), fn(x))
    allow_all = [r for r in fusion.RULES if r.__name__ != "_reads_line_up"]
    monkeypatch.setattr(fusion, "RULES", allow_all)
    # (and no backend's veto: the C++ one refuses a row member in a kernel of column sums)
    monkeypatch.setattr(CppScheduling, "can_fuse", lambda self, a, b: (True, ""))
    broken = run_scheduled(schedule_function(fn, x), x)
    first = lambda out: out[0] if isinstance(out, (tuple, list)) else out  # noqa: E731
    assert not torch.allclose(first(broken), first(fn(x)))


def test_compile_fx_returns_a_compiled_graph_with_its_output_code(compiled_graphs):
    f = mc.compile(lambda x, w: (torch.relu(x @ w) * 2).sum(1))
    x, w = torch.randn(5, 7), torch.randn(7, 3)
    torch.testing.assert_close(f(x, w), (torch.relu(x @ w) * 2).sum(1))
    (g,) = compiled_graphs
    assert isinstance(g, compile_fx.CompiledFxGraph)
    assert "def call(args):" in g.source and "torch.mm(" in g.source  # a library call
    device = x.device.type
    assert g.backends == {device: getattr(config.inductor, f"{device}_backend")}
    # a local value of a fused kernel is never allocated by the wrapper
    for group in g.scheduler.kernel_groups:
        for name in group.local:
            assert f"{name} = empty(" not in g.source


def test_wrapper_frees_dead_buffers_and_reuses_their_storage():
    def fn(x, w):
        a = x.cos() @ w
        b = a.sin() @ w
        return b.exp() @ w

    s = schedule_function(fn, torch.randn(16, 16), torch.randn(16, 16))
    from minicompile.inductor.codegen.wrapper import WrapperCodeGen

    source, call = WrapperCodeGen(s.graph, s).generate(lambda w: s.codegen(w))
    assert "# reuse" in source or "del buf" in source
    args = torch.randn(16, 16), torch.randn(16, 16)
    # three matmuls through sin and exp: eager itself is 1e-4 off in float64's eyes, so a kernel
    # whose sin is an ulp closer (glibc's, in the C++ backend) lands as far away on the other side
    torch.testing.assert_close(call(list(args))[0], fn(*args), rtol=1e-4, atol=1e-4)


def test_a_library_calls_tuple_lives_until_its_last_output_is_taken_out():
    """A multi-output library call (attention: output and statistics) returns a tuple; the
    wrapper deletes the tuple once its outputs are taken out of it, and an output nothing reads
    at once: held to the end of the call, every layer's would be alive together."""
    import re

    from minicompile.inductor.codegen.wrapper import WrapperCodeGen

    def fn(q, k, v):
        a = F.scaled_dot_product_attention(q, k, v)
        return F.scaled_dot_product_attention(a, k, v).sum()

    args = [torch.randn(2, 3, 17, 8) for _ in range(3)]
    s = schedule_function(fn, *args)
    source, call = WrapperCodeGen(s.graph, s).generate(lambda w: s.codegen(w))
    lines = source.splitlines()
    tuples = [m.group(1) for m in map(re.compile(r"\s*(buf\d+) = (?:aten|torch)\._scaled_dot").match, lines) if m]
    assert len(tuples) == 2, source
    for name in tuples:
        taken = [i for i, line in enumerate(lines) if f"{name}[" in line]
        freed = lines.index(f"    del {name}")
        assert freed > max(taken) and freed < max(taken) + 3, source  # right after the last
    statistics = [re.match(r"\s*(buf\d+) = .*\[1\]", line) for line in lines]
    for m in filter(None, statistics):  # read by nothing in inference: freed at once
        assert f"    del {m.group(1)}" in lines, source
    torch.testing.assert_close(call(list(args))[0], fn(*args))


class RecordOps(torch.utils._python_dispatch.TorchDispatchMode):
    """The ATen overloads a call reaches."""

    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(func)
        return func(*args, **(kwargs or {}))


aten = torch.ops.aten
BOUND = {  # op -> a call of it, its tensors made by ``t``
    aten.convolution.default: lambda t: (t(1, 2, 5, 5), t(3, 2, 3, 3), None, [1, 1], [1, 1],
                                         [1, 1], False, [0, 0], 1),
    aten.cat.default: lambda t: ([t(2, 3), t(1, 3)], 0),
    aten.native_layer_norm.default: lambda t: (t(2, 4), [4], t(4), t(4), 1e-5),
    aten.gelu.default: lambda t: (t(3),),  # torch._C._nn
    aten.max_pool2d_with_indices.default: lambda t: (t(1, 1, 4, 4), [2, 2], [2, 2]),
}


def test_a_library_call_goes_through_torchs_argument_parser_only_to_the_same_overload():
    """The wrapper calls an ATen op through ``torch.<name>`` where every other overload of the
    name needs an ``out=`` or a dimension name (``torch.convolution``: 13 us less a call than
    ``aten.convolution.default``'s Python ``__call__``); each such call reaches exactly the op.
    Where another overload could take the arguments (``add.Scalar`` beside ``add.Tensor``,
    ``sort.stable``, ``upsample_nearest2d.vec``), or ``torch.<name>`` is Python
    (``torch.split``), the op is called as itself."""
    from minicompile.inductor.codegen.wrapper import WrapperCodeGen
    from minicompile.inductor.lowerings.extern import python_binding

    def t(*size):
        return torch.randn(*size)

    for op, make in BOUND.items():
        binding = python_binding(op)
        assert binding is not None, op
        args = make(t)
        with RecordOps() as rec:
            eval(binding, {"torch": torch})(*args)
        assert rec.ops == [op], (binding, rec.ops)
    for op in (aten.add.Tensor, aten.sort.default, aten.upsample_nearest2d.default,
               aten.split.Tensor):
        assert python_binding(op) is None, op
    x, w = torch.randn(1, 2, 5, 5), torch.randn(3, 2, 3, 3)
    s = schedule_function(lambda x, w: F.conv2d(x, w).relu(), x, w)
    source, call = WrapperCodeGen(s.graph, s).generate(lambda w: s.codegen(w))
    assert "torch.convolution(" in source and "aten.convolution" not in source, source
    torch.testing.assert_close(call([x, w])[0], F.conv2d(x, w).relu())


def test_output_code_log_prints_the_wrapper(capfd):
    mc.set_logs("output_code")
    try:
        f = mc.compile(lambda x: x.sin() + 1)
        f(torch.randn(4))
    finally:
        mc.set_logs("")
    err = capfd.readouterr()
    assert "def call(args):" in err.out + err.err


def test_mode_reaches_inductor(compiled_graphs):
    f = mc.compile(lambda x: x * 3, mode="max-autotune-no-cudagraphs")
    f(torch.randn(3))
    assert compiled_graphs[0].options.max_autotune is True
    with pytest.raises(ValueError, match="unknown mode"):
        mc.compile(lambda x: x, mode="fastest")


def test_unknown_backend_is_a_clear_error(monkeypatch):
    x = torch.randn(3)
    monkeypatch.setattr(config.inductor, f"{x.device.type}_backend", "fortran")
    s = schedule_function(lambda x: x + 1, x)
    with pytest.raises(ValueError, match="no code generator 'fortran'"):
        run_scheduled(s, x)


@pytest.mark.cpu_only
def test_triton_for_cpu_tensors_without_the_interpreter_is_a_clear_error(monkeypatch):
    """On a GPU machine TRITON_INTERPRET is off, and Triton cannot take a CPU tensor's pointer:
    the backend says so when it is chosen, instead of failing inside Triton's launcher."""
    triton_heuristics = pytest.importorskip("minicompile.inductor.runtime.triton_heuristics")
    monkeypatch.setattr(triton_heuristics, "INTERPRET", False)
    monkeypatch.setattr(config.inductor, "cpu_backend", "triton")
    x = torch.randn(3)
    with pytest.raises(ValueError, match="set TRITON_INTERPRET=1 before Python starts"):
        run_scheduled(schedule_function(lambda x: x + 1, x), x)


def test_logs_follow_a_swapped_stderr(monkeypatch):
    """Jupyter and pytest replace sys.stderr; logging must write to the stream in place now."""
    import io

    first, second = io.StringIO(), io.StringIO()
    monkeypatch.setattr("sys.stderr", first)
    mc.set_logs("output_code")
    try:
        monkeypatch.setattr("sys.stderr", second)
        mc.compile(lambda x: x.cos() * 2)(torch.randn(3))
    finally:
        mc.set_logs("")
    assert "def call(args):" in second.getvalue()


def output_then_scratch(x, w):
    y = x * 2  # kernel 0, returned: its storage must outlive the graph
    m = x @ w  # a library call: kernel 1
    t = (m + 1) @ w  # m + 1 (kernel 2) is stored for the next call, the same size as y
    return y, t


@pytest.mark.parametrize("backend", ["reference", "cpp"])
def test_a_returned_buffer_is_never_reused(backend, monkeypatch):
    """The memory plan must not hand a returned buffer's storage to a later one after its last
    read inside the graph: the caller reads it after the graph ends."""
    monkeypatch.setattr(config.inductor, "cpu_backend", backend)
    x, w = torch.randn(8, 8), torch.randn(8, 8)
    y, t = mc.compile(output_then_scratch)(x, w)
    ref_y, ref_t = output_then_scratch(x, w)
    torch.testing.assert_close(y, ref_y)
    torch.testing.assert_close(t, ref_t)


@pytest.mark.parametrize("make", [
    lambda x: x,                                   # laid out as traced: passed on as it is
    lambda x: torch.cat([x[:1], x])[1:],           # the same values at a storage offset
    lambda x: x.t().contiguous().t(),              # transposed storage
])
def test_inputs_and_library_results_laid_out_as_kernels_expect(make):
    """The wrapper hands an input (or a library call's result) to kernels and library calls as
    it is only when it starts its storage in the traced layout; otherwise a laid-out copy."""
    def fn(x, w, y):
        y.mul_(2)
        return torch.sigmoid(x @ w) + y, (x.t() @ y).t() * 3  # x.t(): a view of x's storage

    x, w = torch.randn(6, 5), torch.randn(5, 4)
    f = mc.compile(fn)
    f(x, w, torch.randn(6, 4))  # compiled for the plain layouts
    y = torch.randn(6, 4)
    args = (make(x), make(w), make(y.clone()))
    expected = fn(x.clone(), w.clone(), y.clone())
    got = f(*args)
    torch.testing.assert_close(got, expected)
    torch.testing.assert_close(args[2], y * 2)  # the caller's tensor was written in place


def test_permuted_views_of_laid_out_buffers_are_permutes(compiled_graphs):
    """A library call reading a transposed or permuted input gets ``.t()`` / ``.permute(...)``
    of the variable (half the cost of ``as_strided`` per call), with eager's values."""
    def fn(x, w, y):
        return torch.bmm(x.permute(0, 2, 1), y) + 1, torch.mm(w[0], w[1].t())

    x, y, w = torch.randn(3, 5, 4), torch.randn(3, 5, 2), torch.randn(2, 6, 6)
    for got, want in zip(mc.compile(fn)(x, w, y), fn(x, w, y)):
        torch.testing.assert_close(got, want)
    (g,) = compiled_graphs
    assert ".permute([0, 2, 1])" in g.source, g.source


def scale(x, n):
    return (x * n).sum(-1) + n, x + n  # n only as a value in the kernels: index_expr(s0)


@pytest.mark.parametrize("backend", ["reference", "cpp", "triton"])
def test_an_int_argument_that_changes_is_a_kernel_argument(backend, monkeypatch, caplog):
    """``f(x, 2)`` then ``f(x, 3)``: the int becomes a symbol s0 that the kernels compute with but
    index nothing by, so it was no kernel argument: ``KeyError: 's0'`` (reference), ``'s0' was
    not declared`` (C++), ``name 's0' is not defined`` (Triton)."""
    monkeypatch.setattr(config.inductor, "cpu_backend", backend)
    f = mc.compile(scale)
    x = torch.randn(4, 6)
    for n in (2, 3, 4):
        for got, expected in zip(f(x, n), scale(x, n)):
            torch.testing.assert_close(got, expected)
    assert mc.metrics.recompiles == 1  # n became dynamic once, not a recompile per value
    assert "falling back" not in caplog.text  # the backend's own kernels ran


def skip_unless_cpu_backend_runs(backend: str) -> None:
    """Triton kernels for CPU tensors need Triton, and its interpreter (on a GPU machine the
    interpreter is off: the GPU tests run Triton on CUDA tensors)."""
    if backend == "triton" and "triton" not in BACKENDS:
        pytest.skip("no Triton")
    if backend == "triton" and os.environ.get("TRITON_INTERPRET", "0") in ("", "0"):
        pytest.skip("Triton kernels for CPU tensors run under TRITON_INTERPRET=1")


@pytest.mark.parametrize("backend", ["reference", "cpp", "triton"])
def test_kernels_generated_counts_every_backends_kernels(backend, monkeypatch):
    """Every backend defines its kernels through the wrapper, which counts them (the count was
    the Triton backend's alone: 0 on C++)."""
    skip_unless_cpu_backend_runs(backend)
    monkeypatch.setattr(config.inductor, "cpu_backend", backend)
    mc.reset()
    mc.metrics.reset()
    x = torch.randn(33, 17)
    mc.compile(lambda x: (x.sin() + 1).sum(0) * x.cos().amax())(x)
    graphs = mc.metrics.graphs_compiled
    assert graphs == 1 and mc.metrics.kernels_generated >= 2  # a reduction, then its consumer
    mc.reset()


@pytest.mark.parametrize("backend", ["reference", "cpp", "triton"])
def test_int_tensor_padded_with_a_float_value_indexes_a_gather(backend, monkeypatch):
    """transformers' causal-LM loss pads its int64 labels with ``value=-100`` (a float scalar to
    ATen) and gathers the log-probabilities at them: the pad value must stay an int (a float
    literal made the index float: a Triton compile error on every decoder model's loss)."""
    skip_unless_cpu_backend_runs(backend)
    monkeypatch.setattr(config.inductor, "cpu_backend", backend)

    def loss(logits, labels):
        shifted = F.pad(labels, (0, 1), value=-100)[..., 1:].reshape(-1)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), shifted, ignore_index=-100)

    logits, labels = torch.randn(2, 16, 300), torch.randint(0, 300, (2, 16))
    torch.testing.assert_close(mc.compile(loss)(logits, labels), loss(logits, labels))


def test_the_wrapper_is_typed_lines_printed_as_the_program(compiled_graphs):
    """Stages after code generation read what the program does from its lines; the source is
    exactly their text."""
    from minicompile.inductor.codegen.wrapper_lines import (AllocateLine, ExternCallLine,
                                                            KernelCallLine, ReturnLine, ReuseLine)
    w = torch.randn(16, 16)
    f = mc.compile(lambda x: torch.relu(x @ w).sin() + x)
    x = torch.randn(16, 16)
    torch.testing.assert_close(f(x), torch.relu(x @ w).sin() + x)
    (graph,) = compiled_graphs
    kinds = {type(line) for line in graph.wrapper_lines}
    assert {ExternCallLine, KernelCallLine, ReturnLine} <= kinds
    assert kinds & {AllocateLine, ReuseLine}  # the kernel's output: made, or taken over
    for line in graph.wrapper_lines:
        assert f"{'    ' * line.level}{line.text()}\n" in graph.source
    kernels = [line.kernel for line in graph.wrapper_lines if isinstance(line, KernelCallLine)]
    assert kernels and all(f"# kernel {k}" in graph.source for k in kernels)


def test_inputs_layouts_are_checked_at_once_and_copied_when_they_differ(compiled_graphs):
    """A graph with several inputs that kernels index checks their sizes and strides in one
    call (``LayoutCheck``); an input laid out otherwise (strided, or at a storage offset) is
    still copied into the layout the kernels index, as when each input had its own line."""
    def f(a, b, c, d):
        return a * 2 + b - c * d

    args = [torch.randn(6, 5) for _ in range(4)]
    torch.testing.assert_close(mc.compile(f)(*args), f(*args))
    (g,) = compiled_graphs
    assert "_layouts" in g.source and "one C check" in g.source
    result = lambda out: out[0] if isinstance(out, (tuple, list)) else out  # noqa: E731
    for _ in range(2):  # the check is built at the first call whose inputs pass
        torch.testing.assert_close(result(g(*args)), f(*args))
    strided = torch.randn(5, 6).t()  # (6, 5) with strides (1, 6)
    offset = torch.randn(31)[1:].view(6, 5)  # at storage offset 1
    for odd in (strided, offset):
        for i in range(4):
            given = args[:i] + [odd] + args[i + 1:]
            torch.testing.assert_close(result(g(*given)), f(*given))
