"""Backends: what a captured FX graph is handed to (mirrors torch/_dynamo/backends/registry.py).

A backend is any callable ``(gm: torch.fx.GraphModule, example_inputs: list) -> callable``.
Names resolve lazily, so importing minicompile does not import every stage.

    "eager"           run the captured FX graph as it is
    "aot_eager"       minicompile's AOT autograd + decompositions, then run the ATen graphs
    "inductor"        the full pipeline: AOT autograd, lowering to loop IR, fusion, code generation
    "cudagraphs"      AOT autograd, then the ATen graphs replayed as CUDA graphs (no code generation)
    "torch-inductor"  the real torch._inductor behind minicompile's capture (for comparisons)
    "torch-aot_eager" the real AOTAutograd behind minicompile's capture
"""

from __future__ import annotations

import importlib
from typing import Callable

Backend = Callable  # (gm, example_inputs) -> compiled callable

_REGISTRY: dict[str, Backend] = {}
_LAZY: dict[str, str] = {
    "eager": "minicompile.backends.simple:eager",
    "aot_eager": "minicompile.backends.aot_eager:aot_eager",
    "inductor": "minicompile.inductor.backend:inductor",
    "cudagraphs": "minicompile.backends.cudagraphs:cudagraphs",
    "torch-inductor": "minicompile.backends.simple:torch_inductor",
    "torch-aot_eager": "minicompile.backends.simple:torch_aot_eager",
}


def register_backend(name: str) -> Callable[[Backend], Backend]:
    def register(fn: Backend) -> Backend:
        _REGISTRY[name] = fn
        return fn

    return register


def lookup_backend(backend: str | Backend) -> Backend:
    if callable(backend):
        return backend
    if backend in _REGISTRY:
        return _REGISTRY[backend]
    if backend not in _LAZY:
        known = ", ".join(sorted(set(_REGISTRY) | set(_LAZY)))
        raise ValueError(f"unknown backend {backend!r}; known backends: {known}")
    module, attr = _LAZY[backend].split(":")
    _REGISTRY[backend] = getattr(importlib.import_module(module), attr)
    return _REGISTRY[backend]


def list_backends() -> list[str]:
    return sorted(set(_REGISTRY) | set(_LAZY))


def minicompile_backend(gm, example_inputs):
    """Entry point for ``torch.compile(fn, backend="minicompile")``: real Dynamo in front,
    minicompile's AOT autograd and inductor behind (registered in pyproject.toml under the
    ``torch_dynamo_backends`` entry-point group)."""
    return lookup_backend("inductor")(gm, example_inputs)
