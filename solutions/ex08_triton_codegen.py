"""Exercises for notebook 08: Triton code generation.

Grade with ``bash course.sh grade -k 08``. Each function is a piece of minicompile's Triton
backend (``minicompile/inductor/codegen/triton_ops.py``, ``triton_kernel.py`` and
``triton_frames.py``); the checks plug your piece into the real backend, generate Triton kernels
and run them (on a GPU, or on CPU tensors through Triton's interpreter, ``TRITON_INTERPRET=1``),
comparing with eager PyTorch.
"""

from __future__ import annotations

import sympy
import torch

from minicompile.inductor.codegen.triton_frames import LoopedReduction
from minicompile.inductor.sizevars import FloorDiv, ModularIndexing


def triton_nan_ops() -> dict[str, str]:
    """Exercise 8.1: the Triton expression of ``maximum``, ``minimum`` and ``remainder``.

    Return ``{op name: template}``; ``{0}`` and ``{1}`` are the operands, Triton blocks of one
    dtype (``x = <your template>`` is written into the kernel). Use ``tl.where``, comparisons,
    arithmetic and ``tl.floor`` (no helpers of ``triton_helpers``). Torch's rules:

    - ``torch.maximum``/``minimum`` are NaN where either operand is NaN (Triton's comparisons with
      NaN are false, as in C);
    - ``torch.remainder(a, b)`` has the sign of ``b`` (Python's ``%``): ``remainder(-7., 3.)`` is
      ``2.``. The check uses floating-point operands for ``remainder``.
    """
    ### BEGIN SOLUTION 8.1: three tl.where / libdevice expressions
    return {
        "maximum": "tl.where(({0} != {0}) | ({0} > {1}), {0}, {1})",
        "minimum": "tl.where(({0} != {0}) | ({0} < {1}), {0}, {1})",
        "remainder": "{0} - tl.floor({0} / {1}) * {1}",
    }
    ### END SOLUTION


def triton_index(expr: sympy.Expr) -> str:
    """Exercise 8.2: a SymPy index expression as Triton integer arithmetic.

    As the C++ printer of exercise 9.2, for Triton: symbols (``xindex``, ``rindex``, ``s0``),
    integers, ``+``, ``*``, positive integer powers, ``FloorDiv(a, b)`` and
    ``ModularIndexing(a, b, m)`` (``(a // b) % m``), and ``sympy.Min``/``sympy.Max`` (as
    ``tl.minimum``/``tl.maximum``). Every value is non-negative where a kernel evaluates it, so
    Triton's ``//`` and ``%`` are floor division and remainder. The result is pasted into larger
    expressions (``in_ptr0 + (<yours>)``, ``<yours> * 8``): parenthesise what needs it.
    """
    ### BEGIN SOLUTION 8.2: recursive printer with // % tl.minimum tl.maximum
    if expr.is_Integer:
        return str(int(expr))
    if expr.is_Symbol:
        return expr.name
    args = [triton_index(a) for a in expr.args]
    if isinstance(expr, FloorDiv):
        return f"(({args[0]}) // ({args[1]}))"
    if isinstance(expr, ModularIndexing):
        return f"((({args[0]}) // ({args[1]})) % ({args[2]}))"
    if isinstance(expr, (sympy.Min, sympy.Max)):
        fn = "tl.minimum" if isinstance(expr, sympy.Min) else "tl.maximum"
        text = args[0]
        for a in args[1:]:
            text = f"{fn}({text}, {a})"
        return text
    if isinstance(expr, sympy.Add):
        return "(" + " + ".join(args) + ")"
    if isinstance(expr, sympy.Mul):
        return "(" + " * ".join(f"({a})" for a in args) + ")"
    if isinstance(expr, sympy.Pow) and expr.exp.is_Integer and expr.exp > 0:
        return "(" + " * ".join([f"({args[0]})"] * int(expr.exp)) + ")"
    raise NotImplementedError(f"cannot print {expr!r} as a Triton index")
    ### END SOLUTION


def pointwise_kernel(name: str, params: list[str], loads: list[tuple[str, str]],
                     body: list[str], stores: list[tuple[str, str]]) -> str:
    """Exercise 8.3: a whole pointwise Triton kernel, from its parts.

    The backend gives you what it computed for a pointwise kernel (``b = a.sin() * 2`` over 37
    elements)::

        name   = "triton_poi_fused_mul_sin_0"
        params = ["in_ptr0", "out_ptr0"]                  # buffers, then size symbols (s0)
        loads  = [("tmp0", "in_ptr0 + (xindex)")]         # (variable, address)
        body   = ["tmp1 = tl.sin(tmp0)", "tmp2 = tmp1 * 2.0"]
        stores = [("out_ptr0 + (xindex)", "tmp2")]        # (address, value)

    Return the source of a ``@triton.jit`` function ``name`` taking ``params``, then ``xnumel``
    (how many elements) and ``XBLOCK: tl.constexpr`` (how many one program handles). Program
    ``tl.program_id(0)`` computes the block of elements starting at ``program_id * XBLOCK``: the
    vector ``xindex`` of their indices (``tl.arange(0, XBLOCK)``), ``xmask`` of those that
    exist (the last program runs past ``xnumel``), then each load (``tl.load(address, mask)``),
    the body, each store (``tl.store(address, value, mask)``). Every line of the function's body
    is indented by four spaces.

    Also write ``grid(xnumel, XBLOCK)``: how many programs the launch needs.
    """
    ### BEGIN SOLUTION 8.3: the program's block of indices, its mask, masked loads and stores
    lines = ["@triton.jit",
             f"def {name}({', '.join(params + ['xnumel', 'XBLOCK: tl.constexpr'])}):",
             "    xoffset = tl.program_id(0) * XBLOCK",
             "    xindex = xoffset + tl.arange(0, XBLOCK)",
             "    xmask = xindex < xnumel"]
    lines += [f"    {var} = tl.load({address}, xmask)" for var, address in loads]
    lines += [f"    {line}" for line in body]
    lines += [f"    tl.store({address}, {value}, xmask)" for address, value in stores]
    return "\n".join(lines) + "\n"
    ### END SOLUTION


