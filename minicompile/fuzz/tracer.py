"""Fuzzing the bytecode tracer: random small Python functions, compiled and run against CPython.

Each function takes a tensor ``x``, an int ``n`` and a list ``log``, and is a random sequence
of snippets (``SNIPPETS``) that exercise what Dynamo must get right beyond tensor math: control
flow on constants and shapes, containers, closures and ``nonlocal``, calls, comprehensions,
generators (left early, resumed by ``next``, delegating with ``yield from``), context managers
and grad mode (across graph breaks), user classes and exceptions, exceptions raised and caught,
side effects on an argument and on a global. The compiled function (backend "eager", so only
the tracer is under test) must give the same return value, raise the same exception, and leave
the same side effects and grad mode as CPython, on two calls with inputs of different shapes
and a different ``n`` (the second goes through the guards and may recompile).
"""

from __future__ import annotations

import random
import sys
import textwrap
import traceback
import warnings
from dataclasses import dataclass
from typing import Any

import torch

import minicompile as mc

# Snippets of a function body; {k} is a small int, {c} a small float. Each leaves x a tensor and
# n an int, so any sequence of them is a valid function.
SNIPPETS = [
    # control flow on constants and shapes
    "if x.shape[0] > {k}:\n    x = x + {c}\nelse:\n    x = x * {c}",
    "for i in range({k}):\n    x = x + i",
    "while n < {k}:\n    n += 1",
    "if x.dim() == 2 and {k} in (1, 2, 3):\n    x = x.sum(0)\nelif {k} > 3:\n    x = -x",
    "x = x.flip(0) if x.shape[0] % 2 else x",
    "for i, row in enumerate(x[:{k}]):\n    n += i",
    # containers
    "items = [x, x * {c}, x + {k}]\nx = items[{k} % 3] + len(items)",
    "d = {{'a': x, 'b': {k}}}\nd['c'] = d['a'] * d['b']\n"
    "x = d['c'] + sum(d.keys() >= {{'a'}} and [1] or [0])",
    "pair = (x, n)\nx, n = pair[0] - 1, pair[1] + {k}",
    "parts = list(x.chunk(2))\nx = torch.cat(parts[::-1])",
    "seen = {{n, {k}, n + {k}}}\nn = len(seen)",
    # closures, calls, lambdas
    "def scale(t, by={c}):\n    return t * by + n\nx = scale(x)",
    "def bump():\n    nonlocal n\n    n += {k}\nbump()",
    "x = (lambda t: t - {c})(x)",
    "x = helper(x, {k})",
    "x = max(x, x * {c}, key=lambda t: {k})",
    "x = torch.relu(x) if callable(torch.relu) else x",
    # comprehensions, generator expressions
    "x = x + sum(i * i for i in range({k}))",
    "x = torch.stack([x * i for i in range(1, {k} + 2)]).sum(0)",
    "n += len({{i: i for i in range({k})}})",
    "n += sum(1 for s in x.shape if s > {k})",
    # exceptions
    "try:\n    raise ValueError({k})\nexcept ValueError as e:\n    n += e.args[0]",
    "try:\n    x = x + [1, 2][{k}]\nexcept IndexError:\n    n -= 1",
    "try:\n    x = x / {k}\nfinally:\n    n += 1",
    "if n > {big}:\n    raise KeyError(n)",
    "assert x.dim() < 5, 'too many dims'",
    # side effects on an argument and on a global
    "log.append(n)",
    "log.append(x.shape[0])",
    "LOG.append(('n', n))",
    "x.add_({c})",
    # more of the language: unpacking, walrus, builtins, generators, objects, globals
    "a, *rest = [n, {k}, 3]\nn = a + sum(rest)",
    "if (m := n * {k}) > 3:\n    x = x + m",
    "for a, b in zip(range({k}), [x, -x, x]):\n    x = x + b * a",
    "n += sorted([3, n, {k}], reverse=True)[0]",
    "n += len(list(map(lambda t: t + 1, range({k}))))",
    "x = x * len(x) + x.ndim",
    "for key, val in {{'p': 1, 'q': {k}}}.items():\n    n += val",
    "name = f'{{n}}-{{x.dim()}}'\nlog.append(name.upper())",
    "stack = [n, {k}]\nstack.append(stack.pop() + 1)\nn = stack[-1]",
    "def gen(m):\n    for i in range(m):\n        yield i * 2\nn += sum(gen({k}))",
    "def make_adder(a):\n    return lambda t: t + a\nx = make_adder({c})(x)",
    "box = Box(x)\nbox.value = box.value * {c}\nx = box.value",
    "try:\n    n += int('{k}')\nexcept ValueError:\n    n = -1\nelse:\n    n += 1",
    "try:\n    checked(n - {k})\nexcept ArithmeticError as e:\n    log.append(str(e))",
    "if isinstance(n, int) and not isinstance(x, list):\n    n += 2",
    "bump_global(n)",
    "x = x.tolist() and x",
    "n += round(x.abs().max().item())",
    # generators: lazy, left early, resumed, delegating; consumers that see them run
    "def walk(m):\n    for i in range(m):\n        log.append(i)\n        yield i\n"
    "for v in walk({k} + 2):\n    if v >= {k}:\n        break\n    x = x + v",
    "def walk2(m):\n    for i in range(m):\n        log.append(-i)\n        yield i\n"
    "it = walk2({k} + 1)\nn += next(it)\nn += next(it, 100)",
    "n += any(log.append(i) or i >= {k} for i in range(6))",
    "items = [1]\nitems.extend(len(items) + i for i in range({k}))\nn += sum(items)",
    "def inner(m):\n    yield m\n    return m * 2\ndef outer(m):\n    r = yield from inner(m)\n"
    "    yield r\nn += sum(outer({k}))",
    "pairs = list(zip(range({k}), (log.append(i) or x * i for i in range(5))))\nn += len(pairs)",
    # context managers and grad mode, across graph breaks too
    "g = x.detach().requires_grad_()\nwith torch.no_grad():\n    y = g * {c}\n"
    "log.append(y.requires_grad)\nx = x + y",
    "g = x.detach().requires_grad_()\ntorch.set_grad_enabled(False)\ny = g * {c}\n"
    "torch._dynamo.graph_break()\nz = g * 2\ntorch.set_grad_enabled(True)\n"
    "log.append((y.requires_grad, z.requires_grad))",
    "with Tracker(log, {k}) as t:\n    x = x + t",
    "try:\n    with torch.no_grad():\n        raise KeyError({k})\nexcept KeyError:\n"
    "    log.append(torch.is_grad_enabled())",
    # user classes and exceptions; the int argument n changes between the calls
    "acc = Accumulator()\nfor i in range({k}):\n    acc.add(x * i)\nx = acc.total(x)\n"
    "log.append(sorted(acc.__dict__))",
    "try:\n    raise CodeError({k}, 'bad')\nexcept CodeError as e:\n    n += e.code\n"
    "    log.append(str(e))",
    "s = DoublingSet()\ns.add({k})\ns.add(n)\nn += sum(s)",
    "if n % 2:\n    x = x * n\nelse:\n    x = x + n",
    "x = x * (n + {c})",
    # things the tracer must break the graph on, not trace wrong
    "if x.sum() > 0:\n    x = x + 1",
    "n += int(x.numel())",
    "print_later = str(n)\nlog.append(print_later)",
]

