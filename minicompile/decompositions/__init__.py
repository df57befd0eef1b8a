"""Decompositions: compound ATen ops rewritten into core ATen ops, one readable row per op
(mirrors torch/_decomp/decompositions.py).

    from minicompile.decompositions import decomposition_table, register_decomposition
    activations.py   gelu, silu, hardswish, ... and their backwards
    softmax.py       softmax, log_softmax, logsumexp and backwards
    norms.py         layer_norm (forward + backward), rms_norm, batch_norm and its backward
    reductions.py    mean, var, var_mean, std, sum
    linear.py        addmm, linear, t, addcmul, ...
    losses.py        mse_loss, nll_loss, cross_entropy and backwards; dropout; one_hot
    rnn.py           LSTM, GRU, RNN unrolled into cell equations (applied before autograd: the
                     composition root hands this table to aot_autograd/joint.py)
    prims.py         prims rows under core ATen (torch/_refs), for the levels notebook
    registry.py      the table, register_decomposition, get_decompositions, op counting
    util.py          helpers the rows share (dtype promotion, reduction dims)

The three-levels view (ATen, core ATen, prims) is course tooling: course/levels.py.
"""

from . import activations, linear, losses, norms, reductions, softmax  # noqa: F401 (register rows)
from .losses import loss_pre_autograd_decompositions
from .norms import norm_pre_autograd_decompositions
from .rnn import rnn_decompositions
from .registry import (core_aten_ops_used, decomposition_table, get_decompositions,
                       is_core_aten, ops_used, register_decomposition)

# torch function -> replacement that aot_autograd's tracer applies before autograd records it
pre_autograd_decompositions = {**rnn_decompositions, **norm_pre_autograd_decompositions,
                               **loss_pre_autograd_decompositions}

__all__ = ["decomposition_table", "pre_autograd_decompositions", "rnn_decompositions", "register_decomposition", "get_decompositions",
           "core_aten_ops_used", "ops_used", "is_core_aten"]
