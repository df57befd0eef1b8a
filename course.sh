#!/usr/bin/env bash
# Every command of the course runs through this script, from a fresh clone (see README.md):
#   bash course.sh lab            install everything, then open the course in JupyterLab
#   bash course.sh test           install everything, then run the whole test suite (what CI runs)
#   bash course.sh test --quick   the everyday check: the stubs, the notebooks, your grades
#   bash course.sh grade|bench|fuzz [args]   python -m minicompile.grade|bench|fuzz [args]
#   bash course.sh python [args]  the course's Python (.venv/bin/python)
# Installs into ./.venv (override with MINICOMPILE_VENV) on first use. Safe to run again: set-up
# is skipped when nothing changed. Without a GPU, Triton kernels run in Triton's interpreter
# (TRITON_INTERPRET=1) under every subcommand.
set -euo pipefail
HERE="$PWD"  # where the command was typed: the run subcommands' file arguments are relative to it
cd "$(dirname "${BASH_SOURCE[0]}")"

VENV="${MINICOMPILE_VENV:-.venv}"
PY="$VENV/bin/python"
# The torch releases minicompile supports, read from pyproject.toml ("torch>=2.11,<2.16"). A torch
# already in a venv is kept when it is in this range; otherwise the newest release in it is
# installed, unless MINICOMPILE_TORCH names one. torch goes in before the course's packages, so
# that the range is already satisfied and pip never swaps the build chosen here (install_torch).
TORCH_RANGE="$(sed -n 's/^ *"\(torch[<>=!,.0-9]*\)",.*/\1/p' pyproject.toml)"
TORCH_SPEC="${MINICOMPILE_TORCH:-$TORCH_RANGE}"
TORCH_CPU_INDEX="https://download.pytorch.org/whl/cpu"
# A second venv with the newest supported torch, on Python 3.13 where it is installed here
VENV_NEWEST="${MINICOMPILE_VENV_NEWEST:-${VENV}-newest}"

say() { printf '\033[1m[course]\033[0m %s\n' "$*"; }

install_dot() {
  command -v dot >/dev/null && return
  say "installing Graphviz (the dot program draws every graph in the course)"
  local sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  if command -v apt-get >/dev/null; then
    $sudo apt-get update -qq && $sudo apt-get install -y -qq graphviz >/dev/null
  elif command -v brew >/dev/null; then
    brew install graphviz
  else
    say "please install Graphviz (https://graphviz.org/download/) and run again"; exit 1
  fi
}

has_nvidia_gpu() { command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; }

pip_has_local_source() {
  # a wheel folder or a private index configured for pip (as on offline CI machines)
  [ -n "${PIP_FIND_LINKS:-}${PIP_INDEX_URL:-}" ] \
    || "$PY" -m pip config list 2>/dev/null | grep -qE '(find-links|index-url)='
}

torch_in_range() {
  # $1 (a python) imports a torch inside TORCH_RANGE (torch.__version__ compares as a version)
  "$1" - "$TORCH_RANGE" 2>/dev/null <<'EOF'
import operator, re, sys, torch
OPS = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt, "==": operator.eq}
sys.exit(not all(OPS[op](torch.__version__, v)
                 for op, v in re.findall(r"([<>=]=?)([0-9.]+)", sys.argv[1])))
EOF
}

install_torch() {
  # $1: the venv's python, $2: the requirement. An NVIDIA GPU: PyPI's default build (CUDA). No
  # GPU: the CPU build from PyTorch's CPU wheel index (a few hundred MB instead of several GB);
  # where pip has a local wheel folder or index configured (as on CI machines, which reach no
  # other index), that is tried first, and each of the two is the other's fallback.
  local py="$1" plain=("$2") cpu=(--index-url "$TORCH_CPU_INDEX" "$2")
  torch_in_range "$py" && return
  if has_nvidia_gpu; then
    say "installing torch ($2)"; "$py" -m pip install -q "${plain[@]}"; return
  fi
  local first=("${cpu[@]}") second=("${plain[@]}")
  PY="$py" pip_has_local_source && { first=("${plain[@]}"); second=("${cpu[@]}"); }
  say "no NVIDIA GPU: installing the CPU build of torch ($2) where there is one"
  "$py" -m pip install -q "${first[@]}" || "$py" -m pip install -q "${second[@]}"
}

