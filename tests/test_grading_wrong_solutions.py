"""Known-wrong solutions must score zero: each is a plausible mistake, and a check that lets one
through would give full marks for a compiler that computes wrong answers (mutation testing of
the checks, CONVENTIONS.md "Exercises")."""

from __future__ import annotations

import functools
import math
import operator
import re
import types

import pytest
import sympy
import torch

from minicompile.cudagraphs.cudagraph_utils import MAX_RECORDINGS
from minicompile.grade import grade_one
from minicompile.grading import REPO_ROOT, load_checks, load_learner_module
from minicompile.inductor.dependencies import rows_line_up
from minicompile.inductor.fusion import runs_per_row, tile
from minicompile.inductor.sizevars import FloorDiv, ModularIndexing

EXERCISES = {e.id: e for e in load_checks()}


def _with(module: str, **overrides) -> types.ModuleType:
    """The reference solutions of ``module`` with some functions replaced by wrong ones."""
    solution = load_learner_module(module, f"{REPO_ROOT}/solutions")
    wrong = types.ModuleType(f"wrong_{module}")
    wrong.__dict__.update(solution.__dict__)
    wrong.__dict__.update(overrides)
    return wrong


def _ops(**rows):
    def nan_aware_ops():
        good = load_learner_module("ex09_openmp_codegen", f"{REPO_ROOT}/solutions").nan_aware_ops()
        return {**good, **rows}
    return nan_aware_ops


def _printer(add="parenthesised", mod=None, pow_=None, div=None, min_max=None):
    """An index printer (C's ``/``; Min and Max as Triton's ``tl.minimum``/``tl.maximum``) with
    one of its cases replaced by a wrong one."""
    def print_index(expr):
        if expr.is_Integer:
            return str(int(expr))
        if expr.is_Symbol:
            return expr.name
        a = [print_index(x) for x in expr.args]
        if isinstance(expr, (sympy.Min, sympy.Max)):
            fn = "tl.minimum" if isinstance(expr, sympy.Min) else "tl.maximum"
            if min_max:
                return min_max(fn, a)
            text = a[0]
            for x in a[1:]:
                text = f"{fn}({text}, {x})"
            return text
        if isinstance(expr, FloorDiv):
            return div(a) if div else f"(({a[0]}) / ({a[1]}))"
        if isinstance(expr, ModularIndexing):
            return mod(a) if mod else f"((({a[0]}) / ({a[1]})) % ({a[2]}))"
        if isinstance(expr, sympy.Add):
            return " + ".join(a) if add == "bare" else "(" + " + ".join(a) + ")"
        if isinstance(expr, sympy.Mul):
            return "(" + " * ".join(f"({x})" for x in a) + ")"
        if isinstance(expr, sympy.Pow):
            return pow_(a, int(expr.exp)) if pow_ else "(" + " * ".join([f"({a[0]})"] * int(expr.exp)) + ")"
        raise NotImplementedError(expr)
    return print_index


def _vector(tail=True, vector_while="{first} + {lanes} <= {end}", tail_end="< {end}",
            lane_start="{first}", lane_end="{first} + {lanes}", step="{lanes}"):
    """Exercise 9.2's loop with one part written wrong."""
    def vector_loop(var, start, end, body):
        lanes, first = 16, f"{var}_vector"
        fields = {"lanes": lanes, "first": first, "end": end}
        inner = [f"        {line}" for line in body]
        lines = ["{", f"    int64_t {first} = {start};",
                 f"    for (; {vector_while.format(**fields)}; {first} += {step.format(**fields)})",
                 "    {", "        #pragma omp simd",
                 f"        for (int64_t {var}_lane = {lane_start.format(**fields)}; "
                 f"{var}_lane < {lane_end.format(**fields)}; {var}_lane++)",
                 "        {", f"            const int64_t {var} = {var}_lane;",
                 *["    " + line for line in inner], "        }", "    }"]
        if tail:
            lines += [f"    for (int64_t {var} = {first}; {var} {tail_end.format(**fields)}; {var}++)",
                      "    {", *inner, "    }"]
        return lines + ["}"]
    return vector_loop


def _parallel(partial="{start}", shared_loop=True, critical=True, combine=None,
              merged=True):
    """Exercise 9.4's per-thread partials with one part written wrong."""
    def parallel_reduction(accumulators, body, parallel):
        lines = ["{"]
        for a in accumulators:
            lines += [f"const {a.ctype} {a.name}_start = {a.name};",
                      f"{a.ctype}& {a.name}_total = {a.name};"]
        lines += [f"#pragma omp parallel {parallel}", "{"]
        lines += [f"{a.ctype} {a.name} = {partial.format(start=a.name + '_start')};"
                  for a in accumulators]
        if shared_loop:
            lines.append("#pragma omp for schedule(static)")
        lines += ["for (int64_t rindex = 0; rindex < rnumel; rindex++)", "{", *body, "}"]
        if critical:
            lines.append("#pragma omp critical")
        how = [combine or a.combine for a in accumulators]
        lines += ["{"] + [f"{a.name}_total = {c.format(a=a.name + '_total', b=a.name)};"
                          for a, c in zip(accumulators, how) if merged] + ["}"]
        return lines + ["}", "}"]
    return parallel_reduction


def _racing_reduction(accumulators, body, parallel):
    """Every thread updates the one accumulator: ``acc0 = acc0 + x`` read and written by two
    threads at once loses updates."""
    return [f"#pragma omp parallel for {parallel}",
            "for (int64_t rindex = 0; rindex < rnumel; rindex++)", "{", *body, "}"]


_racing_reduction.__name__ = "parallel_reduction"  # the exercise's function it replaces


def _rows(**changes):
    def reduction_rows():
        good = load_learner_module("ex09_openmp_codegen", f"{REPO_ROOT}/solutions").reduction_rows()
        return {**good, **changes}
    return reduction_rows


