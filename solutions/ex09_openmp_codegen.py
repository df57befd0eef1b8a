"""Exercises for notebook 09: C++/OpenMP code generation.

Grade with ``bash course.sh grade -k 09``. Each function is a piece of minicompile's C++
backend (``minicompile/inductor/codegen/cpp_ops.py``); the checks plug your piece into the real
backend, compile the generated C++ with g++, run it on tensors with NaNs, negative numbers and
odd sizes, and compare with eager PyTorch.
"""

from __future__ import annotations

from minicompile.inductor.codegen.cpp_loops import Partial

VECTOR_LANES = 16  # float32 lanes of a 512-bit vector register (AVX-512)


def nan_aware_ops() -> dict[str, str]:
    """Exercise 9.1: the C++ template of four ops whose torch meaning C++ does not give you.

    Return ``{op name: C++ expression}`` for ``"maximum"``, ``"minimum"`` (two operands, ``{0}``
    and ``{1}``), ``"relu"`` and ``"sigmoid"`` (one operand, ``{0}``). The template is filled
    with the names of C++ variables (``auto tmp3 = <your expression>;``) whose type is the
    tensor's: ``float``, ``double`` or ``int64_t``. Torch's rules:

    - ``torch.maximum``/``minimum`` return NaN where either operand is NaN;
    - ``relu(NaN)`` is NaN, ``relu(-0.0)`` may be either zero;
    - ``sigmoid(x) = 1 / (1 + exp(-x))``, also for very negative ``x``.

    Use only operators and ``std::`` functions (no helpers of minicompile's ``cpp_prefix.h``).
    """
    ### BEGIN SOLUTION 9.1: four C++ expressions, NaN-propagating like torch
    return {
        # x != x is true only for NaN (and always false for integers)
        "maximum": "(({0} != {0}) || ({0} > {1}) ? {0} : {1})",
        "minimum": "(({0} != {0}) || ({0} < {1}) ? {0} : {1})",
        "relu": "({0} < 0 ? static_cast<decltype({0})>(0) : {0})",
        "sigmoid": "(1 / (1 + std::exp(-{0})))",
    }
    ### END SOLUTION


def vector_loop(var: str, start: str, end: str, body: list[str]) -> list[str]:
    """Exercise 9.2: the loop of a pointwise kernel, as whole vectors and a tail.

    A pointwise kernel runs its body for every point of a block, ``var`` (``"xindex"``, or
    ``"x0"`` along a row) going from ``start`` to ``end`` (C++ expressions: ``"xblock"``,
    ``"xend"``)::

        body = ["auto tmp0 = in_ptr0[xindex];",
                "out_ptr0[xindex] = std::sin(tmp0) * 2;"]

    A CPU computes 16 floats at once (AVX-512; AVX2: 8), so write the range as whole vectors of
    ``VECTOR_LANES`` points (an inner loop of exactly ``VECTOR_LANES`` iterations under
    ``#pragma omp simd``, which g++ turns into vector instructions), then a tail loop for the
    points left over when the block is not a multiple of ``VECTOR_LANES`` (37 points: two
    vectors and a tail of 5). Inside both loops the body sees ``var`` as the point's index.
    Return the C++ lines, one statement or brace a line; wrap them in ``{ }`` so that the
    variables you declare don't clash with the next loop's.
    """
    ### BEGIN SOLUTION 9.2: whole vectors of VECTOR_LANES points, then the tail
    lanes, first = VECTOR_LANES, f"{var}_vector"
    inner = [f"        {line}" for line in body]
    return ["{",
            f"    int64_t {first} = {start};",
            f"    for (; {first} + {lanes} <= {end}; {first} += {lanes})",
            "    {",
            "        #pragma omp simd",
            f"        for (int64_t {var} = {first}; {var} < {first} + {lanes}; {var}++)",
            "        {", *["    " + line for line in inner], "        }",
            "    }",
            f"    for (int64_t {var} = {first}; {var} < {end}; {var}++)  // the tail",
            "    {", *inner, "    }",
            "}"]
    ### END SOLUTION


