"""Knobs of the whole compiler, in one place (mirrors torch/_dynamo/config.py and torch/_inductor/config.py).

Everything here is a plain module attribute so a learner can flip it in a notebook::

    import minicompile.config as config
    config.recompile_limit = 2
"""

import os

# --- dynamo ---------------------------------------------------------------------------------------
recompile_limit = 8  # entries per code object before the frame runs eagerly (cache_size_limit)
automatic_dynamic_shapes = True  # a dim whose size changed becomes symbolic on the next compile
specialize_int = False  # an int argument that changed becomes a SymInt instead of a constant
specialize_float = False  # a float argument is a graph input, not a constant (variables/floats.py)

# --- debugging --------------------------------------------------------------------------------------
debug = os.environ.get("MINICOMPILE_DEBUG", "0") not in ("", "0")
debug_dir = os.environ.get("MINICOMPILE_DEBUG_DIR", os.path.join(os.getcwd(), "minicompile_debug"))


# --- inductor ---------------------------------------------------------------------------------------
class inductor:
    """Knobs of the back half (torch/_inductor/config.py): the defaults of every compile. A
    compile reads them once, when it starts, into its ``InductorOptions`` (inductor/options.py),
    with ``mc.compile(mode=..., options={...})`` on top; nothing in the back half reads them
    after that."""

    # which scheduling backend generates kernels for CPU tensors (codegen/__init__.py): "cpp"
    # (C++/OpenMP through the system g++; a graph it cannot build runs on "reference" with a
    # warning), "reference" (torch ops over blocks of rows: the oracle), "triton" (the Triton
    # kernels, run by Triton's interpreter under TRITON_INTERPRET=1)
    cpu_backend = os.environ.get("MINICOMPILE_CPU_BACKEND", "cpp")
    cuda_backend = "triton"
    cpp_vectorize = True  # C++: `#pragma omp simd` inner loops; False writes scalar loops and
    #                       builds with -fno-tree-vectorize (notebook 09 measures the difference)
    cpp_row_loops = True  # C++: a pointwise kernel whose loads cut xindex into digits (a
    #                       broadcast bias b[xindex % 1024]) loops over rows; False keeps the
    #                       flat loop, where such a load is a gather (notebook 09 measures it)
    cpp_blocks = True  # C++: float16 rows are converted to float before a loop and back after it,
    #                    a vector at a time (codegen/cpp_blocks.py); False: element by element
    cpp_lanes = True  # C++: a reduction along a row keeps 256 bytes of partial results (four
    #                   vectors: four chains of updates), combined by halving; False: one vector
    cudagraphs = False  # mode="reduce-overhead": replay the wrapper's launches as a CUDA graph
    max_autotune = False  # mode="max-autotune": try more kernel configurations
    # threads compiling a kernel's candidate configs at once (Inductor's compile_threads);
    # 1 compiles them one after another
    compile_threads = int(os.environ.get("MINICOMPILE_COMPILE_THREADS", min(8, os.cpu_count() or 1)))
    # worker processes compiling a graph's Triton kernels on a GPU (Inductor's subprocess pool,
    # runtime/compile_workers.py); 0 or 1: threads only
    compile_workers = int(os.environ.get("MINICOMPILE_COMPILE_WORKERS", min(16, os.cpu_count() or 1)))
    # round every float16/bfloat16 pointwise result to its dtype inside fused kernels, as eager
    # does between ops (torch's default is False: fewer casts, values closer to float64). On
    # here: a recomputed value must equal the stored one (amax's backward compares them)
    # Triton on a GPU: device asserts on indirect indices and integer divisors (Triton's debug
    # mode; MINICOMPILE_TRITON_ASSERTS=1). Off, a lane's loads and stores are still masked to its
    # tensor, so an out-of-range index reads nothing outside it. Under the interpreter the checks
    # always run, and raise eager's error.
    triton_device_asserts = os.environ.get("MINICOMPILE_TRITON_ASSERTS", "0") == "1"
    emulate_precision_casts = True
    # Triton: consecutive independent pointwise kernels of static sizes (an optimizer step's,
    # one per parameter) launched as one combo kernel (codegen/triton_combo.py); False: one
    # launch each
    combo_kernels = True
    # a graph whose 2-D convolutions are faster channels-last (the CPU's and cuDNN's rules)
    # runs them, and the ops around them, so (inductor/layout_opt.py; Inductor's
    # layout_optimization); False keeps eager's layouts
    layout_optimization = os.environ.get("MINICOMPILE_LAYOUT_OPTIMIZATION", "1") == "1"