HELPERS = """\
def helper(t, k):
    return t + k if k % 2 else t * k

class Box:
    def __init__(self, value):
        self.value = value

def checked(m):
    if m < 0:
        raise ArithmeticError(f"negative: {m}")
    return m

COUNT = 0

def bump_global(m):
    global COUNT
    COUNT += m
    LOG.append(COUNT)

class Tracker:
    def __init__(self, log, k):
        self.log, self.k = log, k

    def __enter__(self):
        self.log.append("enter")
        return self.k

    def __exit__(self, *exc):
        self.log.append("exit")
        return False

class Accumulator:
    def __init__(self):
        self.items = []

    def add(self, t):
        self.items.append(t)
        self.count = len(self.items)

    def total(self, start):
        return sum(self.items, start)

class CodeError(Exception):
    def __init__(self, code, message):
        self.code = code

class DoublingSet(set):
    def add(self, item):
        super().add(item * 2)
"""


@dataclass
class TracerProgram:
    source: str
    shapes: tuple[tuple[int, ...], tuple[int, ...]]  # the two calls' x shapes
    ns: tuple[int, int]  # the two calls' n


def generate_function(seed: int, max_snippets: int = 6) -> TracerProgram:
    rng = random.Random(seed)
    body = []
    for _ in range(rng.randint(1, max_snippets)):
        snippet = rng.choice(SNIPPETS).format(k=rng.randint(0, 4), c=rng.choice([0.5, 2.0, -1.5]),
                                              big=rng.randint(3, 12))
        body.append(textwrap.indent(snippet, "    "))
    ret = rng.choice(["x", "(x, n)", "[x, n, len(log)]", "{'x': x, 'n': n}", "x.sum() + n"])
    source = HELPERS + "\ndef fn(x, n, log):\n" + "\n".join(body) + f"\n    return {ret}\n"
    shape = lambda: tuple(rng.choice([1, 2, 3, 5]) for _ in range(rng.choice([1, 2])))
    return TracerProgram(source, (shape(), shape()), (rng.randint(0, 5), rng.randint(0, 5)))


