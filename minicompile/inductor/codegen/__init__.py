"""Code generation: kernel objects in, kernels and a wrapper program out (mini
torch/_inductor/codegen/).

Reading map:

    common.py     BaseScheduling (the interface of a backend), KernelBodyHandler (local values
                  forwarded between fused members), IndentedBuffer and CSE (the kernel writer),
                  KernelSignature (a kernel's arguments)
    cpp.py        CppScheduling: C++/OpenMP loop nests (cpp_ops.py: the ops as C++,
                  cpp_math.py: each elementwise op's C++ spelling and glibc's vector math,
                  cpp_printer.py: indices as C++, cpp_loops.py: which loop order,
                  cpp_scatter.py: where a scatter's adds may meet (atomics or not),
                  cpp_masks.py: rows cut where cat's and pad's masks change,
                  cpp_keep.py: math library calls kept for a later loop over the row,
                  cpp_build.py: g++ flags and ctypes loading, cpp_prefix.h: C++ helpers)
    reference.py  ReferenceScheduling: runs kernel objects with torch ops, a block of rows at a
                  time (the oracle, and the CPU backend before code generation)
    triton.py     TritonScheduling: Triton kernels (triton_kernel.py writes one, triton_ops.py
                  holds the op templates; runtime/ launches them)
    wrapper.py    WrapperCodeGen: the Python program that allocates, launches and frees
                  (``MINICOMPILE_LOGS=output_code``)

A backend registers for a device type (Inductor's ``register_backend_for_device``); which one
runs CPU tensors is the compile's ``cpu_backend`` option (``config.inductor.cpu_backend``,
``MINICOMPILE_CPU_BACKEND``, by default).
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from ..options import InductorOptions
from .common import BaseScheduling
from .cpp import CppScheduling
from .reference import ReferenceScheduling

try:  # Triton is optional on CPU machines: without it, only the other backends exist
    from .triton import TritonScheduling
except ImportError:  # pragma: no cover
    TritonScheduling = None

# backend name -> how to make its scheduling object (modules added as backends land)
BACKENDS: dict[str, Callable[[InductorOptions], BaseScheduling]] = {"reference": ReferenceScheduling,
                                                     "cpp": CppScheduling}
if TritonScheduling is not None:  # Triton is optional where it is not installed
    BACKENDS["triton"] = TritonScheduling


def register_backend(name: str, make: Callable[[InductorOptions], BaseScheduling]) -> None:
    BACKENDS[name] = make


def backend_name(device: torch.device, options: InductorOptions) -> str:
    """Which backend runs kernels for ``device``: the CPU one is a knob."""
    return options.backend(device)


def get_scheduling(device: torch.device, options: InductorOptions) -> BaseScheduling:
    name = backend_name(device, options)
    if name not in BACKENDS:
        known = ", ".join(sorted(BACKENDS))
        raise ValueError(f"no code generator {name!r} for {torch.device(device).type} tensors "
                         f"(known: {known}; set MINICOMPILE_CPU_BACKEND)")
    if name == "triton" and torch.device(device).type == "cpu" and not _triton_interprets():
        raise ValueError("Triton kernels for CPU tensors run in Triton's interpreter, which is "
                         "off in this process: set TRITON_INTERPRET=1 before Python starts, or "
                         "pick another CPU backend (MINICOMPILE_CPU_BACKEND=cpp)")
    return BACKENDS[name](options)


def _triton_interprets() -> bool:
    """Whether the Triton runtime launches kernels through the interpreter (TRITON_INTERPRET,
    read when the runtime was imported)."""
    from ..runtime.triton_heuristics import INTERPRET

    return INTERPRET


__all__ = ["BaseScheduling", "BACKENDS", "register_backend", "get_scheduling", "backend_name"]
