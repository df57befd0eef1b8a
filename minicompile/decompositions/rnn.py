"""Recurrent layers (``nn.LSTM``, ``nn.GRU``, ``nn.RNN``) unrolled into their cell equations
before autograd sees them (mirrors ``lstm_impl`` / ``gru_impl`` / ``rnn_tanh_impl`` in
torch/_decomp/decompositions.py, which torch registers as ``CompositeImplicitAutograd``
Python kernels that AOTAutograd's tracing picks up through the Python dispatcher).

Why *before* autograd, unlike the rest of this package: ``torch._VF.lstm`` is a composite op
that picks a fused kernel (``mkldnn_rnn_layer`` on CPU, ``_cudnn_rnn`` on CUDA) whose autograd
formula becomes part of the joint graph. Those kernels keep a private *workspace* for their
backward that they only fill when grad mode is on; our compiled forward runs inside
``autograd.Function.forward`` (grad mode off), so the backward would get ``None``. Unrolled into
``linear``, ``sigmoid``, ``tanh``, the layer is ordinary ATen ops whose backward autograd derives
op by op, and Inductor can fuse each step's gates.

The rows take the ``torch._VF`` calling convention (what ``nn.LSTM.forward`` calls)::

    _VF.lstm(input, (h0, c0), flat_weights, has_biases, num_layers, dropout, train,
             bidirectional, batch_first) -> (output, h_n, c_n)

Each time step is one unrolled block of the graph, so the sequence length must be a plain
int; a symbolic length or a ``PackedSequence`` returns ``NotImplemented`` (the fused kernel
then runs as before).
"""

from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F

State = tuple[torch.Tensor, ...]  # (h,) for RNN/GRU, (h, c) for LSTM


# --- one time step of each cell: (input gates x W_ih + b_ih, state, weights) -> new state ------
def lstm_cell(gates_x: torch.Tensor, state: State, w: list) -> State:
    h, c = state
    gates = gates_x + F.linear(h, w[1], w[3] if len(w) >= 4 else None)
    i, f, g, o = gates.chunk(4, dim=1)
    c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    h = torch.sigmoid(o) * torch.tanh(c)
    if len(w) in (3, 5):  # LSTM with proj_size > 0: h is projected by w_hr (the last weight)
        h = F.linear(h, w[-1])
    return h, c


def gru_cell(gates_x: torch.Tensor, state: State, w: list) -> State:
    (h,) = state
    gates_h = F.linear(h, w[1], w[3] if len(w) == 4 else None)
    x_r, x_z, x_n = gates_x.chunk(3, dim=1)
    h_r, h_z, h_n = gates_h.chunk(3, dim=1)
    r, z = torch.sigmoid(x_r + h_r), torch.sigmoid(x_z + h_z)
    n = torch.tanh(x_n + r * h_n)
    return ((1 - z) * n + z * h,)


def _simple_cell(activation: Callable) -> Callable:
    def cell(gates_x: torch.Tensor, state: State, w: list) -> State:
        return (activation(gates_x + F.linear(state[0], w[1], w[3] if len(w) == 4 else None)),)
    return cell


def _run_layer(cell: Callable, x: torch.Tensor, state: State, w: list, reverse: bool
               ) -> tuple[torch.Tensor, State]:
    """One direction of one layer over the whole sequence ``x`` (T, B, F)."""
    gates_x = F.linear(x, w[0], w[2] if len(w) >= 4 else None)  # all steps in one matmul
    steps = range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])
    outs: list[torch.Tensor] = [None] * x.shape[0]  # type: ignore[list-item]
    for t in steps:
        state = cell(gates_x[t], state, w)
        outs[t] = state[0]
    return torch.stack(outs), state


def _rnn(cell: Callable, *args):
    # the PackedSequence overload reads (data, batch_sizes, hx, params, has_biases, ...)
    if not isinstance(args[3], bool):
        return NotImplemented
    input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first = args
    if not isinstance(input.shape[1 if batch_first else 0], int):
        return NotImplemented  # a symbolic sequence length cannot be unrolled
    hx = tuple(hx) if isinstance(hx, (tuple, list)) else (hx,)
    directions = 2 if bidirectional else 1
    per_cell = len(params) // (num_layers * directions)  # w_ih, w_hh[, b_ih, b_hh][, w_hr]
    x = input.transpose(0, 1) if batch_first else input  # (T, B, F)
    finals: list[State] = []
    for layer in range(num_layers):
        outs = []
        for d in range(directions):
            k = layer * directions + d
            w = list(params[k * per_cell:(k + 1) * per_cell])
            out, state = _run_layer(cell, x, tuple(s[k] for s in hx), w, reverse=d == 1)
            outs.append(out)
            finals.append(state)
        x = torch.cat(outs, dim=-1) if directions == 2 else outs[0]
        if dropout and train and layer < num_layers - 1:  # between layers, not after the last
            x = F.dropout(x, dropout, training=True)
    out = x.transpose(0, 1) if batch_first else x
    stacked = [torch.stack([s[j] for s in finals]) for j in range(len(hx))]
    return (out, *stacked)


def lstm(*args):
    return _rnn(lstm_cell, *args)


def gru(*args):
    return _rnn(gru_cell, *args)


def rnn_tanh(*args):
    return _rnn(_simple_cell(torch.tanh), *args)


def rnn_relu(*args):
    return _rnn(_simple_cell(torch.relu), *args)


def _skip_flatten(*args, **kwargs) -> None:
    """``nn.LSTM`` on CUDA re-packs its weights into one cuDNN buffer when they change (they
    do under ``functional_call``); the unrolled layer does not need it."""
    return None


# torch function -> its unrolled replacement (applied by aot_autograd's tracer, before autograd)
rnn_decompositions: dict[Callable, Callable] = {
    torch._VF.lstm: lstm,
    torch._VF.gru: gru,
    torch._VF.rnn_tanh: rnn_tanh,
    torch._VF.rnn_relu: rnn_relu,
}
if hasattr(torch, "_cudnn_rnn_flatten_weight"):
    rnn_decompositions[torch._cudnn_rnn_flatten_weight] = _skip_flatten