def _instantiate(program: TracerProgram):
    scope = {"torch": torch, "LOG": []}
    exec(compile(program.source, "<fuzzed function>", "exec"), scope)
    return scope["fn"], scope["LOG"]


def _call(fn, x: torch.Tensor, n: int) -> tuple[Any, BaseException | None, list]:
    """(return value, exception, side effects: the log argument, ``x`` and the grad mode
    afterwards). Grad mode is restored for the next call whatever the function left."""
    log = []
    try:
        return fn(x, n, log), None, [log, x, torch.is_grad_enabled()]
    except Exception as e:
        return None, e, [log, x, torch.is_grad_enabled()]
    finally:
        torch.set_grad_enabled(True)


def check_function(program: TracerProgram) -> tuple[str, str]:
    """("ok" | "mismatch" | "crash", message): compiled against CPython, two calls."""
    eager_fn, eager_log = _instantiate(program)
    compiled_fn, compiled_log = _instantiate(program)
    compiled = mc.compile(compiled_fn, backend="eager")
    gen = torch.Generator().manual_seed(len(program.source))
    for call, (shape, n) in enumerate(zip(program.shapes, program.ns)):
        x = torch.randn(shape, generator=gen)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = _call(eager_fn, x.clone(), n)
            actual = _call(compiled, x.clone(), n)
        problem = _difference(expected, actual, eager_log, compiled_log)
        if problem:
            kind = "crash" if expected[1] is None and actual[1] is not None else "mismatch"
            return kind, f"call {call + 1}: {problem}"
    return "ok", ""


def _difference(expected, actual, eager_log, compiled_log) -> str | None:
    (e_val, e_err, e_log), (a_val, a_err, a_log) = expected, actual
    if (e_err is None) != (a_err is None) or e_err is not None and (
            type(e_err) is not type(a_err) or e_err.args != a_err.args):
        detail = "".join(traceback.format_exception(a_err)) if a_err is not None else ""
        return f"CPython raised {e_err!r}, compiled raised {a_err!r}\n{detail}"
    for what, e, a in (("return value", e_val, a_val),
                       ("log argument and x afterwards", e_log, a_log),
                       ("global LOG", eager_log, compiled_log)):
        if not same(e, a):
            return f"{what}: CPython gave {e!r}, compiled gave {a!r}"
    return None


def same(a: Any, b: Any) -> bool:
    """Structural equality, with tensors compared by value: exactly (backend "eager" runs the
    same ATen ops), a NaN equal to a NaN."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and
                a.shape == b.shape and a.dtype == b.dtype and
                torch.allclose(a, b, rtol=0, atol=0, equal_nan=True))
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


def fuzz_tracer(n: int, seed: int, progress) -> int:
    """Check functions ``seed .. seed + n - 1``; print each failure; 1 if any failed."""
    failures = {"mismatch": 0, "crash": 0}
    for i in range(n):
        program = generate_function(seed + i)
        try:
            kind, message = check_function(program)
        except Exception:
            kind, message = "crash", traceback.format_exc()
        finally:
            mc.reset()
        if kind != "ok":
            failures[kind] += 1
            print(f"\n{kind}, function seed {seed + i}:\n{program.source}{message}",
                  file=sys.stderr)
        progress.update(i + 1, sum(failures.values()))
    progress.close()
    print(f"fuzz: {n} programs, {failures['mismatch']} mismatches, {failures['crash']} crashes "
          "(tracer against CPython)")
    return 1 if any(failures.values()) else 0
