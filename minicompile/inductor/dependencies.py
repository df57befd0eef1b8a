"""What the scheduler asks of memory accesses (mirrors the analysis half of
torch/_inductor/dependencies.py; the IR's ``ir/read_writes.py`` extracts the ``MemoryDep`` s).

Two questions, both answered from ``MemoryDep(name, index, var_ranges)``:

- **How many distinct elements does a kernel touch in buffer B?** (``footprint``) The union over
  every access to B in the kernel: ``x[:5] + x[1:6]`` reads 6 elements of x, ``x + x.t()`` reads
  100 of a 10x10 x (one kernel loads each element once and keeps it in registers/cache), and
  ``x[i // 2]`` (nearest upsampling) reads each element once although it loops twice as often.
  Counting, fastest first:

  1. an *affine injective* index (``off + sum c_k * v_k`` whose strides never let two loop
     points meet: sorted by stride, each stride exceeds the span of the smaller ones) touches
     exactly ``prod(range of each v_k)`` elements: a closed form, valid for symbolic sizes too;
     accesses with the same strides, ranges and offset touch the same set, so they count once;
  2. otherwise, with concrete sizes, evaluate the index on every loop point (vectorised with
     torch, as the reference executor does) and count the distinct offsets, the union over all
     accesses. Enumeration is capped at ``MAX_ENUMERATED_POINTS``;
  3. above the cap, with symbolic sizes, or for gathers (an index loaded at run time), an upper
     bound: the closed form summed over accesses, never more than the buffer holds.

- **Does a consumer read a buffer at the rows the producer writes them?** (``rows_line_up``)
  Inside one kernel a reduction's result for row ``k`` exists only while row ``k`` is being
  processed; a consumer in the same kernel may read it only from row ``k``. Proved symbolically
  (SymPy, with the loop ranges: works for symbolic sizes) when the producer stores row ``k`` at
  offset ``k`` and the consumer's row formula equals its read index, when the producer stores its
  loops row-major, or when the consumer reads, at each point, what the producer stores at the
  matching point (``corresponding_point``: a pointwise chain, in any loop order); otherwise, with
  concrete sizes, checked on every loop point.
"""

from __future__ import annotations

import functools
import weakref
from typing import TYPE_CHECKING, Iterable

import sympy
import torch

from .index_eval import eval_index, index_grid
from .sizevars import FloorDiv, same, simplify_index, statically_less

if TYPE_CHECKING:  # the accesses themselves are IR (ir/read_writes.py), which counts with this
    from .ir.read_writes import MemoryDep, StarDep

Dep = "MemoryDep | StarDep"  # an access: at an index, or everywhere in a (view of a) buffer

# Above this many loop points an access is counted in closed form instead of enumerated
# (2**24 int64 offsets = 128 MiB of scratch; bigger kernels fall back to the upper bound).
MAX_ENUMERATED_POINTS = 2**24


def is_concrete(*exprs: sympy.Expr) -> bool:
    return all(sympy.sympify(e).is_number for e in exprs)


def _product(sizes: Iterable[sympy.Expr]) -> sympy.Expr:
    return sympy.Mul(*sizes) if sizes else sympy.Integer(1)


# --- the closed form: affine injective indices ---------------------------------------------------

def _used_ranges(dep: MemoryDep) -> list[tuple[sympy.Symbol, sympy.Expr]]:
    used = dep.index.free_symbols
    return [(v, size) for v, size in dep.var_ranges if v in used]