install_venv() {
  # $1: venv, $2: the python that makes it, $3: torch requirement, $4: the course's extras
  local venv="$1" py="$1/bin/python" stamp="$1/.minicompile-installed"
  [ -x "$py" ] || { say "creating $venv"; "$2" -m venv "$venv" || return 1; }
  if [ -f "$stamp" ] && [ "$stamp" -nt pyproject.toml ] && torch_in_range "$py"; then return; fi
  say "installing torch and the course's packages into $venv"
  "$py" -m pip install -q --upgrade pip && install_torch "$py" "$3" \
    && "$py" -m pip install -q -e ".[$4]" && install_model_suites "$py" \
    && "$py" -m ipykernel install --sys-prefix --name python3 >/dev/null || return 1
  say "$venv has torch $("$py" -c 'import torch; print(torch.__version__)')"
  touch "$stamp"
}

install_python_packages() { install_venv "$VENV" python3 "$TORCH_SPEC" course,test; }

install_model_suites() {
  # The benchmark's model suites and tests/test_models.py (docs/models.md): transformers always,
  # timm where torch is a CUDA build. timm imports torchvision, and the registry's torchvision is
  # built against the registry's (CUDA) torch: beside the CPU build its operators do not load
  # ("operator torchvision::nms does not exist"), so there timm is left out and its tests skip.
  # The torch already installed is pinned: a torchvision made for another torch must not swap it.
  local py="$1" extra=hf torch_now
  "$py" -c "import sys, torch; sys.exit(0 if torch.version.cuda else 1)" && extra=models
  # (the public version: 2.15.0 for 2.15.0+cu132, which is what the registry lists)
  torch_now="$("$py" -c 'import torch; print(torch.__version__.split("+")[0])')"
  say "installing the model suites' packages (.[$extra]) beside torch $torch_now"
  "$py" -m pip install -q -e ".[$extra]" "torch==$torch_now"
}

triton_on_cpu_without_gpu() {
  # Triton kernels run on CPU tensors through Triton's interpreter when there is no GPU.
  [ -n "${TRITON_INTERPRET:-}" ] && return
  "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" \
    || export TRITON_INTERPRET=1
}

absolute_python() { echo "$(cd "$(dirname "$PY")" && pwd)/python"; }  # usable from any folder

installed() {
  # set up once: the run subcommands install only when .venv is missing or stale
  local stamp="$VENV/.minicompile-installed"
  [ -f "$stamp" ] && [ "$stamp" -nt pyproject.toml ] && return
  install_dot; install_python_packages
}

