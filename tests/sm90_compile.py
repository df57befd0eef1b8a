"""Compiles ``triton_helpers``' functions for an H100 (sm_90), with no GPU: Triton's compiler
and ptxas run on any machine, and the interpreter, which runs the helpers as Python, does not see
what only the compiler rejects (a static ``if`` on a dtype whose ``return`` the compiler goes past).

    python tests/sm90_compile.py fp32,fp64,i64   # prints each helper that fails, for each dtype

Run by ``tests/test_triton_gpu_compile.py`` in a process without ``TRITON_INTERPRET``. The
dtypes are those generated kernels give the helpers (16-bit floats are computed in float32)."""
import sys

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from minicompile.inductor.runtime import triton_helpers as h
from minicompile.inductor.runtime.triton_heuristics import with_causes

BINARY = ["floordiv", "remainder", "fmod", "pow", "truncdiv", "maximum", "minimum"]
REDUCTIONS = ["max2", "min2", "argmax", "argmin", "prod"]


@triton.jit
def binary(a_ptr, b_ptr, out_ptr, OP: tl.constexpr):
    i = tl.arange(0, 16)
    a = tl.load(a_ptr + i)
    b = tl.load(b_ptr + i)
    if OP == 0:
        r = h.floordiv(a, b)
    elif OP == 1:
        r = h.remainder(a, b)
    elif OP == 2:
        r = h.fmod(a, b)
    elif OP == 3:
        r = h.pow(a, b)
    elif OP == 4:
        r = h.truncdiv(a, b)
    elif OP == 5:
        r = h.maximum(a, b)
    else:
        r = h.minimum(a, b)
    tl.store(out_ptr + i, r)
    tl.store(out_ptr + 16 + i, h.sign(a))


@triton.jit
def reduction(a_ptr, out_ptr, OP: tl.constexpr):
    r = tl.arange(0, 16)[None, :]
    x = tl.arange(0, 4)[:, None]
    a = tl.load(a_ptr + r + 16 * x)
    if OP == 0:
        v = h.max2(a, 1)
    elif OP == 1:
        v = h.min2(a, 1)
    elif OP == 2:
        v = h.argmax(a, r + x * 0, 1)
    elif OP == 3:
        v = h.argmin(a, r + x * 0, 1)
    else:
        v = h.prod(a, 1)
    tl.store(out_ptr + tl.arange(0, 4), v)


target = GPUTarget("cuda", 90, 32)
failed = []
for dtype in sys.argv[1].split(","):
    pointers = {"a_ptr": "*" + dtype, "b_ptr": "*" + dtype, "out_ptr": "*" + dtype}
    for kernel, names in ((binary, BINARY), (reduction, REDUCTIONS)):
        signature = {p.name: pointers.get(p.name, "constexpr") for p in kernel.params}
        for op, name in enumerate(names):
            try:
                triton.compile(ASTSource(kernel, signature, {"OP": op}), target=target)
            except Exception as e:
                failed.append(f"{name}({dtype}): {type(e).__name__}: {with_causes(e)}")
print("\n".join(failed))
