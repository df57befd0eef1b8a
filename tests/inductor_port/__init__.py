"""A port of PyTorch's Inductor test functions (``test/inductor/test_torchinductor.py``'s
``CommonTemplate``), as a corpus of small programs.

Each ``self.common(fn, (args,))`` of the original becomes a :class:`Case`: the function, fresh
arguments, and the original's tolerances. ``tests/test_inductor_port.py`` runs every case
eagerly (the oracle) and through ``mc.compile(fn, backend="inductor")`` with the C++ backend,
a subset with the Triton backend (its interpreter on CPU tensors), and compares outputs, and
for cases with ``grads`` the gradients, with ``torch.testing.assert_close``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass
class Case:
    fn: Callable
    make_args: Callable[[], tuple]  # fresh arguments on each call (cases may mutate them)
    atol: float | None = None  # None: assert_close's defaults for the dtype, as ``common``
    rtol: float | None = None
    grads: bool = False  # backpropagate and compare the inputs' gradients too
    triton: bool = False  # also run with the Triton backend (interpreted on CPU: kept small)
    dynamic: bool | None = None  # mc.compile's ``dynamic``: True compiles with symbolic sizes
    cpu_only: str = ""  # why the case has no oracle on a GPU (eager's CUDA kernels differ)

    @property
    def name(self) -> str:
        return self.fn.__name__


CASES: list[Case] = []


def case(args: Callable[[], tuple], *, atol: float | None = None, rtol: float | None = None,
         grads: bool = False, triton: bool = False, dynamic: bool | None = None,
         cpu_only: str = "") -> Callable:
    """``@case(lambda: (torch.randn(8),), ...)`` registers the function below it."""

    def register(fn: Callable) -> Callable:
        CASES.append(Case(fn, args, atol, rtol, grads, triton, dynamic, cpu_only))
        return fn

    return register