def grid(xnumel: int, XBLOCK: int) -> int:  # noqa: N803 (Triton's name)
    """Exercise 8.3 (continued): the number of programs that cover ``xnumel`` elements,
    ``XBLOCK`` a program."""
    ### BEGIN SOLUTION 8.3: round up
    return (xnumel + XBLOCK - 1) // XBLOCK
    ### END SOLUTION


def looped_reduction_kernel(name: str, params: list[str], loads: list[tuple[str, str]],
                            body: list[str], reductions: list[LoopedReduction],
                            after: list[str], stores: list[tuple[str, str]]) -> str:
    """Exercise 8.4: a looped reduction kernel, from its parts.

    Rows too long for one block (``x.amax(1)`` over rows of 3001) are reduced in a loop: program
    ``p`` owns rows ``p * XBLOCK`` to ``p * XBLOCK + XBLOCK - 1``, and walks them ``RBLOCK``
    elements at a time, each lane ``(x, r)`` of an ``[XBLOCK, RBLOCK]`` accumulator folding in
    the values that land on it. After the loop each accumulator is reduced across its rows.
    The backend gives you, for ``(t * 2).amax(1)``::

        params = ["in_ptr0", "out_ptr0"]
        loads  = [("tmp0", "in_ptr0 + (rindex + 3001*xindex)")]     # inside the loop
        body   = ["tmp1 = tmp0 * 2.0"]                              # inside the loop
        reductions = [LoopedReduction(accumulator="_tmp2", result="tmp3", kind="max",
                                      value="tmp1", dtype=torch.float32, tl_dtype="tl.float32")]
        after  = []                                                 # per-row code after it
        stores = [("out_ptr0 + (xindex)", "tmp3")]                  # one value per row

    Write a ``@triton.jit`` function ``name`` taking ``params``, then ``xnumel, rnumel,
    XBLOCK: tl.constexpr, RBLOCK: tl.constexpr``:

    - ``xindex``: the program's rows as an ``[XBLOCK, 1]`` column (``tl.arange(0, XBLOCK)[:,
      None]``), ``xmask`` those below ``xnumel``; ``rbase = tl.arange(0, RBLOCK)[None, :]``;
    - each accumulator: ``tl.full([XBLOCK, RBLOCK], <start>, <tl_dtype>)``, its start value
      one that changes no result (``kind`` is ``sum``, ``prod``, ``max`` or ``min``);
    - ``for roffset in range(...)``: ``rindex`` the block's columns, ``rmask`` those inside the
      row; the loads, masked by ``xmask & rmask`` with ``other=0``; the body; each accumulator
      updated only where ``xmask & rmask`` (``tl.where``): ``+``, ``*``,
      ``triton_helpers.maximum``/``minimum`` (NaN-propagating, as torch's);
    - after the loop ``<result> = <the accumulator reduced along axis 1>[:, None]``
      (``tl.sum``, ``triton_helpers.prod``, ``triton_helpers.max2``/``min2``: ``tl.max`` drops
      NaN on a GPU), then the lines of ``after``, then the stores, masked by ``xmask``.
    """
    ### BEGIN SOLUTION 8.4: rows and their mask, accumulators, the loop, the row reductions, stores
    start = {"sum": "0", "prod": "1",
             "max": lambda d: 'float("-inf")' if d.is_floating_point else str(torch.iinfo(d).min),
             "min": lambda d: 'float("inf")' if d.is_floating_point else str(torch.iinfo(d).max)}
    step = {"sum": "{acc} + {v}", "prod": "{acc} * {v}",
            "max": "triton_helpers.maximum({acc}, {v})",
            "min": "triton_helpers.minimum({acc}, {v})"}
    rows = {"sum": "tl.sum({acc}, 1)", "prod": "triton_helpers.prod({acc}, 1)",
            "max": "triton_helpers.max2({acc}, 1)", "min": "triton_helpers.min2({acc}, 1)"}
    sizes = ["xnumel", "rnumel", "XBLOCK: tl.constexpr", "RBLOCK: tl.constexpr"]
    lines = ["@triton.jit", f"def {name}({', '.join(params + sizes)}):",
             "    xoffset = tl.program_id(0) * XBLOCK",
             "    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]",
             "    xmask = xindex < xnumel",
             "    rbase = tl.arange(0, RBLOCK)[None, :]"]
    for r in reductions:
        first = start[r.kind] if isinstance(start[r.kind], str) else start[r.kind](r.dtype)
        lines.append(f"    {r.accumulator} = tl.full([XBLOCK, RBLOCK], {first}, {r.tl_dtype})")
    lines += ["    for roffset in range(0, rnumel, RBLOCK):",
              "        rindex = roffset + rbase",
              "        rmask = rindex < rnumel"]
    lines += [f"        {var} = tl.load({address}, xmask & rmask, other=0)"
              for var, address in loads]
    lines += [f"        {line}" for line in body]
    for r in reductions:
        update = step[r.kind].format(acc=r.accumulator, v=r.value)
        lines.append(
            f"        {r.accumulator} = tl.where(xmask & rmask, {update}, {r.accumulator})")
    lines += [f"    {r.result} = {rows[r.kind].format(acc=r.accumulator)}[:, None]"
              for r in reductions]
    lines += [f"    {line}" for line in after]
    lines += [f"    tl.store({address}, {value}, xmask)" for address, value in stores]
    return "\n".join(lines) + "\n"
    ### END SOLUTION


