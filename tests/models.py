"""A small zoo of models shared by the stage tests (AOT autograd, inductor, ...).

Each entry of ``MODELS`` builds a fresh module and example inputs on a device (by default where
new tensors go: the CPU, or the GPU under ``MINICOMPILE_TEST_DEVICE=cuda``):

    from models import MODELS     # in tests/ (pytest puts this folder on sys.path)
    model, inputs = MODELS["nanogpt_block"]()
    out = model(*inputs)          # a tensor; training cases return a scalar loss

Sizes are deliberately odd (7, 13, 24...) so that no kernel gets lucky with powers of two.
Every model traces with ``torch.fx.symbolic_trace`` as well as with Dynamo (causal masks are
buffers narrowed to the sequence length, as in nanoGPT, rather than built from ``x.shape``).
"""

from __future__ import annotations

import math
from typing import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    def __init__(self, d_in=24, hidden=52, d_out=10):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(d_in, hidden), nn.Linear(hidden, d_out)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class LayerNormResidual(nn.Module):
    def __init__(self, d=24):
        super().__init__()
        self.ln, self.proj = nn.LayerNorm(d), nn.Linear(d, d)

    def forward(self, x):
        return x + self.proj(self.ln(x))


class SoftmaxAttention(nn.Module):
    """Single-head causal attention written out by hand: softmax(q k^T / sqrt(d)) v."""

    def __init__(self, d=24, block_size=16):
        super().__init__()
        self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.register_buffer("mask", torch.ones(block_size, block_size, dtype=torch.bool).tril())
        self.scale = 1 / math.sqrt(d)

    def forward(self, x):  # (B, T, d)
        q, k, v = self.qkv(x).split(x.shape[-1], dim=-1)
        scores = q @ k.transpose(-2, -1) * self.scale  # (B, T, T)
        T = x.shape[1]
        mask = self.mask.narrow(0, 0, T).narrow(1, 0, T)  # (T, T): mask[:T, :T]
        scores = scores.masked_fill(~mask, float("-inf"))
        return self.out(torch.softmax(scores, dim=-1) @ v)


class CausalSelfAttention(nn.Module):
    """nanoGPT's attention, with the softmax written out (no fused SDPA)."""

    def __init__(self, d=24, n_head=3, block_size=16):
        super().__init__()
        self.n_head = n_head
        self.c_attn, self.c_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size))
                             .view(1, 1, block_size, block_size))
        self.scale = 1.0 / math.sqrt(d // n_head)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        att = (q @ k.transpose(-2, -1)) * self.scale  # (B, nh, T, T)
        causal = self.bias.narrow(2, 0, T).narrow(3, 0, T)  # (1, 1, T, T): bias[:, :, :T, :T]
        att = att.masked_fill(causal == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)  # (B, T, C)
        return self.c_proj(y)


class NanoGPTBlock(nn.Module):
    def __init__(self, d=24, n_head=3):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = CausalSelfAttention(d, n_head)
        self.c_fc, self.c_proj = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.c_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class BasicBlock(nn.Module):
    """ResNet's basic block; BatchNorm in eval mode uses its running statistics."""

    def __init__(self, c=6):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
        self.conv2, self.bn2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
        for bn in (self.bn1, self.bn2):  # non-trivial running statistics
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 2.0)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + x)


class RMSNorm(nn.Module):
    """x / sqrt(mean(x^2) + eps) * w, written by hand (as in Llama), then a projection."""

    def __init__(self, d=24, eps=1e-6):
        super().__init__()
        self.eps, self.weight, self.proj = eps, nn.Parameter(torch.rand(d) + 0.5), nn.Linear(d, d)

    def forward(self, x):
        norm = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.proj(norm * self.weight)


class CrossEntropyStep(nn.Module):
    """A classifier's training loss: logits, then cross-entropy against integer labels."""

    def __init__(self, d=24, hidden=40, classes=13):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(d, hidden), nn.Linear(hidden, classes)

    def forward(self, x, target):
        return F.cross_entropy(self.fc2(torch.tanh(self.fc1(x))), target)


def _inputs(*shape, device):
    return torch.randn(*shape, device=device, requires_grad=True)


