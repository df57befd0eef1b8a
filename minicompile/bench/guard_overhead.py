"""What guards cost on the host: the check before every reuse of a compiled frame, and building it.

    python -m minicompile.bench.guard_overhead                      # vit, bert, gpt2; CPU sizes
    python -m minicompile.bench.guard_overhead --models vit --size cuda --profile

For each model of the Hugging Face suite, in inference and in a training step (forward, loss,
backward, SGD step, as runner.py builds it), one step is compiled and run twice; in a third run
each cache lookup that finds its entry is timed on the spot, with the locals and the state of
that moment (a gradient set by ``backward``, grad mode), many times over:

- ``guard us``: the guard functions of the entries that answered, called with the locals of
  that moment (``entry.guard.fn(L, G)``, what the lookup calls), summed over the step's frames;
- ``lookup us``: the whole cache lookup of each frame (``eval_frame._lookup``: the entries of
  the frame tried in order until one's guards hold), summed;
- ``guards``: how many checks those guard functions hold, and how many of each kind.

Then the time to build the guard function of a 50-layer MLP's frame from its guard list
(``GuardFn``), which grows with the number of parameters (``--no-build``: skip it).
``--profile``: cProfile of the guard calls of one step, the slowest functions first;
``--frames``: a line per frame. Timings are ``timeit`` minima (the host's own cost, with as
little as can be of other processes'); nothing here runs on a GPU.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import cProfile
import pstats
import time
import timeit
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import torch

import minicompile as mc
from minicompile.dynamo import eval_frame
from minicompile.dynamo.guard_manager import GuardFn

from .models import huggingface
from .models.runner import LR
from .models.zoo import SIZES


@dataclass
class Lookup:
    """One cache lookup of a step that found an entry, timed when it happened: the state the
    guards read (a gradient set by ``backward``, grad mode) is the state of that moment."""
    name: str
    guard: GuardFn
    guard_us: float
    lookup_us: float
    calls: list = field(default_factory=list)  # (guard, L, G) for the profile


@contextlib.contextmanager
def timed_lookups(profile: bool) -> Iterator[list[Lookup]]:
    """Every cache lookup made inside the block that found an entry, timed: its guard function
    alone, and the whole lookup (the frame's entries tried in order until one holds)."""
    lookups: list[Lookup] = []
    real = eval_frame._lookup

    def lookup(fn, f_locals, backend, cache):
        entry, misses = real(fn, f_locals, backend, cache)
        if entry is not None:
            guard, globals_ = entry.guard, fn.__globals__
            lookups.append(Lookup(
                fn.__name__, guard, best_us(lambda: guard.fn(f_locals, globals_)),
                best_us(lambda: real(fn, f_locals, backend, cache))))
            if profile:
                lookups[-1].calls = [cProfile.Profile()]
                lookups[-1].calls[0].runcall(lambda: [guard.fn(f_locals, globals_)
                                                      for _ in range(200)])
        return entry, misses
    eval_frame._lookup = lookup
    try:
        yield lookups
    finally:
        eval_frame._lookup = real


def best_us(call: Callable[[], Any], number: int = 20, repeat: int = 60) -> float:
    """Microseconds per call: the fastest of ``repeat`` short rounds (timeit's own advice; short,
    so that some round runs while no other process takes the core)."""
    return min(timeit.Timer(call).repeat(repeat, number)) / number * 1e6


@dataclass
class Row:
    model: str
    mode: str
    frames: int = 0
    guards: int = 0
    kinds: collections.Counter = field(default_factory=collections.Counter)
    guard_us: float = 0.0
    lookup_us: float = 0.0


def step_of(name: str, mode: str, size: str) -> tuple[Callable[[], Any], Callable[[], Any]]:
    """(the compiled step, the same step run eagerly) for one model and mode."""
    spec = next(s for s in huggingface.specs() if s.name == name)
    model, inputs = spec.build(SIZES[size])
    if mode == "inference":
        model.eval()
        compiled = mc.compile(spec.forward)

        def run(fn: Callable) -> Any:
            with torch.no_grad():
                return fn(model, inputs)
        return lambda: run(compiled), lambda: run(spec.forward)
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    compiled = mc.compile(spec.train_step)
    return (lambda: compiled(model, optimizer, inputs),
            lambda: spec.train_step(model, optimizer, inputs))


def measure(name: str, mode: str, size: str, profile: bool, frames: bool = False) -> Row:
    mc.reset()
    step, _ = step_of(name, mode, size)
    step()  # compiles
    step()  # a step after the first may take another path (the optimizer's state exists)
    with timed_lookups(profile) as lookups:
        step()
    row = Row(name, mode, frames=len(lookups))
    for lk in lookups:
        if frames:
            print(f"    {lk.name:40} {len(lk.guard.guards):5} guards {lk.guard_us:7.1f} us "
                  f"(lookup {lk.lookup_us:.1f})")
        row.guards += len(lk.guard.guards)
        row.kinds.update(g.kind.value for g in lk.guard.guards)
        row.guard_us += lk.guard_us
        row.lookup_us += lk.lookup_us
    if profile:
        print(f"--- cProfile: {name} {mode}, each guard call of the step 200 times")
        stats = pstats.Stats(lookups[0].calls[0])
        for lk in lookups[1:]:
            stats.add(lk.calls[0])
        stats.sort_stats("tottime").print_stats(12)
    return row


def mlp_guards(layers: int = 50) -> tuple[list, float]:
    """The guard list of a ``layers``-layer MLP's frame, and the seconds to build its function."""
    mods = []
    for _ in range(layers):
        mods += [torch.nn.Linear(16, 16), torch.nn.ReLU()]
    model = torch.nn.Sequential(*mods)
    mc.reset()
    compiled = mc.compile(model, backend="eager")
    compiled(torch.randn(4, 16))
    entry = eval_frame.cache_entries(compiled)[0]
    guards = entry.guard.guards
    start = time.perf_counter()
    GuardFn(guards, "guard")
    return guards, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m minicompile.bench.guard_overhead",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default="vit,bert,gpt2")
    p.add_argument("--modes", default="inference,training")
    p.add_argument("--size", default="cpu", choices=list(SIZES))
    p.add_argument("--profile", action="store_true", help="cProfile each step's guard calls")
    p.add_argument("--frames", action="store_true", help="a line per frame of the step")
    p.add_argument("--no-build", dest="build", action="store_false",
                   help="skip timing the 50-layer MLP's guard build")
    args = p.parse_args(argv)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, size {args.size}")
    print(f"{'model':8} {'mode':10} {'frames':>6} {'guards':>6} {'guard us':>9} "
          f"{'lookup us':>9}  kinds")
    for name in args.models.split(","):
        for mode in args.modes.split(","):
            r = measure(name, mode, args.size, args.profile, args.frames)
            kinds = ", ".join(f"{k} {n}" for k, n in r.kinds.most_common(6))
            print(f"{r.model:8} {r.mode:10} {r.frames:6} {r.guards:6} {r.guard_us:9.1f} "
                  f"{r.lookup_us:9.1f}  {kinds}", flush=True)
    if args.build:
        guards, seconds = mlp_guards()
        print(f"50-layer MLP: {len(guards)} guards, guard function built in {seconds * 1e3:.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
