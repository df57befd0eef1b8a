"""inductor: ATen FX graph -> loop-level IR -> scheduled kernels (mini torch/_inductor).

Files, each mirroring its torch/_inductor counterpart:

    sizevars.py     SymPy index arithmetic: FloorDiv, ModularIndexing, simplify_index (uses the
                    loop ranges), simplify_loops (merge contiguous dims, drop size-1 dims)
    virtualized.py  ``ops`` (forwards to the installed handler), ``set_ops_handler``, ``V.graph``
    ir/             the loop IR (see ir/__init__.py)
    lowering.py     ATen op -> IR: the ``lowerings`` table, fallbacks for everything else
    graph.py        GraphLowering: walks the ATen graph, lowers each node, collects buffers
    inlining.py     substitutes a pointwise producer into consumers over other loops (a slice,
                    a broadcast, a cat of it), so it is never stored just to be read back
    dependencies.py what an access touches: footprints (bytes moved), whether rows line up
    scheduler.py    which nodes share a kernel (fusion.py: the rules; loop_order.py: loop orders
                    that let a reduction fuse; scheduler_report.py: the ir_post_fusion text)
    memory_planning.py  lifetimes, reuse and peak memory of a schedule (the wrapper's plan)
    kernel_group.py one scheduled kernel as an object: tile, members in kernel variables,
                    stored / local buffers, loop phases (what every backend starts from)
    ops_handler.py  the ``ops`` protocol every handler implements
    code_writer.py  IndentedBuffer and CSE: the shared code writer
    codegen/        a backend per device (reference, cpp: the CPU default, triton: CUDA and
                    the interpreter), the wrapper program, the kernel cache (codegen/__init__.py)
    codecache.py    source -> loaded kernel, on disk in a private, content-addressed cache
    runtime/        what generated Triton code imports: helpers, the launcher and autotuner
    executor.py     runs IR nodes on torch tensors over index grids (the IR's oracle in tests)
    index_eval.py   evaluates SymPy index expressions on ints and int tensors
    compile_fx.py   compile_fx_inner(aten_gm, example_inputs) -> CompiledFxGraph
    backend.py      the "inductor" backend: AOT autograd + compile_fx_inner
    fx_passes/      graph passes before lowering (CSE, algebra, no-op removal, folding, DCE)
    lowerings/      the lowering table's rows, by op family

IR API (stable; the scheduler builds on it)
-------------------------------------------
``Layout(device, dtype, size, stride=contiguous, offset=0)``; ``layout.make_indexer()(index)``
is the flat SymPy offset of a multi-dim index.

``Pointwise(device, dtype, inner_fn, ranges)``: ``inner_fn(index) -> value`` built from
``ops.*`` calls. ``Reduction(device, dtype, inner_fn, ranges, reduction_ranges, reduction_type,
src_dtype, output_index)``: ``inner_fn(index, rindex)``; reduction types in ``REDUCTION_INIT``
(sum, prod, max, min, any, argmax, argmin, welford_reduce). ``Scan(device, dtype, inner_fn,
ranges, size, scan_ranges, scan_type, reindex)``: every running value of a combine along one dim
(cumsum, cumprod, logcumsumexp); scan types in ``SCAN_INIT`` (sum, prod, logaddexp).

Buffers (all have ``name``, ``layout``, ``get_size()``, ``get_dtype()``, ``make_loader()``,
``get_read_writes()``):

- ``InputBuffer``: a graph input.
- ``ComputedBuffer(name, layout, data)``: ``data`` is a Pointwise/Reduction/Scan.
  ``is_reduction()`` (a reduction or a scan: rows of a reduction loop), ``is_scan()``,
  ``get_ranges() -> (sizes, reduction_sizes)``, ``index_vars() -> ([i0..], [r0..])``,
  ``var_ranges()``, ``store_output(index, rindex)`` runs the body once under the current ``ops``
  handler, ``str(buf)`` prints the loop nest.
- ``ExternKernel(name, layout, kernel, args, kwargs)``: an ATen call (mm, conv, sdpa);
  ``FallbackKernel`` (+ ``reason``) for unlowered ops; ``MultiOutput(name, layout, parent,
  indices)`` for tuple outputs. ``inputs()`` lists the IR nodes it reads.

``get_read_writes() -> ReadWrites(reads, writes, var_ranges)``: ``MemoryDep(name, index,
var_ranges, bounds=())`` for loop nests (``bounds``: ``(var, lo, hi)`` from a mask around a load,
as in cat and pad; ``restricted()`` folds them into the ranges; ``num_elements()`` = distinct
elements touched), ``StarDep(name, numel)`` for whole-buffer accesses of extern kernels.
``dependencies.footprint(deps, numel)`` counts the distinct elements several accesses touch
(closed form for affine injective indices, enumeration for the rest, an upper bound above
``MAX_ENUMERATED_POINTS`` or with symbolic sizes); ``GraphLowering.size_hints`` gives the traced
value of each size symbol, for reporting only.

Views (never copies): ``View(data, size, reindex)``; ``ReinterpretView(buffer, layout)``;
``as_strided_layout(node)`` turns an affine chain of views into a ReinterpretView.

Fusion as substitution: ``inline_producers(consumer, [pointwise producers])`` returns a copy of
the consumer whose loads of the producers are replaced by their bodies. The scheduler fuses
nodes over the same loops; ``inlining.inline_unfusable_producers`` handles the rest first.

Running: ``compile_fx_inner`` schedules the graph, builds one ``KernelGroup`` per kernel and
hands each to the backend of its device (``Scheduler.codegen``); the wrapper program allocates,
launches and frees. ``executor.run_nodes(nodes, buffers, sizes)`` runs IR nodes one by one,
unfused: the oracle the lowering tests use.
``GraphLowering(gm).run(*example_inputs)`` gives ``graph.buffers`` (every node in program
order), ``graph.graph_inputs``, ``graph.graph_outputs``.
"""