WRONG = {
    "9.1": {
        "maximum with std::max (drops a NaN in the second operand)":
            _ops(maximum="std::max({0}, {1})"),
        "minimum without a NaN test":
            _ops(minimum="({0} < {1} ? {0} : {1})"),
        "relu as x > 0 ? x : 0 (relu(NaN) becomes 0)": _ops(relu="({0} > 0 ? {0} : 0)"),
        "sigmoid with the sign of the exponent flipped": _ops(sigmoid="(1 / (1 + std::exp({0})))"),
        "maximum as fmaxf after the NaN tests (int64 beyond 2**24 rounded to float)":
            _ops(maximum="(({0} != {0}) || ({1} != {1}) ? {0} + {1} : fmaxf({0}, {1}))"),
    },
    "9.2": {
        "no tail (the points after the last whole vector are never written)": _vector(
            tail=False),
        "vectors run while any point is left (the last one runs past the end)": _vector(
            vector_while="{first} < {end}"),
        "the tail one point too far (<= end)": _vector(tail_end="<= {end}"),
        "the lanes index from 0, not from the vector's first point": _vector(
            lane_start="0", lane_end="{lanes}"),
        "vectors advanced by twice their width (every other vector skipped)": _vector(
            step="2 * {lanes}"),
    },
    "9.4": {
        "a race: every thread updates the shared accumulator": _racing_reduction,
        "partials started from 0 (an all-negative tensor's max is 0)": _parallel(partial="0"),
        "each thread runs the whole loop (no omp for: the row counted once per thread)":
            _parallel(shared_loop=False),
        "partials combined with + whatever the reduction": _parallel(combine="{a} + {b}"),
        "the partials never merged into the total": _parallel(merged=False),
    },
    "9.3": {
        "max starting from 0 (an all-negative row's max is 0)":
            _rows(max=("0", "(({acc} != {acc}) || ({acc} > {value}) ? {acc} : {value})", "mc_max")),
        "max updated with std::max (a NaN is dropped)":
            _rows(max=("-std::numeric_limits<{t}>::infinity()", "std::max({acc}, {value})",
                       "mc_max")),
        "prod starting from 0": _rows(prod=("0", "{acc} * {value}", "*")),
        "max's lanes combined with + (each lane starts from +'s identity, 0)":
            _rows(max=("-std::numeric_limits<{t}>::infinity()",
                       "(({acc} != {acc}) || ({acc} > {value}) ? {acc} : {value})", "+")),
        "min starting from 0": _rows(min=("0", "(({acc} != {acc}) || ({acc} < {value}) ? "
                                               "{acc} : {value})", "mc_min")),
        "max starting from the lowest finite value (a row of -inf has max -inf)":
            _rows(max=("std::numeric_limits<{t}>::lowest()",
                       "(({acc} != {acc}) || ({acc} > {value}) ? {acc} : {value})", "mc_max")),
        "min starting from the largest finite value (a row of +inf has min +inf)":
            _rows(min=("std::numeric_limits<{t}>::max()",
                       "(({acc} != {acc}) || ({acc} < {value}) ? {acc} : {value})", "mc_min")),
        "max through fmaxf after the NaN tests (int64 beyond 2**24 rounded to float)":
            _rows(max=("(std::numeric_limits<{t}>::has_infinity ? "
                       "-std::numeric_limits<{t}>::infinity() : "
                       "std::numeric_limits<{t}>::lowest())",
                       "(({acc} != {acc}) ? {acc} : ({value} != {value}) ? {value} : "
                       "fmaxf({acc}, {value}))", "mc_max")),
    },
}

def _triton_ops(**rows):
    def triton_nan_ops():
        good = load_learner_module("ex08_triton_codegen", f"{REPO_ROOT}/solutions").triton_nan_ops()
        return {**good, **rows}
    return triton_nan_ops


def _triton_printer(**kw):
    c_printer = _printer(**kw)

    def triton_index(expr):  # the same mistakes, with Triton's // for C's /
        return c_printer(expr).replace("/", "//")
    return triton_index


