#!/usr/bin/env bash
# The two commands of the course (see README.md):
#   bash course.sh lab    install everything, then open the notebooks in JupyterLab
#   bash course.sh test   install everything, then run the whole test suite (what CI runs)
# Installs into ./.venv (override with MINICOMPILE_VENV). Safe to run again: set-up is skipped
# when nothing changed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

VENV="${MINICOMPILE_VENV:-.venv}"
PY="$VENV/bin/python"
# CPU machines take the CPU build of torch: asking for this exact version first means the
# range in pyproject.toml is already satisfied and pip never fetches the CUDA build.
TORCH_SPEC="${MINICOMPILE_TORCH:-torch==2.13.0}"

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

install_python_packages() {
  [ -x "$PY" ] || { say "creating $VENV"; python3 -m venv "$VENV"; }
  local stamp="$VENV/.minicompile-installed"
  if [ -f "$stamp" ] && [ "$stamp" -nt pyproject.toml ]; then return; fi
  say "installing torch ($TORCH_SPEC) and the course's packages into $VENV"
  "$PY" -m pip install -q --upgrade pip
  "$PY" -c "import torch" 2>/dev/null || "$PY" -m pip install -q "$TORCH_SPEC"
  "$PY" -m pip install -q -e ".[course,test]"
  "$PY" -m ipykernel install --sys-prefix --name python3 >/dev/null
  touch "$stamp"
}

triton_on_cpu_without_gpu() {
  # Triton kernels run on CPU tensors through Triton's interpreter when there is no GPU.
  "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" \
    || export TRITON_INTERPRET=1
}

run_tests() {
  triton_on_cpu_without_gpu
  say "the exercise stubs must be what solutions/ generates (your work in exercises/ is not read)"
  "$PY" -m minicompile.grading.generate --check
  say "unit tests, graded exercises (solutions score full marks, stubs zero) and notebooks"
  "$PY" -m pytest tests notebooks --nbval-lax -q -p no:cacheprovider "$@"
  if [ "${TRITON_INTERPRET:-0}" = 1 ]; then
    say "the tests again with Triton kernels for CPU tensors (run by Triton's interpreter)"
    MINICOMPILE_CPU_BACKEND=triton "$PY" -m pytest tests -q -p no:cacheprovider \
      --deselect tests/test_bench.py "$@"
  fi
  run_tests_python313
}

find_python313() {
  command -v python3.13 2>/dev/null && return
  ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.13*/bin/python3.13 2>/dev/null | tail -1
}

run_tests_python313() {
  # The bytecode layer again under Python 3.13, where an interpreter for it is installed (its
  # torch comes from PyPI: the CUDA build, a large download the first time).
  local py313 venv313="${VENV}-py313"
  py313="$(find_python313)"
  if [ -z "$py313" ]; then say "no Python 3.13 here: the 3.13 pass is skipped"; return; fi
  if [ ! -x "$venv313/bin/python" ] || ! "$venv313/bin/python" -c "import torch, pytest" 2>/dev/null; then
    say "installing torch and the test packages for Python 3.13 into $venv313"
    "$py313" -m venv "$venv313" && "$venv313/bin/python" -m pip install -q "$TORCH_SPEC" \
      sympy networkx numpy matplotlib graphviz pytest hypothesis pytest-timeout \
      || { say "could not install torch for Python 3.13: the 3.13 pass is skipped"; return; }
  fi
  say "bytecode, capture, guard and graph-break tests under Python 3.13"
  PYTHONPATH="$PWD" "$venv313/bin/python" -m pytest -q -p no:cacheprovider \
    tests/test_bytecode.py tests/test_dynamo_capture.py tests/test_guards.py \
    tests/test_graph_breaks.py tests/test_graph_breaks_side_effects.py \
    tests/test_resume_execution.py tests/test_recompiles.py
}

case "${1:-}" in
  lab)
    shift; install_dot; install_python_packages; triton_on_cpu_without_gpu
    say "opening the course: notebooks/00_tour.ipynb is the place to start"
    root_flag=(); [ "$(id -u)" = 0 ] && root_flag=(--allow-root)  # containers often run as root
    exec "$VENV/bin/jupyter" lab "${root_flag[@]}" "$@" notebooks/ ;;
  test)
    shift; install_dot; install_python_packages; run_tests "$@" ;;
  *)
    echo "usage: bash course.sh lab [jupyter args] | test [pytest args]"; exit 2 ;;
esac