@functools.lru_cache(maxsize=1 << 14)
def affine_strides(dep: MemoryDep) -> tuple[sympy.Expr, tuple[tuple[sympy.Expr, sympy.Expr], ...]] | None:
    """``(offset, ((stride, range), ...))`` when the index is ``offset + sum(stride * var)`` with
    loop-independent strides; None for floor division, modulo, gathers, products of loop vars.
    (Remembered per access: fusion asks it of the same accesses for every pair it tries.)"""
    if dep.is_indirect():
        return None
    loop_vars = dict(dep.var_ranges)
    expr = sympy.expand(dep.index)
    offset = expr.subs({v: 0 for v in loop_vars})
    terms = []
    for v, size in _used_ranges(dep):
        stride = expr.coeff(v)
        if stride.free_symbols & set(loop_vars) or stride == 0:
            return None
        terms.append((stride, size))
    linear = offset + sum(s * v for (s, _), (v, _) in zip(terms, _used_ranges(dep)))
    if sympy.expand(expr - linear) != 0:  # FloorDiv, ModularIndexing, i0*i1, ...
        return None
    return offset, tuple(terms)


def var_strides(dep: MemoryDep) -> dict[sympy.Symbol, sympy.Expr] | None:
    """``{loop var: stride}`` of an affine index (``7*i0 + i1`` -> ``{i0: 7, i1: 1}``); vars the
    index does not use are left out; None for floor/mod/gather indices."""
    affine = affine_strides(dep)
    if affine is None:
        return None
    used = [v for v, _ in dep.var_ranges if v in dep.index.free_symbols]
    return {v: stride for v, (stride, _) in zip(used, affine[1])}


def _degree(expr: sympy.Expr) -> int:
    """Total degree in the size symbols (``s1*s2`` -> 2); 0 for numbers and for expressions that
    are not polynomials (``Abs``, ``floor``), which then sort first and rarely prove anything."""
    if not expr.free_symbols:
        return 0
    try:
        return sympy.Poly(expr, *expr.free_symbols).total_degree()
    except sympy.PolynomialError:
        return 0


def is_injective(terms: list[tuple[sympy.Expr, sympy.Expr]]) -> bool:
    """No two loop points share an offset: with strides sorted ascending, each stride is larger
    than the largest offset the smaller ones reach (``sum(stride * (range - 1))``), like the
    digits of a mixed-radix number. Symbolic strides sort by degree (``1 < s2 < s1*s2``)."""
    def key(t):
        stride = sympy.Abs(t[0])
        return (_degree(t[0]), float(stride) if stride.is_number else 0, str(stride))

    span = sympy.Integer(0)
    for stride, size in sorted(terms, key=key):
        if not statically_less(span, sympy.Abs(stride)):
            return False
        span = span + sympy.Abs(stride) * (size - 1)
    return True


def closed_form(dep: MemoryDep) -> sympy.Expr:
    """The product of the ranges of the loop variables the index uses: exact for an affine
    injective index, an upper bound otherwise. A gather's index hides which loop variables it
    depends on, so all of them count."""
    if dep.is_indirect():
        return _product([size for _, size in dep.var_ranges])
    return _product([size for _, size in _used_ranges(dep)])


def access_key(dep: MemoryDep):
    """Equal keys = same set of elements (loop variable names do not matter): a reduction's
    ``x[10*i0 + r0]`` and a pointwise ``x[10*i0 + i1]`` over the same ranges are one access."""
    affine = affine_strides(dep)
    if affine is None:
        return dep.name, simplify_index(dep.index), dep.var_ranges
    offset, terms = affine
    return dep.name, offset, tuple(sorted(terms, key=str))


