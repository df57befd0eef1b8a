"""CUDA graphs (cudagraphs/): what may be recorded and why not, what each call does, and on a
GPU, replays equal to eager across calls, shapes and training steps, with stale outputs an
error."""

import pytest
import torch
import torch.fx as fx

import minicompile as mc
from minicompile import cudagraphs
from minicompile.cudagraphs.cudagraph_utils import (MAX_RECORDINGS, GraphFacts, decide, facts_of,
                                                     input_key, reads_in_place, skip_reason)

aten = torch.ops.aten


def aten_graph(fn, *args) -> fx.GraphModule:
    from torch.fx.experimental.proxy_tensor import make_fx
    return make_fx(fn)(*args)


def facts(**kw) -> GraphFacts:
    base = dict(devices=frozenset({"cuda:0"}), mutated_inputs=(), syncing_ops=(),
                static_inputs=frozenset())
    return GraphFacts(**{**base, **kw})


# --- what may be recorded (CPU) -----------------------------------------------------------

def test_a_graph_of_one_gpu_may_be_recorded():
    assert skip_reason(facts()) is None


@pytest.mark.parametrize("kw, reason", [
    (dict(devices=frozenset({"cpu"})), "cpu tensors: a CUDA graph records the kernels of one GPU"),
    (dict(devices=frozenset({"cuda:0", "cpu"})), "cpu tensors"),
    (dict(devices=frozenset({"cuda:0", "cuda:1"})), "tensors on 2 GPUs"),
    (dict(devices=frozenset()), "no CUDA tensors"),
    (dict(mutated_inputs=("arg1_1",)), "writes its input arg1_1 in place"),
    (dict(syncing_ops=("aten.nonzero.default",)), "aten.nonzero.default makes the host wait"),
])
def test_each_skip_has_a_reason(kw, reason):
    assert reason in skip_reason(facts(**kw))


@pytest.mark.cpu_only
def test_facts_are_read_off_the_aten_graph():
    x = torch.randn(4, 4)
    plain = facts_of(aten_graph(lambda x: x.sin() * 2, x))
    assert plain.devices == {"cpu"} and not plain.mutated_inputs and not plain.syncing_ops

    def writes_a_view(x, y):
        x[0].add_(y[0])  # a write through a view is a write to the input
        return y * 2
    assert facts_of(aten_graph(writes_a_view, x, x.clone())).mutated_inputs == ("x_1",)
    graph = fx.Graph()  # x.sum().item(): make_fx refuses to trace it
    total = graph.call_function(aten.sum.default, (graph.placeholder("x"),))
    graph.output(graph.call_function(aten._local_scalar_dense.default, (total,)))
    syncing = facts_of(fx.GraphModule(torch.nn.Module(), graph)).syncing_ops
    assert syncing == ("aten._local_scalar_dense.default",)


def test_a_call_warms_up_then_records_then_replays():
    warmed, recorded, skipped = set(), {}, {}
    assert decide("a", warmed, recorded, skipped) == "warmup"
    warmed.add("a")
    assert decide("a", warmed, recorded, skipped) == "record"
    recorded["a"] = object()
    assert decide("a", warmed, recorded, skipped) == "replay"
    assert decide("b", warmed, recorded, skipped) == "warmup"  # a new shape warms up again


def test_shapes_past_the_limit_run_without_a_graph():
    warmed, skipped = set(range(MAX_RECORDINGS + 1)), {}
    recorded = {k: object() for k in range(MAX_RECORDINGS)}
    assert decide(MAX_RECORDINGS, warmed, recorded, skipped) == "skip"
    assert "MAX_RECORDINGS" in skipped[MAX_RECORDINGS]
    assert decide(0, warmed, recorded, skipped) == "replay"  # the recorded ones still replay


def test_input_key_separates_sizes_strides_dtypes_and_values():
    x = torch.randn(4, 6)
    keys = {input_key([x]), input_key([x.t()]), input_key([x.double()]), input_key([x[:2]]),
            input_key([x, 3]), input_key([x, 4])}
    assert len(keys) == 6
    assert input_key([x]) == input_key([torch.randn(4, 6)])


