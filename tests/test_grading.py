"""The grader grades: solutions score full marks, untouched stubs score zero, stubs are fresh,
and a learner's solved exercises are never overwritten or counted as stale."""

import logging
import os
import shutil
import subprocess
import sys

import pytest

from minicompile.grade import format_table, grade, grade_one, hint, main, run_checks
from minicompile.grading import REPO_ROOT, load_checks
from minicompile.grading.generate import make_stub, stale_manifest_entries, write_stubs

EXERCISES = load_checks()


@pytest.fixture(scope="module")
def pristine_stubs(tmp_path_factory) -> str:
    """Freshly generated stubs: the learner's exercises/ may hold solved exercises."""
    folder = str(tmp_path_factory.mktemp("stubs"))
    write_stubs(folder)
    return folder


def test_every_notebook_with_exercises_has_at_least_three():
    per_module: dict[str, int] = {}
    for ex in EXERCISES:
        per_module[ex.module] = per_module.get(ex.module, 0) + 1
    assert all(n >= 3 for n in per_module.values()), per_module


def test_generated_stubs_match_the_pristine_manifest():
    assert stale_manifest_entries() == [], "run: bash course.sh python -m minicompile.grading.generate"


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
def test_untouched_stub_scores_zero(ex, pristine_stubs):
    result = grade_one(ex, pristine_stubs)
    assert result.score == 0 and result.status == "todo", result.detail


def test_table_shows_total(pristine_stubs):
    results = run_checks(pristine_stubs, only="2.3", verbose=False)
    assert "total" in format_table(results) and [r.exercise.id for r in results] == ["2.3"]


@pytest.mark.parametrize("only", ["nothing-like-this", "9.9", "42"])
def test_a_selection_that_matches_nothing_is_an_error(only, capsys):
    with pytest.raises(ValueError, match="no exercise matches"):
        run_checks(f"{REPO_ROOT}/solutions", only)
    with pytest.raises(SystemExit) as exit_:
        main(["--solutions", "-k", only])
    assert exit_.value.code == 2 and "no exercise matches" in capsys.readouterr().err


def test_grade_in_process_prints_the_table(capsys):
    grade("2.3", solutions=True)
    out = capsys.readouterr().out
    assert "2.3" in out and "10/10" in out and "total" in out


def _run(cwd, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=cwd, capture_output=True, text=True)


@pytest.fixture
def learner_copy(tmp_path) -> str:
    """A copy of the course in which the learner solved exercise file 02 (cwd comes first on
    sys.path, so ``python -m minicompile...`` run there uses the copy)."""
    skip = shutil.ignore_patterns("__pycache__", "*.pyc")
    for folder in ("minicompile", "solutions", "exercises"):
        shutil.copytree(os.path.join(REPO_ROOT, folder), tmp_path / folder, ignore=skip)
    shutil.copy(tmp_path / "solutions" / "ex02_guards.py", tmp_path / "exercises")
    return str(tmp_path)


def test_stub_check_passes_with_solved_exercises(learner_copy):
    done = _run(learner_copy, "minicompile.grading.generate", "--check")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ex02_guards.py" in done.stdout  # named as the learner's, kept


def test_stub_check_fails_when_solutions_change_without_regenerating(learner_copy):
    path = os.path.join(learner_copy, "solutions", "ex06_loop_ir.py")
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(text.replace("### BEGIN SOLUTION 6.2: ", "### BEGIN SOLUTION 6.2: now "))
    done = _run(learner_copy, "minicompile.grading.generate", "--check")
    assert done.returncode == 1 and "ex06_loop_ir.py" in done.stdout, done.stdout + done.stderr


def test_generate_keeps_edited_exercises_unless_forced(learner_copy):
    solved = os.path.join(learner_copy, "exercises", "ex02_guards.py")
    with open(solved) as f:
        work = f.read()
    os.remove(os.path.join(learner_copy, "exercises", "ex05_decompositions.py"))
    done = _run(learner_copy, "minicompile.grading.generate")
    assert done.returncode == 0 and "--force" in done.stdout, done.stdout + done.stderr
    with open(solved) as f:
        assert f.read() == work, "generate overwrote the learner's solved exercise"
    assert os.path.exists(os.path.join(learner_copy, "exercises", "ex05_decompositions.py"))
    done = _run(learner_copy, "minicompile.grading.generate", "--force")
    with open(solved) as f:
        assert "NotImplementedError" in f.read(), done.stdout + done.stderr