def reduction_rows() -> dict[str, tuple[str, str, str]]:
    """Exercise 9.3: how the C++ kernels write ``sum``, ``prod``, ``max``, ``min`` and ``any``.

    A reduction over a row becomes an accumulator declared before the loop, updated in it, and,
    when the row is long, split over the OpenMP threads::

        float acc0 = <init>;
        #pragma omp parallel for reduction(<omp>: acc0)
        for (int64_t rindex = 0; rindex < rnumel; rindex++) {
            auto tmp0 = in_ptr0[rindex];
            acc0 = <update>;
        }

    Return ``{reduction type: (init, update, omp)}``. In ``init``, ``{t}`` is the accumulator's
    C++ type (``float``, ``double``, ``int64_t``, ``bool``); in ``update``, ``{acc}`` is the
    accumulator and ``{value}`` the new element. ``omp`` names how OpenMP combines the threads'
    partial accumulators: one of C++'s ``+ * || &&``, or ``mc_max`` / ``mc_min``, two reductions
    minicompile declares with ``#pragma omp declare reduction`` (NaN-propagating maximum and
    minimum). Torch's max and min of a row with a NaN are NaN; of an all-negative row, negative.
    ``std::numeric_limits<{t}>`` has ``lowest()``, ``max()`` and ``infinity()``;
    ``std::numeric_limits<{t}>::has_infinity`` says whether ``{t}`` has one.
    """
    ### BEGIN SOLUTION 9.3: (init, update, omp) for sum, prod, max, min, any
    lowest = ("(std::numeric_limits<{t}>::has_infinity ? -std::numeric_limits<{t}>::infinity()"
              " : std::numeric_limits<{t}>::lowest())")
    highest = ("(std::numeric_limits<{t}>::has_infinity ? std::numeric_limits<{t}>::infinity()"
               " : std::numeric_limits<{t}>::max())")
    return {
        "sum": ("0", "{acc} + {value}", "+"),
        "prod": ("1", "{acc} * {value}", "*"),
        "max": (lowest, "(({acc} != {acc}) || ({acc} > {value}) ? {acc} : {value})", "mc_max"),
        "min": (highest, "(({acc} != {acc}) || ({acc} < {value}) ? {acc} : {value})", "mc_min"),
        "any": ("false", "{acc} || {value}", "||"),
    }
    ### END SOLUTION


def parallel_reduction(accumulators: list[Partial], body: list[str], parallel: str) -> list[str]:
    """Exercise 9.4: one row reduced by all the threads, without a race.

    ``x.sum()`` has one row, so its loop over ``rindex`` is what the threads share. Before your
    lines each accumulator is declared and started; the body updates it; after your lines it
    must hold the whole row's result::

        float acc0 = 0;                                          // written before yours
        <your lines: the loop "for (int64_t rindex = 0; rindex < rnumel; rindex++)" around
         body = ["auto tmp0 = in_ptr0[rindex];", "acc0 = acc0 + tmp0;"]>
        out_ptr0[0] = acc0;                                      // written after yours

    Threads updating one ``acc0`` at once lose each other's updates (a race). Give each thread
    its own partial instead: in a ``#pragma omp parallel <parallel>`` region (``parallel`` is
    ``num_threads(num_threads) if(...)``), declare a partial with the accumulator's name (it
    shadows the total, so the body updates it) started as the total's start value, share the
    iterations with ``#pragma omp for``, then fold the partial into the total, one thread at a
    time (``#pragma omp critical``). Each accumulator ``a`` has ``a.name``, ``a.ctype`` (its C++
    type) and ``a.combine``, a template merging two partials ``{a}`` and ``{b}``. Before the
    region, the total is still its start value: keep a copy, and a way to name the total inside
    the region (``auto& acc0_total = acc0;``).
    """
    ### BEGIN SOLUTION 9.4: per-thread partials, shared iterations, a critical combine
    lines = ["{"]
    for a in accumulators:
        lines += [f"    const {a.ctype} {a.name}_start = {a.name};",
                  f"    {a.ctype}& {a.name}_total = {a.name};"]
    lines += [f"    #pragma omp parallel {parallel}", "    {"]
    lines += [f"        {a.ctype} {a.name} = {a.name}_start;  // this thread's partial"
              for a in accumulators]
    lines += ["        #pragma omp for schedule(static)",
              "        for (int64_t rindex = 0; rindex < rnumel; rindex++)",
              "        {", *[f"            {line}" for line in body], "        }",
              "        #pragma omp critical"]
    lines += ["        {"] + [
        f"            {a.name}_total = {a.combine.format(a=f'{a.name}_total', b=a.name)};"
        for a in accumulators] + ["        }"]
    return lines + ["    }", "}"]
    ### END SOLUTION
