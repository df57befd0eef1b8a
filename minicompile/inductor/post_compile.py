"""The seam after code generation (mirrors ``CompiledFxGraph.post_compile`` in
torch/_inductor/output_code.py): stages that wrap a compiled graph's program register here.

    register_post_compile(wrapper)   # wrapper(compiled, gm) -> a new callable, or None
    post_compile(compiled, gm)       # compile_fx_inner runs every wrapper, in order

A wrapper replaces ``compiled.current_callable`` (what a call runs: the list of inputs in, the
tuple of outputs out) and is named in ``compiled.wrappers``. This module imports nothing of the
compiler, so a later stage (``cudagraphs/``) registers without loading code generation.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol

import torch


class PostCompileWrapper(Protocol):
    """A stage after code generation: given the compiled graph and the ATen graph it came
    from, a wrapper of ``compiled.current_callable`` (same arguments: the list of inputs), or
    None to leave it as it is. ``name`` is what ``CompiledFxGraph.wrappers`` lists."""

    name: str

    def __call__(self, compiled: Any, gm: torch.fx.GraphModule
                 ) -> Callable[[list], tuple] | None: ...


POST_COMPILE: list[PostCompileWrapper] = []


def register_post_compile(wrapper: PostCompileWrapper) -> None:
    """Add a stage after code generation (once: registering it again changes nothing)."""
    if wrapper not in POST_COMPILE:
        POST_COMPILE.append(wrapper)


def post_compile(compiled: Any, gm: torch.fx.GraphModule) -> Any:
    """Run every registered wrapper over ``compiled`` (a ``CompiledFxGraph``), in order."""
    for wrapper in POST_COMPILE:
        wrapped = wrapper(compiled, gm)
        if wrapped is not None:
            compiled.current_callable = wrapped
            compiled.wrappers.append(wrapper.name)
    return compiled
