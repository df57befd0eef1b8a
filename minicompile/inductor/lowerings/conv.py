"""The convolution lowering (mirrors ``convolution`` in torch/_inductor/kernel/conv.py): one
ATen call (oneDNN, cuDNN, or ATen's own kernel), its arguments laid out as the graph's layout
decision says (``layout_opt.py``): channels-last input and weight where the graph runs its
2-D convolutions so, eager's layouts elsewhere."""

from __future__ import annotations

import torch

from ..ir import Layout
from ..ir.layout import channels_last_order, fill_ordered_strides
from ..lowering import make_extern, out_dtype, out_size, register_lowering, require_fill_order
from ..virtualized import V

aten = torch.ops.aten


@register_lowering(aten.convolution.default)
def convolution(x, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    params = (stride, padding, dilation, transposed, output_padding, groups)
    if not (V.graph.layout_opt and len(x.get_size()) == 4):
        return make_extern(aten.convolution.default, (x, weight, bias, *params), {})
    order = channels_last_order(4)
    # the weight of a 1x1 or a depthwise convolution is channels-last already (its strides
    # differ only on size-1 dims): only a dense kxk weight is copied, as in Inductor
    x, weight = require_fill_order(x, order), require_fill_order(weight, order)
    size = out_size()  # (N, C', H', W')
    # given a channels-last input, ATen writes its output channels-last too
    layout = Layout(x.get_device(), out_dtype(), size, fill_ordered_strides(size, order))
    return make_extern(aten.convolution.default, (x, weight, bias, *params), {}, layout=layout)
