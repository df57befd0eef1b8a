"""Compile a generated C++ kernel into a shared object and load it (mirrors ``CppCodeCache`` and
``cpp_builder.py`` in torch/_inductor: ``g++ -O3 -fopenmp -march=native -shared -fPIC``).

One shared object per kernel, not per graph: a kernel is cached by a hash of its own source and
flags, so the same softmax kernel in another graph (the backward of the same model, the next
recompile with another batch size) is a cache hit; a compile error names one kernel; and a
graph's kernels compile in parallel, one ``g++`` process each (``compile_many``).

Loaded with ``ctypes`` rather than as a Python extension: the kernel is a plain ``extern "C"``
function of pointers and ``int64_t`` sizes, so it needs neither Python's nor torch's headers
(compiling against ``torch/extension.h`` takes seconds per kernel; this takes a fraction of
one), and the call is one line: data pointers as ``c_void_p``, sizes as ``c_int64``.

``build`` is the whole on-disk cache until the shared one (``codecache.py``) lands: a private
directory, files named by the SHA-256 of source + prefix header + compiler + flags, compiled to a
temporary name and renamed into place atomically, so that a reader never sees half a file.

Most of a kernel's compile time is parsing the C++ headers ``cpp_prefix.h`` includes, so the
prefix is precompiled once per cache (``cpp_prefix.h.gch`` next to a copy of the header, as
Inductor does): about 0.2 s per kernel instead of 0.7 s. ``g++`` ignores a precompiled header that
does not match its flags and parses the header instead: slower, never wrong.
"""

from __future__ import annotations

import concurrent.futures
import ctypes
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
from typing import Callable

from .. import codecache
from .common import CodegenError

def libmvec_level() -> int:
    """glibc's vector math (sin, exp... 8 at a time in `omp simd` loops) where it exists: x86-64
    Linux, glibc >= 2.22 (222); 2.35 (235) added tanh, erf, log1p...; 0: none. See cpp_prefix.h."""
    version = os.confstr("CS_GNU_LIBC_VERSION") if hasattr(os, "confstr") else None
    if platform.machine() != "x86_64" or not version or not version.startswith("glibc "):
        return 0
    major, minor = (int(p) for p in version.split()[1].split(".")[:2])
    return 235 if (major, minor) >= (2, 35) else 222 if (major, minor) >= (2, 22) else 0


LIBMVEC_LEVEL = libmvec_level()


def cpu_flags() -> set[str]:
    """The flags of this machine's CPU as Linux lists them (``avx512_bf16``...); empty elsewhere.
    ``-march=native`` compiles for exactly these."""
    try:
        with open("/proc/cpuinfo") as f:
            return next((set(line.split(":", 1)[1].split()) for line in f
                         if line.startswith("flags")), set())
    except OSError:
        return set()


# one instruction converts 16 floats to bfloat16, rounding to nearest even (cpp_blocks.py)
HAS_AVX512_BF16 = "avx512_bf16" in cpu_flags()


CXX = os.environ.get("CXX", "g++")
FLAGS = [
    "-O3", "-march=native",  # vector instructions of this machine (AVX2/AVX-512 where present)
    "-fopenmp",  # the parallel loops and `omp simd` reductions
    "-fno-math-errno",  # sqrt may be one instruction and vectorise: torch never reads errno
    # nor the floating-point exception flags: without this g++ 12 keeps a select (relu, where)
    # next to a vector call (sin, exp) as a branch, and the whole loop stays scalar
    "-fno-trapping-math",
    # each multiply rounded, then each add, as eager's kernels do: g++ fuses a * b - c into one
    # multiply-add by default, and a value recomputed in a second loop over the row (fused
    # there, not in the first) differs: exp(x * 0.1 - amax(x * 0.1)) gave inf for the max
    "-ffp-contract=off",
    "-std=c++17", *([f"-DMC_LIBMVEC={LIBMVEC_LEVEL}"] if LIBMVEC_LEVEL else []),  # (the cache adds -shared -fPIC)
]
LIBS = ["-lmvec"] if LIBMVEC_LEVEL else []  # after the source: the linker drops unused ones
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "cpp_prefix.h")) as _f:
    PREFIX = _f.read()


class CppCompileError(CodegenError):
    """The C++ compiler rejected a kernel (or there is none): ``compile_fx`` falls back."""


def flags(vectorize: bool = True) -> list[str]:
    """``FLAGS``, and ``-fno-tree-vectorize`` when the ``cpp_vectorize`` option is off."""
    return FLAGS + ([] if vectorize else ["-fno-tree-vectorize"])


def command(source_path: str, output_path: str, vectorize: bool = True,
            include_dir: str = "<cache>") -> list[str]:
    """The compiler command of a kernel, as ``codecache.CppCodeCache`` runs it."""
    return [CXX, source_path, *flags(vectorize), "-I", include_dir, *LIBS, "-shared", "-fPIC", "-o",
            output_path]


def precompiled_prefix(directory: str, vectorize: bool = True) -> str:
    """A folder holding ``cpp_prefix.h`` and its precompiled form, built once per cache (and
    per flags: g++ uses a precompiled header only where the flags match)."""
    key = hashlib.sha256("\0".join([PREFIX, CXX, *flags(vectorize)]).encode()).hexdigest()[:16]
    path = os.path.join(directory, f"prefix-{key}")
    header, pch = os.path.join(path, "cpp_prefix.h"), os.path.join(path, "cpp_prefix.h.gch")
    if not os.path.exists(pch) and shutil.which(CXX) is not None:
        os.makedirs(path, mode=0o700, exist_ok=True)
        if not os.path.exists(header):
            codecache.write_atomic(header, PREFIX.encode())
        fd, tmp = tempfile.mkstemp(dir=path, prefix=".cpp_prefix.", suffix=".gch")
        os.close(fd)
        result = subprocess.run([CXX, *flags(vectorize), "-fPIC", "-x", "c++-header", header, "-o", tmp],
                                capture_output=True)
        if result.returncode == 0:
            os.replace(tmp, pch)  # if it failed, kernels parse the header itself
        else:
            os.unlink(tmp)
    return path


def load(source: str, name: str, argtypes: list, checks: bool = False,
         vectorize: bool = True) -> tuple[Callable, Callable[[], tuple[int, int, int]]]:
    """The kernel's C function, compiled on a cache miss, and a reader of the check that failed
    in this thread's last call (``(site, value, size)``: cpp_prefix.h's ``mc_kernel_error``).
    A kernel that ``checks`` returns whether one failed."""
    try:
        include_dir = precompiled_prefix(codecache.cache_dir(), vectorize)
        lib = codecache.CppCodeCache.load(source, name, [*flags(vectorize), "-I", include_dir, *LIBS], CXX)
    except codecache.CompileError as error:
        raise CppCompileError(str(error)) from error
    fn = getattr(lib, name)
    fn.argtypes, fn.restype = argtypes, (ctypes.c_int64 if checks else None)

    def last_error() -> tuple[int, int, int]:
        record = (ctypes.c_int64 * 3)()
        lib.mc_kernel_error(record)
        return tuple(record)

    return fn, last_error


def compile_many(jobs: list[Callable[[], None]]) -> None:
    """Run build jobs in parallel (each waits on its own ``g++``): a graph's kernels at once."""
    if len(jobs) <= 1:
        for job in jobs:
            job()
        return
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        for future in [pool.submit(job) for job in jobs]:
            future.result()  # re-raises the first compile error
