"""The kernel cache (minicompile/inductor/codecache.py): content addressing, a private directory,
atomic writes under concurrency, integrity checks, and C++ compile errors that say what failed."""

import ctypes
import multiprocessing
import os
import stat
import threading

import pytest

from minicompile.inductor import codecache
from minicompile.inductor.codecache import CompileError, CppCodeCache, PyCodeCache

ADD_CPP = """
#include <cstdint>
extern "C" int64_t add(int64_t a, int64_t b) { return a + b; }
"""
FOREIGN_UID = 12345  # a uid that is not ours (tests that use it run as root)
needs_root = pytest.mark.skipif(os.getuid() != 0, reason="os.chown to another uid needs root")


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    """Every test gets its own cache directory and an empty in-memory cache."""
    monkeypatch.setenv("MINICOMPILE_CACHE_DIR", str(tmp_path / "cache"))
    codecache.clear()
    yield tmp_path / "cache"
    codecache.clear()


def load_add(flags=("-O2",)):
    lib = CppCodeCache.load(ADD_CPP, "add_kernel", list(flags))
    lib.add.argtypes = [ctypes.c_int64, ctypes.c_int64]
    lib.add.restype = ctypes.c_int64
    return lib


def py_kernel(value: int) -> str:
    return f"def answer():\n    return {value}\n"


# --- content addressing ---------------------------------------------------------------------------
def test_same_source_same_path_different_source_different_key():
    a = PyCodeCache.load(py_kernel(1), "k")
    codecache.clear()
    again = PyCodeCache.load(py_kernel(1), "k")
    other = PyCodeCache.load(py_kernel(2), "k")
    assert a.__file__ == again.__file__ != other.__file__
    assert (a.answer(), other.answer()) == (1, 2)
    assert os.path.dirname(a.__file__).startswith(codecache.cache_dir())


def test_loaded_module_is_a_real_file_for_inspect():
    import inspect

    mod = PyCodeCache.load(py_kernel(7), "k")
    assert inspect.getsource(mod.answer) == py_kernel(7)
    assert PyCodeCache.load(py_kernel(7), "k") is mod  # in-memory hit


def test_flags_and_compiler_are_part_of_the_key():
    k1 = codecache.code_hash(ADD_CPP, "g++", "-O2")
    assert k1 == codecache.code_hash(ADD_CPP, "g++", "-O2")
    assert k1 != codecache.code_hash(ADD_CPP, "g++", "-O3")
    assert codecache.code_hash("ab", "c") != codecache.code_hash("a", "bc")
    assert load_add(["-O2"]).cache_path != load_add(["-O1"]).cache_path


def test_loaded_cpp_function_runs():
    lib = load_add()
    assert lib.add(2**40, 3) == 2**40 + 3  # 64-bit arithmetic really happened in the .so
    assert lib.cache_path.endswith("add_kernel.so")
    assert os.path.exists(lib.cache_path[: -len(".so")] + ".cpp")


# --- the private directory ------------------------------------------------------------------------
def test_cache_dir_is_created_private(private_cache):
    assert codecache.cache_dir() == str(private_cache)
    assert stat.S_IMODE(os.stat(private_cache).st_mode) == 0o700
    mod = PyCodeCache.load(py_kernel(1), "k")
    assert stat.S_IMODE(os.stat(os.path.dirname(mod.__file__)).st_mode) == 0o700


def test_world_writable_dir_is_refused(tmp_path, monkeypatch):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setenv("MINICOMPILE_CACHE_DIR", str(shared))
    with pytest.warns(UserWarning, match="writable by group or others"):
        used = codecache.cache_dir()
    assert used != str(shared)
    assert stat.S_IMODE(os.stat(used).st_mode) == 0o700
    assert PyCodeCache.load(py_kernel(3), "k").__file__.startswith(used)
    assert list(shared.iterdir()) == []


@needs_root
def test_foreign_owned_dir_is_refused(tmp_path, monkeypatch):
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o700)
    os.chown(theirs, FOREIGN_UID, -1)
    monkeypatch.setenv("MINICOMPILE_CACHE_DIR", str(theirs))
    with pytest.warns(UserWarning, match=f"owned by uid {FOREIGN_UID}"):
        assert codecache.cache_dir() != str(theirs)


# --- integrity ------------------------------------------------------------------------------------
def reload_after(mutate):
    """Load a kernel, damage its file on disk, and load it again with an empty memory cache."""
    path = PyCodeCache.load(py_kernel(41), "k").__file__
    mutate(path)
    codecache.clear()
    mod = PyCodeCache.load(py_kernel(41), "k")
    assert mod.__file__ == path
    return mod, path


