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
# torch is installed before the course's packages, so that the range in pyproject.toml is already
# satisfied and pip never swaps the build chosen here (see install_torch).
TORCH_SPEC="${MINICOMPILE_TORCH:-torch==2.13.0}"
TORCH_CPU_INDEX="https://download.pytorch.org/whl/cpu"
VENV313="${MINICOMPILE_VENV313:-${VENV}-py313}"  # Python 3.13 with torch, for a second pass

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

install_torch() {
  # MINICOMPILE_TORCH set: exactly that. An NVIDIA GPU: PyPI's default build (CUDA). No GPU:
  # the CPU build from PyTorch's CPU wheel index (a few hundred MB instead of several GB); where
  # pip has a local wheel folder or index configured, that is tried first, and each of the two
  # is the other's fallback.
  local plain=("$TORCH_SPEC") cpu=(--index-url "$TORCH_CPU_INDEX" "$TORCH_SPEC")
  if [ -n "${MINICOMPILE_TORCH:-}" ] || has_nvidia_gpu; then
    say "installing torch ($TORCH_SPEC)"; "$PY" -m pip install -q "${plain[@]}"; return
  fi
  local first=("${cpu[@]}") second=("${plain[@]}")
  pip_has_local_source && { first=("${plain[@]}"); second=("${cpu[@]}"); }
  say "no NVIDIA GPU: installing the CPU build of torch ($TORCH_SPEC)"
  "$PY" -m pip install -q "${first[@]}" || "$PY" -m pip install -q "${second[@]}"
}

install_python_packages() {
  [ -x "$PY" ] || { say "creating $VENV"; python3 -m venv "$VENV"; }
  local stamp="$VENV/.minicompile-installed"
  if [ -f "$stamp" ] && [ "$stamp" -nt pyproject.toml ]; then return; fi
  say "installing torch and the course's packages into $VENV"
  "$PY" -m pip install -q --upgrade pip
  "$PY" -c "import torch" 2>/dev/null || install_torch
  "$PY" -m pip install -q -e ".[course,test]"
  install_model_suites
  "$PY" -m ipykernel install --sys-prefix --name python3 >/dev/null
  touch "$stamp"
}

install_model_suites() {
  # The benchmark's model suites and tests/test_models.py (docs/models.md): transformers always,
  # timm where torch is a CUDA build. timm imports torchvision, and the registry's torchvision is
  # built against the registry's (CUDA) torch: beside the CPU build its operators do not load
  # ("operator torchvision::nms does not exist"), so there timm is left out and its tests skip.
  local extra=hf
  "$PY" -c "import sys, torch; sys.exit(0 if torch.version.cuda else 1)" && extra=models
  say "installing the model suites' packages (.[$extra])"
  "$PY" -m pip install -q -e ".[$extra]"
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
  run_tests_other_pythons
}

find_python() {
  # the first python$1 that runs: a pyenv shim exists even where that version is not selected
  local py
  for py in "python$1" "${PYENV_ROOT:-$HOME/.pyenv}/versions/$1".*/bin/"python$1"; do
    if "$py" -c "" 2>/dev/null; then command -v "$py"; return; fi
  done
}

venv313_with_torch() {
  # $VENV313 has torch, or gets it: the CPU build from torch's own index where that index is
  # reachable, else the package registry's build (the CUDA one: a few GB, about a minute where
  # the registry is a local mirror, as on CI machines, which reach no other index).
  "$VENV313/bin/python" -c "import torch, pytest" 2>/dev/null && return
  local py="$VENV313/bin/python" cpu=(--index-url "$TORCH_CPU_INDEX" "$TORCH_SPEC")
  local first=("${cpu[@]}") second=("$TORCH_SPEC")
  [ -x "$py" ] || "$1" -m venv "$VENV313" || return 1
  PY="$py" pip_has_local_source && { first=("$TORCH_SPEC"); second=("${cpu[@]}"); }
  say "installing torch ($TORCH_SPEC) and the test packages for Python 3.13 into $VENV313"
  { "$py" -m pip install -q "${first[@]}" || "$py" -m pip install -q "${second[@]}"; } \
    && "$py" -m pip install -q sympy networkx numpy matplotlib graphviz pytest hypothesis \
      pytest-timeout \
    || { say "no torch for Python 3.13 (MINICOMPILE_VENV313 may name a 3.13 venv that has it)"
         return 1; }
}

run_tests_other_pythons() {
  # Bytecode is what changes between CPython releases, so the bytecode layer is checked under
  # the other supported versions installed here too. Under 3.13 with torch: the bytecode,
  # capture, guard and graph-break tests. Otherwise tests/test_resume_execution.py as a script,
  # which needs no torch (resume functions and the assembler at every offset of a corpus).
  local version py main_version
  main_version="$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
  for version in 3.11 3.12 3.13; do
    py="$(find_python "$version")"
    [ "$version" != "$main_version" ] && [ -n "$py" ] || continue
    if [ "$version" = 3.13 ] && venv313_with_torch "$py"; then
      say "bytecode, capture, guard and graph-break tests under Python 3.13"
      PYTHONPATH="$PWD" "$VENV313/bin/python" -m pytest -q -p no:cacheprovider \
        tests/test_bytecode.py tests/test_dynamo_capture.py tests/test_guards.py \
        tests/test_graph_breaks.py tests/test_graph_breaks_side_effects.py \
        tests/test_resume_execution.py tests/test_recompiles.py
    else
      say "resume functions and the bytecode assembler under Python $version (no torch needed)"
      PYTHONPATH="$PWD" "$py" tests/test_resume_execution.py
    fi
  done
}

case "${1:-}" in
  lab)
    shift; install_dot; install_python_packages; triton_on_cpu_without_gpu
    # trusted notebooks show their committed drawings (SVG output) on first open
    "$VENV/bin/jupyter" trust notebooks/*.ipynb >/dev/null 2>&1 || say "could not trust notebooks"
    say "opening the course at notebooks/00_tour.ipynb (exercises/ is in the file browser too)"
    root_flag=(); [ "$(id -u)" = 0 ] && root_flag=(--allow-root)  # containers often run as root
    exec "$VENV/bin/jupyter" lab "${root_flag[@]}" --ServerApp.root_dir="$PWD" "$@" \
      notebooks/00_tour.ipynb ;;
  test)
    shift; install_dot; install_python_packages; run_tests "$@" ;;
  *)
    echo "usage: bash course.sh lab [jupyter args] | test [pytest args]"; exit 2 ;;
esac
