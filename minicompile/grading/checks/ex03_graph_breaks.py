"""Checks for exercises/ex03_graph_breaks.py (notebook 03: graph breaks and resume functions).

The resume-function checks stop real Python functions at every offset they reach
(minicompile.dynamo.stack_capture), continue them with a resume function built with the
learner's piece, and compare with the untouched function's result.
"""

from __future__ import annotations

import builtins
import contextlib
import logging
import math
import random

import torch

from minicompile.dynamo import resume_execution
from minicompile.dynamo.bytecode_analysis import livevars_analysis
from minicompile.dynamo.bytecode_transformation import instructions_from_code
from minicompile.dynamo.resume_execution import (
    CONTEXT, NULL, ResumeSpec, create_resume, live_locals, resume_blocker, resume_function)
from minicompile.dynamo.stack_capture import capture
from minicompile.grading import exercise


def _scale(v, k=2):
    return v * k


def loop_and_branch(x, n):
    acc = []
    total = 0
    for i in range(n):
        if i % 2:
            total = total + _scale(x, i)
        else:
            skipped = i
        acc.append(total)
    y = total * 3
    return acc, y, _scale(y, n) + total


def pending_calls(a, b):
    c = a + 1
    return (a, _scale(a, _scale(b, c)), [c, b, math.sqrt(abs(a))])


def while_and_unused(n):
    i, out, dead = 0, [], 99
    while i < n:
        i += 1
        dead = i * 100
        if i == 3:
            continue
        out.append(i)
    return out, i


CORPUS = [(loop_and_branch, (3, 5)), (pending_calls, (4, 7)), (while_and_unused, (5,))]


def _resume_points(fn, args):
    """(instruction, snapshot) for every offset a run of fn reaches."""
    insts = instructions_from_code(fn.__code__)
    for inst in insts:
        if resume_blocker(insts, inst) is None:
            snap = capture(fn, inst.offset, *args)
            if snap is not None:
                yield inst, snap


def checked_prologue(restore_stack):
    """``restore_stack`` (a learner's), refusing a prologue that differs from the one the
    resume function needs before any of it runs: bytecode with a missing or misplaced stack slot
    is not an exception but a crash of the interpreter (3.12 and later read a NULL slot without
    checking), so it is never executed."""
    own = resume_execution.restore_stack  # minicompile's (taken before it is swapped out)

    def shown(insts):
        return [f"{i.opname} {i.argval or ''}".strip() for i in insts]

    def checked(stack):
        got = list(restore_stack(stack))
        want = own(stack)
        if shown(got) != shown(want):
            raise AssertionError(f"restore_stack({stack}) gives {shown(got)}; the resume "
                                 f"function needs {shown(want)} (bytecode that leaves the stack "
                                 "otherwise would crash the interpreter, so it was not run)")
        return got
    return checked


def _run_resume(fn, spec, snap, args):
    cells = snap.cells if snap is not None else {}
    resume = resume_function(create_resume(spec, f"__resume_at_{spec.offset}"), fn, cells)
    return resume(*args)


@exercise("3.1", points=10, hints=(
    "A local is live if some path from the start reads it before writing it.",
    "Explore every path: after an instruction comes the next one (unless it is terminal) "
    "and its jump target (if it has one).",
    "The same position can be reached having written different names: make the state "
    "(position, names written so far).",
))
def check_live_locals(sol):
    """Find the live locals at a break"""
    for fn, args in CORPUS:
        insts = instructions_from_code(fn.__code__)
        for inst in insts:
            inst.exn_tab_entry = None  # the exercise ignores exception handlers
        reference = livevars_analysis(insts)
        for i, inst in enumerate(insts):
            got = sol.live_locals(insts, i)
            assert isinstance(got, set), "return a set of names"
            assert got == set(reference[inst]), (
                f"{fn.__name__} at {inst}: live locals {sorted(got)}, expected "
                f"{sorted(reference[inst])}")
        # and it is enough to continue real execution from every reachable offset
        expected = fn(*args)
        for inst, snap in _resume_points(fn, args):
            live = sol.live_locals(insts, insts.index(next(j for j in insts
                                                           if j.offset == inst.offset)))
            passed = tuple(n for n in sorted(live) if n in snap.locals)
            spec = ResumeSpec(fn.__code__, inst.offset, snap.stack_kinds, passed)
            got = _run_resume(fn, spec, snap, [*snap.stack_values,
                                               *[snap.locals[n] for n in passed]])
            assert got == expected, f"{fn.__name__} resumed at {inst}: {got} != {expected}"


