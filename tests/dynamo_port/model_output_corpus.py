"""Cases ported from pytorch/pytorch ``test/dynamo/test_model_output.py`` (``TestModelOutput``,
``TestHFPretrained``): Hugging Face's ``ModelOutput``, an ``OrderedDict`` subclass that is also a
dataclass, made in the frame or passed in, read by attribute, key, index and ``to_tuple``,
written by attribute and by key, and a ``PretrainedConfig`` read by the frame, re-typed and
adapted (the CUDA BERT test runs on CPU tensors; the export test is left out)."""

from __future__ import annotations

import dataclasses

import torch
from transformers.configuration_utils import PretrainedConfig
from transformers.modeling_outputs import (
    BaseModelOutput,
    BaseModelOutputWithPastAndCrossAttentions,
    BaseModelOutputWithPoolingAndCrossAttentions,
    CausalLMOutputWithPast,
)
from transformers.utils import ModelOutput

from . import case_registrar

case = case_registrar("test/dynamo/test_model_output.py")


# (transformers 5 no longer keeps ``max_length`` as an attribute: another keyword stands in)
@case(args=lambda: (torch.randn(2), PretrainedConfig(return_dict=True, scale=20)))
def pretrained(a, tmp):
    if hasattr(tmp, "somekey"):
        a = a + 1
    if tmp.return_dict:
        return a + torch.ones(2) * tmp.scale
    return a


@case
def mo_create(a, b):
    tmp = BaseModelOutput(a + 1, attentions=b + 3)
    return tmp


@case(args=lambda: (torch.randn(10), torch.randn(10)))
def mo_assign(a, b):
    tmp = BaseModelOutput(last_hidden_state=b + 3)
    tmp.hidden_states = a + 7
    tmp["attentions"] = a + b + 6
    return tmp


def _model_output_arg():
    return (BaseModelOutput(last_hidden_state=torch.randn(10), attentions=torch.randn(10)),)


@case(args=_model_output_arg)
def mo_getattr(obj):
    x = obj.last_hidden_state * 10
    if obj.hidden_states is not None:
        x += obj.hidden_states
    if obj.attentions is not None:
        x += obj.attentions
    return x


@case(args=_model_output_arg)
def mo_getattr_missing(obj):
    if getattr(obj, "asdf", None) is not None:
        obj.asdf += 1
    return obj.attentions + 1


@case(args=_model_output_arg)
def mo_getitem(obj):
    x = obj["last_hidden_state"] * 10
    if "hidden_stats" in obj:
        x += obj["hidden_states"]
    if "attentions" in obj:
        x += obj["attentions"]
    return x


@case(args=_model_output_arg)
def mo_tuple(obj):
    a, b = obj.to_tuple()
    return a + b * 10


@case(args=_model_output_arg)
def mo_index(obj):
    return obj[0] * 10 + obj[1]


@case(args=_model_output_arg)
def mo_keys_values_items(obj):
    return list(obj.keys()), [v + 1 for v in obj.values()], [k for k, _ in obj.items()], len(obj)


@dataclasses.dataclass
class MyDataClass(ModelOutput):
    a: torch.Tensor
    b: torch.Tensor = None
    c: torch.Tensor = None
    d: torch.Tensor = None
    e: torch.Tensor = None


@case(args=lambda: (MyDataClass(torch.randn(10), torch.randn(10), torch.randn(10)),))
def mo_init(obj):
    class_fields = dataclasses.fields(obj)
    assert len(class_fields)
    assert all(field.default is None for field in class_fields[1:])
    other_fields_are_none = all(getattr(obj, field.name) is None for field in class_fields[1:])
    assert not other_fields_are_none

    total = getattr(obj, class_fields[0].name)
    for field in class_fields[1:]:
        v = getattr(obj, field.name)
        if v is not None:
            total += v

    return total


@dataclasses.dataclass
class MyDataClassOneField(ModelOutput):
    x: torch.FloatTensor = None


@case(args=lambda: (torch.randn(3, 3),))
def mo_init2(x):
    obj = MyDataClassOneField(x=x)
    return obj


def _new_key_arg():
    obj = BaseModelOutput()
    obj["wwww"] = torch.randn(3, 3)
    return (obj,)


@case(args=_new_key_arg)
def mo_newkey(obj):
    return obj["wwww"] + 1


@case(args=lambda: (BaseModelOutput(attentions=torch.randn(3, 3)),))
def mo_from_outside(obj):
    return obj.attentions + 1


class BertPooler(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.dense = torch.nn.Linear(16, 16)
        self.activation = torch.nn.Tanh()

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        # We "pool" the model by simply taking the hidden state corresponding
        # to the first token.
        first_token_tensor = hidden_states[:, 0]
        pooled_output = self.dense(first_token_tensor)
        pooled_output = self.activation(pooled_output)
        return pooled_output


class BertEncoder(torch.nn.Module):
    def forward(self, hidden_states: torch.Tensor) -> BaseModelOutputWithPastAndCrossAttentions:
        return BaseModelOutputWithPastAndCrossAttentions(
            last_hidden_state=hidden_states,
            past_key_values=None,
            hidden_states=None,
            attentions=None,
            cross_attentions=None,
        )


class BertModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = BertEncoder()
        self.pooler = BertPooler()

    def forward(self, sequence_output: torch.Tensor) -> BaseModelOutputWithPoolingAndCrossAttentions:
        encoder_outputs = self.encoder(sequence_output)
        # test __getitem__ and to_tuple
        sequence_output = encoder_outputs[0]
        pooled_output = self.pooler(sequence_output) if self.pooler is not None else None
        # test CustomDictVariable.create
        result = BaseModelOutputWithPoolingAndCrossAttentions(
            last_hidden_state=sequence_output,
            pooler_output=pooled_output,
            past_key_values=encoder_outputs.past_key_values,
            hidden_states=encoder_outputs.hidden_states,
            attentions=encoder_outputs.attentions,
            cross_attentions=encoder_outputs.cross_attentions,
        )
        # test __setattr__
        result.pooler_output = pooled_output
        # test __setitem__
        result["pooler_output"] = pooled_output
        return result


bert_model = BertModel()


@case(args=lambda: (torch.rand(1, 12, 16),))
def HF_bert_model_output(sequence_output):
    return bert_model(sequence_output)


@case(args=lambda: (torch.randn(1, 1, 1, 1),))
def none_field_index(x):
    x = x + 1
    return CausalLMOutputWithPast(loss=None, logits=x)[0]


@case(args=lambda: (torch.randn(1, 1, 1, 1),))
def reconstruction(x):
    x = x + 1
    return CausalLMOutputWithPast(loss=x, logits=None)
