"""The Hugging Face transformers suite (the role of PyTorch's ``benchmarks/dynamo/huggingface.py``):
one row per architecture, each built offline from a small config with random weights.

A row names the config and model classes, the config's keyword arguments at a given
:class:`Size`, and what the model eats (``inputs``). Every model with a head gets labels and
trains on its own loss (``model(**inputs).loss``, as real training code writes it); the two bare
encoders (CLIP vision, wav2vec2) train on a loss over their features.

No hub access: configs are built in code (``HF_HUB_OFFLINE=1`` is set before transformers is
imported), and no tokenizer, processor or checkpoint is ever loaded.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable

import torch

from .zoo import ModelSpec, Size, import_problem


def import_transformers():
    """transformers, imported when a suite is built: an optional extra (``pip install -e
    .[models]``) that takes seconds to import, so the rest of the benchmark never waits for it."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # configs are built in code; never reach the hub
    import transformers
    from transformers.utils import logging as hf_logging
    hf_logging.set_verbosity_error()  # "random weights: you should train this model" etc.
    return transformers


# ---- what gets compiled: one inference call, one training step as real code writes it --------

def forward_pass(model: torch.nn.Module, inputs: dict):
    return model(**inputs)


def train_step(model: torch.nn.Module, optimizer: torch.optim.Optimizer, inputs: dict):
    loss = model(**inputs).loss  # the head's own loss: the inputs carry labels
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return loss


def train_step_on_output(model: torch.nn.Module, optimizer: torch.optim.Optimizer, inputs: dict):
    """For a bare encoder (no head, no labels): a loss on its features."""
    loss = model(**inputs).last_hidden_state.pow(2).mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return loss


# ---- inputs: what each kind of model eats ---------------------------------------------------

def tokens(s: Size, g: torch.Generator) -> torch.Tensor:
    return torch.randint(0, s.vocab, (s.batch, s.seq), generator=g)  # (B, T)


def causal_lm(s: Size, g: torch.Generator) -> dict:
    ids = tokens(s, g)
    return {"input_ids": ids, "labels": ids}  # the model shifts labels itself


def masked_lm(s: Size, g: torch.Generator) -> dict:
    ids = tokens(s, g)
    labels = torch.where(torch.rand(ids.shape, generator=g) < 0.15, ids, -100)  # 15% masked
    labels[:, 0] = ids[:, 0]  # at least one position counts, whatever the draw
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels}