@exercise("3.2", points=10, hints=(
    "Three outputs: a kind per stack slot, the names passed, and the values passed.",
    "The resume function's prologue recreates NULL itself: a NULL is never an argument.",
    "The resume function's parameters are the stack values (bottom first), then the "
    "locals.",
))
def check_resume_arguments(sol):
    """Build the resume function's argument list"""
    checked = 0
    for fn, args in CORPUS:
        expected = fn(*args)
        for inst, snap in _resume_points(fn, args):
            live = live_locals(fn.__code__, inst.offset)
            result = sol.resume_arguments(list(snap.stack), dict(snap.locals), live, NULL)
            assert isinstance(result, tuple) and len(result) == 3, \
                "return (stack_kinds, argnames, args)"
            kinds, argnames, call_args = result
            spec = ResumeSpec(fn.__code__, inst.offset, tuple(kinds), tuple(argnames))
            got = _run_resume(fn, spec, snap, list(call_args))
            assert got == expected, f"{fn.__name__} resumed at {inst}: {got} != {expected}"
            checked += 1
    assert checked > 50


class _Log:
    def __init__(self, log):
        self.log = log

    def __enter__(self):
        self.log.append("enter")

    def __exit__(self, *exc):
        self.log.append("exit")


def _with_fn(log, x):
    y = x * 2
    with _Log(log):
        log.append(y)
        log.append(_scale(x, y))  # resumed here, inside the with block
    return log


@exercise("3.3", points=10, hints=(
    "One slot at a time, bottom first; each becomes one or more instructions.",
    "A value slot is a load of the matching argument; a NULL slot has its own "
    "instruction.",
    "A with block active at the break must be entered again, and only its __exit__ may "
    "stay on the stack.",
))
def check_restore_stack(sol):
    """Rebuild the stack in the resume function's prologue"""
    original = resume_execution.restore_stack
    resume_execution.restore_stack = checked_prologue(sol.restore_stack)
    try:
        for fn, args in CORPUS:
            expected = fn(*args)
            for inst, snap in _resume_points(fn, args):
                passed = tuple(n for n in live_locals(fn.__code__, inst.offset)
                               if n in snap.locals)
                spec = ResumeSpec(fn.__code__, inst.offset, snap.stack_kinds, passed)
                got = _run_resume(fn, spec, snap, [*snap.stack_values,
                                                   *[snap.locals[n] for n in passed]])
                assert got == expected, f"{fn.__name__} resumed at {inst}: {got} != {expected}"
        # a with block active at the break: the prologue must enter a fresh context manager
        insts = instructions_from_code(_with_fn.__code__)
        at = [i for i in insts if i.opname == "LOAD_FAST" and i.argval == "log"][2]
        log = []
        spec = ResumeSpec(_with_fn.__code__, at.offset, (CONTEXT,), ("log", "x", "y"))
        got = _run_resume(_with_fn, spec, None, [_Log(log), log, 3, 6])
        assert got == ["enter", 18, "exit"], \
            f"resuming inside the with block gave {got}: was the context entered exactly once?"
    finally:
        resume_execution.restore_stack = original


class _CourseLogger(logging.Logger):
    """A Logger subclass defined here: its methods' ``__module__`` is not ``logging``."""

    def note(self, msg):
        self.info(msg)


@exercise("3.4", points=10, hints=(
    "Test the cases in the order the docstring lists them: the first that matches wins.",
    "A bound method knows its object (__self__): a Logger's methods and a tensor's "
    "item/tolist are recognised by it.",
    "numpy and random functions can be plain Python functions too: test the module before"
    " the function's type.",
))
def check_classify_call(sol):
    """Classify graph-break reasons"""
    import numpy as np  # lazy: only this check needs numpy

    t = torch.ones(2)
    logger = logging.getLogger("minicompile.exercise")
    cases = [
        (builtins.print, "print_or_logging"), (logging.info, "print_or_logging"),
        (logger.warning, "print_or_logging"), (_CourseLogger("course").note, "print_or_logging"),
        (t.item, "tensor_to_python"),
        (t.tolist, "tensor_to_python"), (np.sum, "untraceable_call"),
        (np.random.rand, "untraceable_call"), (random.random, "untraceable_call"),
        (random.Random(0).randint, "untraceable_call"), (math.floor, "untraceable_call"),
        (random.Random.randint, "untraceable_call"), (np.isscalar, "untraceable_call"),
        (_scale, "inlined_call"), (pending_calls, "inlined_call"),
        (contextlib.nullcontext, "unsupported_construct"),
    ]
    for fn, want in cases:
        got = sol.classify_call(fn)
        assert got == want, f"classify_call({getattr(fn, '__qualname__', fn)}) = {got!r}, " \
                            f"expected {want!r}"
