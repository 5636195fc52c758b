"""vision benchmarks: ember.vision.models against the same architectures in torch.nn.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/vision.py --threads 2 [--filter vit]

Goals (issue "vision"): ResNet-50 inference at batch 8, 224^2 <= 1.0; MobileNetV3-Large
inference at batch 8 <= 1.5; ViT-B/16 inference at batch 4 <= 1.0; ResNet-50 training step at
batch 8 (SGD momentum) <= 1.0 (ratios ember/torch).

torchvision is too heavy for the default environment, so the torch side is written here with
torch.nn, with the same state-dict keys as ember's builders: the ember model loads the torch
model's weights, and each figure checks once that both give the same logits.
"""
from __future__ import annotations

from harness import Suite, paired_inference  # first: fixes the thread count

suite = Suite("vision")


# --------------------------------------------------------------- torch twins (same state keys)

def torch_resnet50():
    import torch.nn as n

    class Bottleneck(n.Module):
        def __init__(self, cin, planes, stride):
            super().__init__()
            cout = planes * 4
            self.conv1 = n.Conv2d(cin, planes, 1, bias=False)
            self.bn1 = n.BatchNorm2d(planes)
            self.conv2 = n.Conv2d(planes, planes, 3, stride, 1, bias=False)
            self.bn2 = n.BatchNorm2d(planes)
            self.conv3 = n.Conv2d(planes, cout, 1, bias=False)
            self.bn3 = n.BatchNorm2d(cout)
            self.relu = n.ReLU(inplace=True)
            self.downsample = None
            if stride != 1 or cin != cout:
                self.downsample = n.Sequential(n.Conv2d(cin, cout, 1, stride, bias=False),
                                               n.BatchNorm2d(cout))

        def forward(self, x):
            idt = x if self.downsample is None else self.downsample(x)
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.relu(self.bn2(self.conv2(out)))
            return self.relu(self.bn3(self.conv3(out)) + idt)

    class ResNet(n.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = n.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.bn1 = n.BatchNorm2d(64)
            self.relu = n.ReLU(inplace=True)
            self.maxpool = n.MaxPool2d(3, 2, 1)
            cin = 64
            for i, (planes, blocks) in enumerate(zip((64, 128, 256, 512), (3, 4, 6, 3))):
                layers = []
                for j in range(blocks):
                    layers.append(Bottleneck(cin, planes, 2 if (j == 0 and i > 0) else 1))
                    cin = planes * 4
                setattr(self, f"layer{i + 1}", n.Sequential(*layers))
            self.avgpool = n.AdaptiveAvgPool2d((1, 1))
            self.fc = n.Linear(2048, 1000)

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(self.avgpool(x).flatten(1))
    return ResNet()


_MBV3_LARGE = [(16, 3, 16, 16, False, "RE", 1), (16, 3, 64, 24, False, "RE", 2),
               (24, 3, 72, 24, False, "RE", 1), (24, 5, 72, 40, True, "RE", 2),
               (40, 5, 120, 40, True, "RE", 1), (40, 5, 120, 40, True, "RE", 1),
               (40, 3, 240, 80, False, "HS", 2), (80, 3, 200, 80, False, "HS", 1),
               (80, 3, 184, 80, False, "HS", 1), (80, 3, 184, 80, False, "HS", 1),
               (80, 3, 480, 112, True, "HS", 1), (112, 3, 672, 112, True, "HS", 1),
               (112, 5, 672, 160, True, "HS", 2), (160, 5, 960, 160, True, "HS", 1),
               (160, 5, 960, 160, True, "HS", 1)]


def torch_mobilenet_v3_large():
    import torch.nn as n

    def cba(cin, cout, k, s=1, groups=1, act=None):
        layers = [n.Conv2d(cin, cout, k, s, (k - 1) // 2, groups=groups, bias=False),
                  n.BatchNorm2d(cout, eps=0.001, momentum=0.01)]
        return n.Sequential(*(layers + ([act(inplace=True)] if act else [])))

    class SE(n.Module):
        def __init__(self, c, sq):
            super().__init__()
            self.avgpool = n.AdaptiveAvgPool2d(1)
            self.fc1, self.fc2 = n.Conv2d(c, sq, 1), n.Conv2d(sq, c, 1)
            self.activation, self.scale_activation = n.ReLU(), n.Hardsigmoid()

        def forward(self, x):
            s = self.fc2(self.activation(self.fc1(self.avgpool(x))))
            return self.scale_activation(s) * x

    class Block(n.Module):
        def __init__(self, cin, k, exp, cout, se, act, s):
            super().__init__()
            act = n.Hardswish if act == "HS" else n.ReLU
            layers = [cba(cin, exp, 1, act=act)] if exp != cin else []
            layers.append(cba(exp, exp, k, s, groups=exp, act=act))
            if se:
                sq = max(8, int(exp // 4 + 4) // 8 * 8)
                layers.append(SE(exp, sq + 8 if sq < 0.9 * (exp // 4) else sq))
            layers.append(cba(exp, cout, 1))
            self.block = n.Sequential(*layers)
            self.res = s == 1 and cin == cout

        def forward(self, x):
            return self.block(x) + x if self.res else self.block(x)

    class MobileNetV3(n.Module):
        def __init__(self):
            super().__init__()
            self.features = n.Sequential(cba(3, 16, 3, 2, act=n.Hardswish),
                                         *[Block(*row) for row in _MBV3_LARGE],
                                         cba(160, 960, 1, act=n.Hardswish))
            self.avgpool = n.AdaptiveAvgPool2d(1)
            self.classifier = n.Sequential(n.Linear(960, 1280), n.Hardswish(inplace=True),
                                           n.Dropout(0.2, inplace=True), n.Linear(1280, 1000))

        def forward(self, x):
            return self.classifier(self.avgpool(self.features(x)).flatten(1))
    return MobileNetV3()


def torch_vit_b_16():
    from collections import OrderedDict

    import torch
    import torch.nn as n

    class MLP(n.Sequential):
        def __init__(self, d, h):
            super().__init__(n.Linear(d, h), n.GELU(), n.Dropout(0.0), n.Linear(h, d),
                             n.Dropout(0.0))

    class Block(n.Module):
        def __init__(self, d, heads, h):
            super().__init__()
            self.ln_1 = n.LayerNorm(d, eps=1e-6)
            self.self_attention = n.MultiheadAttention(d, heads, batch_first=True)
            self.dropout = n.Dropout(0.0)
            self.ln_2 = n.LayerNorm(d, eps=1e-6)
            self.mlp = MLP(d, h)

        def forward(self, inp):
            x = self.ln_1(inp)
            x, _ = self.self_attention(x, x, x, need_weights=False)
            x = self.dropout(x) + inp
            return x + self.mlp(self.ln_2(x))

    class Encoder(n.Module):
        def __init__(self, seq, d, heads, h, layers):
            super().__init__()
            self.pos_embedding = n.Parameter(torch.empty(1, seq, d).normal_(std=0.02))
            self.dropout = n.Dropout(0.0)
            self.layers = n.Sequential(OrderedDict(
                (f"encoder_layer_{i}", Block(d, heads, h)) for i in range(layers)))
            self.ln = n.LayerNorm(d, eps=1e-6)

        def forward(self, x):
            return self.ln(self.layers(self.dropout(x + self.pos_embedding)))

    class ViT(n.Module):
        def __init__(self, d=768):
            super().__init__()
            self.conv_proj = n.Conv2d(3, d, 16, 16)
            self.class_token = n.Parameter(torch.zeros(1, 1, d))
            self.encoder = Encoder(197, d, 12, 3072, 12)
            self.heads = n.Sequential(OrderedDict(head=n.Linear(d, 1000)))
            self.d = d

        def forward(self, x):
            x = self.conv_proj(x).reshape(x.shape[0], self.d, -1).permute(0, 2, 1)
            x = torch.cat([self.class_token.expand(x.shape[0], -1, -1), x], dim=1)
            return self.heads(self.encoder(x)[:, 0])
    return ViT()


# ----------------------------------------------------------------------------- figures

def _pair(name, torch_build):
    import numpy as np
    import torch

    import ember
    from ember.vision import models

    torch.manual_seed(0)
    tm = torch_build()
    em = models.get_model(name)
    em.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()})
    return em, tm, np, torch, ember


def _inference(name, torch_build, shape):
    em, tm = _pair(name, torch_build)[:2]
    return paired_inference(em, tm, shape, name)


@suite.figure("ResNet-50 inference, batch 8, 224^2", unit="ms", goal=1.0, number=1)
def resnet50_inference():
    return _inference("resnet50", torch_resnet50, (8, 3, 224, 224))


@suite.figure("MobileNetV3-Large inference, batch 8, 224^2", unit="ms", goal=1.5, number=1)
def mobilenet_v3_inference():
    return _inference("mobilenet_v3_large", torch_mobilenet_v3_large, (8, 3, 224, 224))


@suite.figure("ViT-B/16 inference, batch 4, 224^2", unit="ms", goal=1.0, number=1)
def vit_inference():
    return _inference("vit_b_16", torch_vit_b_16, (4, 3, 224, 224))


@suite.figure("ResNet-50 training step, batch 8, 224^2", unit="ms", goal=1.0, number=1)
def resnet50_train():
    em, tm, np, torch, ember = _pair("resnet50", torch_resnet50)
    x = np.random.default_rng(0).standard_normal((8, 3, 224, 224)).astype(np.float32)
    y = np.random.default_rng(1).integers(0, 1000, 8)
    ex, ey, tx, ty = ember.from_numpy(x), ember.from_numpy(y), torch.from_numpy(x), \
        torch.from_numpy(y)
    eo = ember.optim.SGD(em.parameters(), lr=0.01, momentum=0.9)
    to = torch.optim.SGD(tm.parameters(), lr=0.01, momentum=0.9)

    def run_e():
        eo.zero_grad()
        ember.nn.functional.cross_entropy(em(ex), ey).backward()
        eo.step()

    def run_t():
        to.zero_grad()
        torch.nn.functional.cross_entropy(tm(tx), ty).backward()
        to.step()
    return run_e, run_t


if __name__ == "__main__":
    suite.main()
