"""Checks for exercises/ex10_cuda_graphs.py (notebook 10: CUDA graphs).

Each decision is compared with the stage's own (``minicompile/cudagraphs/cudagraph_utils.py``) on
many cases, all of which run on a CPU; then the learner's function is put into the stage
(``cudagraph_trees``, where ``CUDAGraphRunner`` looks it up at every call). On a CPU machine the
stage runs with it a graph it must refuse; with a GPU, graphs are recorded and replayed with it,
against eager PyTorch."""

from __future__ import annotations

import contextlib
import dataclasses
import random
from typing import Any, Callable, Hashable, Iterator

import torch
from torch.fx.experimental.proxy_tensor import make_fx

import minicompile as mc
from minicompile import cudagraphs
from minicompile.cudagraphs import cudagraph_trees, cudagraph_utils
from minicompile.cudagraphs.cudagraph_utils import MAX_RECORDINGS, GraphFacts, facts_of
from minicompile.grading import exercise


@contextlib.contextmanager
def in_the_stage(name: str, fn: Callable) -> Iterator[None]:
    """``cudagraph_trees.<name>`` is ``fn`` for the duration (the runner looks it up by name at
    every call), with fresh compile caches before and after."""
    own = getattr(cudagraph_trees, name)
    setattr(cudagraph_trees, name, fn)
    mc.reset()
    try:
        yield
    finally:
        setattr(cudagraph_trees, name, own)
        mc.reset()


def _calls_against_eager(compiled: Callable, fn: Callable, inputs: list[tuple]) -> None:
    for args in inputs:
        shapes = [tuple(a.shape) for a in args]
        torch.testing.assert_close(compiled(*args), fn(*args), rtol=1e-4, atol=1e-5,
                                   msg=lambda m: f"the compiled function with your piece in the "
                                                 f"CUDA-graph stage, on inputs of {shapes}, "
                                                 f"differs from eager\n{m}")


# -- 10.1 ---------------------------------------------------------------------------------------

def _facts(devices=("cuda:0",), mutated=(), syncing=(), static=()) -> GraphFacts:
    return GraphFacts(frozenset(devices), tuple(mutated), tuple(syncing), frozenset(static))


# (facts, the word the reason must name; None: the graph may be recorded)
SKIP_CASES = [
    (_facts(), None),
    (_facts(("cuda:1",)), None),
    (_facts(static=(0, 1, 2)), None),
    (_facts(("cpu",)), "cpu"),
    (_facts(("cuda:0", "cpu")), "cpu"),
    (_facts(("xpu:0",)), "xpu:0"),
    (_facts(("cuda:0", "cuda:1")), "cuda:1"),
    (_facts(()), ""),
    (_facts(mutated=("arg3_1",)), "arg3_1"),
    (_facts(mutated=("x_1", "y_1")), "x_1"),
    (_facts(syncing=("aten.nonzero.default",)), "aten.nonzero.default"),
    (_facts(syncing=("aten._local_scalar_dense.default",)), "aten._local_scalar_dense.default"),
    (_facts(("cpu",), mutated=("x_1",)), "cpu"),
    (_facts(mutated=("x_1",), syncing=("aten.nonzero.default",)), "x_1"),
]


def _writes_its_input(x, y):
    x[0].add_(y[0])  # a write through a view is a write to the input
    return (x * y).sum(0)


def _graph_facts() -> list[tuple[str, GraphFacts, str | None]]:
    """Facts read off real ATen graphs (traced on the CPU), and the same graphs as if their
    tensors were on one GPU, with the word the reason must name."""
    x = torch.randn(4, 5, device="cpu")
    plain = facts_of(make_fx(lambda x: (x.sin() * 2).sum(-1))(x))
    writes = facts_of(make_fx(_writes_its_input)(x, x.clone()))
    written = writes.mutated_inputs[0]  # the placeholder's name (x_1)
    on_gpu = frozenset({"cuda:0"})
    return [("x.sin() * 2 summed, CPU tensors", plain, "cpu"),
            ("x[0].add_(y[0]), CPU tensors", writes, "cpu"),
            ("x.sin() * 2 summed, on cuda:0", dataclasses.replace(plain, devices=on_gpu), None),
            ("x[0].add_(y[0]) on cuda:0", dataclasses.replace(writes, devices=on_gpu), written)]


def _assert_reason(got: Any, want: str | None, what: str) -> None:
    if want is None:
        assert got is None, f"skip_reason({what}) returned {got!r}; this graph may be recorded"
        return
    assert isinstance(got, str) and got.strip(), (
        f"skip_reason({what}) returned {got!r}; this graph must run without CUDA graphs: "
        f"return the reason as a sentence")
    assert want in got, f"skip_reason({what}) returned {got!r}: name {want!r}, what is in the way"


