"""Every command the course prints or documents runs as written from a fresh clone: through
``bash course.sh`` (which installs on first use and needs no activated venv), never a bare
``python`` or ``pytest``; each names a subcommand, module, file and flags that exist; and a fast
few of them really run. Also the two things a newcomer meets before any command: the grader
choosing Triton's interpreter itself without a GPU, and notebooks that opening in JupyterLab
leaves unchanged for git."""

from __future__ import annotations

import glob
import importlib.util
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

import minicompile.config as config
from minicompile.course.notebook_metadata import dumps, normalise, without_machine_paths
from minicompile.grade import Result, _note
from minicompile.grading import REPO_ROOT, load_checks

ROOT = Path(REPO_ROOT)
NOTEBOOKS = sorted(glob.glob(str(ROOT / "notebooks" / "*.ipynb")))
# a command starts with environment assignments, maybe ``timeout N``, then its program
COMMAND = re.compile(
    r"^(?:[A-Z_]+=\S*\s+)*(?:timeout \d+\s+)?(?P<program>bash course\.sh|\S+)(?P<rest>.*)$")
# programs that run from a fresh clone without an activated venv
LAUNCHERS = re.compile(r"bash course\.sh|\.venv-[\w-]+/bin/(?:python|pip)|python3\.\d+|"
                       r"git|jupyter|sudo|apt-get|brew|nvidia-smi|dot|cd")
BARE = re.compile(r"python3?|pytest|pip|\.venv/bin/\w+")
PLACEHOLDERS = {"my_script.py", "fuzz_failures/<file>"}


def documented_texts() -> dict[str, str]:
    """Where a learner reads commands: README, docs/, the notebooks' prose, exercise headers,
    and what the grader prints when an exercise fails."""
    texts = {"README.md": (ROOT / "README.md").read_text()}
    for path in sorted((ROOT / "docs").glob("*.md")):
        texts[f"docs/{path.name}"] = path.read_text()
    for path in NOTEBOOKS:
        cells = json.loads(Path(path).read_text())["cells"]
        prose = "\n\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
        texts[f"notebooks/{os.path.basename(path)}"] = prose
    for path in sorted((ROOT / "exercises").glob("ex*.py")):
        texts[f"exercises/{path.name}"] = path.read_text().split('"""')[1]
    ex = load_checks()[0]
    texts["the grader's failure note"] = "`" + _note(Result(ex, 0, "fail", "x")).split(
        " or ")[-1] + "`"
    return texts