def test_truncated_file_is_rebuilt():
    def truncate(path):
        with open(path, "r+b") as f:
            f.truncate(10)

    mod, path = reload_after(truncate)
    assert mod.answer() == 41
    assert open(path).read() == py_kernel(41)


def test_flipped_byte_is_rebuilt_not_loaded():
    def flip(path):  # "return 41" -> "return 49": still valid Python, wrong answer if loaded
        data = bytearray(open(path, "rb").read())
        data[data.index(b"1\n")] ^= 0x08
        open(path, "wb").write(bytes(data))

    mod, path = reload_after(flip)
    assert mod.answer() == 41


def test_missing_or_garbled_sidecar_is_rebuilt():
    mod, path = reload_after(lambda p: open(p + ".sha256", "w").write("not a digest"))
    assert mod.answer() == 41
    mod, path = reload_after(lambda p: os.unlink(p + ".sha256"))
    assert mod.answer() == 41
    assert codecache._read_verified(path) == py_kernel(41).encode()


@needs_root
def test_foreign_owned_file_is_rebuilt():
    mod, path = reload_after(lambda p: os.chown(p, FOREIGN_UID, -1))
    assert os.stat(path).st_uid == os.getuid()
    assert mod.answer() == 41


@needs_root
def test_foreign_owned_sidecar_is_rebuilt():
    """Whoever owns the digest decides what passes the check: it must be ours too."""
    mod, path = reload_after(lambda p: os.chown(p + ".sha256", FOREIGN_UID, -1))
    assert os.stat(path + ".sha256").st_uid == os.getuid()
    assert mod.answer() == 41


@needs_root
def test_foreign_owned_shared_object_is_rebuilt_not_loaded():
    path = load_add().cache_path
    os.chown(path, FOREIGN_UID, -1)
    codecache.clear()
    assert codecache._read_verified(path) is None  # refused, even though its digest matches
    assert load_add().add(2, 3) == 5
    assert os.stat(path).st_uid == os.getuid()


