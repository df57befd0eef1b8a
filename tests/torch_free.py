"""Import minicompile's bytecode layer under a Python that has no torch.

``tests/test_resume_execution.py`` and ``tests/bytecode_corpus.py`` also run as scripts under
every supported CPython, torch or not (``course.sh test`` checks the versions it has no torch for
that way). The bytecode layer they use (``minicompile/dynamo/bytecode*.py``,
``resume_execution.py``, ``stack_capture.py``) needs no torch, but ``minicompile/__init__.py``
imports it.
"""

from __future__ import annotations

import importlib.util
import sys


def load_bytecode_layer_without_torch() -> None:
    """Without torch, register the ``minicompile`` package without running its ``__init__``, so
    that importing ``minicompile.dynamo.bytecode`` and its siblings loads just those modules."""
    if importlib.util.find_spec("torch") is None and "minicompile" not in sys.modules:
        spec = importlib.util.find_spec("minicompile")
        sys.modules["minicompile"] = importlib.util.module_from_spec(spec)
