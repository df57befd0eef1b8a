"""The Triton helpers compile for a GPU on a machine without one (``tests/sm90_compile.py``).

The other Triton tests run kernels in Triton's interpreter, which executes a helper as Python:
``triton_helpers.pow`` returned early from a static ``if`` on floats, and Triton's compiler went
on to compile the integer path after the ``return`` and failed, on a GPU only."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("triton")

ROOT = Path(__file__).resolve().parent.parent
DTYPES = "fp32,fp64,i64,i32,i16,i8,u8"


def test_triton_helpers_compile_for_an_h100_for_every_dtype():
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    run = subprocess.run([sys.executable, str(ROOT / "tests" / "sm90_compile.py"), DTYPES],
                         env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip() == "", run.stdout[-3000:]  # one line per helper that failed
