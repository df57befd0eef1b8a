"""The convolution lowering (mirrors ``convolution`` and ``conv_layout`` in
torch/_inductor/kernel/conv.py): one ATen call (oneDNN, cuDNN, or ATen's own kernel), its
arguments laid out as the graph's layout decision says (``layout_opt.py``): channels-last
input and weight where the graph runs its 2-D convolutions so, eager's layouts elsewhere.

On a GPU the bias is peeled off, as Inductor does: cuDNN adds it in a pass of its own over
the output (for a depthwise convolution ATen launches a separate ``add`` kernel), while a
pointwise add of the bias fuses into whatever reads the convolution next (the batch norm, the
activation, the residual add): one pass fewer over each convolution's output.
"""

from __future__ import annotations

import torch

from ..ir import Layout, View
from ..ir.layout import channels_last_order, fill_ordered_strides
from ..lowering import (make_extern, make_pointwise, out_dtype, out_size, realize_strided,
                        register_lowering, require_fill_order)
from ..sizevars import as_ints
from ..virtualized import V, ops

aten = torch.ops.aten


@register_lowering(aten.convolution.default)
def convolution(x, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    params = (stride, padding, dilation, transposed, output_padding, groups)
    if bias is not None and peels_bias(x.get_device()):
        return add_bias(convolution(x, weight, None, *params), bias)
    if not (V.graph.layout_opt and len(x.get_size()) == 4):
        return make_extern(aten.convolution.default, (x, weight, bias, *params), {})
    order = channels_last_order(4)
    # the weight of a 1x1 or a depthwise convolution is channels-last already (its strides
    # differ only on size-1 dims): only a dense kxk weight is copied, as in Inductor
    x, weight = require_fill_order(x, order), require_fill_order(weight, order)
    bias = realize_strided(bias) if bias is not None else None
    return make_extern(aten.convolution.default, (x, weight, bias, *params), {},
                       layout=symbolic_conv_layout(x, weight))


@register_lowering(aten.convolution_backward.default)
def convolution_backward(grad, x, weight, *params):
    """One ATen call; in a graph that runs its convolutions channels-last (``layout_opt.py``),
    the incoming gradient and the saved input are handed over channels-last, as the forward's
    convolution took its input. The stem's saved input is the caller's image in eager's layout:
    taken as it is, cuDNN ran the stem's backward in that layout, converting the gradient (a
    ResNet's: 103 MB a step), and the gradient's producers (the max pool's and the ReLU's
    backward) wrote eager's layout from channels-last reads, an uncoalesced store per element.
    The weight stays as it is: ATen runs channels-last when the input is so (a dense weight
    would be copied on every call)."""
    if V.graph.layout_opt and len(x.get_size()) == 4:
        order = channels_last_order(4)
        grad, x = require_fill_order(grad, order), require_fill_order(x, order)
    return make_extern(aten.convolution_backward.default, (grad, x, weight, *params), {})


def peels_bias(device: torch.device) -> bool:
    """On a GPU (oneDNN on the CPU adds the bias inside its convolution, at no extra pass)."""
    return device.type != "cpu"


def add_bias(result, bias):
    """``result + bias`` with the bias along the channels (dim 1), as a pointwise body."""
    size = result.get_size()
    along_channels = View(bias, [size[1]] + [1] * (len(size) - 2), lambda index: [index[0]])
    return make_pointwise(ops.add, [result, along_channels], result.get_dtype(), size=size)


def symbolic_conv_layout(x, weight) -> Layout | None:
    """The result's layout is the one ATen gives for the arguments' layouts (Inductor's
    ``conv_layout``): with every size a number ``make_extern`` runs the op on fake tensors laid
    out so (``lowering.meta_for_layouts``; a channels-last input gives a channels-last result,
    but ATen picks a size-1 dim's stride: ``[4, 576, 1, 1]`` comes back contiguous). With
    symbolic sizes, here: channels-last strides (None: let the fake run decide)."""
    if all(as_ints([*a.get_size(), *a.layout.stride]) is not None for a in (x, weight)):
        return None
    size = out_size()
    return Layout(x.get_device(), out_dtype(), size,
                  fill_ordered_strides(size, channels_last_order(4)))