def seq2seq(s: Size, g: torch.Generator) -> dict:
    ids = tokens(s, g)
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids),
            "labels": torch.randint(0, s.vocab, (s.batch, s.seq // 2), generator=g)}


def image(s: Size, g: torch.Generator) -> dict:
    pixels = torch.randn(s.batch, 3, s.image, s.image, generator=g)  # (B, 3, H, W)
    return {"pixel_values": pixels, "labels": torch.randint(0, 10, (s.batch,), generator=g)}


def pixels_only(s: Size, g: torch.Generator) -> dict:
    return {"pixel_values": torch.randn(s.batch, 3, s.image, s.image, generator=g)}


def mel_features(s: Size, g: torch.Generator) -> dict:
    # Whisper's encoder wants exactly 2 * max_source_positions frames of 80 mel bins
    feats = torch.randn(s.batch, 80, 2 * s.seq, generator=g)  # (B, mels, frames)
    return {"input_features": feats,
            "labels": torch.randint(0, s.vocab, (s.batch, s.seq // 4), generator=g)}


def waveform(s: Size, g: torch.Generator) -> dict:
    return {"input_values": torch.randn(s.batch, 320 * s.seq, generator=g)}  # 20 ms per frame


# ---- configs at a size ----------------------------------------------------------------------

def decoder(s: Size, **extra) -> dict:
    """The Llama family's names: hidden_size, layers, heads, grouped-query kv heads, RoPE."""
    return dict(hidden_size=s.d, intermediate_size=s.ffn, num_hidden_layers=s.layers,
                num_attention_heads=s.heads, num_key_value_heads=max(1, s.heads // 2),
                vocab_size=s.vocab, max_position_embeddings=2 * s.seq, use_cache=False,
                attention_dropout=0.0, **extra)


def encoder(s: Size, **extra) -> dict:
    """BERT's names (RoBERTa, ALBERT, ELECTRA, ViT share them); dropout off, so that the
    compiled model and eager draw no random numbers."""
    return dict(hidden_size=s.d, intermediate_size=s.ffn, num_hidden_layers=s.layers,
                num_attention_heads=s.heads, hidden_dropout_prob=0.0,
                attention_probs_dropout_prob=0.0, **extra)


def enc_dec(s: Size, **extra) -> dict:
    """BART's and Whisper's names."""
    return dict(d_model=s.d, encoder_layers=s.layers, decoder_layers=s.layers,
                encoder_attention_heads=s.heads, decoder_attention_heads=s.heads,
                encoder_ffn_dim=s.ffn, decoder_ffn_dim=s.ffn, vocab_size=s.vocab, dropout=0.0,
                attention_dropout=0.0, activation_dropout=0.0, use_cache=False, **extra)


@dataclass(frozen=True)
class HFModel:
    config: str                         # transformers class names
    model: str
    kwargs: Callable[[Size], dict]      # the config's arguments at a size
    inputs: Callable[[Size, torch.Generator], dict]
    family: str                         # what the row stands for in the table
    train_step: Callable = train_step


MODELS: dict[str, HFModel] = {
    # decoder-only language models
    "gpt2": HFModel("GPT2Config", "GPT2LMHeadModel", lambda s: dict(
        n_embd=s.d, n_layer=s.layers, n_head=s.heads, n_inner=s.ffn, vocab_size=s.vocab,
        n_positions=2 * s.seq, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, use_cache=False),
        causal_lm, "decoder, learned positions"),
    "llama": HFModel("LlamaConfig", "LlamaForCausalLM", decoder, causal_lm,
                     "decoder, RoPE, grouped-query attention, RMSNorm, SwiGLU"),
    "mistral": HFModel("MistralConfig", "MistralForCausalLM",
                       lambda s: decoder(s, sliding_window=s.seq // 2), causal_lm,
                       "decoder, RoPE, GQA, sliding-window attention"),
    "qwen2": HFModel("Qwen2Config", "Qwen2ForCausalLM", decoder, causal_lm,
                     "decoder, RoPE, GQA, qkv bias"),
    "phi3": HFModel("Phi3Config", "Phi3ForCausalLM", lambda s: decoder(s, pad_token_id=0),
                    causal_lm, "decoder, RoPE, fused qkv and gate-up projections"),
    "gemma": HFModel("GemmaConfig", "GemmaForCausalLM",
                     lambda s: decoder(s, head_dim=s.d // s.heads), causal_lm,
                     "decoder, RoPE, GQA, GELU-tanh gating, scaled embeddings"),
    "gpt_neox": HFModel("GPTNeoXConfig", "GPTNeoXForCausalLM", lambda s: dict(
        hidden_size=s.d, intermediate_size=s.ffn, num_hidden_layers=s.layers,
        num_attention_heads=s.heads, vocab_size=s.vocab, max_position_embeddings=2 * s.seq,
        use_cache=False, hidden_dropout=0.0, attention_dropout=0.0),
        causal_lm, "decoder, partial RoPE, parallel residual"),
    "opt": HFModel("OPTConfig", "OPTForCausalLM", lambda s: dict(
        hidden_size=s.d, ffn_dim=s.ffn, num_hidden_layers=s.layers, num_attention_heads=s.heads,
        vocab_size=s.vocab, word_embed_proj_dim=s.d, max_position_embeddings=2 * s.seq,
        dropout=0.0, attention_dropout=0.0, use_cache=False),
        causal_lm, "decoder, learned offset positions, ReLU"),
    "bloom": HFModel("BloomConfig", "BloomForCausalLM", lambda s: dict(
        hidden_size=s.d, n_layer=s.layers, n_head=s.heads, vocab_size=s.vocab,
        hidden_dropout=0.0, attention_dropout=0.0, use_cache=False),
        causal_lm, "decoder, ALiBi position bias"),
    "falcon": HFModel("FalconConfig", "FalconForCausalLM", lambda s: dict(
        hidden_size=s.d, num_hidden_layers=s.layers, num_attention_heads=s.heads,
        vocab_size=s.vocab, new_decoder_architecture=True, num_kv_heads=max(1, s.heads // 2),
        hidden_dropout=0.0, attention_dropout=0.0, use_cache=False),
        causal_lm, "decoder, RoPE, multi-query/GQA, parallel attention"),
    "mixtral": HFModel("MixtralConfig", "MixtralForCausalLM",
                       lambda s: decoder(s, num_local_experts=4, num_experts_per_tok=2,
                                         router_aux_loss_coef=0.0),
                       causal_lm, "mixture of experts (top-2 of 4), RoPE, GQA"),
    "qwen2_moe": HFModel("Qwen2MoeConfig", "Qwen2MoeForCausalLM",
                         lambda s: decoder(s, num_experts=4, num_experts_per_tok=2,
                                           moe_intermediate_size=s.ffn // 2,
                                           shared_expert_intermediate_size=s.ffn // 2,
                                           router_aux_loss_coef=0.0),
                         causal_lm, "mixture of experts with a shared expert"),
    # encoder-only
    "bert": HFModel("BertConfig", "BertForMaskedLM",
                    lambda s: encoder(s, vocab_size=s.vocab, max_position_embeddings=2 * s.seq),
                    masked_lm, "encoder, masked LM"),
    "roberta": HFModel("RobertaConfig", "RobertaForMaskedLM",
                       lambda s: encoder(s, vocab_size=s.vocab,
                                         max_position_embeddings=2 * s.seq + 2),
                       masked_lm, "encoder, padding-offset positions"),
    "distilbert": HFModel("DistilBertConfig", "DistilBertForMaskedLM", lambda s: dict(
        dim=s.d, hidden_dim=s.ffn, n_layers=s.layers, n_heads=s.heads, vocab_size=s.vocab,
        max_position_embeddings=2 * s.seq, dropout=0.0, attention_dropout=0.0),
        masked_lm, "encoder, distilled"),
    "albert": HFModel("AlbertConfig", "AlbertForMaskedLM",
                      lambda s: encoder(s, vocab_size=s.vocab, embedding_size=s.d // 2,
                                        max_position_embeddings=2 * s.seq),
                      masked_lm, "encoder, shared layers, factorised embeddings"),
    "electra": HFModel("ElectraConfig", "ElectraForMaskedLM",
                       lambda s: encoder(s, vocab_size=s.vocab, embedding_size=s.d // 2,
                                         max_position_embeddings=2 * s.seq),
                       masked_lm, "encoder, generator head"),
    # encoder-decoder
    "t5": HFModel("T5Config", "T5ForConditionalGeneration", lambda s: dict(
        d_model=s.d, d_ff=s.ffn, d_kv=s.d // s.heads, num_layers=s.layers, num_heads=s.heads,
        vocab_size=s.vocab, dropout_rate=0.0, use_cache=False, decoder_start_token_id=0),
        seq2seq, "encoder-decoder, relative position buckets"),
    "bart": HFModel("BartConfig", "BartForConditionalGeneration",
                    lambda s: enc_dec(s, max_position_embeddings=2 * s.seq), seq2seq,
                    "encoder-decoder, learned positions"),
    # vision and speech encoders
    "vit": HFModel("ViTConfig", "ViTForImageClassification",
                   lambda s: encoder(s, image_size=s.image, patch_size=s.image // 8, num_labels=10),
                   image, "vision transformer, patch embedding"),
    "clip_vision": HFModel("CLIPVisionConfig", "CLIPVisionModel", lambda s: dict(
        hidden_size=s.d, intermediate_size=s.ffn, num_hidden_layers=s.layers,
        num_attention_heads=s.heads, image_size=s.image, patch_size=s.image // 8,
        attention_dropout=0.0), pixels_only, "vision encoder, quick-GELU, class token",
        train_step_on_output),
    "whisper": HFModel("WhisperConfig", "WhisperForConditionalGeneration",
                       lambda s: enc_dec(s, max_source_positions=s.seq, max_target_positions=s.seq,
                                         num_mel_bins=80, decoder_start_token_id=0,
                                         pad_token_id=0),
                       mel_features, "speech encoder-decoder, conv front end"),
    "wav2vec2": HFModel("Wav2Vec2Config", "Wav2Vec2Model", lambda s: dict(
        hidden_size=s.d, intermediate_size=s.ffn, num_hidden_layers=s.layers,
        num_attention_heads=s.heads, conv_dim=(32, 32, 32, 32, 32, 32, 32),
        num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4, hidden_dropout=0.0,
        attention_dropout=0.0, activation_dropout=0.0, feat_proj_dropout=0.0,
        layerdrop=0.0, mask_time_prob=0.0, do_stable_layer_norm=True,
        feat_extract_norm="layer"), waveform, "speech encoder, conv feature extractor",
        train_step_on_output),
}


def build(name: str, s: Size) -> tuple[torch.nn.Module, dict]:
    """A fresh model with random weights (seeded) and its inputs, on the CPU."""
    row = MODELS[name]
    transformers = import_transformers()
    config = getattr(transformers, row.config)(**row.kwargs(s))
    torch.manual_seed(0)
    model = getattr(transformers, row.model)(config)
    return model, row.inputs(s, torch.Generator().manual_seed(0))


def specs() -> list[ModelSpec]:
    unavailable = import_problem(import_transformers, "transformers")
    return [ModelSpec(name, "huggingface", row.family, lambda s, name=name: build(name, s),
                      forward_pass, row.train_step, unavailable)
            for name, row in MODELS.items()]