def test_inputs_read_in_place_are_values_parameters_buffers_and_recorded_outputs():
    pool = torch.randn(10)  # a recording's output; a backward receives a view at an offset
    recorded = {pool.untyped_storage().data_ptr()}
    weight = torch.nn.Parameter(torch.randn(3))
    x = torch.randn(3)
    assert not reads_in_place(1, x, {0}, recorded)  # a user input: copied in
    assert reads_in_place(0, x, {0}, recorded)  # a buffer (static input position)
    assert reads_in_place(5, weight, set(), recorded)  # a parameter a backward receives
    assert reads_in_place(2, pool[4:7], set(), recorded)  # its storage, not its own address
    assert reads_in_place(3, 7, set(), recorded)  # a size: baked into the launches


@pytest.mark.cpu_only
def test_reduce_overhead_on_cpu_runs_without_graphs_and_says_why(compiled_graphs, capfd,
                                                                 monkeypatch):
    from minicompile.cudagraphs import cudagraph_trees
    monkeypatch.setattr(cudagraph_trees, "_warned", set())
    mc.set_logs("cudagraphs")
    try:
        f = mc.compile(lambda x: (x * 2).sin(), mode="reduce-overhead")
        x = torch.randn(5)
        with pytest.warns(UserWarning, match="runs without one: cpu tensors"):
            f(x)
        for _ in range(3):
            torch.testing.assert_close(f(x), (x * 2).sin())
    finally:
        mc.set_logs("")
    (graph,) = compiled_graphs
    assert graph.wrappers == ["cudagraphs"] and graph.current_callable.skip
    err = capfd.readouterr()
    assert "no CUDA graph: cpu tensors" in err.out + err.err


@pytest.mark.cpu_only
def test_default_mode_has_no_cudagraphs_wrapper(compiled_graphs):
    mc.compile(lambda x: x + 1)(torch.randn(3))
    assert compiled_graphs[0].wrappers == []


@pytest.mark.cpu_only
def test_cudagraphs_backend_trains_on_cpu_as_eager():
    lin = torch.nn.Linear(6, 3)
    f = mc.compile(lambda x: torch.tanh(lin(x)).sum(), backend="cudagraphs")
    x = torch.randn(4, 6)
    f(x).backward()
    grad = lin.weight.grad.clone()
    lin.weight.grad = None
    torch.tanh(lin(x)).sum().backward()
    torch.testing.assert_close(grad, lin.weight.grad)


@pytest.mark.parametrize("in_c", [True, False], ids=["C check", "Python check"])
def test_a_recording_replays_only_for_inputs_where_it_read_them(in_c, monkeypatch):
    """``matches``: the tensors a recording reads in place (parameters) must be at their
    recorded addresses, the copied ones laid out as its buffers, the other values equal."""
    from minicompile.cudagraphs import cudagraph_trees as trees

    if in_c and trees.DATA_PTRS_EQUAL is None:
        pytest.skip("this torch build has no _tensors_data_ptrs_at_indices_equal (CUDA builds do)")
    if not in_c:
        monkeypatch.setattr(trees, "DATA_PTRS_EQUAL", None)
    w, b, x = torch.randn(4, 4), torch.randn(4), torch.randn(2, 4)
    rec = trees.Recording(None, None, 4, [], None, copy_in=[(0, torch.empty(2, 4))],
                          in_place=[(1, w.data_ptr()), (2, b.data_ptr())], values=[(3, 7)])
    assert trees.matches(rec, [x, w, b, 7])
    assert not trees.matches(rec, [x, w.clone(), b, 7])  # a parameter moved
    assert not trees.matches(rec, [x, w, b.clone(), 7])
    assert not trees.matches(rec, [torch.randn(3, 4), w, b, 7])  # another shape to copy in
    assert not trees.matches(rec, [x, w, b, 8])
    assert not trees.matches(rec, [x, w, b])


# --- on a GPU -----------------------------------------------------------------------------

def runner_of(graph):
    runner = graph.current_callable
    assert isinstance(runner, cudagraphs.CUDAGraphRunner)
    return runner


@pytest.mark.gpu
def test_replays_equal_eager_across_calls_and_shapes(compiled_graphs):
    def fn(x, w):
        return torch.relu(x @ w + 1).sum(-1) * 2

    f = mc.compile(fn, mode="reduce-overhead", dynamic=False)
    w = torch.randn(32, 32, device="cuda")
    for n in (8, 8, 8, 16, 16, 16, 8):
        x = torch.randn(n, 32, device="cuda")
        torch.testing.assert_close(f(x, w), fn(x, w))
    runners = [runner_of(g) for g in compiled_graphs]
    assert sum(len(r.recordings) for r in runners) == 2  # one per shape
    assert sum(r.replays for r in runners) >= 3


