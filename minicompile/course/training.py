"""One model trained by eager PyTorch and by compilers, side by side (notebook 11).

    runs = train_side_by_side(model, batches, loss_fn, {
        "eager": None,
        "minicompile": lambda m: mc.compile(m, backend="inductor"),
        "torch.compile": torch.compile,
    })
    plot_losses(runs); plot_training_speed(runs)

Every compiler starts from the same weights (a deep copy of ``model``) and sees the same
batches, so their losses are step for step eager's when the compiled code is right. The first
step is timed on its own, from empty caches (``bench.timing.cold_minicompile`` /
``cold_inductor``): it traces, compiles and runs once, which is what a user waits for. The
steady step is timed as the benchmark times (``bench.timing.time_in_turns``: the compilers take
turns on the CPU, CUDA events on the GPU), on one batch, forward, backward and optimizer step.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import torch

from ..bench.timing import cold_inductor, cold_minicompile, first_call_s, time_in_turns

Compiler = Callable[[torch.nn.Module], Callable] | None  # None: run the model as it is (eager)
LossFn = Callable[[Callable, Any], torch.Tensor]  # (model or compiled model, batch) -> loss


@dataclass
class TrainingRun:
    name: str
    losses: list[float] = field(default_factory=list)  # one per batch
    first_step_s: float = 0.0  # wall seconds of the first step: compiling included
    step_ms: float = 0.0  # median milliseconds of a steady training step


class Trainer:
    """A model's copy, its compiled form and an AdamW optimizer: ``step(batch)`` is one
    training step (forward and loss, backward, optimizer step, gradients cleared)."""

    def __init__(self, model: torch.nn.Module, loss_fn: LossFn, compiler: Compiler,
                 lr: float = 1e-3):
        self.model = copy.deepcopy(model)
        self.run = compiler(self.model) if compiler else self.model
        self.loss_fn = loss_fn
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=lr)

    def step(self, batch: Any) -> torch.Tensor:
        loss = self.loss_fn(self.run, batch)
        loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        return loss.detach()


def train_side_by_side(model: torch.nn.Module, batches: Sequence[Any], loss_fn: LossFn,
                       compilers: dict[str, Compiler], budget: str = "quick",
                       device: str = "cpu") -> dict[str, TrainingRun]:
    """Train a copy of ``model`` on ``batches`` with each compiler (the first step from cold
    caches), then time a steady step of each, in turns."""
    runs, trainers = {}, {}
    for name, compiler in compilers.items():
        torch.manual_seed(0)  # the same random numbers for every run (dropout, if any)
        trainer = trainers[name] = Trainer(model, loss_fn, compiler)
        run = runs[name] = TrainingRun(name)
        with cold_minicompile(), cold_inductor():
            loss, run.first_step_s = first_call_s(lambda: trainer.step(batches[0]), device)
        run.losses = [loss.item()] + [trainer.step(b).item() for b in batches[1:]]
    steps = {name: (lambda t=t: t.step(batches[0])) for name, t in trainers.items()}
    for name, ms in time_in_turns(steps, device, budget).items():
        runs[name].step_ms = ms
    return runs


def plot_losses(runs: dict[str, TrainingRun], title: str = "", ax=None):
    """Loss per step of every run, on one plot: compiled runs draw over eager's."""
    import matplotlib.pyplot as plt  # lazy: optional, and slow to import

    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 3))
    styles = ["-", "--", ":", "-."]
    for i, run in enumerate(runs.values()):
        ax.plot(range(1, len(run.losses) + 1), run.losses, styles[i % len(styles)],
                marker="o", markersize=3, label=run.name, linewidth=2.5 - 0.5 * i)
    ax.set_xlabel("training step")
    ax.set_ylabel("loss")
    ax.set_title(title)
    ax.legend()
    return ax


def plot_training_speed(runs: dict[str, TrainingRun], title: str = ""):
    """Two bar charts: a steady training step (ms), and the first step, compiling included (s)."""
    import matplotlib.pyplot as plt

    fig, (steady, first) = plt.subplots(1, 2, figsize=(10, 2.5))
    names = list(runs)
    steady.barh(names, [runs[n].step_ms for n in names], color="#5b8def")
    steady.set_xlabel("median training step (ms)")
    first.barh(names, [runs[n].first_step_s for n in names], color="#e8833a")
    first.set_xlabel("first step, compiling included (s)")
    first.set_yticks([])
    for ax in (steady, first):
        ax.invert_yaxis()
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_stage_times(seconds: dict[str, float], title: str = "", ax=None):
    """Horizontal bars: seconds per compiler stage, in pipeline order."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6, 0.3 * len(seconds) + 0.8))
    ax.barh(list(seconds), list(seconds.values()), color="#6aa84f")
    ax.set_xlabel("seconds")
    ax.set_title(title)
    ax.invert_yaxis()
    return ax