def commands_in(text: str) -> list[str]:
    """Command lines: each line of a fenced block (continuations joined, comments dropped) and
    each inline code span that starts like a command."""
    found = []
    for block in re.findall(r"```(?:bash|sh)?\n(.*?)```", text, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            found.append(line.split(" # ")[0].strip())
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    found += [span.strip() for span in re.findall(r"``?([^`\n]+)``?", text)]
    return [c for c in found if _is_command(c)]


def _is_command(line: str) -> bool:
    m = COMMAND.match(line)  # a program named without arguments is a name, not a command
    return bool(m) and bool(m["rest"].strip()) and bool(
        LAUNCHERS.fullmatch(m["program"]) or BARE.fullmatch(m["program"]))


def all_commands() -> list[tuple[str, str]]:
    return [(where, c) for where, text in documented_texts().items() for c in commands_in(text)]


COMMANDS = all_commands()
# The commands start processes and never compile with the CPU backend: checked once, not again in
# course.sh's second pass (MINICOMPILE_CPU_BACKEND=triton)
runs_processes = pytest.mark.skipif(config.inductor.cpu_backend != "cpp",
                                    reason="checked in the first pass (cpp)")


def test_the_documents_hold_commands():
    """The extraction finds what it checks: every place a learner reads has commands."""
    places = {where for where, _ in COMMANDS}
    for where in ("README.md", "docs/benchmarks.md", "docs/fuzzing.md", "docs/models.md",
                  "notebooks/00_tour.ipynb", "exercises/ex01_bytecode.py",
                  "the grader's failure note"):
        assert where in places, where
    assert sum(c.startswith("bash course.sh grade") for _, c in COMMANDS) >= 5


@pytest.mark.parametrize("where,command", COMMANDS, ids=[f"{w}:{c[:40]}" for w, c in COMMANDS])
def test_no_command_needs_an_activated_venv(where, command):
    program = COMMAND.match(command)["program"]
    assert not BARE.fullmatch(program), (
        f"{where}: {command!r} fails with ModuleNotFoundError unless .venv is activated; "
        f"write it as bash course.sh grade|bench|fuzz|python ...")


@cache
def course_subcommands() -> set[str]:
    usage = re.search(r'USAGE="(.*?)"', (ROOT / "course.sh").read_text(), re.S)[1]
    return set(re.findall(r"^  (\w+) ", usage, re.M))


@cache
def help_text(*args: str) -> str:
    run = subprocess.run([sys.executable, *args, "--help"], capture_output=True, text=True,
                         cwd=REPO_ROOT, env={**os.environ, "PYTHONPATH": REPO_ROOT}, timeout=300)
    assert run.returncode == 0, run.stderr
    return run.stdout


def _module_and_args(words: list[str]) -> tuple[list[str], list[str]]:
    """(how to ask for --help, the arguments) of ``course.sh SUB ...`` or ``python -m M ...``."""
    if words[0] in ("grade", "bench", "fuzz"):
        module = ["-m", f"minicompile.{words[0]}"]
        if words[0] == "bench" and "--suite" in words and words[words.index("--suite") + 1] in (
                "huggingface", "timm", "all"):
            module += ["--suite", "all"]  # the model suites have their own flags
        return module, words[1:]
    if words[:2] and words[0] == "python" and words[1] == "-m":
        return ["-m", words[2]], words[3:]
    return [], words[1:]


COURSE_COMMANDS = [(w, c) for w, c in COMMANDS if c.split(" # ")[0].count("bash course.sh")]


@runs_processes
@pytest.mark.parametrize("where,command", COURSE_COMMANDS,
                         ids=[f"{w}:{c[:40]}" for w, c in COURSE_COMMANDS])
def test_each_course_command_names_what_exists(where, command):
    """The subcommand, then the module (importable), the files and every flag (in the module's
    own --help) of each ``bash course.sh ...`` command."""
    words = shlex.split(command.split("bash course.sh", 1)[1].replace("|", " ").replace(
        "<file>", "FILE"))
    assert words and words[0] in course_subcommands(), f"{where}: {command!r}"
    if words[0] in ("lab", "test"):
        return
    if words[0] == "python" and len(words) > 1 and words[1] == "-c":
        compile(words[2], where, "exec")
        return
    module, args = _module_and_args(words)
    if not module:
        script = args[0]
        assert script in PLACEHOLDERS or (ROOT / script).exists(), f"{where}: no {script}"
        return
    if not module[1].startswith("minicompile"):  # pytest, pip: installed, files there
        assert importlib.util.find_spec(module[1]), f"{where}: no module {module[1]}"
        assert all((ROOT / a).exists() for a in args if a.startswith("tests/")), where
        return
    help_ = help_text(*module)
    for arg in args:
        flag = arg.split("=")[0]
        if flag.startswith("-") and flag != "--help":
            assert re.search(rf"(^|[\s\[,]){re.escape(flag)}\b", help_), (
                f"{where}: {command!r}: {' '.join(module)} has no {flag}")
        elif arg.startswith("tests/"):
            assert (ROOT / arg).exists(), f"{where}: no {arg}"


@pytest.fixture(scope="module")
def course_sh(tmp_path_factory):
    """``bash course.sh`` with this Python as the course's (a venv already installed)."""
    venv = tmp_path_factory.mktemp("venv")
    (venv / "bin").mkdir()
    python = venv / "bin" / "python"
    python.write_text(f'#!/bin/sh\nPYTHONPATH="{REPO_ROOT}" exec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    (venv / ".minicompile-installed").touch()
    env = {**os.environ, "MINICOMPILE_VENV": str(venv)}

    def run(*args: str, cwd: str = REPO_ROOT, extra: dict | None = None):
        return subprocess.run(["bash", str(ROOT / "course.sh"), *args], capture_output=True,
                              text=True, cwd=cwd, env={**env, **(extra or {})}, timeout=300)
    return run


@runs_processes
@pytest.mark.parametrize("args", [["grade", "--hint", "1.1"], ["bench", "--help"],
                                  ["fuzz", "--help"], ["--help"]])
def test_course_subcommands_run(course_sh, args):
    run = course_sh(*args)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip()


@runs_processes
def test_course_python_runs_in_the_callers_folder(course_sh, tmp_path):
    """``bash course.sh python script.py`` from any folder: the file is the caller's, the
    package is the course's, and without a GPU Triton runs in its interpreter."""
    (tmp_path / "script.py").write_text(
        "import os, minicompile, torch\n"
        "print(os.getcwd(), os.path.dirname(os.path.dirname(minicompile.__file__)),"
        " torch.cuda.is_available() or os.environ['TRITON_INTERPRET'])\n")
    run = course_sh("python", "script.py", cwd=str(tmp_path),
                    extra={"TRITON_INTERPRET": "", "CUDA_VISIBLE_DEVICES": ""})
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == [str(tmp_path), REPO_ROOT, "1"]


@runs_processes
def test_an_unknown_subcommand_fails_with_the_usage(course_sh):
    run = course_sh("grades")
    assert run.returncode == 2 and "usage: bash course.sh" in run.stdout and "grade" in run.stdout


@runs_processes
def test_the_grader_picks_tritons_interpreter_without_a_gpu(tmp_path):
    """A correct Triton solution passes from the command line with no TRITON_INTERPRET set,
    on a machine whose GPU is hidden."""
    triton_exercise = next(e.id for e in load_checks() if e.module.startswith("ex08"))
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env.update(PYTHONPATH=REPO_ROOT, CUDA_VISIBLE_DEVICES="")
    run = subprocess.run([sys.executable, "-m", "minicompile.grade", "--solutions",
                          "-k", triton_exercise, "--expect", "full"],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]


# -- notebooks as JupyterLab writes them ---------------------------------------------------------

@pytest.fixture
def jupyter():
    """nbformat and ipykernel: installed with the course, absent where only the tests run."""
    return (pytest.importorskip("nbformat"), pytest.importorskip("ipykernel.kernelspec"),
            pytest.importorskip("ipykernel.ipkernel"))


def _with_version_of(nb: dict, like: dict) -> dict:
    """``nb`` with the Python version ``like`` has (git's smudge filter writes one on checkout)."""
    version = like.get("metadata", {}).get("language_info", {}).get("version")
    if version is not None:
        nb["metadata"]["language_info"]["version"] = version
    return nb


@pytest.mark.parametrize("text, committed", [
    ("/opt/torch/.venv/lib/python3.12/site-packages/torch/_inductor/lowering.py:7836: UserWarning",
     "torch/_inductor/lowering.py:7836: UserWarning"),
    ("(/work/main/.venv/lib/python3.11/site-packages/torch/nn/modules/container.py:248 in forward",
     "(torch/nn/modules/container.py:248 in forward"),
    ("/home/ada/course/minicompile/cudagraphs/cudagraph_trees.py:160: UserWarning",
     "minicompile/cudagraphs/cudagraph_trees.py:160: UserWarning"),
    ("cache folder: /root/.cache/minicompile/root", "cache folder: ~/.cache/minicompile/root"),
    ("see https://example.org/site-packages/x and a/b/c", "see https://example.org/site-packages/x and a/b/c"),
    ("(/tmp/ipykernel_585/1893038287.py:1)", "(/tmp/ipykernel_585/1893038287.py:1)"),
])
def test_outputs_are_committed_without_the_paths_of_the_machine_that_ran_them(text, committed):
    """A warning's file or a guard's source line names where that machine installed torch or
    cloned the course; the committed notebook keeps the part every machine shares (and
    ``test_notebooks_are_committed_as_the_lab_writes_them`` fails on a notebook that doesn't)."""
    assert without_machine_paths(text) == committed
    nb = {"cells": [{"cell_type": "code", "source": text, "outputs": [
        {"output_type": "stream", "name": "stderr", "text": [text]},
        {"output_type": "display_data", "data": {"text/plain": text, "image/png": text}}]}]}
    (stream, display) = normalise(nb)["cells"][0]["outputs"]
    assert stream["text"] == [committed] and display["data"]["text/plain"] == committed
    assert display["data"]["image/png"] == text and nb["cells"][0]["source"] == text


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_notebooks_are_committed_as_the_lab_writes_them(path, jupyter):
    """nbformat's layout and the installed kernel's display name, in the file (which may carry
    a Python version: course.sh's filter writes it on checkout, as the lab would) and in the
    commit (which never does)."""
    nbformat, kernelspec, _ = jupyter
    text = Path(path).read_text()
    nb = json.loads(text)
    installed_name = kernelspec.get_kernel_dict()["display_name"]
    assert nb["metadata"]["kernelspec"]["display_name"] == installed_name
    assert text == dumps(_with_version_of(normalise(json.loads(text)), nb)), (
        f"run: bash course.sh python minicompile/course/notebook_metadata.py {path}")
    assert text == nbformat.writes(nbformat.reads(text, 4)) + "\n"
    rel = os.path.relpath(path, REPO_ROOT)
    committed = subprocess.run(["git", "show", f"HEAD:{rel}"], cwd=REPO_ROOT,
                               capture_output=True, text=True)
    if committed.returncode == 0:  # a git checkout (git show: the blob, no filter)
        assert committed.stdout == dumps(normalise(json.loads(committed.stdout))), rel


def _git(cwd, *args):
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True,
                          env={**os.environ, "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b",
                               "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@b"}).stdout


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
@pytest.mark.parametrize("filtered", [True, False])
def test_opening_a_notebook_in_the_lab_leaves_git_status_clean(tmp_path, filtered, jupyter):
    """What the lab writes on opening (the kernel's language_info with its Python's version,
    the kernel's display name) is what course.sh's filter checked out; without the filter,
    the same file shows modified (so the check can fail)."""
    notebook = tmp_path / "nb.ipynb"  # as committed: the checkout here may carry the filter's
    notebook.write_text(dumps(normalise(json.loads(Path(NOTEBOOKS[0]).read_text()))))  # version
    shutil.copy(ROOT / ".gitattributes", tmp_path / ".gitattributes")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-qm", "course")
    if filtered:  # as course.sh sets it up, after the clone
        script = ROOT / "minicompile" / "course" / "notebook_metadata.py"
        for how in ("clean", "smudge"):
            _git(tmp_path, "config", f"filter.notebook-metadata.{how}",
                 f"'{sys.executable}' '{script}' --{how}")
        notebook.unlink()
        _git(tmp_path, "checkout", "--", "nb.ipynb")
    nbformat, kernelspec, ipkernel = jupyter
    nb = nbformat.read(notebook, 4)  # the lab opens it, its kernel starts, it autosaves
    nb.metadata.kernelspec.display_name = kernelspec.get_kernel_dict()["display_name"]
    nb.metadata.language_info = {**ipkernel.IPythonKernel.language_info,
                                 "version": platform.python_version()}
    nbformat.write(nb, notebook)
    status = _git(tmp_path, "status", "--porcelain")
    assert (status == "") == filtered, status
    if filtered:
        assert '"version": "' not in _git(tmp_path, "show", "HEAD:nb.ipynb")
