"""Cases ported from pytorch/pytorch ``test/dynamo/test_sources.py`` (``SourceTests``): a
property whose getter is a closure made by another function, read from an argument, re-typed
and adapted (the tests of the ``Source`` classes themselves are Dynamo-internal)."""

from __future__ import annotations

import torch

from . import case_registrar

case = case_registrar("test/dynamo/test_sources.py")


def external_property():
    closed_value = 7

    def internal_function(self):
        return closed_value

    return internal_function


class Elements:
    myprop = property(external_property())


@case(args=lambda: (Elements(),))
def property_closure(elements):
    if not elements.myprop:
        return torch.tensor([1, 2, 3])
    else:
        return torch.tensor([4, 5, 6])
