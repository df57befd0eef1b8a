"""Modules called by a frame that runs eagerly get their ``forward`` compiled (the part of
real Dynamo's PEP 523 hook, torch/_dynamo/eval_frame.py, that sees a module's ``forward``
frame start wherever it is called from).

Real Dynamo's hook sees every Python frame, so when a frame runs eagerly (a graph break inside a
loop, code it cannot trace), the ``forward`` of each module that frame calls is still compiled
as its own frame. minicompile has no C hook. Functions a skipped frame calls are caught through
its globals (``FrameCache.eager_frame``), but a module is reached as ``self.block(x)``, an
attribute. So while such a frame runs, ``nn.Module.__call__`` is :func:`_intercepted_call`: on
the thread running the frame it sends the call to the frame's ``compile_forward(module)`` (the
compiled ``forward`` bound to the module, the same path a graph break takes for
``self.block(x)``), or, where that says None (torch's own modules, modules with hooks, a graph
module), to ``nn.Module.__call__`` as usual. Other threads, and every call once no such frame
runs, see the original ``__call__``.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Callable, Iterator

import torch

_ORIGINAL_CALL = torch.nn.Module.__call__
_local = threading.local()  # .stack: the compile_forward of each eager frame running here
_lock = threading.Lock()
_active = 0  # eager frames running, on any thread (the patch is in place while > 0)

CompileForward = Callable[[torch.nn.Module], Callable | None]


def _intercepted_call(self: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
    stack = getattr(_local, "stack", None)
    compiled = stack[-1](self) if stack else None
    if compiled is not None:
        return compiled(*args, **kwargs)
    return _ORIGINAL_CALL(self, *args, **kwargs)


@contextlib.contextmanager
def compiling_module_calls(compile_forward: CompileForward) -> Iterator[None]:
    """While the block runs, module calls on this thread go through ``compile_forward``."""
    global _active
    stack = _local.__dict__.setdefault("stack", [])
    with _lock:
        if _active == 0:
            torch.nn.Module.__call__ = _intercepted_call
        _active += 1
    stack.append(compile_forward)
    try:
        yield
    finally:
        stack.pop()
        with _lock:
            _active -= 1
            if _active == 0:
                torch.nn.Module.__call__ = _ORIGINAL_CALL