def _pointwise(mask="xindex < xnumel", store_mask=True, offset="tl.program_id(0) * XBLOCK",
               grid=lambda n, b: (n + b - 1) // b):
    """The reference pointwise kernel and grid of 8.3 with one part written wrong."""
    good = load_learner_module("ex08_triton_codegen", f"{REPO_ROOT}/solutions")

    def pointwise_kernel(name, params, loads, body, stores):
        source = good.pointwise_kernel(name, params, loads, body, stores)
        source = source.replace("xmask = xindex < xnumel", f"xmask = {mask}")
        source = source.replace("xoffset = tl.program_id(0) * XBLOCK", f"xoffset = {offset}")
        if not store_mask:
            source = re.sub(r"^(\s*tl\.store\(.*), xmask\)$", r"\1)", source, flags=re.M)
        return source

    def grid_(xnumel, XBLOCK):  # noqa: N803
        return grid(xnumel, XBLOCK)
    grid_.__name__ = "grid"
    return {"pointwise_kernel": pointwise_kernel, "grid": grid_}


def _tiled(*replacements: tuple[str, str], grid=None):
    """The reference tiled kernel and grid of 8.5 with lines of the kernel rewritten (``(old,
    new)`` regular expressions, where they match), or the grid replaced."""
    good = load_learner_module("ex08_triton_codegen", f"{REPO_ROOT}/solutions")

    def tiled_kernel(name, params, loads, body, stores):
        text = good.tiled_kernel(name, params, loads, body, stores)
        for old, new in replacements:
            text = re.sub(old, new, text, flags=re.M)
        return text

    def tiled_grid(ynumel, xnumel, YBLOCK, XBLOCK):  # noqa: N803
        return (grid or good.tiled_grid)(ynumel, xnumel, YBLOCK, XBLOCK)
    return {"tiled_kernel": tiled_kernel, "tiled_grid": tiled_grid}


def _looped(*replacements: tuple[str, str], source=None):
    """The reference looped reduction kernel of 8.4 with lines of its output rewritten
    (``(old, new)`` regular expressions, where they match), or its source rewritten by
    ``source``."""
    good = load_learner_module("ex08_triton_codegen", f"{REPO_ROOT}/solutions")

    def looped_reduction_kernel(name, params, loads, body, reductions, after, stores):
        text = good.looped_reduction_kernel(name, params, loads, body, reductions, after, stores)
        for old, new in replacements:
            text = re.sub(old, new, text, flags=re.M)
        return source(text, reductions) if source else text
    return looped_reduction_kernel


def _accumulators_inside_the_loop(text, reductions):
    """Each accumulator started afresh in every iteration: only the last block counts."""
    lines = text.splitlines()
    starts = [line for line in lines if "tl.full([XBLOCK, RBLOCK]" in line]
    lines = [line for line in lines if line not in starts]
    at = next(i for i, line in enumerate(lines) if line.strip().startswith("rmask ="))
    return "\n".join(lines[:at + 1] + ["    " + line for line in starts] + lines[at + 1:]) + "\n"


WRONG.update({
    "8.1": {
        "maximum without the NaN test": _triton_ops(maximum="tl.where({0} > {1}, {0}, {1})"),
        "minimum that tests only the second operand for NaN":
            _triton_ops(minimum="tl.where(({1} != {1}) | ({0} < {1}), {0}, {1})"),
        "remainder as %, the sign of the dividend (C's fmod)": _triton_ops(remainder="{0} % {1}"),
        "maximum as tl.maximum (a GPU drops the NaN)": _triton_ops(maximum="tl.maximum({0}, {1})"),
        "minimum as tl.minimum (a GPU drops the NaN)": _triton_ops(minimum="tl.minimum({0}, {1})"),
        "maximum through float32 after the NaN tests (int64 beyond 2**24 rounded)":
            _triton_ops(maximum="tl.where(({0} != {0}) | ({1} != {1}), {0} + {1}, "
                                "tl.maximum({0}.to(tl.float32), {1}.to(tl.float32))"
                                ".to({0}.dtype))"),
    },
    "8.2": {
        "a sum printed without parentheses": _triton_printer(add="bare"),
        "ModularIndexing that forgets to divide":
            _triton_printer(mod=lambda a: f"(({a[0]}) % ({a[2]}))"),
        "a power printed with ^": _triton_printer(pow_=lambda a, e: f"(({a[0]}) ^ {e})"),
        "FloorDiv without parentheses": _triton_printer(div=lambda a: f"{a[0]} / {a[1]}"),
        "Min and Max of their first two arguments only": _triton_printer(
            min_max=lambda fn, a: f"{fn}({a[0]}, {a[1]})"),
        "Min printed as tl.maximum, as Max is": _triton_printer(
            min_max=lambda fn, a: functools.reduce(lambda x, y: f"tl.maximum({x}, {y})", a)),
    },
    "8.3": {
        "mask off by one (xindex <= xnumel: one lane past the end)": _pointwise(
            mask="xindex <= xnumel"),
        "no mask on the store (the last program writes past the end)": _pointwise(
            store_mask=False),
        "grid rounded down (xnumel // XBLOCK: the last partial block never runs)": _pointwise(
            grid=lambda n, b: n // b),
        "program offset without the stride XBLOCK (programs overlap)": _pointwise(
            offset="tl.program_id(0)"),
        "mask against XBLOCK instead of xnumel": _pointwise(mask="xindex < xoffset + XBLOCK"),
    },
    "8.5": {
        "x and y masks swapped (y0 < xnumel, x0 < ynumel)":
            _tiled((r"xmask = \(y0 < ynumel\) & \(x0 < xnumel\)",
                    "xmask = (y0 < xnumel) & (x0 < ynumel)")),
        "no mask on the store (the last row and column of tiles write past the end)":
            _tiled((r"^(\s*tl\.store\(.*), xmask\)$", r"\1)")),
        "only x masked (the last row of tiles runs past ynumel)":
            _tiled((r"xmask = \(y0 < ynumel\) & \(x0 < xnumel\)", "xmask = x0 < xnumel")),
        "a grid that forgets the y dimension (tiles along x only)":
            _tiled(grid=lambda yn, xn, yb, xb: -(-xn // xb)),
        "a grid that forgets the x dimension (tiles along y only)":
            _tiled(grid=lambda yn, xn, yb, xb: -(-yn // yb)),
        "tiles' lines a stride XBLOCK apart, not YBLOCK (the transposed read skips lines)":
            _tiled((r"\* YBLOCK \+ tl\.arange\(0, YBLOCK\)",
                    "* XBLOCK + tl.arange(0, YBLOCK)")),
        "program id split by the tiles along y, not x (tiles read twice or never)":
            _tiled((r"xtiles = tl\.cdiv\(xnumel, XBLOCK\)", "xtiles = tl.cdiv(ynumel, YBLOCK)")),
    },
    "8.4": {
        "max's lanes starting at 0 (an all-negative row's max is 0)":
            _looped((r'tl.full\(\[XBLOCK, RBLOCK\], float\("-inf"\)',
                     "tl.full([XBLOCK, RBLOCK], 0")),
        "max's lanes starting at the lowest float (a row of -inf)":
            _looped((r'float\("-inf"\)', "-3.4028234663852886e+38")),
        "accumulators updated without the mask (masked lanes fold in their 0)":
            _looped((r"tl\.where\(xmask & rmask, (.*), (_tmp\d+)\)$", r"\1")),
        "rmask off by one (rindex <= rnumel reads the next row's first element)":
            _looped((r"rmask = rindex < rnumel", "rmask = rindex <= rnumel")),
        "the loop stops before the row's last, partial block":
            _looped((r"range\(0, rnumel, RBLOCK\)", "range(0, rnumel // RBLOCK * RBLOCK, RBLOCK)")),
        "rindex without roffset (every iteration reads the first block)":
            _looped((r"rindex = roffset \+ rbase", "rindex = rbase")),
        "max across the row with tl.max (a GPU drops the NaN)":
            _looped((r"triton_helpers\.max2\((_tmp\d+), 1\)", r"tl.max(\1, 1)")),
        "stores without xmask (the last program writes past the last row)":
            _looped((r"^(\s*tl\.store\(.*), xmask\)$", r"\1)")),
        "accumulators started inside the loop (only the last block counts)":
            _looped(source=_accumulators_inside_the_loop),
        "accumulators always float32 (int64 beyond 2**24 rounded)":
            _looped((r"tl\.int64\)$", "tl.float32)")),
    },
})

def _as(name: str):
    """Name a wrong function after the exercise function it replaces."""
    def rename(fn):
        fn.__name__ = name
        return fn
    return rename


def _solution(module: str) -> types.ModuleType:
    return load_learner_module(module, f"{REPO_ROOT}/solutions")


# -- notebook 01: the bytecode interpreter ------------------------------------------------------
def _table(changes):
    @_as("binary_op_table")
    def binary_op_table():
        return {**_solution("ex01_bytecode").binary_op_table(), **changes}
    return binary_op_table


@_as("binary_op_table")
def _out_of_place_table():
    good = _solution("ex01_bytecode").binary_op_table()
    return {sym: good[sym.removesuffix("=")] for sym in good}


@_as("for_iter")
def _for_iter_keeps_iterator(tx, inst):
    item = tx.stack[-1].next_item()
    if item is None:
        tx.jump(inst)  # the exhausted iterator stays on the stack
    else:
        tx.push(item)


@_as("for_iter")
def _for_iter_no_jump(tx, inst):
    item = tx.stack[-1].next_item()
    if item is None:
        tx.pop()  # ... and runs the loop body once more
    else:
        tx.push(item)


@_as("for_iter")
def _for_iter_replaces_iterator(tx, inst):
    item = tx.pop().next_item()
    if item is None:
        tx.jump(inst)
    else:
        tx.push(item)


def _inline(globals_from="callee", bind="bind_args", cells=True):
    from minicompile.dynamo.symbolic_convert import InliningInstructionTranslator, arg_count

    @_as("inline_call")
    def inline_call(parent, fn, args, kwargs):
        code = fn.get_code()
        names = code.co_varnames[:arg_count(code)]
        if bind == "bind_args":
            bound = fn.bind_args(parent, args, kwargs)
            symbolic_locals = {n: bound["implicit" + n[1:] if n.startswith(".") else n]
                               for n in names}
        else:
            symbolic_locals = dict(zip(names, args))
        f_globals = fn.get_globals() if globals_from == "callee" else parent.f_globals
        tx = InliningInstructionTranslator(code, f_globals, symbolic_locals,
                                           fn.closure_cells(parent) if cells else {},
                                           parent.output, parent)
        tx.run()
        return tx.return_value
    return inline_call


WRONG.update({
    "1.1": {
        "in-place operators mapped to out-of-place functions (x += 1 loses the caller's update)":
            _out_of_place_table,
        "'^' as a power": _table({"^": operator.pow}),
        "'/' as floor division": _table({"/": operator.floordiv}),
        "'//=' as in-place true division": _table({"//=": operator.itruediv}),
    },
    "1.2": {
        "the exhausted iterator left on the stack": _for_iter_keeps_iterator,
        "no jump when the iterator is exhausted": _for_iter_no_jump,
        "the iterator replaced by its item": _for_iter_replaces_iterator,
    },
    "1.3": {
        "the caller's globals instead of the callee's": _inline(globals_from="caller"),
        "positional arguments only (defaults and keywords lost)": _inline(bind="zip"),
        "no closure cells": _inline(cells=False),
    },
})


# -- notebook 02: guards and dynamic shapes -----------------------------------------------------
def _guard(device=True, strides="exact", requires_grad=True):
    @_as("tensor_match_guard")
    def tensor_match_guard(name, t, dynamic_dims=frozenset()):
        x = f"L[{name!r}]"
        parts = [f"isinstance({x}, torch.Tensor)", f"{x}.dtype == {t.dtype}",
                 f"{x}.dim() == {t.dim()}"]
        if device:
            parts.append(f"{x}.device == torch.device({str(t.device)!r})")
        if requires_grad:
            parts.append(f"{x}.requires_grad == {t.requires_grad}")
        parts += [f"{x}.size()[{d}] == {n}" for d, n in enumerate(t.shape) if d not in dynamic_dims]
        if strides == "contiguity":
            parts.append(f"{x}.is_contiguous() == {t.is_contiguous()}")
        elif strides == "always" or not dynamic_dims:
            parts.append(f"{x}.stride() == {tuple(t.stride())}")
        return " and ".join(parts)
    return tensor_match_guard


def _create_symbol(specialize=(0, 1), duck=True, record_source=True):
    @_as("create_symbol")
    def create_symbol(env, hint, source_name):
        if hint in specialize:
            return hint
        if duck and hint in env.val_to_var:
            sym = env.val_to_var[hint]
            if record_source:
                env.var_to_sources[sym].append(source_name)
            return sym
        sym = env.new_symbol(hint, source_name)
        env.val_to_var[hint] = sym
        return sym
    return create_symbol


def _evaluate(negate):
    @_as("evaluate_and_guard")
    def evaluate_and_guard(relation, var_to_val):
        value = bool(relation.xreplace(var_to_val))
        return value, (relation if value else negate(relation))
    return evaluate_and_guard


def _reason(order=("type", "dtype", "device", "requires_grad", "rank", "size", "stride"),
            exact_type=True, skip_dynamic=True):
    @_as("tensor_mismatch_reason")
    def tensor_mismatch_reason(name, spec, value):
        t = f"tensor '{name}'"
        if not isinstance(value, torch.Tensor) or (
                type(value) is not spec.type if exact_type else not isinstance(value, spec.type)):
            return f"{t} type mismatch. expected {spec.type.__name__}, actual {type(value).__name__}"
        fields = {"dtype": (spec.dtype, value.dtype), "device": (str(spec.device), str(value.device)),
                  "requires_grad": (spec.requires_grad, value.requires_grad),
                  "rank": (len(spec.shape), value.dim())}
        dims = {"size": (spec.shape, value.shape), "stride": (spec.stride, value.stride())}
        for what in order[1:]:
            if what in fields and fields[what][0] != fields[what][1]:
                return f"{t} {what} mismatch. expected {fields[what][0]}, actual {fields[what][1]}"
            for i, (e, a) in enumerate(zip(*dims.get(what, ((), ())))):
                if (e is not None or not skip_dynamic) and e != a:
                    return f"{t} {what} mismatch at index {i}. expected {e}, actual {a}"
        return None
    return tensor_mismatch_reason


WRONG.update({
    "2.1": {
        "no device check": _guard(device=False),
        "contiguity checked instead of the strides": _guard(strides="contiguity"),
        "strides checked even when a dim is dynamic": _guard(strides="always"),
        "no requires_grad check": _guard(requires_grad=False),
    },
    "2.2": {
        "no 0/1 specialization": _create_symbol(specialize=()),
        "only 0 specialized": _create_symbol(specialize=(0,)),
        "no duck sizing": _create_symbol(duck=False),
        "duck sizing that does not record the second source": _create_symbol(record_source=False),
    },
    "2.3": {
        "the relation kept as the guard when it is False": _evaluate(lambda r: r),
        "negation by swapping the sides": _evaluate(lambda r: r.reversed),
        "negation of < as > (equality forgotten)":
            _evaluate(lambda r: {sympy.StrictLessThan: sympy.Gt, sympy.StrictGreaterThan: sympy.Lt,
                                 sympy.LessThan: sympy.Ge, sympy.GreaterThan: sympy.Le}.get(
                                     type(r), lambda a, b: r.negated)(r.lhs, r.rhs)),
    },
    "2.4": {
        "isinstance instead of the exact type (a Parameter passes as a Tensor)":
            _reason(exact_type=False),
        "dynamic (None) sizes compared too": _reason(skip_dynamic=False),
        "sizes compared before the rank":
            _reason(order=("type", "dtype", "device", "requires_grad", "size", "rank", "stride")),
    },
})


# -- notebook 03: graph breaks and resume functions ---------------------------------------------
def _live_locals(jumps=True, writes=True, terminal=True):
    from minicompile.dynamo.bytecode_analysis import READS, TERMINAL, WRITES, parts

    @_as("live_locals")
    def live_locals(insts, start):
        live, seen, work = set(), set(), [(start, frozenset())]
        while work:
            pos, written = work.pop()
            if pos >= len(insts) or (pos, written) in seen:
                continue
            seen.add((pos, written))
            inst = insts[pos]
            for opname, name in parts(inst):
                if opname in READS and name not in written:
                    live.add(name)
                if opname in WRITES and writes:
                    written = written | {name}
            if inst.opname not in TERMINAL or not terminal:
                work.append((pos + 1, written))
            if inst.target is not None and jumps:
                work.append((insts.index(inst.target), written))
        return live
    return live_locals


def _resume_arguments(null_as_value=False, locals_first=False):
    from minicompile.dynamo.resume_execution import NULL, VALUE

    @_as("resume_arguments")
    def resume_arguments(stack, frame_locals, live, null):
        kinds = tuple(NULL if v is null and not null_as_value else VALUE for v in stack)
        argnames = [n for n in live if n in frame_locals]
        values = [v for v in stack if v is not null or null_as_value]
        local_values = [frame_locals[n] for n in argnames]
        return kinds, argnames, (local_values + values if locals_first else values + local_values)
    return resume_arguments


def _restore_stack(context=("BEFORE_WITH", "POP_TOP"), null=("PUSH_NULL", None)):
    from minicompile.dynamo.bytecode_transformation import create_instruction
    from minicompile.dynamo.resume_execution import CONTEXT, NULL, stack_arg_name

    @_as("restore_stack")
    def restore_stack(stack):
        out = []
        for i, kind in enumerate(stack):
            if kind == NULL:
                out.append(create_instruction(null[0], argval=null[1]) if null[1] is not None
                           else create_instruction(null[0]))
                continue
            out.append(create_instruction("LOAD_FAST", argval=stack_arg_name(i)))
            if kind == CONTEXT:
                out += [create_instruction(op) for op in context]
        return out
    return restore_stack


def _classify(rows):
    """classify_call as a list of (test, kind) rows tried in order."""
    @_as("classify_call")
    def classify_call(fn):
        return next((kind for test, kind in rows if test(fn)), "unsupported_construct")
    return classify_call


def _is_print_or_logging(fn, loggers=True):
    import builtins
    import logging
    owner = getattr(fn, "__self__", None)
    return fn is builtins.print or (loggers and isinstance(owner, logging.Logger)) or (
        getattr(fn, "__module__", None) == "logging" and not isinstance(fn, type))


def _is_tensor_to_python(fn):
    return isinstance(getattr(fn, "__self__", None), torch.Tensor) and \
        getattr(fn, "__name__", "") in ("item", "tolist")


def _is_numpy_or_random(fn):
    module = getattr(fn, "__module__", None) or type(getattr(fn, "__self__", None)).__module__
    return bool(module) and module.split(".")[0] in ("numpy", "random")


_PRINT = (_is_print_or_logging, "print_or_logging")
_TENSOR = (_is_tensor_to_python, "tensor_to_python")
_NUMPY = (_is_numpy_or_random, "untraceable_call")
_USER = (lambda fn: isinstance(fn, types.FunctionType), "inlined_call")
_BUILTIN = (lambda fn: isinstance(fn, types.BuiltinFunctionType), "untraceable_call")

WRONG.update({
    "3.1": {
        "jumps ignored": _live_locals(jumps=False),
        "a read after a write on the same path still counted": _live_locals(writes=False),
        "control falls through a return or an unconditional jump": _live_locals(terminal=False),
    },
    "3.2": {
        "NULL passed as an argument": _resume_arguments(null_as_value=True),
        "the locals passed before the stack values": _resume_arguments(locals_first=True),
    },
    "3.3": {
        "a context manager entered but its __enter__ result left on the stack":
            _restore_stack(context=("BEFORE_WITH",)),
        "a context manager loaded but not entered": _restore_stack(context=()),
        "NULL pushed as None": _restore_stack(null=("LOAD_CONST", None)),
        # run, this would crash the interpreter (3.12+ reads stack slots unchecked): the check
        # must refuse it before any of its bytecode runs
        "an empty prologue (the stack left unbuilt)": _as("restore_stack")(lambda stack: []),
    },
    "3.4": {
        "a Logger's methods missed": _classify([(lambda fn: _is_print_or_logging(fn, False),
                                                 "print_or_logging"),
                                                _TENSOR, _NUMPY, _USER, _BUILTIN]),
        "user functions tested before numpy/random": _classify([_PRINT, _TENSOR, _USER, _NUMPY,
                                                                _BUILTIN]),
        "builtins tested before tensor methods": _classify([_PRINT, _BUILTIN, _TENSOR, _NUMPY,
                                                            _USER]),
    },
})


# -- notebook 04: AOT autograd ------------------------------------------------------------------
def _default_saved(whole_tuples=False, always_primals=False, output_is_backward=False):
    from minicompile.aot_autograd.partitioners import (ancestors, primals_and_tangents,
                                                       split_outputs)

    @_as("default_saved_values")
    def default_saved_values(joint, num_fwd_outputs):
        primals, _ = primals_and_tangents(joint)
        fw_outs, _ = split_outputs(joint, num_fwd_outputs)
        forward = ancestors(fw_outs) | set(primals)
        saved = []
        for n in joint.nodes:
            read_by_backward = any(u not in forward and (u.op != "output" or output_is_backward)
                                   for u in n.users)
            if n in forward and (read_by_backward or (always_primals and n in primals)):
                if isinstance(n.meta.get("val"), (tuple, list)) and not whole_tuples:
                    saved += [u for u in n.users if u.target is operator.getitem]
                else:
                    saved.append(n)
        return saved
    return default_saved_values


def _min_cut(recompute=True, unit_capacity=False, views_cost_bytes=False):
    import networkx as nx

    from minicompile.aot_autograd.partitioners import (ancestors, descendants, is_recomputable,
                                                       primals_and_tangents, split_outputs,
                                                       tensor_bytes)

    @_as("min_cut_saved_values")
    def min_cut_saved_values(joint, num_fwd_outputs):
        primals, tangents = primals_and_tangents(joint)
        fw_outs, grads = split_outputs(joint, num_fwd_outputs)
        backward_only, forward = descendants(tangents), ancestors(fw_outs)
        relevant = ancestors(fw_outs + grads)
        g = nx.DiGraph()
        for n in relevant:
            if n.op == "output":
                continue
            if n in backward_only:
                g.add_edge(n.name + "_in", "sink")
            elif n in primals or (n in forward and (not recompute or not is_recomputable(n))):
                g.add_edge("source", n.name + "_in")
            is_view = isinstance(n.target, torch._ops.OpOverload) and n.target.is_view \
                and not views_cost_bytes
            cap = 1 if unit_capacity and not is_view else tensor_bytes(n)
            if cap == float("inf") or is_view:
                g.add_edge(n.name + "_in", n.name + "_out")
            else:
                g.add_edge(n.name + "_in", n.name + "_out", capacity=cap)
            for u in n.users:
                if u in relevant and u.op != "output":
                    g.add_edge(n.name + "_out", u.name + "_in")
        _, (source_side, _) = nx.minimum_cut(g, "source", "sink")
        return [n for n in joint.nodes if n.name + "_in" in source_side
                and n.name + "_out" not in source_side]
    return min_cut_saved_values


@_as("make_compiled_function")
def _saved_as_ctx_attributes(fw, bw, num_outputs, num_saved):
    class CompiledFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *inputs):
            outs = fw(*inputs)
            ctx.saved = outs[num_outputs:num_outputs + num_saved]
            return tuple(outs[:num_outputs])

        @staticmethod
        def backward(ctx, *grads):
            return tuple(bw(*ctx.saved, *[g.contiguous() for g in grads]))

    return CompiledFunction.apply


@_as("make_compiled_function")
def _autograd_through_forward(fw, bw, num_outputs, num_saved):
    def run(*inputs):  # differentiable, but the compiled backward never runs
        return tuple(fw(*inputs)[:num_outputs])
    return run


WRONG.update({
    "4.1": {
        "a multi-output node saved whole": _default_saved(whole_tuples=True),
        "every primal saved, read by the backward or not": _default_saved(always_primals=True),
        "the forward outputs saved (the output node counted as backward)":
            _default_saved(output_is_backward=True),
    },
    "4.2": {
        "nothing recomputed (every forward op tied to the source)": _min_cut(recompute=False),
        "every tensor costs the same (fewest tensors, not fewest bytes)": _min_cut(unit_capacity=True),
        "a view costs its own bytes (saving it keeps its whole base alive)":
            _min_cut(views_cost_bytes=True),
    },
    "4.3": {
        "saved tensors kept as ctx attributes (no in-place check)": _saved_as_ctx_attributes,
        "autograd through the forward graph (the compiled backward never runs)":
            _autograd_through_forward,
    },
})


# -- notebook 05: decompositions ----------------------------------------------------------------
_aten = torch.ops.aten


def _float32(fn):
    """The decomposition computing in a hard-coded float32."""
    @_as(fn.__name__)
    def hard_coded(x, *args):
        return fn(_aten._to_copy.default(x, dtype=torch.float32), *args)
    return hard_coded


def _gelu(cube=3, erf_scale=1 / math.sqrt(2)):
    @_as("gelu")
    def gelu(x, approximate="none"):
        if approximate == "tanh":
            inner = _aten.mul.Tensor(_aten.add.Tensor(x, _aten.mul.Tensor(
                _aten.pow.Tensor_Scalar(x, cube), 0.044715)), math.sqrt(2 / math.pi))
            return _aten.mul.Tensor(_aten.mul.Tensor(x, 0.5),
                                    _aten.add.Tensor(_aten.tanh.default(inner), 1))
        erf = _aten.erf.default(_aten.mul.Tensor(x, erf_scale))
        return _aten.mul.Tensor(_aten.mul.Tensor(x, 0.5), _aten.add.Tensor(erf, 1))
    return gelu


def _log_softmax(max_dims="row"):
    @_as("log_softmax")
    def log_softmax(x, dim, half_to_float=False):
        m = _aten.amax.default(x, [dim] if max_dims == "row" else [], True)
        shifted = _aten.sub.Tensor(x, m)
        lse = _aten.log.default(_aten.sum.dim_IntList(_aten.exp.default(shifted), [dim], True))
        return _aten.sub.Tensor(shifted, lse)
    return log_softmax


def _layer_norm(eps_inside=True, unbiased=False):
    @_as("native_layer_norm")
    def native_layer_norm(x, normalized_shape, weight, bias, eps):
        dims = list(range(x.dim() - len(normalized_shape), x.dim()))
        n = math.prod(normalized_shape)
        mean = _aten.div.Tensor(_aten.sum.dim_IntList(x, dims, True), n)
        centered = _aten.sub.Tensor(x, mean)
        squares = _aten.sum.dim_IntList(_aten.mul.Tensor(centered, centered), dims, True)
        var = _aten.div.Tensor(squares, n - 1 if unbiased else n)
        if eps_inside:
            rstd = _aten.rsqrt.default(_aten.add.Tensor(var, eps))
        else:
            rstd = _aten.reciprocal.default(_aten.add.Tensor(_aten.sqrt.default(var), eps))
        out = _aten.mul.Tensor(centered, rstd)
        if weight is not None:
            out = _aten.mul.Tensor(out, weight)
        if bias is not None:
            out = _aten.add.Tensor(out, bias)
        return out, mean, rstd
    return native_layer_norm


WRONG.update({
    "5.1": {
        "a hard-coded float32": _float32(_gelu()),
        "the tanh form with x**2": _gelu(cube=2),
        "erf(x / 2)": _gelu(erf_scale=0.5),
    },
    "5.2": {
        "one global max (rows far below it become -inf)": _log_softmax(max_dims="global"),
        "a hard-coded float32": _float32(_log_softmax()),
    },
    "5.3": {
        "eps added outside the square root": _layer_norm(eps_inside=False),
        "the unbiased variance (N - 1)": _layer_norm(unbiased=True),
        "a hard-coded float32": _float32(_layer_norm()),
    },
})


# -- notebook 06: the loop-level IR -------------------------------------------------------------
def _hardsigmoid(dtype=None, clamp_first=False, upper=True):
    from minicompile.inductor.ir import Pointwise
    from minicompile.inductor.virtualized import ops

    @_as("lower_hardsigmoid")
    def lower_hardsigmoid(x):
        load, out_dtype = x.make_loader(), dtype or x.get_dtype()

        def inner_fn(index):
            v = load(index)
            if not clamp_first:
                v = ops.add(v, ops.constant(3.0, out_dtype))
            v = ops.maximum(v, ops.constant(0.0, out_dtype))
            if upper:
                v = ops.minimum(v, ops.constant(6.0, out_dtype))
            if clamp_first:
                v = ops.add(v, ops.constant(3.0, out_dtype))
            return ops.truediv(v, ops.constant(6.0, out_dtype))

        return Pointwise(x.get_device(), out_dtype, inner_fn, x.get_size())
    return lower_hardsigmoid


def _sum_of_squares(dtype=None, rindex_last=False, square=True):
    from minicompile.inductor.ir import Reduction
    from minicompile.inductor.virtualized import ops

    @_as("lower_sum_of_squares")
    def lower_sum_of_squares(x, dim):
        size, load = x.get_size(), x.make_loader()
        dim = dim % len(size)
        out_dtype = dtype or x.get_dtype()

        def inner_fn(index, rindex):
            full = (list(index) + [rindex[0]] if rindex_last
                    else list(index[:dim]) + [rindex[0]] + list(index[dim:]))
            v = load(full)
            return ops.mul(v, v) if square else v

        kept = size[:dim] + size[dim + 1:]
        return Reduction(x.get_device(), out_dtype, inner_fn, kept, [size[dim]], "sum", out_dtype)
    return lower_sum_of_squares


WRONG.update({
    "6.1": {
        "n and m swapped": _as("transpose_reshape_index")(
            lambda i, n, m: ModularIndexing(i, 1, m) * n + FloorDiv(i, m)),
        "y read as if it were x (the identity)": _as("transpose_reshape_index")(
            lambda i, n, m: i),
        "row and column swapped": _as("transpose_reshape_index")(
            lambda i, n, m: FloorDiv(i, n) * m + ModularIndexing(i, 1, n)),
    },
    "6.2": {
        "a hard-coded float32": _hardsigmoid(dtype=torch.float32),
        "clamped before adding 3": _hardsigmoid(clamp_first=True),
        "no upper clamp at 6": _hardsigmoid(upper=False),
    },
    "6.3": {
        "a hard-coded float32": _sum_of_squares(dtype=torch.float32),
        "the reduction index always last": _sum_of_squares(rindex_last=True),
        "a sum of x, not of its squares": _sum_of_squares(square=False),
    },
})


# -- notebook 07: fusion, bytes moved, memory planning ------------------------------------------
def _tile(prologue=True, one_reduction=True):
    @_as("kernel_tile")
    def kernel_tile(loops):
        reductions = [(n, r) for n, r in loops if r > 1]
        if one_reduction and len(set(reductions)) > 1:
            return None
        if reductions:
            n, r = reductions[0]
            allowed = (n, n * r) if prologue else (n,)
            return (n, r) if all(numel in allowed for numel, rn in loops if rn == 1) else None
        numels = {numel for numel, _ in loops}
        return (numels.pop(), 1) if len(numels) == 1 else None
    return kernel_tile


def _bytes_moved(dedupe_reads=True, store_all=False, read_own=False):
    @_as("bytes_moved")
    def bytes_moved(kernels, numel, outputs, itemsize=4):
        total = 0
        for k, kernel in enumerate(kernels):
            computed = {name for name, _ in kernel}
            reads = [src for _, srcs in kernel for src in srcs
                     if read_own or src not in computed]
            read_elsewhere = {src for j, other in enumerate(kernels) if j != k
                              for _, srcs in other for src in srcs}
            stored = {n for n in computed if store_all or n in outputs or n in read_elsewhere}
            read_cost = sum(numel[n] for n in (set(reads) if dedupe_reads else reads))
            total += (read_cost + sum(numel[n] for n in stored)) * itemsize
        return total
    return bytes_moved


def _plan_reuse(fifo=False, peak_after_frees=False, any_larger=False):
    @_as("plan_reuse")
    def plan_reuse(lifetimes, n_steps):
        storage, free, sizes, live, peak = {}, [], {}, 0, 0
        for step in range(n_steps):
            for name, nbytes, first, _ in lifetimes:
                if first == step:
                    fits = [i for i, (s, size) in enumerate(free)
                            if size == nbytes or (any_larger and size > nbytes)]
                    storage[name] = free.pop(fits[0 if fifo else -1])[0] if fits else name
                    sizes[storage[name]] = sizes.get(storage[name], nbytes)
                    live += nbytes
            if not peak_after_frees:
                peak = max(peak, live)
            for name, nbytes, _, last in lifetimes:
                if last == step:
                    free.append((storage[name], sizes[storage[name]]))
                    live -= nbytes
            peak = max(peak, live)
        return storage, peak
    return plan_reuse


def _fusion_rule(per_row_slices="rows", per_element_slices="points", epilogue=True,
                 always=None):
    """A rule that reads a per-row value within ``per_row_slices`` and a per-element one within
    ``per_element_slices`` ("rows": n slices, "points": n * r), or that answers ``always``."""
    @_as("reads_line_up")
    def reads_line_up(a, b):
        if always is not None:
            return always, "" if always else "never fuse"
        members = a.get_nodes() + b.get_nodes()
        n, r = tile(members)
        slices = {"rows": n, "points": n * r}
        by_name = {m.get_name(): m for m in members}
        writes = {d.name: d for m in members for d in m.read_writes.writes}
        for m in members:
            for dep in m.read_writes.reads:
                writer = by_name.get(dep.name)
                if writer is None or writer is m:
                    continue
                if runs_per_row(writer, n, r):
                    if not rows_line_up(writes[dep.name], dep, slices[per_row_slices]):
                        return False, "outside the row"
                elif epilogue and runs_per_row(m, n, r) and not m.is_reduction():
                    return False, "an epilogue reading a per-element value"
                elif not rows_line_up(writes[dep.name], dep, slices[per_element_slices]):
                    return False, "at another point"
        return True, ""
    return reads_line_up


WRONG.update({
    "7.1": {
        "a prologue over n * r elements refused": _tile(prologue=False),
        "reductions of different shapes in one kernel (the first one wins)":
            _tile(one_reduction=False),
    },
    "7.2": {
        "a buffer read by two nodes of one kernel counted twice": _bytes_moved(dedupe_reads=False),
        "every computed buffer stored": _bytes_moved(store_all=True),
        "reads of buffers the kernel computes itself counted": _bytes_moved(read_own=True),
    },
    "7.3": {
        "the oldest free storage reused first (FIFO)": _plan_reuse(fifo=True),
        "the peak measured after the step's frees": _plan_reuse(peak_after_frees=True),
        "a larger free storage reused for a smaller buffer": _plan_reuse(any_larger=True),
    },
    "7.4": {
        "every pair fused (values read before they exist)": _fusion_rule(always=True),
        "no pair fused (one kernel per node)": _fusion_rule(always=False),
        "a reduction's result read only at the element that computes it":
            _fusion_rule(per_row_slices="points"),
        "a per-element value read anywhere in its row (a mirrored read fused)":
            _fusion_rule(per_element_slices="rows"),
        "an epilogue may read a per-element value (it sees the row's last one)":
            _fusion_rule(epilogue=False),
    },
})

# The correct setting of every parametrised family above passes: the variants differ from a right
# solution only by their mistake.
CONTROLS = {"1.3": _inline(), "2.1": _guard(), "2.2": _create_symbol(), "2.4": _reason(),
            "3.1": _live_locals(), "3.2": _resume_arguments(), "3.3": _restore_stack(),
            "3.4": _classify([_PRINT, _TENSOR, _NUMPY, _USER, _BUILTIN]),
            "4.1": _default_saved(), "4.2": _min_cut(), "5.1": _gelu(), "5.2": _log_softmax(),
            "5.3": _layer_norm(), "6.2": _hardsigmoid(), "6.3": _sum_of_squares(),
            "7.1": _tile(), "7.2": _bytes_moved(), "7.3": _plan_reuse(), "7.4": _fusion_rule(),
            "8.2": _triton_printer(), "8.3": _pointwise(), "8.4": _looped(), "8.5": _tiled(),
            "9.2": _vector(), "9.4": _parallel()}


@pytest.mark.parametrize("ex", sorted(CONTROLS), ids=str)
def test_right_setting_of_each_family_passes(ex):
    exercise = EXERCISES[ex]
    exercise.check(_with(exercise.module, **_overrides(CONTROLS[ex])))


def test_every_exercise_has_wrong_variants():
    assert set(EXERCISES) <= set(WRONG), \
        sorted(set(EXERCISES) - set(WRONG))


CASES = [(ex, name, fn) for ex, variants in WRONG.items() for name, fn in variants.items()]


def _overrides(fn) -> dict:
    """A wrong function, or several (``{name: function}``) replacing one exercise's pieces."""
    return fn if isinstance(fn, dict) else {fn.__name__: fn}


@pytest.mark.parametrize("ex, name, fn", CASES, ids=[f"{c[0]}: {c[1]}" for c in CASES])
def test_wrong_solution_scores_zero(ex, name, fn):
    exercise = EXERCISES[ex]
    wrong = _with(exercise.module, **_overrides(fn))
    with pytest.raises(Exception):
        exercise.check(wrong)


# ---- notebook 10: CUDA graphs (a block of its own: its cases and controls run below) ----------

def _skip_reason(mixed=True, gpus=True, any_gpu=True, empty=True, mutation=True, named=True,
                 syncing=True, only_cpu=False):
    def skip_reason(facts):
        cuda = sorted(d for d in facts.devices if d.startswith("cuda"))
        others = sorted(d for d in facts.devices if not d.startswith("cuda"))
        if only_cpu:  # "cpu" looked for by name: another device counts as none
            cuda, others = sorted(set(facts.devices) - {"cpu"}), sorted({"cpu"} & facts.devices)
        if others and (mixed or not cuda):
            return f"{', '.join(others)} tensors: a CUDA graph records one GPU's kernels"
        if gpus and len(cuda) > 1:
            return f"tensors on {', '.join(cuda)}"
        if not any_gpu and cuda != ["cuda:0"] and cuda:
            return f"tensors on {cuda[0]}, not the first GPU"
        if empty and not cuda:
            return "no CUDA tensors"
        if mutation and facts.mutated_inputs:
            return f"it writes {facts.mutated_inputs[0] if named else 'an input'} in place"
        if syncing and facts.syncing_ops:
            return f"{facts.syncing_ops[0]} makes the host wait"
        return None
    return skip_reason


def _decide(warm_up=True, limit=MAX_RECORDINGS, limit_first=False, use_skipped=True,
            one_recording=False, reason=True):
    def decide(key, warmed, recorded, skipped):
        if one_recording and key not in recorded:
            recorded.clear()  # a new shape drops the recording of the last one
        if limit_first and len(recorded) >= limit:
            skipped[key] = "too many recordings"
            return "skip"
        if key in recorded:
            return "replay"
        if use_skipped and key in skipped:
            return "skip"
        if warm_up and key not in warmed:
            return "warmup"
        if len(recorded) >= limit:
            if reason:
                skipped[key] = "too many recordings"
            return "skip"
        return "record"
    return decide


def _reads_in_place(values=True, positions=True, parameters=True, outputs=True, storage=True,
                    always=False):
    def reads_in_place(i, arg, static_inputs, recorded_storages):
        if always or not isinstance(arg, torch.Tensor):
            return values
        if (positions and i in static_inputs) or \
                (parameters and isinstance(arg, torch.nn.Parameter)):
            return True
        address = arg.untyped_storage().data_ptr() if storage else arg.data_ptr()
        return outputs and address in recorded_storages
    return reads_in_place


WRONG_10 = {
    "10.1": {
        "a graph of CPU and GPU tensors recorded (one GPU tensor is enough)":
            _skip_reason(mixed=False),
        "tensors on two GPUs recorded as one": _skip_reason(gpus=False),
        "only 'cpu' refused (an xpu or mps tensor taken for a GPU)": _skip_reason(only_cpu=True),
        "only cuda:0 may be recorded (a graph on cuda:1 refused)": _skip_reason(any_gpu=False),
        "a graph with no tensors on a GPU recorded": _skip_reason(empty=False),
        "a graph that writes its input in place recorded": _skip_reason(mutation=False),
        "the reason for a written input does not say which": _skip_reason(named=False),
        ".item() and nonzero recorded (the host waits inside a recording)":
            _skip_reason(syncing=False),
    },
    "10.2": {
        "the first call records (autotuning and compiling inside the recording)":
            _decide(warm_up=False),
        "one recording more than MAX_RECORDINGS": _decide(limit=MAX_RECORDINGS + 1),
        "no limit: every new shape is recorded": _decide(limit=10 ** 9),
        "the limit checked before the recordings (a recorded shape is refused once full)":
            _decide(limit_first=True),
        "a shape whose recording failed is recorded again": _decide(use_skipped=False),
        "a new shape drops the last one's recording (re-recorded on every change)":
            _decide(one_recording=True),
        "past the limit, skipped without saying why": _decide(reason=False),
    },
    "10.3": {
        "every tensor copied in (parameters and buffers too)":
            _reads_in_place(positions=False, parameters=False, outputs=False),
        "every tensor read in place (the batch too)": _reads_in_place(always=True),
        "a size copied like a tensor": _reads_in_place(values=False),
        "buffers copied (only nn.Parameter recognised)": _reads_in_place(positions=False),
        "a parameter a backward receives copied (only positions recognised)":
            _reads_in_place(parameters=False),
        "what a forward's replay saved copied into the backward's buffers":
            _reads_in_place(outputs=False),
        "a saved activation looked up by its own address (a view at an offset is copied)":
            _reads_in_place(storage=False),
    },
}
WRONG.update(WRONG_10)
CONTROLS_10 = {"10.1": _skip_reason(), "10.2": _decide(), "10.3": _reads_in_place()}
CASES_10 = [(ex, name, fn) for ex, variants in WRONG_10.items() for name, fn in variants.items()]


@pytest.mark.parametrize("ex", sorted(CONTROLS_10), ids=str)
def test_right_setting_of_each_cuda_graphs_family_passes(ex):
    fn = CONTROLS_10[ex]
    EXERCISES[ex].check(_with(EXERCISES[ex].module, **{fn.__name__: fn}))


@pytest.mark.parametrize("ex, name, fn", CASES_10, ids=[f"{c[0]}: {c[1]}" for c in CASES_10])
def test_wrong_cuda_graphs_solution_scores_zero(ex, name, fn):
    test_wrong_solution_scores_zero(ex, name, fn)
