"""minicompile: a readable re-implementation of torch.compile, one stage per subpackage.

    import minicompile as mc
    cfn = mc.compile(fn, backend="inductor")     # or @mc.compile / @mc.compile(dynamic=True)
    mc.explain(fn)(*args)                          # graphs, graph breaks, guards, readable program
    mc.reset(); mc.mark_dynamic(x, 0); mc.metrics

Stages (data flows one way): dynamo/ (bytecode -> FX graph + guards) -> aot_autograd/ and
decompositions/ (forward + backward ATen graphs) -> inductor/ (loop IR, fusion, Triton and C++
kernels) -> cudagraphs/.
"""

from __future__ import annotations

import functools

from typing import Any, Callable

from ._logging import set_logs
from .backends import list_backends, lookup_backend, register_backend
from .metrics import metrics
from .aot_autograd.joint import PRE_AUTOGRAD_DECOMPOSITIONS
from .decompositions import pre_autograd_decompositions
from .dynamo.eval_frame import optimize
from .dynamo.eval_frame import reset as dynamo_reset
from .dynamo.explain import explain as dynamo_explain
from .inductor.post_compile import register_post_compile
from .inductor.options import MODE_OPTIONS
from .cudagraphs import facts_of, post_compile as cudagraphs_post_compile
from .cudagraphs import skip_reason as cudagraph_skip_reason

# The composition root wires the stages: AOT autograd unrolls RNNs (decompositions/rnn.py) and
# gives batch norm one form on every device (decompositions/norms.py) before autograd; CUDA
# graphs run after inductor's code generation, on its post-compile seam.
PRE_AUTOGRAD_DECOMPOSITIONS.update(pre_autograd_decompositions)
register_post_compile(cudagraphs_post_compile)

__all__ = ["compile", "explain", "reset", "mark_dynamic", "metrics", "set_logs",
           "list_backends", "register_backend"]


def compile(
    model: Callable | None = None,
    *,
    backend: str | Callable = "inductor",
    mode: str | None = None,
    fullgraph: bool = False,
    dynamic: bool | None = None,
    options: dict[str, Any] | None = None,
) -> Any:
    """Compile a function or nn.Module (mirrors ``torch.compile``); usable as a decorator.

    backend: "eager", "aot_eager", "inductor", "cudagraphs", "torch-inductor", or any callable
    ``(gm, example_inputs) -> callable``.
    ``mode`` ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs") and
    ``options`` (a dict of inductor knobs, ``minicompile/inductor/options.py``) configure the
    inductor backend; as ``torch.compile``, give one or the other.
    ``fullgraph=True`` makes a graph break an error. ``dynamic``: None (automatic dynamic: static
    first, symbolic after a size changes), True (symbolic from the start) or False (never).
    """
    if model is None:  # @mc.compile(...) with arguments
        return lambda m: compile(m, backend=backend, mode=mode, fullgraph=fullgraph,
                                 dynamic=dynamic, options=options)
    if mode not in MODE_OPTIONS:
        raise ValueError(f"unknown mode {mode!r}; known: {[m for m in MODE_OPTIONS if m]}")
    if mode not in (None, "default") and options is not None:
        raise ValueError("give mode= or options=, not both (as torch.compile): a mode is a "
                         "set of options")
    compiler = lookup_backend(backend)
    if mode not in (None, "default") or options is not None:
        if backend != "inductor":  # a knob that would not be read is an error, never ignored
            raise ValueError(f"mode= and options= configure the inductor backend; backend="
                             f"{backend!r} reads neither")
        # the knobs reach inductor(), which freezes them into this compile's InductorOptions
        compiler = functools.wraps(compiler)(functools.partial(compiler, mode=mode,
                                                               options=options))
    return optimize(model, backend=compiler, fullgraph=fullgraph, dynamic=dynamic)


def explain(fn: Callable) -> Callable[..., Any]:
    """``mc.explain(fn)(*args)`` -> ExplainOutput: graphs, breaks with reasons, guards, program,
    and for each graph why ``mode="reduce-overhead"`` would run it without a CUDA graph."""
    run = dynamo_explain(fn)

    @functools.wraps(fn)
    def explained(*args: Any, **kwargs: Any) -> Any:
        out = run(*args, **kwargs)
        out.cudagraph_skips = [cudagraph_skip_reason(facts_of(gm)) for gm in out.graphs]
        return out
    return explained


def reset() -> None:
    """Drop every cache entry and compiled artifact (mirrors ``torch._dynamo.reset``)."""
    dynamo_reset()


def mark_dynamic(tensor: Any, dim: int | list[int]) -> None:
    """Make ``tensor.shape[dim]`` symbolic on the first compile (mirrors torch._dynamo.mark_dynamic)."""
    dims = [dim] if isinstance(dim, int) else list(dim)
    existing = getattr(tensor, "_minicompile_dynamic_dims", set())
    tensor._minicompile_dynamic_dims = existing | set(dims)
