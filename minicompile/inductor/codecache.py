"""The on-disk kernel cache shared by the code generators (mirrors torch/_inductor/codecache.py:
``PyCodeCache``, ``CppCodeCache``, ``code_hash``, ``write_atomic``, ``cache_dir``).

A kernel is stored under the hash of everything that decides its artifact::

    <cache_dir>/<key>/<name>.py        Triton kernels (a real file, so inspect.getsource works)
    <cache_dir>/<key>/<name>.cpp, .so  C++ kernels, compiled with the system compiler
    <artifact>.sha256                  sidecar: "<sha256 of the artifact> <length in bytes>"

- Content addressing: ``key = sha256(source, compiler command and version, python, torch and
  triton versions)``. Same inputs, same path: a second process (or a second run) finds the
  artifact and skips the compile.
- Private directory: ``$MINICOMPILE_CACHE_DIR`` or ``~/.cache/minicompile/<user>``, mode 0700.
  We execute what we find there, so a directory another user could write into, or one inside
  such a directory (every folder up to the home directory or a root-owned sticky one such as
  /tmp is checked: whoever can write into a parent can rename the cache away and put their own
  in its place), is refused with a warning that says why, and a fresh private directory is used.
- The target: ``-march=native`` means this machine's CPU, so the key holds what the compiler
  resolved it to (``-march=znver3`` and each ``-m`` flag): a cache shared between machines (a
  home directory on NFS) never hands one a binary with instructions its CPU lacks (SIGILL).
- Temporaries left by a killed process (``kill -9`` mid-compile) are removed at start-up when
  they are ours and older than ``STALE_SECONDS``.
- Atomic writes: a file is written under a temporary name in the same directory, fsync'ed, then
  ``os.replace``'d into place, so a reader sees the old file or the whole new one, never half.
  Two processes building the same kernel both write complete, equal files; the last one wins.
- Integrity: an artifact is loaded only if it is ours and matches its sidecar's digest and length,
  and what is loaded is the bytes that were checked (a Python module is compiled from them; a
  shared object is loaded from a private copy, not opened again by name: another writer could
  have replaced it in between). A truncated, corrupted or foreign-owned file is
  rebuilt, never loaded.
- In memory: one dict ``path -> loaded module or library`` per cache, behind a lock per key, so
  two threads asking for the same kernel compile it once and get the same object.
"""

from __future__ import annotations

import ctypes
import getpass
import hashlib
import importlib.metadata
import logging
import os
import platform
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time
import types
import warnings
from functools import cache
from typing import Any, Callable

log = logging.getLogger(__name__)

STDERR_LINES = 40  # how much of the compiler's complaint a CompileError quotes
NO_COMPILER = ("no C++ compiler found ({!r} is not on PATH): "
               "install g++ or set MINICOMPILE_CPU_BACKEND=reference")


class CompileError(RuntimeError):
    """A kernel's C++ source did not compile, or there is no compiler to compile it."""


# --- where the cache lives ------------------------------------------------------------------------
_resolved_dirs: dict[str, str] = {}  # requested directory -> directory in use (checked once)


def _default_dir() -> str:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no passwd entry and no $USER: a container, say
        user = str(os.getuid())
    home = os.path.expanduser("~")
    root = os.path.join(home, ".cache") if home != "~" else tempfile.gettempdir()
    return os.path.join(root, "minicompile", user)


def _why_not_private(path: str) -> str | None:
    """None if ``path`` is a directory only we can write into, and so is each folder above it
    up to our home directory or a root-owned sticky one (/tmp); else the reason it is not."""
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a directory (or is a symlink)"
    if st.st_uid != os.getuid():
        return f"it is owned by uid {st.st_uid}, not by us (uid {os.getuid()})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"it is writable by group or others (mode {stat.S_IMODE(st.st_mode):o})"
    return _why_not_safe_parents(os.path.dirname(os.path.abspath(path)))


def _why_not_safe_parents(folder: str) -> str | None:
    home = os.path.realpath(os.path.expanduser("~"))
    while True:
        st = os.stat(folder)
        sticky_root = st.st_uid == 0 and st.st_mode & stat.S_ISVTX
        if os.path.realpath(folder) == home or sticky_root:
            return None  # nobody else may rename what is inside
        if st.st_uid not in (0, os.getuid()) or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return (f"a folder above it, {folder}, is owned by uid {st.st_uid} with mode "
                    f"{stat.S_IMODE(st.st_mode):o}: others could replace the cache inside it")
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def cache_dir() -> str:
    """The private directory kernels are cached in (created with mode 0700 if missing)."""
    requested = os.environ.get("MINICOMPILE_CACHE_DIR") or _default_dir()
    if requested not in _resolved_dirs:
        try:
            os.makedirs(requested, mode=0o700, exist_ok=True)
            reason = _why_not_private(requested)
        except OSError as e:
            reason = f"it cannot be created ({e})"
        path = requested
        if reason is None:
            remove_stale_temporaries(path)
        if reason is not None:
            path = tempfile.mkdtemp(prefix="minicompile-")  # mkdtemp makes it 0700
            warnings.warn(f"minicompile: not using kernel cache {requested}: {reason}; "
                          f"using the fresh private directory {path} instead", stacklevel=2)
        _resolved_dirs[requested] = path
    return _resolved_dirs[requested]