keep_notebook_metadata() {
  # Opening a notebook in JupyterLab rewrites its metadata (the kernel's display name, the
  # Python version): .gitattributes sends notebooks through a git filter that writes, on
  # checkout, what the lab will write, and takes the version out again on commit
  # (minicompile/course/notebook_metadata.py). Notebooks checked out before the filter existed
  # and not changed since are checked out again through it.
  git rev-parse --git-dir >/dev/null 2>&1 || return 0
  local py script="$PWD/minicompile/course/notebook_metadata.py" nb
  py="$(absolute_python)"
  git config filter.notebook-metadata.clean "'$py' '$script' --clean" || return 0
  git config filter.notebook-metadata.smudge "'$py' '$script' --smudge"
  for nb in notebooks/*.ipynb; do
    if git diff --quiet -- "$nb" 2>/dev/null && ! grep -q '"version": "3' "$nb"; then
      rm "$nb" && git checkout -- "$nb"
    fi
  done
}

expected_time() {
  # measured on a 2-core machine; more cores, less time
  if [ "$1" = quick ]; then
    say "the everyday check: about 5 to 10 minutes on 2 cores (the stubs, every notebook, your grades)"
  else
    say "the whole suite: about 30 minutes on a fresh 2-core machine (installing included), about" \
        "20 once installed; the everyday check is bash course.sh test --quick"
  fi
}

run_quick() {
  # What a learner runs every day: the notebooks as they stand, then their own grades (which
  # never fail the command: an exercise not yet done is progress, not an error).
  triton_on_cpu_without_gpu
  "$PY" -m minicompile.grading.generate --check
  say "every notebook, as the test suite runs it (pytest --nbval-lax)"
  "$PY" -m pytest notebooks --nbval-lax -q -p no:cacheprovider "$@"
  say "your exercises (bash course.sh grade)"
  "$PY" -m minicompile.grade
}

parallel() {
  # pytest-xdist's workers for $1 (a python): one per core up to 4, each test file in one
  # worker (a notebook's cells share one kernel, in order); none where xdist is missing
  local cores
  cores="$(nproc 2>/dev/null || echo 1)"; [ "$cores" -gt 4 ] && cores=4
  if [ "$cores" -ge 2 ] && "$1" -c "import xdist" 2>/dev/null; then
    echo "-n $cores --dist loadfile"
  fi
}

# The test files about generating kernels: the pass with Triton kernels for CPU tensors runs
# these (the others test the front end and the course, which do not depend on the backend).
TRITON_PASS_FILES=(tests/test_triton_*.py tests/test_lowering.py tests/test_opinfo.py
  tests/test_checks.py tests/test_inlining.py tests/test_scans.py tests/test_scatter.py
  tests/test_pooling.py tests/test_kernel_strategies.py tests/test_fusion_bytes.py
  tests/test_scheduler.py tests/test_input_mutation.py tests/test_inplace_views.py
  tests/test_layout.py tests/test_ir.py tests/test_codegen_seam.py tests/test_regressions.py
  tests/test_blind_spots.py tests/test_models.py)
# The test files the pass on the newest torch leaves to the first: they test minicompile's own
# machinery (code generators' output, its loop IR's lowerings, scans, layouts and kernel
# strategies, the fuzzers, the kernel cache, the course's files, commands and grading), which the
# first pass checks on its torch, through the same front end (the Triton code generator's text
# is also checked a second time, in the interpreter's pass). What depends on torch's version
# stays: the front end's tracing of torch, AOT autograd, functionalisation, decompositions,
# OpInfo's samples, the models and the notebooks.
NEWEST_PASS_SKIPS=(tests/test_fuzz*.py tests/test_grading*.py tests/test_triton_codegen.py
  tests/test_inductor_port.py tests/test_course_*.py tests/test_resume_execution.py
  tests/test_structure.py tests/test_bench.py tests/test_cpp_*.py tests/test_checks.py
  tests/test_inlining.py tests/test_scheduler.py tests/test_fusion_bytes.py
  tests/test_layout_opt.py tests/test_codecache.py tests/test_compile_workers.py
  tests/test_executor.py tests/test_lowering.py tests/test_scans.py tests/test_layout.py
  tests/test_kernel_strategies.py tests/test_pooling.py tests/test_scatter.py
  tests/test_fx_passes.py tests/test_codegen_seam.py)
# ... and, where it runs under the first pass's Python, the tests whose subject is Python's
# bytecode (PyTorch's Dynamo tests, ported), which depend on Python's version, not torch's
NEWEST_PASS_SKIPS_SAME_PYTHON=(tests/test_dynamo_port.py)
# The model suites run once, on the newest torch where there is a pass on it: its venv takes
# timm where the first pass's (a CPU build of torch) cannot (install_model_suites)
NEWEST_PASS_ONLY=(tests/test_models.py)

run_tests() {
  triton_on_cpu_without_gpu
  say "the exercise stubs must be what solutions/ generates (your work in exercises/ is not read)"
  "$PY" -m minicompile.grading.generate --check
  local newest_py notebooks=notebooks
  newest_py="$(newest_pass_python)"
  # the notebooks run once, on the newest torch where there is a pass on it
  [ -n "$newest_py" ] && install_newest "$newest_py" && notebooks=""
  local first_skips=() f
  [ -z "$notebooks" ] && for f in "${NEWEST_PASS_ONLY[@]}"; do first_skips+=(--ignore "$f"); done
  say "unit tests, graded exercises (solutions score full marks, stubs zero)${notebooks:+ and notebooks}"
  # shellcheck disable=SC2046,SC2086  # (parallel's words are separate arguments)
  "$PY" -m pytest tests $notebooks --nbval-lax -q -p no:cacheprovider "${first_skips[@]}" \
    $(parallel "$PY") "$@"
  if [ "${TRITON_INTERPRET:-0}" = 1 ]; then
    say "the code generation tests again with Triton kernels for CPU tensors (Triton's interpreter)"
    # shellcheck disable=SC2046
    MINICOMPILE_CPU_BACKEND=triton "$PY" -m pytest "${TRITON_PASS_FILES[@]}" -q \
      -p no:cacheprovider $(parallel "$PY") "$@"
  fi
  [ -z "$notebooks" ] && run_tests_newest "$@"
  run_tests_other_pythons
}

find_python() {
  # the first python$1 that runs: a pyenv shim exists even where that version is not selected
  local py
  for py in "python$1" "${PYENV_ROOT:-$HOME/.pyenv}/versions/$1".*/bin/"python$1"; do
    if "$py" -c "" 2>/dev/null; then command -v "$py"; return; fi
  done
}