def test_solved_exercise_grades_in_the_learner_copy(learner_copy):
    done = _run(learner_copy, "minicompile.grade", "-k", "02", "--expect", "full")
    assert done.returncode == 0, done.stdout + done.stderr


def test_notebooks_grade_in_process():
    """``!python -m ...`` runs whatever python is on PATH, not the notebook's own interpreter."""
    import nbformat

    shelled = []
    for name in sorted(os.listdir(os.path.join(REPO_ROOT, "notebooks"))):
        if name.endswith(".ipynb"):
            nb = nbformat.read(os.path.join(REPO_ROOT, "notebooks", name), as_version=4)
            shelled += [name for c in nb.cells if c.cell_type == "code"
                        and any(line.lstrip().startswith("!") for line in c.source.splitlines())]
    assert shelled == [], f"shell escapes in {shelled}: use from minicompile.grade import grade"


def _learner_folder(tmp_path, module: str, old: str, new: str) -> str:
    """Pristine stubs, with ``module`` solved and then broken by replacing ``old`` by ``new``."""
    write_stubs(str(tmp_path))
    with open(os.path.join(REPO_ROOT, "solutions", f"{module}.py")) as f:
        text = f.read()
    assert old in text
    with open(tmp_path / f"{module}.py", "w") as f:
        f.write(text.replace(old, new))
    return str(tmp_path)


def test_feedback_shows_the_learners_own_exception_and_where(tmp_path):
    folder = _learner_folder(tmp_path, "ex01_bytecode", "        tx.pop()\n",
                             "        tx.pop()\n        tx.pop()\n")
    result = grade_one(next(e for e in EXERCISES if e.id == "1.2"), folder)
    assert result.status == "fail"
    assert "IndexError" in result.detail and "not captured" not in result.detail
    assert "ex01_bytecode.py:" in result.detail and "in for_iter" in result.detail


def test_feedback_shows_the_numbers_and_the_input(tmp_path):
    folder = _learner_folder(tmp_path, "ex05_decompositions",
                             "aten.rsqrt.default(aten.add.Tensor(var, eps))",
                             "aten.reciprocal.default(aten.add.Tensor(aten.sqrt.default(var), eps))")
    result = grade_one(next(e for e in EXERCISES if e.id == "5.3"), folder)
    assert result.status == "fail"
    assert "Greatest absolute difference" in result.detail and "eps=0.1" in result.detail
    assert "Greatest absolute difference" in format_table([result])  # the whole message


def _solution_lines(ex) -> set[str]:
    """The code lines of exercise ``ex``'s solution region."""
    with open(os.path.join(REPO_ROOT, "solutions", f"{ex.module}.py")) as f:
        text = f.read()
    region = text.split(f"### BEGIN SOLUTION {ex.id}:", 1)[1].split("### END SOLUTION", 1)[0]
    return {line.strip() for line in region.splitlines()[1:]
            if len(line.strip()) > 12 and not line.strip().startswith("#")}


@pytest.mark.parametrize("ex", [e for e in EXERCISES if e.module < "ex08"], ids=lambda e: e.id)
def test_hints_come_in_tiers_and_never_hold_the_solution(ex):
    assert len(ex.hints) >= 2, "a nudge first, then more on request"
    leaked = [line for line in _solution_lines(ex) for tier in ex.hints if line in tier]
    assert leaked == [], f"a hint of {ex.id} holds solution code: {leaked}"
    assert not any(ch in tier for tier in ex.hints for ch in ("==", "->", "lambda")), ex.hints


def test_hint_prints_one_tier_more_per_level(capsys):
    hint("2.3")
    first = capsys.readouterr().out
    hint("2.3", 2)
    second = capsys.readouterr().out
    assert "hint 1/3" in first and "hint 2/3" not in first and "hint('2.3', 2)" in first
    assert "hint 2/3" in second
    with pytest.raises(ValueError):
        hint("2.9")


def test_a_stub_grades_todo_without_the_compilers_fallback_warning(caplog, pristine_stubs):
    """A stub plugged into the compiler makes it fall back to eager with a logged warning; the
    grade says 'todo' and the warning does not interrupt the progress line."""
    plugged = [e for e in EXERCISES if e.id == "7.4"] or EXERCISES[-1:]
    with caplog.at_level(logging.WARNING):
        results = run_checks(pristine_stubs, plugged[0].id, verbose=False)
    assert results[0].status == "todo"
    assert not [r for r in caplog.records if "falls back to eager" in r.getMessage()]