STALE_SECONDS = 600  # a temporary this old was left by a process that died mid-write


def remove_stale_temporaries(root: str) -> int:
    """Remove our temporaries (``.name.XXXX``: a half-written file, a compile's output, a
    precompiled header) older than ``STALE_SECONDS``, left by a killed process; their count."""
    removed, now = 0, time.time()
    for folder, _, files in os.walk(root):
        for f in files:
            path = os.path.join(folder, f)
            try:
                st = os.lstat(path)
                if f.startswith(".") and st.st_uid == os.getuid() and \
                        now - st.st_mtime > STALE_SECONDS and stat.S_ISREG(st.st_mode):
                    os.unlink(path)
                    removed += 1
            except OSError:  # removed by another process meanwhile
                pass
    return removed


# --- keys, atomic writes, integrity ---------------------------------------------------------------
@cache
def _environment() -> tuple[str, ...]:
    """Versions that change what a kernel compiles to, part of every key."""
    def version(dist: str) -> str:
        try:
            return f"{dist}=={importlib.metadata.version(dist)}"
        except importlib.metadata.PackageNotFoundError:
            return f"{dist} missing"
    return (f"python {sys.version}", version("torch"), version("triton"))


def code_hash(source: str, *extra: str) -> str:
    """sha256 of the source and every string that changes its artifact, as 64 hex digits."""
    h = hashlib.sha256()
    for part in (source, *extra, *_environment()):
        h.update(part.encode())
        h.update(b"\0")  # ("ab", "c") and ("a", "bc") must hash differently
    return h.hexdigest()


def write_atomic(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or all of the new one."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=f".{os.path.basename(path)}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())  # the bytes are on disk before the name points at them
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _sidecar(path: str) -> str:
    return path + ".sha256"


def _write_sidecar(path: str, data: bytes) -> None:
    """Record the artifact's digest and length; written after the artifact itself is in place."""
    write_atomic(_sidecar(path), f"{hashlib.sha256(data).hexdigest()} {len(data)}\n".encode())


def _read_verified(path: str) -> bytes | None:
    """The artifact's bytes if it is ours and matches its sidecar; None means build it (again)."""
    try:
        if any(os.stat(p).st_uid != os.getuid() for p in (path, _sidecar(path))):
            log.warning("rebuilding %s: owned by another user", path)
            return None
        with open(path, "rb") as f:
            data = f.read()
        with open(_sidecar(path)) as f:
            digest, length = f.read().split()
    except FileNotFoundError:
        return None  # not built yet (or a crash between artifact and sidecar)
    except (OSError, ValueError) as e:
        log.warning("rebuilding %s: unreadable cache entry (%s)", path, e)
        return None
    if len(data) != int(length) or hashlib.sha256(data).hexdigest() != digest:
        log.warning("rebuilding %s: truncated or corrupted (sha256 does not match)", path)
        return None
    return data


def _artifact_path(key: str, name: str, suffix: str) -> str:
    if not name.isidentifier():  # a name is a file name inside the key's directory, no more
        raise ValueError(f"kernel name must be an identifier, got {name!r}")
    key_dir = os.path.join(cache_dir(), key)
    os.makedirs(key_dir, mode=0o700, exist_ok=True)
    return os.path.join(key_dir, name + suffix)


# --- the in-memory layer --------------------------------------------------------------------------
class _LoadedCache:
    """path -> loaded object; one lock per path so the same kernel is built once per process."""

    def __init__(self) -> None:
        self.loaded: dict[str, Any] = {}
        self.locks: dict[str, threading.Lock] = {}
        self.lock = threading.Lock()  # guards the two dicts themselves

    def get(self, path: str, build: Callable[[], Any]) -> Any:
        with self.lock:
            if path in self.loaded:
                return self.loaded[path]
            path_lock = self.locks.setdefault(path, threading.Lock())
        with path_lock:  # a second thread waits here, then finds the first one's result
            if path not in self.loaded:
                self.loaded[path] = build()
            return self.loaded[path]

    def clear(self) -> None:
        with self.lock:
            self.loaded.clear()
            self.locks.clear()


