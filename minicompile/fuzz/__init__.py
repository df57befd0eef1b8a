"""Differential fuzzing: random programs, compiled and compared with eager.

``bash course.sh fuzz -n 500 --seed 0`` generates programs (generate.py, from the op table
in ops.py), compiles each with every backend (runner.py), compares with eager at tolerances
suited to the dtype (compare.py), and shrinks a failing one to a pytest reproducer (shrink.py).
``tracer.py`` does the same for the bytecode tracer: small Python functions against CPython.
``opinfo.py`` sweeps PyTorch's own OpInfo samples (``python -m minicompile.fuzz.opinfo``), as
test/inductor/test_torchinductor_opinfo.py does for real Inductor.
docs/fuzzing.md explains how to read a reproducer.
"""
