"""Real Inductor's loop IR next to ours: ``torch_ir_pre_fusion(fn, *args)`` compiles ``fn`` with
``torch.compile`` (Inductor), its debug trace written to a temporary folder, and returns the
``ir_pre_fusion.txt`` it wrote (the same text ``TORCH_LOGS=ir_pre_fusion`` prints)."""

from __future__ import annotations

import glob
import os
import tempfile
from typing import Any, Callable


def torch_ir_pre_fusion(fn: Callable, *args: Any, name: str = "ir_pre_fusion.txt") -> str:
    import torch
    import torch._inductor.config as inductor_config

    torch._dynamo.reset()
    with tempfile.TemporaryDirectory() as tmp:
        try:
            with inductor_config.patch({"trace.enabled": True, "trace.debug_dir": tmp}):
                torch.compile(fn, backend="inductor")(*args)
        except Exception as e:  # no C++ compiler, an unsupported platform...
            return f"(real Inductor unavailable here: {type(e).__name__}: {e})"
        finally:
            torch._dynamo.reset()
        files = sorted(glob.glob(os.path.join(tmp, "**", name), recursive=True))
        if not files:
            return f"(Inductor wrote no {name})"
        with open(files[-1]) as f:
            return f.read()
