"""One immutable set of knobs per compile (mirrors torch/_inductor/config.py as
torch/_inductor/compile_fx.py patches it with ``mode=`` and ``options=``).

    opts = InductorOptions.build(mode="max-autotune", options={"cpp_vectorize": False})
    opts.max_autotune, opts.cudagraphs        # True, True
    compile_fx_inner(gm, example_inputs, options=opts)

``build`` is called once, where a compile starts (``inductor()`` in ``backend.py``, the function
``mc.compile`` reaches): it takes the global knobs of ``config.inductor`` as they are at that
moment, puts the mode's knobs on top (``MODE_OPTIONS``, as ``torch._inductor.list_mode_options``),
then the caller's ``options=``, and freezes the result. Every stage below reads this object and
never the global config: a notebook that flips ``config.inductor.cpp_vectorize`` changes the
next compile, never one that is half done, and two functions compiled with different modes in
one process cannot see each other's knobs (``tests/test_options.py`` checks that no module
below this one imports ``config``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import torch

from .. import config

# mode -> the knobs it sets (torch._inductor.list_mode_options)
MODE_OPTIONS: dict[str | None, dict[str, Any]] = {
    None: {}, "default": {},
    "reduce-overhead": {"cudagraphs": True},
    "max-autotune": {"max_autotune": True, "cudagraphs": True},
    "max-autotune-no-cudagraphs": {"max_autotune": True},
}


@dataclass(frozen=True)
class InductorOptions:
    """The knobs one compile runs with (each is documented where ``config.inductor`` sets its
    default). Frozen: ``replace`` makes a changed copy (the fallback to the reference
    backend)."""

    cpu_backend: str
    cuda_backend: str
    cpp_vectorize: bool
    cpp_row_loops: bool
    cpp_lanes: bool
    cpp_blocks: bool
    cudagraphs: bool
    max_autotune: bool
    compile_threads: int
    compile_workers: int
    triton_device_asserts: bool
    emulate_precision_casts: bool
    combo_kernels: bool
    layout_optimization: bool
    debug: bool  # config.debug: artifacts into the debug folder (debug.py)
    mode: str | None = None  # the mode these came from (for messages only)

    @classmethod
    def build(cls, mode: str | None = None, options: dict[str, Any] | None = None
              ) -> "InductorOptions":
        """``config.inductor`` now, then ``mode``'s knobs, then ``options`` on top."""
        if mode not in MODE_OPTIONS:
            known = [m for m in MODE_OPTIONS if m]
            raise ValueError(f"unknown mode {mode!r}; known: {known}")
        knobs = {f.name: getattr(config.inductor, f.name)
                 for f in dataclasses.fields(cls) if f.name not in ("mode", "debug")}
        unknown = set(options or {}) - set(knobs)
        if unknown:
            raise ValueError(f"unknown inductor options {sorted(unknown)}; known: {sorted(knobs)}")
        return cls(**{**knobs, **MODE_OPTIONS[mode], **(options or {})}, debug=config.debug,
                   mode=mode)

    @classmethod
    def of(cls, options: "InductorOptions | dict[str, Any] | None") -> "InductorOptions":
        """``options`` as an ``InductorOptions`` (a dict is ``options=`` of ``build``)."""
        return options if isinstance(options, cls) else cls.build(options=options)

    def backend(self, device: Any) -> str:
        """Which code generator writes the kernels for ``device``'s tensors (the CPU one is a
        knob)."""
        return self.cpu_backend if torch.device(device).type == "cpu" else self.cuda_backend

    def replace(self, **changes: Any) -> "InductorOptions":
        return dataclasses.replace(self, **changes)

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