@exercise("10.1", points=10, hints=(
    "Go through what a recording needs, one fact at a time, and return at the first one "
    "that fails.",
    "A recording holds the kernels of exactly one GPU: look at every device string, and at "
    "how many there are.",
    "An empty set of devices is not one GPU either. The reason names the culprit: the "
    "device, the input's name, the op's name.",
))
def check_skip_reason(sol):
    """Say why a graph can't be recorded (skip_reason)"""
    for facts, want in SKIP_CASES:
        _assert_reason(sol.skip_reason(facts), want, repr(facts))
    for what, facts, word in _graph_facts():
        _assert_reason(sol.skip_reason(facts), word, f"facts of {what}")
    # in the stage: CPU tensors under mode="reduce-overhead" run as compiled code, for your reason
    fn = lambda x: (x * 2).sin() + 1  # noqa: E731
    before = cudagraphs.counters["skipped"]
    with in_the_stage("skip_reason", sol.skip_reason):
        compiled = mc.compile(fn, mode="reduce-overhead")
        _calls_against_eager(compiled, fn, [(torch.randn(6, device="cpu"),)] * 3)
    assert cudagraphs.counters["skipped"] == before + 1, (
        "a graph of CPU tensors compiled with mode='reduce-overhead' was not skipped with your "
        "skip_reason")
    if torch.cuda.is_available():
        before = cudagraphs.counters["wrapped"]
        with in_the_stage("skip_reason", sol.skip_reason):
            compiled = mc.compile(fn, mode="reduce-overhead")
            _calls_against_eager(compiled, fn, [(torch.randn(6, device="cuda"),)] * 4)
        assert cudagraphs.counters["wrapped"] == before + 1, (
            "a graph of one GPU's tensors was refused by your skip_reason")


# -- 10.2 ---------------------------------------------------------------------------------------

def run_calls(decide: Callable, keys: list[Hashable], skipped: dict | None = None
              ) -> tuple[list[str], dict]:
    """The actions ``decide`` takes for calls with these keys, the state kept as
    ``CUDAGraphRunner`` keeps it (a warm-up adds the key to ``warmed``, a recording to
    ``recorded``), and the ``skipped`` it leaves."""
    warmed, recorded, skipped = set(), {}, dict(skipped or {})
    actions = []
    for key in keys:
        action = decide(key, warmed, recorded, skipped)
        actions.append(action)
        if action == "warmup":
            warmed.add(key)
        elif action == "record":
            recorded[key] = f"the recording of {key!r}"
        elif action == "replay":
            assert key in recorded, f"decide({key!r}) said 'replay' with no recording of it: " \
                                    f"the calls were {keys[:len(actions)]}"
        elif action != "skip":
            raise AssertionError(f"decide({key!r}) returned {action!r}: one of 'replay', "
                                 f"'skip', 'warmup', 'record'")
    return actions, skipped


def _sequences() -> list[tuple[list, dict]]:
    shapes = list(range(MAX_RECORDINGS + 1))
    past_limit = [k for k in shapes for _ in range(3)] + [0, MAX_RECORDINGS, 3, MAX_RECORDINGS]
    failed = {"(4, 8)": "recording failed: RuntimeError: operation not permitted when stream is "
                        "capturing"}
    cases = [(["(8, 64)"] * 4, {}),
             (["(8, 64)", "(8, 64)", "(16, 64)", "(16, 64)", "(16, 64)", "(8, 64)"], {}),
             (past_limit, {}),
             (["(4, 8)"] * 3 + ["(2, 8)"] * 3, failed)]
    rng = random.Random(10)
    for _ in range(12):
        keys = list(range(rng.randint(2, MAX_RECORDINGS + 4)))
        cases.append(([rng.choice(keys) for _ in range(rng.randint(10, 60))], {}))
    return cases


@exercise("10.2", points=10, hints=(
    "Four outcomes: which one can be told from `recorded` alone? Check it first.",
    "A key in `skipped` never records, whatever else is true of it; a key never seen runs "
    "once as compiled code first.",
    "The limit only matters when a new recording would be made, and a refusal is written "
    "into `skipped` with why.",
))
def check_decide(sol):
    """Decide what a call does: warm up, record, replay or skip"""
    for keys, skipped in _sequences():
        got, got_skipped = run_calls(sol.decide, keys, skipped)
        want, want_skipped = run_calls(cudagraph_utils.decide, keys, skipped)
        for n, (g, w) in enumerate(zip(got, want)):
            assert g == w, (f"calls with input keys {keys[:n + 1]}: the last call's action "
                            f"is {w!r}, yours says {g!r} (MAX_RECORDINGS = {MAX_RECORDINGS})")
        assert got_skipped.keys() == want_skipped.keys(), (
            f"calls with input keys {keys}: skipped holds {sorted(got_skipped, key=str)}; "
            f"expected {sorted(want_skipped, key=str)} (each with the reason)")
        for key, reason in got_skipped.items():
            assert isinstance(reason, str) and reason.strip(), \
                f"skipped[{key!r}] is {reason!r}: say why that shape runs without a graph"
    if torch.cuda.is_available():  # in the stage, on a GPU: one recording per shape
        def fn(x, w):
            return torch.relu(x @ w + 1).sum(-1) * 2

        w = torch.randn(32, 32, device="cuda")
        with in_the_stage("decide", sol.decide):
            compiled = mc.compile(fn, mode="reduce-overhead", dynamic=False)
            _calls_against_eager(compiled, fn, [(torch.randn(n, 32, device="cuda"), w)
                                                for n in (8, 8, 8, 16, 16, 16, 8, 8)])


