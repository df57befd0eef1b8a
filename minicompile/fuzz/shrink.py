"""Shrink a failing program to a small reproducer, and write it out as a pytest test.

Shrinking is greedy delta debugging over the program's text: return one output instead of
several, delete one statement at a time, make each input plain (contiguous, no grad, smaller),
and keep a change whenever the program still runs in eager and still fails the same way
(a mismatch stays a mismatch, a crash a crash, a hang a hang). It stops when no change helps.
"""

from __future__ import annotations

import textwrap
from dataclasses import replace
from pathlib import Path
from typing import Callable, Iterator

import torch

from .program import InputSpec, Program
from .runner import Outcome, backends_for, check_program, runs_in_eager

MAX_ROUNDS = 20


def shrink(program: Program, still_fails: Callable[[Program], bool]) -> Program:
    """The smallest program reachable by one-step simplifications that ``still_fails``."""
    for _ in range(MAX_ROUNDS):
        for candidate in _simplifications(program):
            if runs_in_eager(candidate) and still_fails(candidate):
                program = candidate
                break
        else:
            return program
    return program


def with_shape_comments(program: Program, device: str = "cpu") -> Program:
    """``program`` with each statement's comment saying its value's shape and dtype afresh:
    the comments the generator wrote describe the inputs before shrinking made them smaller."""
    scope = {"torch": torch, "F": torch.nn.functional}
    scope.update((f"x{i}", t) for i, t in enumerate(program.make_inputs(0, device)))
    body = list(program.body)
    for i, s in enumerate(program.body):
        try:
            value = scope[s.target] = eval(s.expr, scope)
        except Exception:  # eager raises here (an index out of range): the rest keep theirs
            break
        body[i] = replace(s, comment=f"{tuple(value.shape)} "
                                     f"{str(value.dtype).removeprefix('torch.')}")
    return replace(program, body=body)


def _simplifications(p: Program) -> Iterator[Program]:
    """Candidates one step simpler than ``p``, the biggest steps first."""
    if len(p.outputs) > 1:
        for out in p.outputs:
            yield p.returning([out])
    for i in range(len(p.body)):
        if p.body[i].target not in p.outputs:
            yield p.without(i).returning(p.outputs)
    for i in range(len(p.body) - 1, -1, -1):  # return an earlier value instead of the last
        if p.body[i].target in p.outputs and i > 0:
            yield p.returning([p.body[i - 1].target])
    for i, spec in enumerate(p.inputs):
        for simpler in _simpler_specs(spec):
            yield p.with_input(i, simpler)


def _simpler_specs(spec: InputSpec) -> Iterator[InputSpec]:
    if spec.requires_grad:
        yield replace(spec, requires_grad=False)
    if spec.layout != "contiguous":
        yield replace(spec, layout="contiguous", expand_dims=())
    for d, size in enumerate(spec.shape):
        for smaller in sorted({1, 2, size // 2}):
            if smaller < size:
                yield replace(spec, shape=spec.shape[:d] + (smaller,) + spec.shape[d + 1:])


def same_failure(outcome: Outcome, backend: str, device: str, seed: int,
                 check: Callable[..., Outcome] = check_program) -> Callable[[Program], bool]:
    """The predicate the shrinker keeps: the candidate fails with ``outcome``'s kind (checked by
    ``check``: a worker process's, where a candidate may die of a signal)."""
    return lambda p: check(p, backend, device, seed).kind == outcome.kind


def environment(backend: str, device: str) -> dict[str, str]:
    """The environment a backend needs before minicompile and Triton are imported: the CPU
    code generator (``MINICOMPILE_CPU_BACKEND``, so that the program compiled by hand in the
    reproducer uses it too), and for Triton kernels on CPU tensors Triton's interpreter, chosen
    at import (without it the compile falls back to eager, and a reproducer would pass with the
    bug still there)."""
    if device != "cpu":
        return {}
    cpu_backend = backends_for(device).get(backend, (None, None))[1]
    env = {"MINICOMPILE_CPU_BACKEND": cpu_backend} if cpu_backend else {}
    return env | ({"TRITON_INTERPRET": "1"} if cpu_backend == "triton" else {})


def reproducer(program: Program, outcome: Outcome, backend: str, device: str, seed: int,
               name: str) -> str:
    """A pytest file that fails while the bug is there: the program's text, its inputs, a check."""
    message = textwrap.indent(outcome.message.strip()[:1500], "# ")
    inputs = ",\n    ".join(repr(spec) for spec in program.inputs)
    settings = "".join(f"os.environ[{k!r}] = {v!r}  # the backend needs it (set before import)\n"
                       for k, v in environment(backend, device).items())
    # a program that killed its process or hung is checked in a worker process: the test then
    # fails with the signal's name or the timeout instead of ending or stopping pytest
    in_worker = outcome.kind in ("signal", "timeout")
    runner = ("from minicompile.fuzz.worker import Worker" if in_worker else
              "from minicompile.fuzz.runner import check_program")
    check = (f"with Worker() as worker:\n        outcome = worker.check(program, {backend!r}, "
             f"{device!r}, seed={seed})" if in_worker else
             f"outcome = check_program(program, {backend!r}, {device!r}, seed={seed})")
    return f'''"""Reproducer written by the differential fuzzer (`bash course.sh fuzz`).

Backend {backend!r} on {device}: a {outcome.kind}.
"""
# What the fuzzer saw:
{message}

import os

{settings}
from minicompile.fuzz.program import InputSpec, Program
{runner}

SOURCE = """\\
{program.source()}"""
INPUTS = [
    {inputs},
]


def test_{name}():
    program = Program.parse(SOURCE, INPUTS)
    {check}
    assert outcome.kind == "ok", outcome.message
'''


def write_reproducer(directory: Path, program: Program, outcome: Outcome, backend: str,
                     device: str, seed: int, program_seed: int) -> Path:
    name = f"fuzz_{program_seed}_{backend.replace('-', '_')}_{device}"
    path = Path(directory) / f"test_{name}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    program = with_shape_comments(program, device)
    path.write_text(reproducer(program, outcome, backend, device, seed, name))
    return path
