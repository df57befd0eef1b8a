"""The grader grades: solutions score full marks, untouched stubs score zero, stubs are fresh."""

import pytest

from minicompile.grade import format_table, grade, grade_one
from minicompile.grading import REPO_ROOT, load_checks
from minicompile.grading.generate import generate, make_stub

EXERCISES = load_checks()


def test_every_notebook_with_exercises_has_at_least_three():
    per_module: dict[str, int] = {}
    for ex in EXERCISES:
        per_module[ex.module] = per_module.get(ex.module, 0) + 1
    assert all(n >= 3 for n in per_module.values()), per_module


def test_generated_stubs_are_committed():
    assert generate(check=True) == [], "run: python -m minicompile.grading.generate"


def test_make_stub_replaces_region_and_counts_lines():
    src = (
        "def f(x):\n"
        "    ### BEGIN SOLUTION 9.1: double x\n"
        "    # a comment is not a line of code\n"
        "    y = x\n"
        "    return y + y\n"
        "    ### END SOLUTION\n"
    )
    assert make_stub(src) == (
        "def f(x):\n"
        "    raise NotImplementedError('Exercise 9.1: double x (roughly 2 lines)')\n"
    )


def test_unterminated_region_is_an_error():
    with pytest.raises(SyntaxError):
        make_stub("    ### BEGIN SOLUTION 9.1: x\n    pass\n")


@pytest.mark.parametrize("ex", EXERCISES, ids=lambda e: e.id)
def test_solution_scores_full_marks(ex):
    result = grade_one(ex, f"{REPO_ROOT}/solutions")
    assert result.status == "pass", result.detail


@pytest.mark.parametrize("ex", EXERCISES, ids=lambda e: e.id)
def test_untouched_stub_scores_zero(ex):
    result = grade_one(ex, f"{REPO_ROOT}/exercises")
    assert result.score == 0 and result.status == "todo", result.detail


def test_table_shows_total():
    results = grade(f"{REPO_ROOT}/exercises", only="__none__", verbose=False)
    assert "total" in format_table(results)
