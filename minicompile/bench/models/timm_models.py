"""The timm suite (the role of PyTorch's ``benchmarks/dynamo/timm_models.py``): image classifiers
from ``timm.create_model(name, pretrained=False, num_classes=10)``, random weights, small images.

Each row gives the model's name and the keyword arguments it needs for a small image (models
with a fixed grid, such as ViT, Swin and MLP-Mixer, take ``img_size``). Dropout and stochastic
depth are off, so that the compiled model and eager draw no random numbers. Inputs are
``{"x": images, "target": classes}``; training uses cross entropy on the logits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn

from .zoo import ModelSpec, Size, import_problem



def import_timm():
    """timm, imported when the suite is built (an optional extra; it imports torchvision, which
    fails beside a torch build other than the one it was built against: docs/models.md)."""
    import timm
    return timm

def forward_pass(model: nn.Module, inputs: dict) -> torch.Tensor:
    return model(inputs["x"])  # (B, classes)


def train_step(model: nn.Module, optimizer: torch.optim.Optimizer, inputs: dict) -> torch.Tensor:
    loss = F.cross_entropy(model(inputs["x"]), inputs["target"])
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return loss


@dataclass(frozen=True)
class TimmModel:
    name: str                                       # timm's model name
    family: str
    kwargs: Callable[[int], dict] = lambda img: {}  # extra create_model arguments at an image size
    min_image: int = 32                             # smallest side the network accepts
    drop_path: bool = True                          # takes drop_path_rate (stochastic depth)


def fixed_grid(img: int) -> dict:
    return {"img_size": img}


MODELS: dict[str, TimmModel] = {m.name: m for m in [
    TimmModel("resnet18", "ResNet, basic blocks"),
    TimmModel("resnet50", "ResNet, bottleneck blocks"),
    TimmModel("efficientnet_b0", "EfficientNet: depthwise conv, squeeze-excite, SiLU"),
    TimmModel("mobilenetv2_100", "MobileNetV2: inverted residuals, ReLU6"),
    TimmModel("mobilenetv3_small_100", "MobileNetV3: hard-swish, squeeze-excite"),
    TimmModel("convnext_atto", "ConvNeXt: 7x7 depthwise conv, LayerNorm, GELU"),
    TimmModel("vit_tiny_patch16_224", "ViT: patch embedding, class token", fixed_grid),
    TimmModel("deit_tiny_patch16_224", "DeiT: ViT trained with distillation", fixed_grid),
    TimmModel("swin_tiny_patch4_window7_224", "Swin: shifted windows, relative position bias",
              lambda img: {"img_size": img, "window_size": img // 32}, min_image=64),
    TimmModel("regnetx_002", "RegNetX: group convolutions"),
    TimmModel("densenet121", "DenseNet: concatenated features", drop_path=False),
    TimmModel("ghostnet_100", "GhostNet: cheap ghost features, squeeze-excite", drop_path=False),
    TimmModel("lcnet_050", "LCNet: depthwise separable, hard-swish"),
    TimmModel("resmlp_12_224", "ResMLP: token- and channel-mixing MLPs, affine norms", fixed_grid),
    TimmModel("poolformer_s12", "PoolFormer: pooling as token mixer, GroupNorm"),
    TimmModel("rexnet_100", "ReXNet: channel-expanding inverted residuals"),
    TimmModel("dla34", "DLA: deep layer aggregation", drop_path=False),
]}


def build(name: str, s: Size) -> tuple[nn.Module, dict]:
    row = MODELS.get(name) or beyond_the_suite(name)
    img = max(s.timm_image, row.min_image)
    torch.manual_seed(0)
    drop_path = {"drop_path_rate": 0.0} if row.drop_path else {}
    model = import_timm().create_model(name, pretrained=False, num_classes=10, drop_rate=0.0,
                                       **drop_path, **row.kwargs(img))
    g = torch.Generator().manual_seed(0)
    inputs = {"x": torch.randn(s.timm_batch, 3, img, img, generator=g),  # (B, 3, H, W)
              "target": torch.randint(0, 10, (s.timm_batch,), generator=g)}
    return model, inputs


BEYOND = "beyond the suite"  # the family column of a model named as timm:NAME


def beyond_the_suite(name: str) -> TimmModel:
    """A row for any other timm model (``--models timm:NAME``), built the suite's way: with
    ``img_size`` where its constructor takes one (a fixed grid: ViT-like models), else the
    small image as it is; stochastic depth off where it takes ``drop_path_rate``."""
    timm = import_timm()
    if not timm.is_model(name):
        raise KeyError(f"timm has no model {name!r} (timm.list_models() lists them)")
    return TimmModel(name, BEYOND,
                     fixed_grid if _takes(name, "img_size", 64) else lambda img: {},
                     drop_path=_takes(name, "drop_path_rate", 0.0))


def _takes(name: str, argument: str, value: object) -> bool:
    """Whether ``create_model(name, argument=value)`` builds: timm hands keyword arguments on
    to the model's class, which refuses one it does not know with a TypeError."""
    try:
        with torch.device("meta"):  # no memory, no random numbers: only whether it builds
            import_timm().create_model(name, pretrained=False, num_classes=10,
                                       **{argument: value})
        return True
    except TypeError:
        return False
    except Exception:  # noqa: BLE001 -- a model that cannot be built on "meta": the real build says
        return True


def specs(extra: list[str] = ()) -> list[ModelSpec]:
    """The suite's rows, and a row for each timm model named in ``extra`` (any other)."""
    unavailable = import_problem(import_timm, "timm")
    if unavailable and torch.version.cuda is None:  # registry torchvision: registry (CUDA) torch
        unavailable += ("; with the CPU build of torch, timm needs a venv with the CUDA build "
                        "and its torchvision (docs/models.md)")
    families = {name: row.family for name, row in MODELS.items()}
    families.update({name: BEYOND for name in extra})
    return [ModelSpec(name, "timm", family, lambda s, name=name: build(name, s),
                      forward_pass, train_step, unavailable) for name, family in families.items()]
