"""Feature Pyramid Network (Lin et al. 2017): a top-down pathway with lateral connections
that gives every level of a backbone's feature hierarchy the same number of channels and
the semantics of the coarsest level."""
from __future__ import annotations

from collections import OrderedDict

from ember import nn
from ember.nn import functional as F

from .misc import Conv2dNormActivation

__all__ = ["FeaturePyramidNetwork", "ExtraFPNBlock", "LastLevelMaxPool", "LastLevelP6P7"]


class ExtraFPNBlock(nn.Module):
    """Base of the blocks that add levels on top of an FPN's outputs:
    ``forward(results, x, names) -> (results, names)`` gets the FPN's outputs, the original
    inputs and the names, and returns them extended. The base block adds nothing."""

    def forward(self, results, x, names):
        return results, names


class LastLevelMaxPool(ExtraFPNBlock):
    """Adds level "pool": the last output subsampled by 2 (a 1x1 max-pool of stride 2), as
    Faster R-CNN's FPN does."""

    def forward(self, x, y, names):
        names.append("pool")
        x.append(F.max_pool2d(x[-1], kernel_size=1, stride=2, padding=0))
        return x, names


class LastLevelP6P7(ExtraFPNBlock):
    """Adds levels "p6" and "p7" (RetinaNet): 3x3 stride-2 convs, p6 from the last FPN
    output when ``in_channels == out_channels`` (else from the last backbone feature), p7
    from ``relu(p6)``."""

    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.p6 = nn.Conv2d(in_channels, out_channels, 3, 2, 1)
        self.p7 = nn.Conv2d(out_channels, out_channels, 3, 2, 1)
        for m in (self.p6, self.p7):
            nn.init.kaiming_uniform_(m.weight, a=1)
            nn.init.constant_(m.bias, 0)
        self.use_P5 = in_channels == out_channels

    def forward(self, p, c, names):
        p6 = self.p6(p[-1] if self.use_P5 else c[-1])
        p7 = self.p7(F.relu(p6))
        p.extend([p6, p7])
        names.extend(["p6", "p7"])
        return p, names


class FeaturePyramidNetwork(nn.Module):
    """FPN over an ordered dict of feature maps, finest first, with ``in_channels_list[i]``
    channels each: every map gets a 1x1 lateral conv ("inner" block) to ``out_channels``,
    the coarser result is upsampled (nearest) and added, and a 3x3 conv ("layer" block)
    smooths each sum. Returns an ordered dict with the same names (plus any that
    ``extra_blocks`` adds). ``norm_layer`` puts a norm after each conv. State-dict keys are
    torchvision's (``inner_blocks.0.0.weight``, ...); checkpoints of the older layout
    (``inner_blocks.0.weight``) are renamed on load.

        >>> fpn = FeaturePyramidNetwork([8, 16], 4, extra_blocks=LastLevelMaxPool())
        >>> out = fpn({"c3": ember.rand(1, 8, 16, 16), "c4": ember.rand(1, 16, 8, 8)})
        >>> [(k, tuple(v.shape)) for k, v in out.items()]
        [('c3', (1, 4, 16, 16)), ('c4', (1, 4, 8, 8)), ('pool', (1, 4, 4, 4))]
    """

    _version = 2

    def __init__(self, in_channels_list, out_channels: int, extra_blocks=None, norm_layer=None):
        super().__init__()
        self.inner_blocks = nn.ModuleList()
        self.layer_blocks = nn.ModuleList()
        for in_channels in in_channels_list:
            if in_channels == 0:
                raise ValueError("in_channels=0 is currently not supported")
            self.inner_blocks.append(Conv2dNormActivation(
                in_channels, out_channels, kernel_size=1, padding=0, norm_layer=norm_layer,
                activation_layer=None))
            self.layer_blocks.append(Conv2dNormActivation(
                out_channels, out_channels, kernel_size=3, norm_layer=norm_layer,
                activation_layer=None))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_uniform_(m.weight, a=1)
                if m.bias is not None:
                    nn.init.constant_(m.bias, 0)
        if extra_blocks is not None and not isinstance(extra_blocks, ExtraFPNBlock):
            raise TypeError(f"extra_blocks should be of type ExtraFPNBlock not "
                            f"{type(extra_blocks)}")
        self.extra_blocks = extra_blocks

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs, assign=False):
        version = local_metadata.get("version", None)
        if version is None or version < 2:   # version 1 had the convs directly in the lists
            for block in ("inner_blocks", "layer_blocks"):
                for i in range(len(self.inner_blocks)):
                    for kind in ("weight", "bias"):
                        old = f"{prefix}{block}.{i}.{kind}"
                        if old in state_dict:
                            state_dict[f"{prefix}{block}.{i}.0.{kind}"] = state_dict.pop(old)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs, assign)

    def forward(self, x):
        names = list(x.keys())
        feats = list(x.values())
        last = self.inner_blocks[-1](feats[-1])
        results = [self.layer_blocks[-1](last)]
        for i in range(len(feats) - 2, -1, -1):
            lateral = self.inner_blocks[i](feats[i])
            top_down = F.interpolate(last, size=tuple(lateral.shape[-2:]), mode="nearest")
            last = lateral + top_down
            results.insert(0, self.layer_blocks[i](last))
        if self.extra_blocks is not None:
            results, names = self.extra_blocks(results, feats, names)
        return OrderedDict(zip(names, results))