@pytest.mark.gpu
def test_dynamic_graph_records_one_graph_per_shape(compiled_graphs):
    f = mc.compile(lambda x: (x.sin() * 3).cumsum(0) if False else x.sin() * 3,
                   mode="reduce-overhead", dynamic=True)
    for n in (4, 4, 4, 6, 6, 6, 4):
        x = torch.randn(n, device="cuda")
        torch.testing.assert_close(f(x), x.sin() * 3)
    (graph,) = compiled_graphs
    assert len(runner_of(graph).recordings) == 2


@pytest.mark.gpu
def test_a_stale_output_is_an_error_not_a_changed_value():
    f = mc.compile(lambda x: x * 2, mode="reduce-overhead")
    x = torch.randn(16, device="cuda")
    f(x), f(x)  # warm-up, record
    first = f(x)
    kept = first.clone()
    second = f(x + 1)
    torch.testing.assert_close(second, (x + 1) * 2)
    with pytest.raises(RuntimeError, match="overwritten by a subsequent run"):
        first + 1
    torch.testing.assert_close(kept, x * 2)


@pytest.mark.gpu
def test_parameters_are_read_in_place_and_inputs_copied(compiled_graphs):
    lin = torch.nn.Linear(16, 16, device="cuda")
    f = mc.compile(lin, mode="reduce-overhead")
    with torch.no_grad():
        for _ in range(3):
            x = torch.randn(4, 16, device="cuda")
            torch.testing.assert_close(f(x), lin(x))
        lin.weight.mul_(2)  # updated in place: the recording reads the new values
        x = torch.randn(4, 16, device="cuda")
        torch.testing.assert_close(f(x), lin(x))
    (recording,) = runner_of(compiled_graphs[0]).recordings.values()
    assert recording.copied.count(True) == 1  # x; weight and bias read in place