# --- enumeration ---------------------------------------------------------------------------------
# Enumerating addresses is compile-time arithmetic on small int tensors: always on the CPU, even
# where ``torch.set_default_device`` sends new tensors elsewhere.
def on_cpu(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if torch.get_default_device().type == "cpu":  # the device context is a Python mode
            return fn(*args, **kwargs)  # that every torch call inside would go through
        with torch.device("cpu"):
            return fn(*args, **kwargs)
    return wrapper

def _points(dep: MemoryDep) -> sympy.Expr:
    return closed_form(dep)


@on_cpu
def enumerate_offsets(dep: MemoryDep) -> torch.Tensor:
    """Every flat offset ``dep`` touches (concrete sizes), one per loop point of the loop
    variables its index uses."""
    used = _used_ranges(dep)
    grid = index_grid([int(size) for _, size in used])
    offsets = torch.as_tensor(eval_index(dep.index, dict(zip([v for v, _ in used], grid))),
                              dtype=torch.int64)
    return offsets.reshape(-1) if used else offsets.reshape(1)


@on_cpu
def count_distinct(deps: list[MemoryDep]) -> int:
    """Distinct offsets among the points of ``deps``: marked in a table spanning them (one
    scatter; sorting them all for ``torch.unique`` took a second of a GPT block's compile),
    or sorted where they are spread too thin for a table."""
    offsets = torch.cat([enumerate_offsets(d) for d in deps])
    if offsets.numel() == 0:
        return 0
    lo, hi = int(offsets.min()), int(offsets.max())
    if hi - lo > 8 * offsets.numel():
        return int(torch.unique(offsets).numel())
    seen = torch.zeros(hi - lo + 1, dtype=torch.bool)
    seen[offsets - lo] = True
    return int(seen.sum())


def reads_every_element(dep: MemoryDep, numel: sympy.Expr) -> bool:
    """Whether ``dep`` touches each of its buffer's ``numel`` elements, proved (False where
    unknown): an affine injective index over ``numel`` loop points, or, with concrete sizes,
    ``numel`` distinct offsets enumerated (``x[i // 2]``'s ``xindex // 2``). A check of the
    whole buffer then checks exactly what ``dep`` reads (``checks.HostCheck``)."""
    affine = affine_strides(dep)
    if affine is not None and is_injective(affine[1]):
        return sympy.simplify(closed_form(dep) - numel) == 0
    enumerable = (not dep.is_indirect() and is_concrete(numel, *[s for _, s in dep.var_ranges])
                  and dep.index.free_symbols <= {v for v, _ in dep.var_ranges})
    return (enumerable and int(_points(dep)) <= MAX_ENUMERATED_POINTS
            and count_distinct([dep]) == int(numel))


# --- the footprint of a kernel on one buffer -----------------------------------------------------

def footprint(deps: Iterable[Dep], numel: sympy.Expr) -> sympy.Expr:
    """Distinct elements of one buffer (holding ``numel``) that ``deps`` touch (see the module
    docstring for the three ways of counting)."""
    deps = list(deps)
    stars = [d for d in deps if d.whole_view]
    if stars:  # a library call reads the elements of its (strided view of the) buffer
        if len(stars) < len(deps):
            return numel
        total = sympy.Add(*[d.numel for d in stars])  # views may overlap: at most the buffer
        if total.is_number and numel.is_number:
            return sympy.Integer(min(int(total), int(numel)))
        return total if len(stars) == 1 and total == numel else sympy.Min(total, numel)
    deps = [d.restricted() for d in deps]  # a masked load touches only its unmasked points
    groups = list({access_key(d): d for d in deps}.values())
    if not groups:
        return sympy.Integer(0)
    if len(groups) == 1:
        affine = affine_strides(groups[0])
        if affine is not None and is_injective(affine[1]):
            count = closed_form(groups[0])  # never more than the buffer holds (loose masks)
            return (sympy.Integer(min(int(count), int(numel))) if count.is_number
                    and numel.is_number else count)
    # enumerating needs every number concrete: loop ranges, and no size symbol in the index
    enumerable = all(not d.is_indirect() and is_concrete(*[s for _, s in d.var_ranges])
                     and d.index.free_symbols <= {v for v, _ in d.var_ranges} for d in groups)
    if enumerable and sum(int(_points(d)) for d in groups) <= MAX_ENUMERATED_POINTS:
        return sympy.Integer(count_distinct(groups))
    total = sympy.Add(*[closed_form(d) for d in groups])
    if total.is_number and numel.is_number:
        return sympy.Integer(min(int(total), int(numel)))
    return sympy.Min(total, numel)


# --- do a reduction's rows line up? --------------------------------------------------------------

def row_formula(dep: MemoryDep, n_rows: sympy.Expr) -> sympy.Expr:
    """The kernel row of each loop point of ``dep`` when its loops, row-major, are cut into
    ``n_rows`` equal rows: ``flat // (points / n_rows)``, simplified with the loop ranges."""
    flat, stride = sympy.Integer(0), sympy.Integer(1)
    for v, size in reversed(dep.var_ranges):
        flat, stride = flat + v * stride, stride * size
    per_row = sympy.cancel(stride / n_rows)
    return simplify_index(FloorDiv(flat, per_row), dict(dep.var_ranges))


def _flat(dep: MemoryDep) -> sympy.Expr:
    flat, stride = sympy.Integer(0), sympy.Integer(1)
    for v, size in reversed(dep.var_ranges):
        flat, stride = flat + v * stride, stride * size
    return flat


def rows_line_up_symbolic(write: MemoryDep, read: MemoryDep, n_rows: sympy.Expr) -> bool:
    """Proof for the usual cases, on SymPy formulas: the writer stores row ``k`` at offset ``k``
    (a reduction's output), or stores its loops row-major (offset ``A`` belongs to row
    ``A // per_row``); and the row owning each offset read is the reader's own row."""
    if write.is_indirect() or read.is_indirect():
        return False
    w_index = simplify_index(write.index, dict(write.var_ranges))
    r_index = simplify_index(read.index, dict(read.var_ranges))
    read_row = row_formula(read, n_rows)
    if same(w_index, row_formula(write, n_rows)):
        owner = r_index
    elif same(w_index, _flat(write)):
        per_row = sympy.cancel(sympy.Mul(*[s for _, s in write.var_ranges]) / n_rows)
        owner = simplify_index(FloorDiv(read.index, per_row), dict(read.var_ranges))
    elif (point := corresponding_point(write, read)) is not None:
        row = row_formula(write, n_rows)
        if row.free_symbols & (set(dict(write.var_ranges)) - set(point)):
            return False  # the writer's row depends on a loop the read does not pin down
        owner = row.subs(point, simultaneous=True)
    else:
        return False
    return same(owner, read_row)


def corresponding_point(write: MemoryDep, read: MemoryDep) -> dict | None:
    """``{writer loop var: reader loop var}`` when the reader loads, at each of its points, the
    element the writer stores at the matching point (same strides and ranges, same offset): a
    pointwise chain, whatever order each loops in. None when the indices do not correspond."""
    w, r = var_strides(write), var_strides(read)
    if w is None or r is None:
        return None
    w_ranges, r_ranges = dict(write.var_ranges), dict(read.var_ranges)
    point: dict = {}
    for wv, ws in w.items():
        match = [rv for rv, rs in r.items() if rv not in point.values()
                 and sympy.expand(rs - ws) == 0 and sympy.expand(r_ranges[rv] - w_ranges[wv]) == 0]
        if len(match) != 1:
            return None
        point[wv] = match[0]
    if sympy.expand(write.index.subs(point, simultaneous=True) - read.index) != 0:
        return None
    return point


@on_cpu
def addresses_and_rows(dep: MemoryDep, n_rows: int) -> tuple[torch.Tensor, torch.Tensor]:
    """For every point of ``dep``'s loops (row-major): the element it touches and its row."""
    sizes = [int(s) for _, s in dep.var_ranges]
    grid = index_grid(sizes)
    env = dict(zip([v for v, _ in dep.var_ranges], grid))
    total = int(_product(sizes))
    addr = torch.as_tensor(eval_index(dep.index, env), dtype=torch.int64)
    addr = addr.expand(sizes).reshape(-1) if sizes else addr.reshape(1)
    per_row = total // n_rows if n_rows else 0
    if per_row and per_row * n_rows == total:  # row k: per_row points in a row (no division)
        rows = torch.arange(n_rows).repeat_interleave(per_row)
    else:
        rows = torch.div(torch.arange(total), max(per_row, 1), rounding_mode="floor")
    if not dep.bounds:
        return addr, rows
    live = torch.ones(total, dtype=torch.bool)
    for v, lo, hi in dep.bounds:  # masked-off points load nothing
        live &= ((env[v] >= int(lo)) & (env[v] < int(hi))).expand(sizes).reshape(-1)
    return addr[live], rows[live]


@functools.lru_cache(maxsize=4096)  # fusion asks again for the same pair as kernels grow
@on_cpu
def rows_line_up(write: MemoryDep, read: MemoryDep, n_rows: sympy.Expr) -> bool:
    """True when every element ``read`` loads was stored by ``write`` in the same kernel row."""
    if rows_line_up_symbolic(write, read, n_rows):
        return True
    sizes = [s for _, s in write.var_ranges] + [s for _, s in read.var_ranges]
    sizes += [b for _, lo, hi in read.bounds for b in (lo, hi)]
    loop_vars = set(dict(write.var_ranges)) | set(dict(read.var_ranges))
    if not is_concrete(n_rows, *sizes) or \
            not (write.index.free_symbols | read.index.free_symbols) <= loop_vars:
        return False  # symbolic sizes we could not prove, or an index loaded at run time
    w_addr, w_row = addresses_and_rows(write, int(n_rows))
    r_addr, r_row = addresses_and_rows(read, int(n_rows))
    if r_addr.numel() == 0:
        return True
    if w_addr.numel() == 0:
        return False  # reads elements the write never stores
    row_of = torch.full((int(max(w_addr.max(), r_addr.max())) + 1,), -1, dtype=torch.int64)
    row_of[w_addr] = w_row
    return bool((row_of[r_addr] == r_row).all())


def reduction_direction(m) -> str | None:
    """Which way a reduction member's reads run through memory: ``"rows"`` when the element next
    to each one read is the next of the reduction (``x[128*i0 + r0]``: layer norm's row sums),
    ``"columns"`` when it is the next row's (``g[i0 + 128*r0]``: a bias gradient, summed over the
    batch); None for a pointwise member, or reads that go neither way or both."""
    if not m.is_reduction():
        return None
    if m not in _DIRECTIONS:  # (asked for every pair m is in; reordering its loops keeps it)
        _DIRECTIONS[m] = _direction(m)
    return _DIRECTIONS[m]


_DIRECTIONS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # an entry dies with its node


def _direction(m) -> str | None:
    rvars = set(m.node.index_vars()[1])  # (the scheduler asks this of its fusion candidates)
    ways = set()
    for dep in _full_reads(m.read_writes.reads):
        strides = var_strides(dep) or {}
        unit = [v for v, stride in strides.items() if stride == 1]
        if unit:
            ways.add("rows" if unit[0] in rvars else "columns")
    return ways.pop() if len(ways) == 1 else None


def visits_every_point(dep) -> bool:
    """Does an indexed access touch a new element at every point of its loops? False for a
    read broadcast over some loop of size > 1 (a per-row mean read by every element of its
    row) and for a ``StarDep`` (no index)."""
    if getattr(dep, "whole_view", False):
        return False
    loops = {v for v, size in dep.var_ranges if size != 1}
    return loops <= dep.index.free_symbols


def _full_reads(reads):
    """The reads that visit every point of the loops, or all reads when none does. A read
    broadcast over some loop (a per-row mean and inverse deviation in a column sum of ``(x -
    mean) * rstd * grad``) touches few elements, which stay in cache, and runs the other way:
    it is not what decides the direction."""
    return [d for d in reads if visits_every_point(d)] or list(reads)


def runs_along_rows(m) -> bool:
    """Whether a pointwise scheduler node steps through a buffer it reads or writes along its
    innermost loop (stride 1): over a reduction's whole tile, cut into rows in its loop order
    (``kernel_group._member``), it goes along the rows (``rindex``), not down the columns."""
    order = m.loop_order()
    if m.is_reduction() or not order:
        return False
    inner = order[-1]
    return any((var_strides(dep) or {}).get(inner) == 1 and
               sympy.expand(dict(dep.var_ranges).get(inner, 1) - 1) != 0
               for dep in m.read_writes.reads + m.read_writes.writes)