python_version() { "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])'; }

NEWEST_TESTED_ON=""  # the Python version the newest-torch pass ran under, once it has

newest_pass_python() {
  # The Python for a second pass, on the newest supported torch under the newest supported
  # Python (3.13 where it is installed, else .venv's), or nothing: there is one where either
  # differs from .venv's, that is where Python 3.13 is installed beside another, or where
  # MINICOMPILE_TORCH pins .venv's torch (CI pins the machine's local CPU wheel there).
  local py
  py="$(find_python 3.13)"
  if [ -z "$py" ] || [ "$(python_version "$PY")" = 3.13 ]; then
    [ -n "${MINICOMPILE_TORCH:-}" ] || return 0
    py="$("$PY" -c 'import sys; print(sys._base_executable)')"
  fi
  echo "$py"
}

install_newest() {
  # Without a GPU, torch's CPU build where its index is reachable, else the registry's (the
  # CUDA one, a few GB: about a minute where the registry is a local mirror, as on CI machines).
  install_venv "$VENV_NEWEST" "$1" "$TORCH_RANGE" test && return
  say "no torch for $1: no pass on the newest torch"; return 1
}

run_tests_newest() {
  # The tests that reach torch (the front end, AOT autograd, decompositions, lowerings, the
  # models) and the notebooks, on the newest torch
  local skips=() f
  for f in "${NEWEST_PASS_SKIPS[@]}"; do skips+=(--ignore "$f"); done
  if [ "$(python_version "$VENV_NEWEST/bin/python")" = "$(python_version "$PY")" ]; then
    for f in "${NEWEST_PASS_SKIPS_SAME_PYTHON[@]}"; do skips+=(--ignore "$f"); done
  fi
  say "the tests that reach torch, and the notebooks, on the newest supported torch ($VENV_NEWEST)"
  # shellcheck disable=SC2046
  "$VENV_NEWEST/bin/python" -m pytest tests notebooks --nbval-lax -q -p no:cacheprovider \
    "${skips[@]}" $(parallel "$VENV_NEWEST/bin/python") "$@"
  NEWEST_TESTED_ON="$(python_version "$VENV_NEWEST/bin/python")"
}

run_tests_other_pythons() {
  # Bytecode is what changes between CPython releases, so the bytecode layer is also checked
  # under the other supported versions installed here, without torch: tests/test_resume_execution.py
  # as a script (resume functions and the assembler at every offset of a corpus). Not again
  # under the Python that ran the whole suite on the newest torch.
  local version py tested
  tested="$(python_version "$PY") $NEWEST_TESTED_ON"
  for version in 3.11 3.12 3.13; do
    py="$(find_python "$version")"
    [ -n "$py" ] && [[ " $tested " != *" $version "* ]] || continue
    say "resume functions and the bytecode assembler under Python $version (no torch needed)"
    PYTHONPATH="$PWD" "$py" tests/test_resume_execution.py
  done
}

USAGE="usage: bash course.sh lab [jupyter args] | test [--quick] [pytest args]
       | grade [args] | bench [args] | fuzz [args] | python [args]
  lab      install, then open the course in JupyterLab
  test     install, then the whole test suite (what CI runs); --quick: the everyday check
  grade    your exercises (python -m minicompile.grade: -k 04, --hint 2.3, --pipeline, --help)
  bench    eager, torch.compile and minicompile side by side (python -m minicompile.bench)
  fuzz     minicompile against eager on random programs (python -m minicompile.fuzz)
  python   the course's Python, e.g. bash course.sh python my_script.py"

case "${1:-}" in
  lab)
    shift; install_dot; install_python_packages; keep_notebook_metadata; triton_on_cpu_without_gpu
    # trusted notebooks show their committed drawings (SVG output) on first open
    "$VENV/bin/jupyter" trust notebooks/*.ipynb >/dev/null 2>&1 || say "could not trust notebooks"
    say "opening the course at the repository root: start with notebooks/00_tour.ipynb;" \
        "your work goes in exercises/"
    root_flag=(); [ "$(id -u)" = 0 ] && root_flag=(--allow-root)  # containers often run as root
    exec "$VENV/bin/jupyter" lab "${root_flag[@]}" --ServerApp.root_dir="$PWD" "$@" ;;
  test)
    shift
    if [ "${1:-}" = --quick ]; then
      shift; expected_time quick; installed; keep_notebook_metadata; run_quick "$@"
    else
      expected_time full; install_dot; install_python_packages; keep_notebook_metadata
      run_tests "$@"
    fi ;;
  grade|bench|fuzz)
    module="minicompile.$1"; shift; installed; triton_on_cpu_without_gpu
    py="$(absolute_python)"; cd "$HERE"; exec "$py" -m "$module" "$@" ;;
  python)
    shift; installed; triton_on_cpu_without_gpu
    py="$(absolute_python)"; cd "$HERE"; exec "$py" "$@" ;;
  -h|--help|help)
    echo "$USAGE" ;;
  *)
    echo "$USAGE"; exit 2 ;;
esac
