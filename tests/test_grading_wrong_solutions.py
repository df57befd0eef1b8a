"""Known-wrong solutions must score zero: each is a plausible mistake, and a check that lets one
through would give full marks for a compiler that computes wrong answers (mutation testing of
the checks, CONVENTIONS.md "Exercises")."""

from __future__ import annotations

import types

import pytest
import sympy

from minicompile.grade import grade_one
from minicompile.grading import REPO_ROOT, load_checks, load_learner_module
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


def _printer(add="parenthesised", mod=None, pow_=None):
    def print_index(expr):
        if expr.is_Integer:
            return str(int(expr))
        if expr.is_Symbol:
            return expr.name
        a = [print_index(x) for x in expr.args]
        if isinstance(expr, FloorDiv):
            return f"(({a[0]}) / ({a[1]}))"
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
    },
    "9.2": {
        "a sum printed without parentheses (x + 1 pasted into 2 * _)": _printer(add="bare"),
        "ModularIndexing that forgets to divide": _printer(mod=lambda a: f"(({a[0]}) % ({a[2]}))"),
        "a power printed with ^ (XOR in C++)": _printer(pow_=lambda a, e: f"(({a[0]}) ^ {e})"),
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


def _persistent(**changes):
    def persistent_reduction(reduction_type, dtype):
        good = load_learner_module("ex08_triton_codegen", f"{REPO_ROOT}/solutions")
        neutral, reduce = good.persistent_reduction(reduction_type, dtype)
        change = changes.get(reduction_type, {})
        return change.get("neutral", neutral), change.get("reduce", reduce)
    return persistent_reduction


WRONG.update({
    "8.1": {
        "maximum without the NaN test": _triton_ops(maximum="tl.where({0} > {1}, {0}, {1})"),
        "minimum that tests only the second operand for NaN":
            _triton_ops(minimum="tl.where(({1} != {1}) | ({0} < {1}), {0}, {1})"),
        "remainder as %, the sign of the dividend (C's fmod)": _triton_ops(remainder="{0} % {1}"),
    },
    "8.2": {
        "a sum printed without parentheses": _triton_printer(add="bare"),
        "ModularIndexing that forgets to divide":
            _triton_printer(mod=lambda a: f"(({a[0]}) % ({a[2]}))"),
        "a power printed with ^": _triton_printer(pow_=lambda a, e: f"(({a[0]}) ^ {e})"),
    },
    "8.3": {
        "max's masked lanes filled with 0 (an all-negative row's max is 0)":
            _persistent(max={"neutral": 0}),
        "max with tl.max (a NaN in the row is dropped)":
            _persistent(max={"reduce": "tl.max({0}, 1)[:, None]"}),
        "prod's masked lanes filled with 0": _persistent(prod={"neutral": 0}),
        "min's masked lanes filled with 0": _persistent(min={"neutral": 0}),
    },
})

CASES = [(ex, name, fn) for ex, variants in WRONG.items() for name, fn in variants.items()]


@pytest.mark.parametrize("ex, name, fn", CASES, ids=[f"{c[0]}: {c[1]}" for c in CASES])
def test_wrong_solution_scores_zero(ex, name, fn):
    exercise = EXERCISES[ex]
    fn_name = fn.__name__
    wrong = _with(exercise.module, **{fn_name: fn})
    with pytest.raises(Exception):
        exercise.check(wrong)
