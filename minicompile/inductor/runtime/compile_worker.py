"""One compile worker process (mirrors torch/_inductor/compile_worker/__main__.py): run as a
script, ``python compile_worker.py <folder holding the minicompile package> [target]``, by
``compile_workers.py``, never imported by the compiler.

It compiles Triton kernels into Triton's on-disk cache and nothing else: the process that asked
then finds each binary there (a cache hit, milliseconds) instead of compiling it. Triton's
compiler is mostly Python, so threads of one process compile one kernel at a time; processes
compile one each.

A worker imports Triton and the kernels' helper module, not torch (seconds to import) and not
the rest of minicompile, and it never touches the GPU: Triton asks its *driver* for the device,
the stream and the target (``sm_90``), and this worker's driver answers with the target it was
told. Each job is one line of JSON on stdin::

    {"path": kernel source file, "module": its module name, "fn": the kernel's name,
     "data": Triton's own specialisation data for the binary (``JITFunction.preload``),
     "target": ["cuda", 90, 32], "env": {"TRITON_CACHE_DIR": ..., ...}}

and each answer one line on stdout, ``{"ok": true, "seconds": {"compile": .., "launcher": ..}}`` or ``{"ok": false, "error": "..."}``. The
worker exits when stdin closes (its parent exited).
"""

import importlib.util
import json
import os
import sys
import threading
import time
import types


def stub_packages(root: str) -> None:
    """Make ``minicompile.inductor.runtime.triton_helpers`` importable without running the
    packages' ``__init__`` files (which import torch): empty package modules that point at the
    real folders."""
    name, folder = "", root
    for part in ("minicompile", "inductor", "runtime"):
        name, folder = f"{name}.{part}" if name else part, os.path.join(folder, part)
        package = types.ModuleType(name)
        package.__path__ = [folder]
        sys.modules[name] = package


class FixedTargetDriver:
    """Triton's driver, as far as compiling asks it: device 0, stream 0, the given target."""

    def __init__(self, target):
        self.target = target

    def get_current_target(self):
        return self.target

    def get_current_device(self):
        return 0

    def get_current_stream(self, device=None):
        return 0

    @property
    def launcher_cls(self):  # builds (with gcc) and caches the C launcher of a signature
        from triton.backends.nvidia.driver import CudaLauncher
        return CudaLauncher


def load_module(path: str, name: str):
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def sync_env(env: dict) -> None:
    """Triton's cache folder and every setting in its cache key, as the parent has them now."""
    for key in [k for k in os.environ if k.startswith("TRITON_") and k not in env]:
        del os.environ[key]
    os.environ.update(env)


# What a launcher reads of a compiled kernel's metadata once it is built: for one built before
# the binary, the values of a kernel with no scratch memory (only the build is kept)
PLAIN_METADATA = types.SimpleNamespace(
    tensordesc_meta=None, num_ctas=1, global_scratch_size=0, global_scratch_align=1,
    profile_scratch_size=0, profile_scratch_align=1, launch_cooperative_grid=False,
    launch_pdl=False)


class LauncherWhileCompiling:
    """Build a job's launcher in a thread while its binary compiles (each about 0.3 s on an
    H100's host; a single kernel's first call waits for both). Triton's C launcher (3.6: one
    per signature, built with gcc) depends only on the argument types and constants, which
    Triton hands to its cache hook before it compiles; the build lands in Triton's cache,
    where the compiled kernel's launcher then finds it. Where Triton's launcher is not built
    per signature, this builds nothing. Installed as the cache hook for one ``preload``."""

    def __init__(self, fn, driver_):
        self.fn, self.driver = fn, driver_
        self.thread: threading.Thread | None = None

    def __call__(self, *, compile: dict, **_) -> None:  # Triton's jit_cache_hook
        src = types.SimpleNamespace(signature=compile["signature"],
                                    constants=compile["constants"], fn=self.fn)
        self.thread = threading.Thread(target=self.build, args=(src,))
        self.thread.start()
        return None  # not handled: Triton goes on and compiles

    def build(self, src) -> None:
        try:
            self.driver.launcher_cls(src, PLAIN_METADATA)
        except Exception:  # noqa: BLE001 (the compiled kernel's launcher is built after)
            pass

    def join(self) -> None:
        if self.thread is not None:
            self.thread.join()


def compile_one(job: dict) -> dict[str, float]:
    """Compile the job's binary and its launcher (started while the binary compiles); seconds
    spent on each."""
    from triton import knobs
    from triton.backends.compiler import GPUTarget
    from triton.runtime.driver import driver

    sync_env(job["env"])
    driver_ = FixedTargetDriver(GPUTarget(*job["target"]))
    driver.set_active(driver_)
    start = time.perf_counter()
    fn = getattr(load_module(job["path"], job["module"]), job["fn"])
    knobs.runtime.jit_cache_hook = early = LauncherWhileCompiling(fn, driver_)
    try:
        kernel = fn.preload(job["data"])
    finally:
        knobs.runtime.jit_cache_hook = None
    compiled = time.perf_counter()
    answer = {"compile": compiled - start, "hash": kernel.hash}
    early.join()
    try:  # its launcher too: the build above, found in the cache
        driver_.launcher_cls(kernel.src, kernel.metadata)
    except Exception as e:  # noqa: BLE001 (the parent builds it)
        answer["launcher_error"] = f"{type(e).__name__}: {e}"[:300]
    answer["launcher"] = time.perf_counter() - compiled
    return answer


def warm_up(target: list) -> None:
    """Compile one small kernel (a load, ``libdevice.exp``, a sum) and build its launcher:
    a process's first compile loads the compiler's dialects and libraries and took half a
    second on an H100, its next ones a tenth of that. A worker pays it before it is ready."""
    import triton
    import triton.language as tl
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.language.extra import libdevice
    from triton.runtime.driver import driver

    @triton.jit
    def warm_up_kernel(in_ptr, out_ptr, XBLOCK: tl.constexpr):
        x = tl.load(in_ptr + tl.arange(0, XBLOCK))
        tl.store(out_ptr, tl.sum(libdevice.exp(x), 0))

    driver_ = FixedTargetDriver(GPUTarget(*target))
    driver.set_active(driver_)
    source = ASTSource(warm_up_kernel, {"in_ptr": "*fp32", "out_ptr": "*fp32",
                                        "XBLOCK": "constexpr"}, {"XBLOCK": 128})
    kernel = triton.compile(source, target=driver_.target, options={"enable_fp_fusion": False})
    driver_.launcher_cls(kernel.src, kernel.metadata)


def main() -> None:
    stub_packages(sys.argv[1])
    import triton  # noqa: F401  (imported before "ready": a job then waits for nothing)
    import triton.language  # noqa: F401
    importlib.import_module("minicompile.inductor.runtime.triton_helpers")
    if len(sys.argv) > 2:  # the target: ["cuda", 90, 32]
        try:
            warm_up(json.loads(sys.argv[2]))
        except Exception:  # noqa: BLE001 (only slower: the first job pays instead)
            pass
    answers = os.fdopen(os.dup(1), "w")  # the answers' own copy of stdout; anything else a
    os.dup2(2, 1)                          # compiler prints (to Python's or C's stdout) -> stderr
    sys.stdout = sys.stderr
    answers.write("ready\n")
    answers.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            answer = {"ok": True, "seconds": compile_one(json.loads(line))}
        except BaseException as e:  # noqa: BLE001 (the parent compiles it again and reports)
            answer = {"ok": False, "error": f"{type(e).__name__}: {e}"}
        answers.write(json.dumps(answer) + "\n")
        answers.flush()


if __name__ == "__main__":
    main()