# name -> builder(device) -> (module, inputs)
MODELS: dict[str, Callable[..., tuple[nn.Module, tuple]]] = {
    "mlp_gelu": lambda device=None: (MLP().to(device), (_inputs(7, 24, device=device),)),
    "layernorm_residual": lambda device=None: (
        LayerNormResidual().to(device), (_inputs(3, 7, 24, device=device),)),
    "softmax_attention": lambda device=None: (
        SoftmaxAttention().to(device), (_inputs(2, 7, 24, device=device),)),
    "nanogpt_block": lambda device=None: (
        NanoGPTBlock().to(device), (_inputs(2, 9, 24, device=device),)),
    "resnet_basic_block_eval": lambda device=None: (
        BasicBlock().to(device).eval(), (_inputs(2, 6, 9, 7, device=device),)),
    "rmsnorm": lambda device=None: (RMSNorm().to(device), (_inputs(5, 24, device=device),)),
    "cross_entropy_step": lambda device=None: (
        CrossEntropyStep().to(device),
        (_inputs(11, 24, device=device), torch.randint(0, 13, (11,), device=device))),
}


# --- more coverage: ops and situations beyond the list ---------------------------------
class SwiGLU(nn.Module):
    """Llama's MLP: silu(x W1) * (x W2), then W3."""

    def __init__(self, d=20, hidden=36):
        super().__init__()
        self.w1, self.w2 = nn.Linear(d, hidden, bias=False), nn.Linear(d, hidden, bias=False)
        self.w3 = nn.Linear(hidden, d, bias=False)

    def forward(self, x):
        return self.w3(F.silu(self.w1(x)) * self.w2(x))


class EmbeddingLM(nn.Module):
    """Token embedding (with a padding row) -> logits -> next-token cross-entropy."""

    def __init__(self, vocab=50, d=16):
        super().__init__()
        self.emb, self.head = nn.Embedding(vocab, d, padding_idx=0), nn.Linear(d, vocab)

    def forward(self, idx):
        logits = self.head(self.emb(idx))  # (B, T, vocab)
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), idx.view(-1))


class ConvBNTrain(nn.Module):
    """Conv, BatchNorm in *training* mode (running stats are input mutations), pool, GroupNorm."""

    def __init__(self):
        super().__init__()
        self.conv, self.bn = nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8)
        self.pool, self.gn = nn.MaxPool2d(2), nn.GroupNorm(2, 8)

    def forward(self, x):
        return self.gn(self.pool(F.relu(self.bn(self.conv(x))))).mean((2, 3))


class FusedAttention(nn.Module):
    """PyTorch's fused scaled_dot_product_attention (forward and backward stay ATen ops)."""

    def __init__(self, d=24, n_head=3):
        super().__init__()
        self.n_head, self.qkv = n_head, nn.Linear(d, 3 * d)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_head, C // self.n_head).permute(2, 0, 3, 1, 4)
        return F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(
            B, T, C)


class Activations(nn.Module):
    def __init__(self, d=10):
        super().__init__()
        self.fc = nn.Linear(d, d)

    def forward(self, x):
        h = self.fc(x)
        return (F.hardswish(h) + F.softplus(x) + F.leaky_relu(h, 0.1) + F.elu(x)
                + torch.sigmoid(h) * torch.tanh(x) + F.hardtanh(h) + F.mish(x))


class Losses(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 3)

    def forward(self, x):
        y = self.fc(x)
        return (F.mse_loss(y, torch.ones_like(y)) + F.smooth_l1_loss(y, torch.zeros_like(y))
                + F.binary_cross_entropy_with_logits(y, torch.full_like(y, 0.3)))


class LSTMTagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm, self.head = nn.LSTM(6, 8, batch_first=True), nn.Linear(8, 4)

    def forward(self, x):
        return self.head(self.lstm(x)[0])


MORE_MODELS: dict[str, Callable[..., tuple[nn.Module, tuple]]] = {
    "swiglu": lambda device=None: (SwiGLU().to(device), (_inputs(3, 5, 20, device=device),)),
    "embedding_lm": lambda device=None: (
        EmbeddingLM().to(device), (torch.randint(0, 50, (4, 6), device=device),)),
    "conv_bn_train": lambda device=None: (
        ConvBNTrain().to(device), (_inputs(2, 3, 11, 9, device=device),)),
    "fused_attention": lambda device=None: (
        FusedAttention().to(device), (_inputs(2, 7, 24, device=device),)),
    "activations": lambda device=None: (Activations().to(device), (_inputs(4, 10, device=device),)),
    "losses": lambda device=None: (Losses().to(device), (_inputs(4, 6, device=device),)),
    "lstm": lambda device=None: (LSTMTagger().to(device), (_inputs(2, 5, 6, device=device),)),
}
