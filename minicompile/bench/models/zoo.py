"""What every model suite provides: a :class:`ModelSpec` per model, built at a :class:`Size`.

    model, inputs = spec.build(size)      # a fresh module with seeded random weights, on the CPU,
                                          # and a dict of input tensors
    spec.forward(model, inputs)           # inference: what gets compiled
    spec.train_step(model, optimizer, inputs)  # training: forward, loss, backward, optimizer step

The sizes are per scale: ``tiny`` (the tests), ``cpu`` (the CPU table), ``cuda`` (the GPU table).
Real checkpoints are never loaded: configs are built in code with random weights, so every size
is a choice here, and the suites run offline.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import torch


@dataclass(frozen=True)
class Size:
    d: int          # hidden width
    layers: int
    heads: int
    ffn: int        # MLP width
    vocab: int
    seq: int        # tokens (and audio frames) per example
    batch: int
    image: int      # transformers vision models: pixels per side
    timm_image: int
    timm_batch: int


SIZES: dict[str, Size] = {
    "tiny": Size(d=32, layers=2, heads=4, ffn=64, vocab=128, seq=16, batch=2, image=32,
                 timm_image=32, timm_batch=2),
    "cpu": Size(d=64, layers=2, heads=4, ffn=256, vocab=1024, seq=64, batch=2, image=64,
                timm_image=64, timm_batch=4),
    "cuda": Size(d=512, layers=4, heads=8, ffn=2048, vocab=16384, seq=256, batch=8, image=224,
                 timm_image=224, timm_batch=32),
}


@dataclass(frozen=True)
class ModelSpec:
    name: str
    suite: str                                  # huggingface | timm
    family: str                                 # what the model stands for, for the table
    build: Callable[[Size], tuple[torch.nn.Module, dict]]
    forward: Callable[[torch.nn.Module, dict], Any]
    train_step: Callable[[torch.nn.Module, torch.optim.Optimizer, dict], torch.Tensor]
    unavailable: str | None = None              # why the suite's library cannot be imported


def import_problem(import_library: Callable[[], Any], name: str) -> str | None:
    """Why a suite's library cannot be imported (its rows are then skipped, saying so), or None."""
    try:
        import_library()
    except Exception as e:  # noqa: BLE001 -- an optional extra: any failure is a reason to report
        return f"{name} is not importable ({type(e).__name__}: {e})"
    return None


def to_device(inputs: dict, device: str) -> dict:
    return {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}


def to_float64(inputs: dict) -> dict:
    """The float64 reference's inputs: floating tensors in double, token ids as they are."""
    return {k: v.double() if isinstance(v, torch.Tensor) and v.is_floating_point() else v
            for k, v in inputs.items()}


def tensors_of(out: Any) -> list[torch.Tensor]:
    """Every tensor in a model's output, in order: a ModelOutput (a dict), tuples, a tensor."""
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, dict):
        out = list(out.values())
    if isinstance(out, (list, tuple)):
        return [t for item in out for t in tensors_of(item)]
    return []

