"""The compiler with the learner's pieces plugged in (``python -m minicompile.grade --pipeline``):
every piece really runs, a wrong piece makes the end-to-end comparison fail, and the compiler's
own tables are restored afterwards."""

from __future__ import annotations

import math
import shutil
import types

import pytest
import torch

from minicompile.aot_autograd.partitioners import PARTITIONERS
from minicompile.decompositions import decomposition_table
from minicompile.dynamo import handlers_data
from minicompile.grade import main
from minicompile.grading import REPO_ROOT, load_checks, load_learner_module
from minicompile.grading.generate import write_stubs
from minicompile.grading.pipeline import PLUGS, run_pipeline, runs_here, triton_device
from minicompile.inductor import fusion
from minicompile.inductor.codegen import cpp_loops, cpp_ops, triton_frames
from minicompile.inductor.lowering import lowerings
from minicompile.inductor.runtime import triton_heuristics

aten = torch.ops.aten
MODULES = {e.id: e.module for e in load_checks()}


def _solutions(**overrides) -> dict[str, types.ModuleType]:
    """The reference solution of every plugged exercise, with some functions replaced."""
    pieces = {}
    for plug in PLUGS:
        module = load_learner_module(MODULES[plug.exercise], f"{REPO_ROOT}/solutions")
        module.__dict__.update(overrides)
        pieces[plug.exercise] = module
    return pieces


def _tables() -> dict:
    """Copies of every table the pipeline swaps rows of."""
    return {"binary": handlers_data.BINARY_OPS, "rules": list(fusion.RULES),
            "tile": fusion.tile, "partitioners": dict(PARTITIONERS),
            "decompositions": dict(decomposition_table), "lowerings": dict(lowerings),
            "c_ops": cpp_ops.C_OPS, "reductions": cpp_ops.REDUCTIONS,
            "pointwise_kernel": triton_frames.pointwise_kernel,
            "looped_reduction_kernel": triton_frames.looped_reduction_kernel,
            "tiled_kernel": triton_frames.tiled_kernel,
            "grid": triton_heuristics.grid, "tiled_grid": triton_heuristics.tiled_grid,
            "vector_loop": cpp_loops.vector_loop,
            "parallel_reduction": cpp_loops.parallel_reduction}


def test_every_solution_runs_in_the_compiled_model_and_matches_eager():
    before = _tables()
    report = run_pipeline(_solutions(), {})
    assert report.error == "", report.error
    reachable = {p.exercise for p in PLUGS
                 if runs_here(p) and (not p.triton or triton_device()[0])}
    never = [ex for ex, calls in report.plugged.items() if calls == 0 and ex in reachable]
    assert set(report.plugged) == {p.exercise for p in PLUGS if runs_here(p)} and not never, \
        f"pieces the model never reached: {never}"
    assert all("needs a GPU" in report.own[p.exercise] for p in PLUGS
               if p.exercise not in reachable)  # said so, not hidden
    assert report.metrics["graph_breaks"] == 0 and report.metrics["recompiles"] == 1
    assert _tables() == before


def _wrong_gelu(x, approximate="none"):
    """The tanh approximation whatever was asked: off by up to 1e-3."""
    inner = aten.mul.Tensor(aten.add.Tensor(x, aten.mul.Tensor(aten.pow.Tensor_Scalar(x, 3),
                                                               0.044715)), math.sqrt(2 / math.pi))
    return aten.mul.Tensor(aten.mul.Tensor(x, 0.5), aten.add.Tensor(aten.tanh.default(inner), 1))


def test_a_wrong_piece_makes_the_model_differ_from_eager():
    report = run_pipeline({"5.1": _solutions(gelu=_wrong_gelu)["5.1"]}, {})
    assert "differ" in report.error or "not close" in report.error, report.error
    assert "FAILED" in report.format()


def _grid_rounded_down(xnumel, XBLOCK):  # noqa: N803
    """Exercise 8.3's grid without the last, partial block."""
    return xnumel // XBLOCK


