"""Exercises for notebook 04: AOT autograd, the joint graph and its partitions.

Grade with ``bash course.sh grade -k 04``. Each function plugs into minicompile's own
AOT autograd: the checks build joint graphs of real models, run your partition or wrapper, and
compare outputs and gradients with eager PyTorch.

A joint graph (``minicompile.aot_autograd.trace_graph(..., joint=True)``) has placeholders
``primals_*`` then ``tangents_*``, and one output node whose list is the forward outputs
(the first ``num_fwd_outputs`` entries) followed by one gradient per primal (None where there
is none). Useful helpers: ``node.users``, ``node.all_input_nodes``, ``node.meta["val"]`` (a fake
tensor), and from ``minicompile.aot_autograd.partitioners``: ``ancestors``, ``descendants``,
``primals_and_tangents``, ``split_outputs``, ``tensor_bytes``, ``is_recomputable``.
"""

from __future__ import annotations

import operator

import networkx as nx
import torch
import torch.fx as fx

from minicompile.aot_autograd.partitioners import (ancestors, descendants, is_recomputable,
                                                   primals_and_tangents, split_outputs,
                                                   tensor_bytes)


def default_saved_values(joint: fx.Graph, num_fwd_outputs: int) -> list[fx.Node]:
    """Exercise 4.1: the default partition's saved values.

    The forward graph is every node the forward outputs need (their ancestors) plus the
    primals. Return, in graph order, every forward node that some non-forward node (other than
    the output node) reads. A multi-output node (its ``meta["val"]`` is a tuple, e.g.
    native_layer_norm) cannot be saved whole: save its ``operator.getitem`` users instead.
    (Graphs in this exercise have no symbolic sizes.)
    """
    raise NotImplementedError('Exercise 4.1: forward = ancestors of the forward outputs; save what backward reads (roughly 11 lines)')


def min_cut_saved_values(joint: fx.Graph, num_fwd_outputs: int) -> list[fx.Node]:
    """Exercise 4.2: the min-cut rematerialization saved set.

    Build a networkx DiGraph: each node n is an edge ``n.name+"_in" -> n.name+"_out"`` with
    ``capacity=tensor_bytes(n)`` (omit the capacity, i.e. infinite, for a view op
    ``n.target.is_view`` or a multi-output node, whose bytes are inf); each data edge
    ``n_out -> user_in`` has no capacity. Consider only ``ancestors(fw_outs + grads)`` (skip the
    output node). Connect ``"source" -> n_in`` for primals and for forward nodes
    (ancestors of the forward outputs) that are not ``is_recomputable``; connect
    ``n_in -> "sink"`` for nodes that read a tangent (``descendants(tangents)``). Then
    ``nx.minimum_cut(g, "source", "sink")`` returns ``(value, (source_side, sink_side))``; the
    saved nodes are those whose ``_in`` is on the source side and ``_out`` is not.
    Return them in graph order.
    """
    raise NotImplementedError('Exercise 4.2: build the flow graph, cut it, read the saved nodes off the cut (roughly 24 lines)')


def make_compiled_function(fw, bw, num_outputs: int, num_saved: int):
    """Exercise 4.3: the runtime wrapper, a ``torch.autograd.Function``.

    ``fw(*inputs)`` returns a list: ``num_outputs`` outputs, then ``num_saved`` saved tensors.
    ``bw(*saved, *tangents)`` returns one gradient (or None) per input; there is one tangent
    per output. Return a callable ``run(*inputs) -> tuple of outputs`` whose outputs are
    differentiable: define a ``torch.autograd.Function`` subclass whose ``forward`` runs
    ``fw`` and keeps the saved tensors with ``ctx.save_for_backward``, and whose ``backward``
    runs ``bw`` on them and the incoming gradients (made ``.contiguous()``); ``run`` is its
    ``apply``.
    """
    raise NotImplementedError('Exercise 4.3: forward runs fw and saves; backward runs bw on saved + grads (roughly 10 lines)')
