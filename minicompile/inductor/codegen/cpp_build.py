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
"""

from __future__ import annotations

import concurrent.futures
import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from typing import Callable

from .common import CodegenError

CXX = os.environ.get("CXX", "g++")
FLAGS = [
    "-O3", "-march=native",  # vector instructions of this machine (AVX2/AVX-512 where present)
    "-fopenmp",  # the parallel loops and `omp simd` reductions
    "-fno-math-errno",  # sqrt may be one instruction and vectorise: torch never reads errno
    "-std=c++17", "-shared", "-fPIC",
]
PREFIX_DIR = os.path.dirname(os.path.abspath(__file__))  # where cpp_prefix.h lives
with open(os.path.join(PREFIX_DIR, "cpp_prefix.h")) as _f:
    PREFIX = _f.read()
CACHE_DIR: str | None = None  # None: a private folder under the system temp dir


class CppCompileError(CodegenError):
    """The C++ compiler rejected a kernel (or there is none)."""


def command(source_path: str, output_path: str) -> list[str]:
    return [CXX, *FLAGS, "-I", PREFIX_DIR, source_path, "-o", output_path]


def cache_dir() -> str:
    path = CACHE_DIR or os.path.join(tempfile.gettempdir(), f"minicompile_{os.getuid()}", "cpp")
    os.makedirs(path, mode=0o700, exist_ok=True)
    if os.stat(path).st_uid != os.getuid():  # someone else's folder: never load its code
        raise CppCompileError(f"kernel cache {path} belongs to another user")
    return path


def build(source: str, name: str) -> str:
    """The path of ``source`` compiled to a shared object, compiling only on a cache miss."""
    key = hashlib.sha256("\0".join([source, PREFIX, CXX, *FLAGS]).encode()).hexdigest()
    directory = cache_dir()
    so_path = os.path.join(directory, f"{key}.so")
    if os.path.exists(so_path):
        return so_path
    if shutil.which(CXX) is None:
        raise CppCompileError(f"no C++ compiler {CXX!r} to build kernel {name}: install g++, set "
                              "CXX, or use MINICOMPILE_CPU_BACKEND=reference")
    source_path = os.path.join(directory, f"{key}.cpp")
    tmp = f".{os.getpid()}.{id(source)}.tmp"  # unique to this build: concurrent builds never clash
    with open(source_path + tmp, "w") as f:
        f.write(source)
    os.replace(source_path + tmp, source_path)
    result = subprocess.run(command(source_path, so_path + tmp), capture_output=True, text=True)
    if result.returncode != 0:
        raise CppCompileError(f"{CXX} could not compile kernel {name} (source: {source_path}):\n"
                              f"{' '.join(command(source_path, so_path))}\n{result.stderr[-4000:]}")
    os.replace(so_path + tmp, so_path)
    return so_path


def load(source: str, name: str, argtypes: list) -> Callable:
    """The kernel's C function, built if needed; a cached file that no longer loads (truncated,
    corrupted) is removed and rebuilt once."""
    path = build(source, name)
    try:
        lib = ctypes.CDLL(path)
    except OSError:
        os.remove(path)
        lib = ctypes.CDLL(build(source, name))
    fn = getattr(lib, name)
    fn.argtypes, fn.restype = argtypes, None
    return fn


def compile_many(jobs: list[Callable[[], None]]) -> None:
    """Run build jobs in parallel (each waits on its own ``g++``): a graph's kernels at once."""
    if len(jobs) <= 1:
        for job in jobs:
            job()
        return
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        for future in [pool.submit(job) for job in jobs]:
            future.result()  # re-raises the first compile error
