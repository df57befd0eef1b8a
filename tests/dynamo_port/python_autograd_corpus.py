"""Cases ported from pytorch/pytorch ``test/dynamo/test_python_autograd.py``: a pure-Python
reverse-mode autograd (a tape of closures over named variables, after a notebook by Zachary
DeVito) traced as a whole, forward and backward, re-typed and adapted. The tape and the name
counter are module globals that each case resets, as the tests do."""

from __future__ import annotations

from typing import Callable, NamedTuple, Optional

import torch

from . import case_registrar

case = case_registrar("test/dynamo/test_python_autograd.py")

_name: int = 0


def fresh_name() -> str:
    global _name
    r = f"v{_name}"
    _name += 1
    return r


class Variable:
    def __init__(self, value: torch.Tensor, name: Optional[str] = None):
        self.value = value
        self.name = name or fresh_name()

    @staticmethod
    def constant(value: torch.Tensor, name: Optional[str] = None):
        return Variable(value, name)

    def __mul__(self, rhs):
        return operator_mul(self, rhs)

    def __add__(self, rhs):
        return operator_add(self, rhs)

    def sum(self, name: Optional[str] = None):
        return operator_sum(self, name)

    def expand(self, sizes):
        return operator_expand(self, sizes)


class TapeEntry(NamedTuple):
    inputs: list
    outputs: list
    propagate: Callable


gradient_tape: list = []


def reset_tape():
    gradient_tape.clear()
    global _name
    _name = 0


def grad(L, desired_results):
    dL_d = {L.name: Variable(torch.ones(()))}

    def gather_grad(entries):
        return [dL_d[entry] if entry in dL_d else None for entry in entries]

    for entry in reversed(gradient_tape):
        dL_doutputs = gather_grad(entry.outputs)
        if all(d is None for d in dL_doutputs):
            continue
        dL_dinputs = entry.propagate(dL_doutputs)
        for input, dL_dinput in zip(entry.inputs, dL_dinputs):
            if input not in dL_d:
                dL_d[input] = dL_dinput
            else:
                dL_d[input].value += dL_dinput.value
    return gather_grad(desired.name for desired in desired_results)


def operator_mul(self, rhs):
    if isinstance(rhs, float) and rhs == 1.0:
        return self
    r = Variable(self.value * rhs.value)

    def propagate(dL_doutputs):
        (dL_dr,) = dL_doutputs
        return [dL_dr * rhs, dL_dr * self]

    gradient_tape.append(TapeEntry([self.name, rhs.name], [r.name], propagate))
    return r


def operator_add(self, rhs):
    r = Variable(self.value + rhs.value)

    def propagate(dL_doutputs):
        (dL_dr,) = dL_doutputs
        return [dL_dr * 1.0, dL_dr * 1.0]

    gradient_tape.append(TapeEntry([self.name, rhs.name], [r.name], propagate))
    return r


def operator_sum(self, name):
    r = Variable(torch.sum(self.value), name=name)

    def propagate(dL_doutputs):
        (dL_dr,) = dL_doutputs
        return [dL_dr.expand(*self.value.size())]

    gradient_tape.append(TapeEntry([self.name], [r.name], propagate))
    return r


def operator_expand(self, sizes):
    assert self.value.dim() == 0
    r = Variable(self.value.expand(sizes))

    def propagate(dL_doutputs):
        (dL_dr,) = dL_doutputs
        return [dL_dr.sum()]

    gradient_tape.append(TapeEntry([self.name], [r.name], propagate))
    return r


def simple(a, b):
    t = a + b
    return t * b


def _pair():
    return torch.randn(10), torch.randn(10)


@case(args=_pair)
def forwards1(a, b):
    reset_tape()
    a = Variable.constant(a, name="a")
    b = Variable.constant(b, name="b")
    return simple(a, b).sum().value


@case(args=_pair)
def forwards2(a, b):
    reset_tape()
    a = Variable.constant(a, name="a")
    b = Variable.constant(b, name="b")
    loss = simple(a, b).sum()
    reset_tape()
    return loss.value, len(gradient_tape)


@case(args=_pair)
def backwards1(a, b):
    reset_tape()
    a = Variable.constant(a, name="a")
    b = Variable.constant(b, name="b")
    loss = simple(a, b).sum()
    return [g.value for g in grad(loss, [a, b])]


@case(args=_pair)
def backwards2(a, b):
    reset_tape()
    a = Variable.constant(a, name="a")
    b = Variable.constant(b, name="b")
    loss = simple(a, b).sum()
    res = grad(loss, [a, b])
    reset_tape()
    return [g.value for g in res], _name