def test_corrupted_shared_object_is_rebuilt():
    path = load_add().cache_path
    good = open(path, "rb").read()
    codecache.write_atomic(path, good[: len(good) // 2])  # a new inode: the loaded copy is intact
    codecache.clear()
    assert load_add().add(1, 2) == 3
    assert codecache._read_verified(path) == open(path, "rb").read()
    assert len(open(path, "rb").read()) == len(good)


# --- concurrency ----------------------------------------------------------------------------------
def test_threads_loading_the_same_kernel_compile_once(monkeypatch):
    writes = []
    real_write = codecache.write_atomic
    monkeypatch.setattr(codecache, "write_atomic", lambda p, d: (writes.append(p), real_write(p, d)))
    barrier = threading.Barrier(8)
    results = []

    def worker():
        barrier.wait()
        results.append(PyCodeCache.load(py_kernel(5), "k"))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 8 and all(m is results[0] for m in results)
    assert len(writes) == 2  # the module and its sidecar, once


def _compile_in_other_process(barrier, queue, cache_dir):
    os.environ["MINICOMPILE_CACHE_DIR"] = cache_dir
    barrier.wait()  # both processes start writing the same keys at the same moment
    answers = [PyCodeCache.load(py_kernel(i), f"k{i}").answer() for i in range(30)]
    queue.put((answers, load_add().add(40, 2)))


def test_two_processes_writing_the_same_keys(private_cache):
    ctx = multiprocessing.get_context("spawn")
    barrier, queue = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_compile_in_other_process, args=(barrier, queue, str(private_cache)))
             for _ in range(2)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert results == [(list(range(30)), 42)] * 2
    leftovers = [f for _, _, files in os.walk(private_cache) for f in files if f.startswith(".")]
    assert leftovers == []  # every temporary file was renamed into place
    assert load_add().add(1, 1) == 2  # and what they left verifies and loads here


# --- compile errors -------------------------------------------------------------------------------
def test_compile_error_names_kernel_source_command_and_stderr():
    bad = 'extern "C" int broken() { return undefined_thing; }\n'
    with pytest.raises(CompileError) as info:
        CppCodeCache.load(bad, "cpp_fused_broken_0", ["-O1"])
    msg = str(info.value)
    assert isinstance(info.value, RuntimeError)
    assert "cpp_fused_broken_0" in msg
    assert "cpp_fused_broken_0.cpp" in msg and os.path.exists(msg.split("source: ")[1].split()[0])
    assert "command: g++ " in msg and "-O1" in msg
    assert "undefined_thing" in msg  # the compiler's own complaint
    assert not os.path.exists(msg.split("source: ")[1].split()[0][:-4] + ".so")


def test_compile_error_quotes_at_most_40_lines_of_stderr():
    many = "".join(f"int f{i}() {{ return nope{i}; }}\n" for i in range(60))
    with pytest.raises(CompileError, match=r"more lines\)") as info:
        CppCodeCache.load(many, "many_errors", [])
    assert len(str(info.value).splitlines()) <= 3 + codecache.STDERR_LINES + 1


def test_missing_compiler():
    with pytest.raises(CompileError, match="no C\\+\\+ compiler found.*MINICOMPILE_CPU_BACKEND"):
        CppCodeCache.load(ADD_CPP, "add_kernel", [], compiler="no-such-compiler-xyz")


def test_bad_kernel_name_is_refused():
    with pytest.raises(ValueError, match="identifier"):
        PyCodeCache.load(py_kernel(1), "../escape")


# --- hardening: the bytes loaded, the target, the folders above, stale temporaries ---------------
def test_shared_object_is_loaded_from_the_checked_bytes_not_the_cache_path():
    """The cache's file is checked against its digest; what is loaded is a private copy of the
    bytes checked, so a file replaced between the check and the load is never run."""
    lib = load_add()
    assert not lib._name.startswith(codecache.cache_dir())
    assert not os.path.exists(lib._name)  # the copy is removed once loaded
    with open(lib.cache_path, "r+b") as f:  # the cached file changes after the load...
        f.write(b"\0" * 64)
    assert lib.add(2, 3) == 5  # ...the loaded library is the one that was checked


def test_key_names_the_resolved_target_not_march_native():
    target = codecache.resolved_target("g++", ("-O3", "-march=native"))
    assert "-march=" in target and "-march=native" not in target.split()
    assert codecache.resolved_target("g++", ("-O3",)) == ""


def test_a_different_cpu_misses_the_cache(monkeypatch):
    """Two machines sharing a cache: a kernel built for another CPU has another key."""
    first = load_add(["-O2", "-march=native"]).cache_path
    codecache.clear()
    monkeypatch.setattr(codecache, "resolved_target", lambda *a: "-march=some-other-cpu")
    assert load_add(["-O2", "-march=native"]).cache_path != first


def test_cache_inside_a_folder_others_can_write_is_refused(tmp_path, monkeypatch):
    """Whoever can write into a parent folder can rename the cache and put their own there."""
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    monkeypatch.setenv("MINICOMPILE_CACHE_DIR", str(shared / "cache"))
    with pytest.warns(UserWarning, match="a folder above it"):
        used = codecache.cache_dir()
    assert used != str(shared / "cache")


def test_stale_temporaries_are_removed_at_start_up(tmp_path, monkeypatch):
    cache = tmp_path / "fresh-cache"
    (cache / "key").mkdir(parents=True, mode=0o700)
    os.chmod(cache, 0o700)
    stale, recent, kept = cache / "key" / ".k.so.abc", cache / "key" / ".k.so.def", cache / "key" / "k.so"
    for f in (stale, recent, kept):
        f.write_bytes(b"x")
    old = os.stat(stale).st_mtime - codecache.STALE_SECONDS - 60
    os.utime(stale, (old, old))
    os.utime(kept, (old, old))
    monkeypatch.setenv("MINICOMPILE_CACHE_DIR", str(cache))
    assert codecache.cache_dir() == str(cache)
    assert not stale.exists() and recent.exists() and kept.exists()


def test_triton_kernels_live_in_the_checked_cache(private_cache, monkeypatch):
    """The Triton backend wrote each process's kernels into a new /tmp folder, never removed."""
    pytest.importorskip("triton")
    if os.environ.get("TRITON_INTERPRET", "0") in ("", "0"):
        pytest.skip("Triton kernels on CPU tensors need TRITON_INTERPRET=1")
    import torch

    import minicompile as mc
    from minicompile import config
    from minicompile.inductor.codegen.wrapper import WrapperCodeGen

    seen = []
    define = WrapperCodeGen.define_kernel
    monkeypatch.setattr(WrapperCodeGen, "define_kernel",
                        lambda self, name, kernel, src: seen.append(kernel) or define(self, name, kernel, src))
    monkeypatch.setattr(config.inductor, "cpu_backend", "triton")
    mc.reset()
    x = torch.randn(5, 7)
    torch.testing.assert_close(mc.compile(lambda x: x.sin() + 1)(x), x.sin() + 1)
    files = [k.fn.fn.__code__.co_filename for k in seen]
    assert files and all(f.startswith(str(private_cache)) for f in files)
    mc.reset()