def tiled_kernel(name: str, params: list[str], loads: list[tuple[str, str]],
                 body: list[str], stores: list[tuple[str, str]]) -> str:
    """Exercise 8.5: a 2-D tiled pointwise kernel, for transposes and permutes.

    In ``x.t().contiguous()`` of a 31x17 ``x`` the store is contiguous along the output's rows
    and the load along its columns: a flat block of 8.3 reads one element a row apart per lane.
    The backend splits the output's flat index into ``ynumel`` lines of ``xnumel`` points, and
    gives you the parts of 8.3 with addresses written in the tile's ``y0`` (which line) and
    ``x0`` (which point along it)::

        params = ["in_ptr0", "out_ptr0"]
        loads  = [("tmp0", "in_ptr0 + (17*x0 + y0)")]       # contiguous along y0
        body   = ["tmp1 = tmp0 * 2.0"]
        stores = [("out_ptr0 + (x0 + 31*y0)", "tmp1")]      # contiguous along x0

    Return the source of a ``@triton.jit`` function ``name`` taking ``params``, then ``ynumel,
    xnumel, XBLOCK: tl.constexpr, YBLOCK: tl.constexpr``. Each program owns one
    ``[YBLOCK, XBLOCK]`` tile; with ``xtiles = tl.cdiv(xnumel, XBLOCK)`` tiles along a line,
    program ``p`` owns the tile in row ``p // xtiles`` and column ``p % xtiles`` of tiles:

    - ``y0``: its lines as a ``[YBLOCK, 1]`` column (``tl.arange(0, YBLOCK)[:, None]``),
      ``x0``: its points as a ``[1, XBLOCK]`` row (``tl.arange(0, XBLOCK)[None, :]``), each
      offset by the tile's first line and point;
    - ``xmask``: the lanes of the tile inside both sizes (the last row and the last column of
      tiles run past them);
    - each load (``tl.load(address, xmask)``), the body, each store (``tl.store(address,
      value, xmask)``). Triton lays out each access along its own contiguous axis, so both
      coalesce.

    Also write ``tiled_grid(ynumel, xnumel, YBLOCK, XBLOCK)``: how many programs the launch
    needs (a one-dimensional grid of tiles).
    """
    ### BEGIN SOLUTION 8.5: the tile's lines and points, the mask of both sizes, masked loads and stores
    sizes = ["ynumel", "xnumel", "XBLOCK: tl.constexpr", "YBLOCK: tl.constexpr"]
    lines = ["@triton.jit", f"def {name}({', '.join(params + sizes)}):",
             "    xtiles = tl.cdiv(xnumel, XBLOCK)",
             "    y0 = (tl.program_id(0) // xtiles) * YBLOCK + tl.arange(0, YBLOCK)[:, None]",
             "    x0 = (tl.program_id(0) % xtiles) * XBLOCK + tl.arange(0, XBLOCK)[None, :]",
             "    xmask = (y0 < ynumel) & (x0 < xnumel)"]
    lines += [f"    {var} = tl.load({address}, xmask)" for var, address in loads]
    lines += [f"    {line}" for line in body]
    lines += [f"    tl.store({address}, {value}, xmask)" for address, value in stores]
    return "\n".join(lines) + "\n"
    ### END SOLUTION


def tiled_grid(ynumel: int, xnumel: int, YBLOCK: int, XBLOCK: int) -> int:  # noqa: N803
    """Exercise 8.5 (continued): the number of programs, one per ``[YBLOCK, XBLOCK]`` tile, that
    cover ``ynumel`` lines of ``xnumel`` points."""
    ### BEGIN SOLUTION 8.5: tiles along y times tiles along x
    return ((ynumel + YBLOCK - 1) // YBLOCK) * ((xnumel + XBLOCK - 1) // XBLOCK)
    ### END SOLUTION
