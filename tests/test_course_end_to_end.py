"""Notebook 11's helpers: the compile's time per stage, the graphs the inductor backend made,
the per-kernel profile, minicompile's kernels and wrapper by name, and training side by side
with eager (minicompile/course/compile_profile.py, training.py; viz/codegen.py)."""

from __future__ import annotations

import copy
import re
import time

import pytest
import torch
import torch.nn.functional as F

import minicompile as mc
from minicompile.bench.timing import cold_minicompile
from minicompile.course import compile_profile
from minicompile.course.compile_profile import kernel_profile, recorded_graphs, stage_times
from minicompile.course.training import Trainer, train_side_by_side
from minicompile.grade import learner_pieces
from minicompile.grading import REPO_ROOT, load_learner_module
from minicompile.grading.generate import write_stubs
from minicompile.grading.pipeline import PLUGS, plugged_in
from minicompile.inductor.graph import GraphLowering
from minicompile.inductor.scheduler import Scheduler
from minicompile.viz.codegen import kernel_names, our_kernels, wrapper_code

pytestmark = [pytest.mark.cpu_only, pytest.mark.usefixtures("_cpp_kernels")]  # C++ kernels


@pytest.fixture
def _cpp_kernels():
    """The per-kernel profile and the kernel parser read C++ kernels (the default CPU backend)."""
    from minicompile.viz.codegen import inductor_options

    with inductor_options(cpu_backend="cpp"):
        yield


class TinyNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(12, 16), torch.nn.Linear(16, 5)
        self.norm = torch.nn.LayerNorm(16)

    def forward(self, x, target):
        h = F.gelu(self.norm(self.fc1(x)))
        return F.cross_entropy(torch.softmax(self.fc2(h), -1) * 3.0, target)


def _batches(n=3):
    g = torch.Generator().manual_seed(0)
    return [(torch.randn(7, 12, generator=g), torch.randint(0, 5, (7,), generator=g))
            for _ in range(n)]


def _loss(run, batch):
    return run(*batch)


def _inductor(m):
    return mc.compile(m, backend="inductor")


def test_stage_times_add_up_to_at_most_the_compile_and_restore_the_compiler():
    """Each stage counts only its own time: the backend runs inside Dynamo's frame conversion
    and lowering inside the backend, so counting both would add up to more than the wall time."""
    originals = (GraphLowering.run, Scheduler.__init__,
                 compile_profile.eval_frame.convert_frame)
    torch.manual_seed(0)
    model, batch = TinyNet(), _batches(1)[0]
    start = time.perf_counter()
    with cold_minicompile(), stage_times() as stages:  # an empty cache: g++ builds, in threads
        Trainer(model, _loss, _inductor).step(batch)
    wall = time.perf_counter() - start
    for stage in ("dynamo: bytecode -> FX graph, guards", "aot autograd: partition",
                  "inductor: lowering to loop IR", "inductor: scheduling and fusion",
                  "inductor: code generation", "inductor: compiling kernels (g++)"):
        assert stages.get(stage, 0) > 0, (stage, stages)
    assert all(s > 0 for s in stages.values()), stages  # stages never entered are left out
    assert sum(stages.values()) <= wall
    assert (GraphLowering.run, Scheduler.__init__,
            compile_profile.eval_frame.convert_frame) == originals


def test_recorded_graphs_and_kernel_profile_name_every_generated_kernel():
    torch.manual_seed(0)
    model, batch = TinyNet(), _batches(1)[0]
    with recorded_graphs() as graphs:
        trainer = Trainer(model, _loss, _inductor)
        trainer.step(batch)
    assert [g.kind for g in graphs] == ["forward", "backward"]
    ours = {name for g in graphs for name in kernel_names(g.compiled.source)}
    assert ours
    namespace = graphs[0].compiled.call.__globals__
    kernels = {n: namespace[n] for n in kernel_names(graphs[0].compiled.source)}
    rows = kernel_profile(lambda: trainer.step(batch), graphs, device="cpu", reps=2)
    profiled = {name: calls for name, calls, _ in rows}
    assert ours <= set(profiled), ours - set(profiled)
    # as often per step as the wrappers call it (a kernel with the code of another is that one
    # called again: ``same_code_key``)
    calls = {name: sum(len(re.findall(rf"^\s+{name}\(", g.compiled.source, re.M))
                       for g in graphs) for name in ours}
    assert all(profiled[name] == calls[name] >= 1 for name in ours), (profiled, calls)
    assert any(name.startswith("aten::") for name in profiled)  # the eager optimizer's ops
    assert all(namespace[n] is kernel for n, kernel in kernels.items())  # unwrapped afterwards


def test_our_kernels_and_wrapper_split_the_output_code():
    torch.manual_seed(0)
    with recorded_graphs() as graphs:
        mc.compile(lambda x: (torch.softmax(x, -1) + x.sum()).relu())(torch.randn(9, 31))
    source = graphs[0].compiled.source
    kernels = our_kernels(source)
    assert list(kernels) == kernel_names(source) and len(kernels) >= 2
    for name, body in kernels.items():
        assert f"void {name}(" in body and "def call(args)" not in body
    wrapper = wrapper_code(source)
    assert wrapper.startswith("def call(args):") and "extern" not in wrapper
    assert all(f"{name}(" in wrapper for name in kernels)


def test_train_side_by_side_trains_copies_and_reports_losses_and_times():
    torch.manual_seed(0)
    model = TinyNet()
    before = copy.deepcopy(model.state_dict())
    runs = train_side_by_side(model, _batches(1) * 3, _loss,  # one batch, learned step by step
                              {"eager": None, "minicompile": _inductor}, budget="tiny")
    torch.testing.assert_close(runs["minicompile"].losses, runs["eager"].losses,
                               rtol=1e-4, atol=1e-5)
    assert runs["eager"].losses[0] > runs["eager"].losses[-1]  # it trains
    assert all(r.first_step_s > 0 and r.step_ms > 0 for r in runs.values())
    for name, value in model.state_dict().items():  # the caller's model is left as it was
        torch.testing.assert_close(value, before[name])


def test_train_side_by_side_shows_a_wrong_compiler():
    """A 'compiler' that changes the result gives other losses: the comparison can fail."""
    torch.manual_seed(0)
    runs = train_side_by_side(TinyNet(), _batches(), _loss, {
        "eager": None, "wrong": lambda m: (lambda x, t: m(x * 1.01, t))}, budget="tiny")
    with pytest.raises(AssertionError):
        torch.testing.assert_close(runs["wrong"].losses, runs["eager"].losses,
                                   rtol=1e-4, atol=1e-5)


def test_untouched_stubs_plug_nothing_in(tmp_path):
    write_stubs(str(tmp_path))
    pieces, not_plugged = learner_pieces(folder=str(tmp_path), verbose=False)
    assert pieces == {} and set(not_plugged) == {p.exercise for p in PLUGS}
    assert set(not_plugged.values()) == {"not solved yet"}


def test_plugged_in_runs_the_learners_piece_in_a_training_step():
    gelu = next(p for p in PLUGS if p.piece == "gelu")
    module = load_learner_module("ex05_decompositions", f"{REPO_ROOT}/solutions")
    torch.manual_seed(0)
    model, batches = TinyNet(), _batches(2)
    with plugged_in({gelu.exercise: module}) as usages:
        runs = train_side_by_side(model, batches, _loss,
                                  {"eager": None, "yours": _inductor}, budget="tiny")
    assert usages[gelu.exercise].calls > 0
    torch.testing.assert_close(runs["yours"].losses, runs["eager"].losses, rtol=1e-4, atol=1e-5)