# --- Python (Triton) kernels ----------------------------------------------------------------------
class PyCodeCache:
    """Python source -> module, imported from a real file in the cache."""

    cache = _LoadedCache()

    @classmethod
    def load(cls, source: str, name: str) -> types.ModuleType:
        key = code_hash(source)
        path = _artifact_path(key, name, ".py")
        return cls.cache.get(path, lambda: cls._load(path, source, f"{name}_{key[:16]}"))

    @staticmethod
    def _load(path: str, source: str, module_name: str) -> types.ModuleType:
        data = _read_verified(path)
        if data is None:
            data = source.encode()
            write_atomic(path, data)
            _write_sidecar(path, data)
        # Execute the bytes we verified (not whatever the file holds a moment later), as Inductor's
        # PyCodeCache does; __file__ and the code's filename point at the file for inspect.
        module = types.ModuleType(module_name)
        module.__file__ = path
        sys.modules[module.__name__] = module  # some decorators look their module up by name
        exec(compile(data, path, "exec"), module.__dict__)
        return module


# --- C++ kernels ----------------------------------------------------------------------------------
@cache
def _compiler_version(compiler: str) -> str:
    """First line of ``compiler --version``: a compiler upgrade must miss the cache."""
    if shutil.which(compiler) is None:
        raise CompileError(NO_COMPILER.format(compiler))
    out = subprocess.run([compiler, "--version"], capture_output=True, text=True, check=False)
    lines = (out.stdout or out.stderr).splitlines()
    return lines[0] if lines else compiler


@cache
def resolved_target(compiler: str, flags: tuple[str, ...]) -> str:
    """What ``-march=native`` means on this machine, as the compiler resolves it (``-march=znver3``
    and the ``-m`` flags it enables), part of a C++ kernel's key; '' without ``-march=native``."""
    if "-march=native" not in flags:
        return ""
    out = subprocess.run([compiler, "-march=native", "-Q", "--help=target"], capture_output=True,
                         text=True, check=False).stdout
    lines = [" ".join(line.split()) for line in out.splitlines() if line.strip().startswith("-m")]
    return "\n".join(sorted(lines)) or f"unresolved: {platform.processor()} {platform.machine()}"


class CppCodeCache:
    """C++ source -> shared object compiled with the system compiler, loaded with ctypes."""

    cache = _LoadedCache()

    @classmethod
    def load(cls, source: str, name: str, flags: list[str], compiler: str = "g++") -> ctypes.CDLL:
        key = code_hash(source, compiler, _compiler_version(compiler), *flags,
                        resolved_target(compiler, tuple(flags)))
        path = _artifact_path(key, name, ".so")
        return cls.cache.get(path, lambda: cls._load(path, source, name, flags, compiler))

    @staticmethod
    def _load(path: str, source: str, name: str, flags: list[str], compiler: str) -> ctypes.CDLL:
        if _read_verified(path) is None:
            cpp_path = path[: -len(".so")] + ".cpp"
            write_atomic(cpp_path, source.encode())
            # compile to a private name, then publish it: another process may be loading path
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=f".{name}.", suffix=".so")
            os.close(fd)
            try:
                _compile(name, cpp_path, [compiler, cpp_path, *flags, "-shared", "-fPIC", "-o", tmp])
                with open(tmp, "rb") as f:
                    os.fsync(f.fileno())
                    data = f.read()
                os.replace(tmp, path)
            except BaseException:
                os.unlink(tmp)
                raise
            _write_sidecar(path, data)
        data = _read_verified(path)
        if data is None:
            raise CompileError(f"C++ kernel {name}: {path} changed while it was being loaded")
        lib = _load_bytes(data, name)
        lib.cache_path = path  # where its checked bytes are cached (the loaded copy is gone)
        return lib


def _load_bytes(data: bytes, name: str) -> ctypes.CDLL:
    """The shared object holding exactly ``data`` (the bytes checked), loaded from a private
    copy named by its digest and removed once loaded: never the cache's path opened again."""
    with tempfile.TemporaryDirectory(prefix="minicompile-so-") as folder:  # mode 0700
        copy = os.path.join(folder, f"{name}-{hashlib.sha256(data).hexdigest()[:16]}.so")
        with open(copy, "wb") as f:
            f.write(data)
        return ctypes.CDLL(copy)  # (the loaded library keeps its mapping after the unlink)


def _compile(name: str, cpp_path: str, cmd: list[str]) -> None:
    try:
        result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    except FileNotFoundError:  # removed between the version check and now
        raise CompileError(NO_COMPILER.format(cmd[0])) from None
    if result.returncode != 0:
        lines = result.stderr.splitlines()
        shown = "\n".join(lines[:STDERR_LINES])
        if len(lines) > STDERR_LINES:
            shown += f"\n... ({len(lines) - STDERR_LINES} more lines)"
        raise CompileError(f"C++ kernel {name} failed to compile\n  source: {cpp_path}\n"
                           f"  command: {shlex.join(cmd)}\n{shown}")


def clear() -> None:
    """Forget every loaded kernel (the files stay on disk); for tests."""
    PyCodeCache.cache.clear()
    CppCodeCache.cache.clear()