@pytest.mark.gpu
def test_training_steps_equal_eager():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(),
                                torch.nn.Linear(64, 8)).cuda()
    twin = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(),
                               torch.nn.Linear(64, 8)).cuda()
    twin.load_state_dict(model.state_dict())
    compiled = mc.compile(model, mode="reduce-overhead")
    opts = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (model, twin)]
    for step in range(5):
        x, y = torch.randn(16, 32, device="cuda"), torch.randn(16, 8, device="cuda")
        losses = []
        for run, opt in ((compiled, opts[0]), (twin, opts[1])):
            loss = torch.nn.functional.mse_loss(run(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            losses.append(loss.item())
        assert losses[0] == pytest.approx(losses[1], rel=1e-4), step
    for a, b in zip(model.parameters(), twin.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


@pytest.mark.gpu
def test_two_forwards_then_two_backwards_and_accumulated_grads():
    """A pending backward keeps its saved tensors: the second forward runs without replaying
    over them; gradients accumulate in .grad across replays."""
    lin = torch.nn.Linear(8, 8, device="cuda")
    f = mc.compile(lambda x: torch.sigmoid(lin(x)).sum(), mode="reduce-overhead")
    xs = [torch.randn(4, 8, device="cuda") for _ in range(6)]
    for x in xs[:2]:  # warm up and record
        f(x).backward()
    lin.weight.grad = None
    a, b = f(xs[2]), f(xs[3])
    b.backward()
    a.backward()
    f(xs[4]).backward()  # accumulates into .grad left by earlier replays
    got = lin.weight.grad.clone()
    lin.weight.grad = None
    for x in xs[2:5]:
        torch.sigmoid(lin(x)).sum().backward()
    torch.testing.assert_close(got, lin.weight.grad)


@pytest.mark.gpu
def test_an_op_that_waits_for_the_gpu_is_not_recorded(compiled_graphs):
    f = mc.compile(lambda x: x * (x > 0).sum().item(), mode="reduce-overhead")
    x = torch.randn(8, device="cuda")
    for _ in range(3):
        torch.testing.assert_close(f(x), x * (x > 0).sum().item())


@pytest.mark.gpu
def test_cudagraphs_backend_replays_aten_graphs():
    f = mc.compile(lambda x: torch.softmax(x * 2, -1), backend="cudagraphs")
    for _ in range(4):
        x = torch.randn(4, 16, device="cuda")
        torch.testing.assert_close(f(x), torch.softmax(x * 2, -1))
    assert cudagraphs.counters["wrapped"] >= 1


@pytest.mark.gpu
def test_a_graph_fed_its_own_output_copies_it_in():
    """y = f(y): the input lives where the replay writes its output; read in place, a kernel
    could read a value the same replay has already overwritten."""
    w = torch.randn(32, 32, device="cuda") / 6

    def step(y):
        z = torch.tanh(y @ w)
        return (z + y.flip(0)) / 2  # reads y again after z is written
    f = mc.compile(step, mode="reduce-overhead")
    y = ref = torch.randn(32, 32, device="cuda")
    for _ in range(6):  # each call's input is the last replay's output
        y, ref = f(y), step(ref)
        torch.testing.assert_close(y, ref)


@pytest.mark.gpu
def test_training_with_shape_changes_shares_pools_safely():
    """A backward records into its forward recording's pool; forwards recorded later (a new
    batch size) start a new pool, so no replay writes where a live output is. Steps alternate
    between two sizes, two forwards before their backwards, against eager throughout."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(),
                                torch.nn.Linear(32, 4)).cuda()
    twin = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(),
                               torch.nn.Linear(32, 4)).cuda()
    twin.load_state_dict(model.state_dict())
    compiled = mc.compile(model, mode="reduce-overhead", dynamic=False)
    for step in range(4):
        xs = [torch.randn(n, 16, device="cuda") for n in (8, 12, 8, 12)]
        losses = [compiled(x).square().mean() for x in xs[:2]]
        for loss in reversed(losses):
            loss.backward()
        for x in xs[2:]:
            compiled(x).square().mean().backward()
        for x in xs:
            twin(x).square().mean().backward()
        for a, b in zip(model.parameters(), twin.parameters()):
            torch.testing.assert_close(a.grad, b.grad, rtol=1e-4, atol=1e-5)
            a.grad = b.grad = None


def test_explain_says_why_each_graph_would_run_without_cuda_graphs():
    """mc.explain reads the captured graphs: the device of their tensors, a method that writes
    an input in place, a value the host waits for."""
    def fn(x, y):
        y.add_(1)
        return (x * 2).sum()

    out = mc.explain(fn)(torch.randn(4, device="cpu"), torch.randn(4, device="cpu"))
    assert out.cudagraph_skips and "cpu tensors" in out.cudagraph_skips[0]
    assert "CUDA graphs (mode='reduce-overhead')" in str(out)
    graph = next(iter(out.graphs))
    facts = facts_of(graph)
    assert facts.mutated_inputs and "writes its input" in skip_reason(
        GraphFacts(frozenset({"cuda:0"}), facts.mutated_inputs, (), frozenset()))


@pytest.mark.gpu
def test_explain_on_the_gpu_says_a_graph_may_be_recorded():
    out = mc.explain(lambda x: torch.relu(x) * 2)(torch.randn(8, device="cuda"))
    assert out.cudagraph_skips == [None]


@pytest.mark.gpu
def test_a_training_forward_that_saves_its_input_is_recorded(compiled_graphs):
    """The forward returns x among the tensors saved for the backward (a weight's gradient
    needs it): that output is the caller's input, not pool memory, so the forward is recorded
    and replays hand x itself to the backward (it used to refuse every training forward)."""
    lin = torch.nn.Linear(16, 8, device="cuda")
    twin = torch.nn.Linear(16, 8, device="cuda")
    twin.load_state_dict(lin.state_dict())
    f = mc.compile(lambda x: torch.tanh(lin(x)).square().mean(), mode="reduce-overhead")
    for _ in range(4):
        x = torch.randn(8, 16, device="cuda")
        f(x).backward()
        torch.tanh(twin(x)).square().mean().backward()
        torch.testing.assert_close(lin.weight.grad, twin.weight.grad)
    forward = next(g for g in compiled_graphs if g.kind == "forward")
    runner = runner_of(forward)
    assert runner.recordings and runner.replays >= 2, runner.skipped
    (recording,) = runner.recordings.values()
    assert recording.aliases  # x, handed back as the caller's tensor


def test_outputs_that_are_inputs_are_found_by_storage():
    from minicompile.cudagraphs.cudagraph_trees import input_aliases
    x, w = torch.randn(4, 6), torch.randn(6)
    outs = [x * 2, x, x[1:].t(), w, 3]
    assert input_aliases(outs, [x, w, 5]) == [(1, 0, x.shape, x.stride(), 0),
                                              (2, 0, x[1:].t().shape, (1, 6), 6),
                                              (3, 1, w.shape, w.stride(), 0)]


@pytest.mark.gpu
@pytest.mark.parametrize("can_move", [True, False], ids=["storage_moved", "storage_fixed"])
def test_gradients_are_moved_out_of_the_pool_only_while_held(can_move, monkeypatch,
                                                             compiled_graphs):
    """A loop that drops .grad (set_to_none) gets each replay's gradients where the recording
    wrote them, with no copy; one that keeps .grad gets it moved out once, before the next
    replay would overwrite it (a torch that cannot move a storage runs that call without its
    recording and copies gradients out from then on), and the values stay equal to eager's."""
    from minicompile.cudagraphs import cudagraph_trees
    if can_move and not cudagraph_trees.CAN_MOVE_STORAGE:
        pytest.skip("this torch cannot repoint a storage")
    monkeypatch.setattr(cudagraph_trees, "CAN_MOVE_STORAGE", can_move)
    lin = torch.nn.Linear(16, 8, device="cuda")
    twin = torch.nn.Linear(16, 8, device="cuda")
    twin.load_state_dict(lin.state_dict())
    f = mc.compile(lambda x: torch.tanh(lin(x)).square().mean(), mode="reduce-overhead")
    xs = [torch.randn(8, 16, device="cuda") for _ in range(7)]
    addresses = []
    for x in xs[:4]:  # warm-up, record, replay, replay
        lin.weight.grad = None
        f(x).backward()
        addresses.append(lin.weight.grad.data_ptr())
    assert addresses[2] == addresses[3]  # replays: the recording's own output, no copy
    runners = [runner_of(g) for g in compiled_graphs]
    replays_at_4 = [r.replays for r in runners]
    for x in xs[4:]:  # now .grad is kept and accumulates
        f(x).backward()
    if can_move:
        assert lin.weight.grad.data_ptr() != addresses[3]  # moved out before being overwritten
    else:  # .grad stays in the pool: no replay has run since (each call ran as compiled code)
        assert lin.weight.grad.data_ptr() == addresses[3]
        assert [r.replays for r in runners] == replays_at_4
    for x in xs[3:]:
        torch.tanh(twin(x)).square().mean().backward()
    torch.testing.assert_close(lin.weight.grad, twin.weight.grad)


def test_a_gradient_that_cannot_be_moved_stops_replays_while_it_lives(monkeypatch):
    """Where storages cannot be repointed, ``Pool.evacuate`` refuses while a gradient it handed
    out is alive (the replay would overwrite it) and switches the pool to copying gradients
    out; once the gradient is dropped, replays may write again."""
    from torch.multiprocessing.reductions import StorageWeakRef
    from minicompile.cudagraphs import cudagraph_trees
    monkeypatch.setattr(cudagraph_trees, "CAN_MOVE_STORAGE", False)
    grad = torch.ones(4)
    pool = cudagraph_trees.Pool(handle=None, gradients=[StorageWeakRef(grad.untyped_storage())])
    assert not pool.evacuate() and pool.copies_gradients
    assert not pool.evacuate()  # still alive: still refused
    del grad
    assert pool.evacuate() and pool.gradients == []
    assert cudagraph_trees.Pool(handle=None).evacuate()  # nothing handed out: nothing to do


def test_moving_a_storage_out_keeps_every_tensor_over_it():
    """``move_out`` (what a replay does to a gradient still held) gives the storage memory of
    its own: the tensor handed out and an alias of it (AccumulateGrad keeps a detached one in
    ``.grad``) both keep their values when the old memory is overwritten."""
    from minicompile.cudagraphs.cudagraph_trees import CAN_MOVE_STORAGE, move_out
    if not CAN_MOVE_STORAGE:
        pytest.skip("this torch cannot repoint a storage: gradients are copied instead")
    pool = torch.arange(12.0)  # stands for the pool's memory
    storage = torch._C._construct_storage_from_data_pointer(pool.data_ptr(), pool.device,
                                                            pool.untyped_storage().nbytes())
    handed_out = torch.empty(0).set_(storage, 2, (2, 3), (3, 1))
    alias = handed_out.detach()
    move_out(handed_out.untyped_storage())
    pool.zero_()  # the next replay writes there
    expected = torch.arange(2.0, 8.0).reshape(2, 3)
    assert torch.equal(handed_out, expected) and torch.equal(alias, expected)
    assert handed_out.data_ptr() != pool.data_ptr() + 8