# -- 10.3 ---------------------------------------------------------------------------------------

def _in_place_cases() -> list[tuple[str, int, Any, set, set]]:
    """(what, position, argument, static input positions, recorded output storages)"""
    pool = torch.randn(64, device="cpu")  # a recording's output memory
    recorded = {pool.untyped_storage().data_ptr()}
    weight = torch.nn.Parameter(torch.randn(4, 4, device="cpu"))
    running_mean = torch.zeros(4, device="cpu")  # a buffer: a plain tensor
    x = torch.randn(4, 4, device="cpu")
    other = torch.randn(32, device="cpu")
    return [
        ("a parameter at a static position", 0, weight, {0, 1}, recorded),
        ("a buffer (plain tensor) at a static position", 1, running_mean, {0, 1}, recorded),
        ("the batch, after the parameters", 2, x, {0, 1}, recorded),
        ("the batch, first argument", 0, x, set(), recorded),
        ("the batch's transpose", 3, x.t(), {0, 1}, recorded),
        ("a parameter a backward receives", 3, weight, set(), recorded),
        ("a saved activation: a view at an offset of a recorded output", 4,
         pool[16:32].view(4, 4), set(), recorded),
        ("a recorded output itself", 1, pool, set(), recorded),
        ("a view at an offset of a tensor no recording made", 2, other[8:], set(), recorded),
        ("a size (an int)", 5, 16, {0}, recorded),
        ("a scale (a float)", 6, 0.125, set(), recorded),
        ("the batch, with no recording yet", 0, x, set(), set()),
    ]


@exercise("10.3", points=10, hints=(
    "Ask of each argument: is it the very same memory on every call? Then the recording can "
    "read it where it is.",
    "Three kinds are the same every call: numbers, the module's own tensors, and tensors "
    "that live in memory a recording owns.",
    "A saved activation may start in the middle of a recorded output: compare the memory it "
    "lives in (its storage), not its own address.",
))
def check_reads_in_place(sol):
    """Choose which inputs a recording copies (reads_in_place)"""
    for what, i, arg, static, recorded in _in_place_cases():
        got = sol.reads_in_place(i, arg, static, recorded)
        want = cudagraph_utils.reads_in_place(i, arg, static, recorded)
        assert got is want or got == want, (
            f"{what} (argument {i}, static inputs {sorted(static)}): yours says "
            f"{'read in place' if got else 'copied'}, it should be "
            f"{'read in place' if want else 'copied in before every replay'}")
    if torch.cuda.is_available():
        _reads_in_place_on_a_gpu(sol.reads_in_place)


def _reads_in_place_on_a_gpu(reads_in_place: Callable) -> None:
    """A linear layer and batch norm (a buffer): recorded with the learner's choice, replayed
    after the weights and running statistics change in place, then trained a few steps."""
    copied = []

    def counted(i, arg, static, recorded):
        answer = reads_in_place(i, arg, static, recorded)
        copied.append(isinstance(arg, torch.Tensor) and not answer)
        return answer

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.BatchNorm1d(16)).cuda().eval()
    with in_the_stage("reads_in_place", counted), torch.no_grad():
        compiled = mc.compile(model, mode="reduce-overhead")
        _calls_against_eager(compiled, model, [(torch.randn(4, 16, device="cuda"),)] * 3)
        model[0].weight.mul_(2)
        model[1].running_mean.add_(1)
        _calls_against_eager(compiled, model, [(torch.randn(4, 16, device="cuda"),)] * 2)
    assert copied.count(True) == 1, (
        f"the recording of Linear + BatchNorm1d copies {copied.count(True)} inputs; only the "
        f"batch changes from call to call")
    torch.manual_seed(0)  # training: the backward reads what the forward's replay saved
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(),
                                torch.nn.Linear(32, 4)).cuda()
    twin = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(),
                               torch.nn.Linear(32, 4)).cuda()
    twin.load_state_dict(model.state_dict())
    with in_the_stage("reads_in_place", reads_in_place):
        compiled = mc.compile(model, mode="reduce-overhead")
        for step in range(4):
            x = torch.randn(8, 16, device="cuda")
            for m in (model, twin):
                m.zero_grad()
            compiled(x).square().mean().backward()
            twin(x).square().mean().backward()
            for a, b in zip(model.parameters(), twin.parameters()):
                torch.testing.assert_close(a.grad, b.grad, rtol=1e-4, atol=1e-5, msg=lambda m: (
                    f"training step {step} with your reads_in_place: a gradient differs from "
                    f"eager's\n{m}"))