def test_a_wrong_triton_grid_makes_the_model_differ_from_eager():
    if triton_device()[0] is None:
        pytest.skip("Triton cannot run here (no GPU, TRITON_INTERPRET unset)")
    wrong = _solutions(grid=_grid_rounded_down)["8.3"]
    report = run_pipeline({"8.3": wrong}, {})
    assert report.plugged["8.3"] > 0 and "with Triton kernels" in report.error, report.error


def _tiles_along_y_only(ynumel, xnumel, YBLOCK, XBLOCK):  # noqa: N803
    """Exercise 8.5's grid that forgets the tiles along x."""
    return (ynumel + YBLOCK - 1) // YBLOCK


def test_a_wrong_tiled_grid_makes_the_transpose_differ_from_eager():
    if triton_device()[0] is None:
        pytest.skip("Triton cannot run here (no GPU, TRITON_INTERPRET unset)")
    wrong = _solutions(tiled_grid=_tiles_along_y_only)["8.5"]
    report = run_pipeline({"8.5": wrong}, {})
    assert report.plugged["8.5"] > 0 and "transposed" in report.error, report.error


def test_a_fusion_rule_that_fuses_everything_is_caught_end_to_end():
    fuse_all = _solutions(reads_line_up=lambda a, b: (True, ""))["7.4"]
    report = run_pipeline({"7.4": fuse_all}, {})
    assert report.error, "fusing every pair must give wrong values or a refused kernel"


def test_a_piece_that_raises_is_reported_not_hidden_by_the_fallback():
    def for_iter(tx, inst):
        raise RuntimeError("my bug")

    report = run_pipeline({"1.2": _solutions(for_iter=for_iter)["1.2"]}, {})
    assert "not compiled whole" in report.error, report.error
    assert report.plugged["1.2"] > 0


def test_a_learner_with_notebook_05_solved_gets_their_decompositions_in(tmp_path, capsys):
    """Stubs everywhere but ex05: its three pieces are plugged in and run, the others stay
    minicompile's own, and the model still compiles whole and matches eager."""
    write_stubs(str(tmp_path))
    shutil.copy(f"{REPO_ROOT}/solutions/ex05_decompositions.py", tmp_path)
    assert main(["--pipeline", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"3 of your {len(PLUGS)} pieces plugged in" in out, out
    for ex in ("5.1", "5.2", "5.3"):
        row = next(line for line in out.splitlines() if line.startswith(ex))
        assert "yours: " in row and "calls" in row, row
    assert out.count("not solved yet") == len(PLUGS) - 3


def test_wrong_graph_break_pieces_fail_the_resume_stage():
    """The graph-break pieces build the resume function of ``with_a_graph_break``: a liveness
    that forgets a local, or a prologue that leaves the call's result off the stack, makes the
    pipeline fail with what is wrong, before the bytecode runs (on 3.12 and later it would
    crash the interpreter, not raise); the right pieces are both reached."""
    report = run_pipeline(_solutions(), {})
    assert report.plugged["3.1"] > 0 and report.plugged["3.3"] > 0 and report.error == ""
    forgets_h = _solutions(live_locals=lambda insts, start: set())
    assert "live_locals leaves out ['h', 'scale', 'x']" in run_pipeline(forgets_h, {}).error
    no_stack = _solutions(restore_stack=lambda stack: [])
    assert "the resume function needs" in run_pipeline(no_stack, {}).error


@pytest.mark.skipif(torch.cuda.is_available(), reason="on a GPU the graphs may be recorded")
def test_a_skip_reason_that_lets_cpu_graphs_through_fails_the_cuda_graph_stage():
    report = run_pipeline({"10.1": _solutions(skip_reason=lambda facts: None)["10.1"]}, {})
    assert "skip_reason refused no graph" in report.error, report.error
    assert report.plugged["10.1"] > 0


def test_the_transposed_check_cannot_pass_on_stale_memory():
    """A grid that misses tiles leaves the buffer as allocated: were it memory that held the
    right answer a moment ago, the check would pass. New buffers are NaN meanwhile."""
    from minicompile.grading.pipeline import uninitialized_is_nan
    with uninitialized_is_nan():
        assert torch.empty(3, 5).isnan().all() and torch.empty_strided((4,), (2,)).isnan().all()
    assert not torch.are_deterministic_algorithms_enabled()
