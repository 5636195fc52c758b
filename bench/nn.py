"""nn benchmarks: models and layers against torch in one run (ratios ember/torch).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/nn.py --threads 2 [--filter resnet]

Goals (issue "core: nn, ..."): ResNet-18 inference at batch 8, 224x224 <= 0.8 and its training
step <= 1.0; MobileNetV2 inference <= 1.5; TransformerEncoder (6 layers, d384, 12 heads,
ffn 1536) at batch 32, seq 128, forward+backward <= 0.7; 2-layer LSTM (256 hidden, seq 100,
batch 32) forward+backward <= 1.5; embedding_bag sum over 26 tables of 100k x 64, batch 2048,
~10 ids per bag, forward+backward with sparse gradients <= 1.0. (Adam over 10M parameters:
bench/optim.py.)

The ResNet-18 and MobileNetV2 here are the published architectures written once against either
library's ``nn`` (torchvision has no CPU build on this machine); both models get the same
weights.
"""
from __future__ import annotations

from harness import Suite, paired_inference  # first: fixes the thread count

suite = Suite("nn")


# ----------------------------------------------------------------------------- architectures

def resnet18(lib, num_classes=1000):
    n = lib.nn

    class BasicBlock(n.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = n.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = n.BatchNorm2d(cout)
            self.relu = n.ReLU(inplace=True)
            self.conv2 = n.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = n.BatchNorm2d(cout)
            self.downsample = None
            if stride != 1 or cin != cout:
                self.downsample = n.Sequential(n.Conv2d(cin, cout, 1, stride, bias=False),
                                               n.BatchNorm2d(cout))

        def forward(self, x):
            idt = x if self.downsample is None else self.downsample(x)
            out = self.relu(self.bn1(self.conv1(x)))
            return self.relu(self.bn2(self.conv2(out)) + idt)

    class ResNet(n.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = n.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.bn1 = n.BatchNorm2d(64)
            self.relu = n.ReLU(inplace=True)
            self.maxpool = n.MaxPool2d(3, 2, 1)
            chans, cin = [64, 128, 256, 512], 64
            for i, c in enumerate(chans):
                s = 1 if i == 0 else 2
                setattr(self, f"layer{i + 1}", n.Sequential(BasicBlock(cin, c, s),
                                                            BasicBlock(c, c, 1)))
                cin = c
            self.avgpool = n.AdaptiveAvgPool2d((1, 1))
            self.fc = n.Linear(512, num_classes)

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(self.avgpool(x).flatten(1))
    return ResNet()


def mobilenet_v2(lib, num_classes=1000):
    n = lib.nn

    def conv_bn(cin, cout, k, s, groups=1, act=True):
        layers = [n.Conv2d(cin, cout, k, s, (k - 1) // 2, groups=groups, bias=False),
                  n.BatchNorm2d(cout)]
        return layers + ([n.ReLU6(inplace=True)] if act else [])

    class InvertedResidual(n.Module):
        def __init__(self, cin, cout, stride, t):
            super().__init__()
            h = cin * t
            layers = [] if t == 1 else conv_bn(cin, h, 1, 1)
            layers += conv_bn(h, h, 3, stride, groups=h) + conv_bn(h, cout, 1, 1, act=False)
            self.conv = n.Sequential(*layers)
            self.use_res = stride == 1 and cin == cout

        def forward(self, x):
            return x + self.conv(x) if self.use_res else self.conv(x)

    cfg = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
           (6, 160, 3, 2), (6, 320, 1, 1)]
    feats = conv_bn(3, 32, 3, 2)
    cin = 32
    for t, c, reps, s in cfg:
        for i in range(reps):
            feats.append(InvertedResidual(cin, c, s if i == 0 else 1, t))
            cin = c
    feats += conv_bn(cin, 1280, 1, 1)
    return n.Sequential(n.Sequential(*feats), n.AdaptiveAvgPool2d(1), n.Flatten(),
                        n.Dropout(0.2), n.Linear(1280, num_classes))


def _pair(build):
    import numpy as np
    import torch

    import ember

    torch.manual_seed(0)
    tm = build(torch)
    em = build(ember)
    em.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()})
    return em, tm, np, torch, ember


def _inference(build, shape):
    em, tm = _pair(build)[:2]
    return paired_inference(em, tm, shape, getattr(build, "__name__", "model"))


def _conv(shape, cout, k, stride, pad, groups):
    import numpy as np
    import torch

    import ember
    import ember.nn.functional as F

    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape, dtype=np.float32)
    w = rng.standard_normal((cout, shape[1] // groups, k, k), dtype=np.float32)
    ex, ew, tx, tw = ember.from_numpy(x), ember.from_numpy(w), torch.from_numpy(x), \
        torch.from_numpy(w)

    def run_e():
        F.conv2d(ex, ew, stride=stride, padding=pad, groups=groups)

    def run_t():
        with torch.no_grad():
            torch.conv2d(tx, tw, stride=stride, padding=pad, groups=groups)
    return run_e, run_t


@suite.figure("  conv2d 3x3 64->64 on 8x64x56x56 (layer)", unit="ms")
def conv_layer():
    return _conv((8, 64, 56, 56), 64, 3, 1, 1, 1)


@suite.figure("  depthwise 3x3 on 8x144x56x56 (layer)", unit="ms")
def depthwise_layer():
    return _conv((8, 144, 56, 56), 144, 3, 1, 1, 144)


@suite.figure("  batch norm (eval) + hardswish, 8x72x56x56 (layer)", unit="ms")
def bn_hardswish_layer():
    import numpy as np
    import torch

    import ember
    import ember.nn.functional as F

    x = np.random.default_rng(0).standard_normal((8, 72, 56, 56), dtype=np.float32)
    st = [np.random.default_rng(i).random(72, dtype=np.float32) + 0.5 for i in range(4)]
    ex, tx = ember.from_numpy(x), torch.from_numpy(x)
    es, ts = [ember.from_numpy(a) for a in st], [torch.from_numpy(a) for a in st]

    def run_e():
        with ember.no_grad():
            F.hardswish(F.batch_norm(ex, *es, training=False), inplace=True)

    def run_t():
        with torch.no_grad():
            torch.nn.functional.hardswish(torch.nn.functional.batch_norm(tx, *ts), inplace=True)
    return run_e, run_t


@suite.figure("  batch norm (train) + relu, 8x256x56x56, fwd+bwd (layer)", unit="ms")
def bn_relu_train_layer():
    import numpy as np
    import torch

    import ember
    import ember.nn.functional as F

    x = np.random.default_rng(0).standard_normal((8, 256, 56, 56), dtype=np.float32)
    w = np.ones(256, np.float32)
    ex, tx = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ew, tw = ember.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
    eb, tb = ember.zeros(256, requires_grad=True), torch.zeros(256, requires_grad=True)

    def run_e():
        F.relu(F.batch_norm(ex, None, None, ew, eb, training=True)).sum().backward()

    def run_t():
        torch.relu(torch.nn.functional.batch_norm(tx, None, None, tw, tb, training=True)) \
            .sum().backward()
    return run_e, run_t


@suite.figure("  gelu fwd+bwd, 32x128x1536 (layer)", unit="ms")
def gelu_layer():
    import numpy as np
    import torch

    import ember
    import ember.nn.functional as F

    x = np.random.default_rng(0).standard_normal((32, 128, 1536), dtype=np.float32)
    ex, tx = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)

    def run_e():
        F.gelu(ex).sum().backward()

    def run_t():
        torch.nn.functional.gelu(tx).sum().backward()
    return run_e, run_t


def _softmax_pair(fn, shape):
    import numpy as np
    import torch

    import ember
    import ember.nn.functional as F

    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape, dtype=np.float32) * 4
    g = rng.standard_normal(shape, dtype=np.float32)
    ex, tx = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    eg, tg = ember.tensor(g), torch.tensor(g)

    def run_e():
        getattr(F, fn)(ex, -1).backward(eg)

    def run_t():
        getattr(torch.nn.functional, fn)(tx, -1).backward(tg)
    return run_e, run_t


@suite.figure("  softmax fwd+bwd, 32x12x128x128 (attention scores)", unit="ms")
def softmax_layer():
    return _softmax_pair("softmax", (32, 12, 128, 128))


@suite.figure("  log_softmax fwd+bwd, 4096x1000", unit="ms")
def log_softmax_layer():
    return _softmax_pair("log_softmax", (4096, 1000))


@suite.figure("  cross_entropy (class indices) fwd+bwd, 4096x1000", unit="ms")
def cross_entropy_layer():
    import numpy as np
    import torch

    import ember
    import ember.nn.functional as F

    rng = np.random.default_rng(0)
    x = rng.standard_normal((4096, 1000), dtype=np.float32) * 4
    t = rng.integers(0, 1000, 4096)
    ex, tx = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    et, tt = ember.tensor(t), torch.tensor(t)

    def run_e():
        F.cross_entropy(ex, et).backward()

    def run_t():
        torch.nn.functional.cross_entropy(tx, tt).backward()
    return run_e, run_t


@suite.figure("ResNet-18 inference, batch 8, 224^2", unit="ms", goal=0.8, number=1)
def resnet_inference():
    return _inference(resnet18, (8, 3, 224, 224))


@suite.figure("ResNet-18 training step, batch 8, 224^2", unit="ms", goal=1.0, number=1)
def resnet_train():
    em, tm, np, torch, ember = _pair(resnet18)
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


@suite.figure("MobileNetV2 inference, batch 8, 224^2", unit="ms", goal=1.5, number=1)
def mobilenet_inference():
    return _inference(mobilenet_v2, (8, 3, 224, 224))


@suite.figure("TransformerEncoder 6x d384 h12, b32 s128, fwd+bwd", unit="ms", goal=0.7,
              number=1)
def transformer_train():
    def build(lib):
        layer = lib.nn.TransformerEncoderLayer(384, 12, 1536, dropout=0.0, activation="gelu",
                                               batch_first=True)
        return lib.nn.TransformerEncoder(layer, 6, enable_nested_tensor=False)
    em, tm, np, torch, ember = _pair(build)
    x = np.random.default_rng(0).standard_normal((32, 128, 384)).astype(np.float32)
    ex, tx = ember.from_numpy(x), torch.from_numpy(x)

    def run_e():
        em(ex).square().mean().backward()
        em.zero_grad()

    def run_t():
        tm(tx).square().mean().backward()
        tm.zero_grad()
    return run_e, run_t


@suite.figure("LSTM 2x256, seq 100, batch 32, fwd+bwd", unit="ms", goal=1.5, number=1)
def lstm_train():
    em, tm, np, torch, ember = _pair(lambda lib: lib.nn.LSTM(256, 256, num_layers=2))
    x = np.random.default_rng(0).standard_normal((100, 32, 256)).astype(np.float32)
    ex, tx = ember.from_numpy(x), torch.from_numpy(x)

    def run_e():
        em(ex)[0].sum().backward()
        em.zero_grad()

    def run_t():
        tm(tx)[0].sum().backward()
        tm.zero_grad()
    return run_e, run_t


@suite.figure("embedding_bag 26 x 100k x 64, b2048, sparse fwd+bwd", unit="ms", goal=1.0,
              number=1)
def embedding_bag_train():
    def build(lib):
        return lib.nn.ModuleList([lib.nn.EmbeddingBag(100_000, 64, mode="sum", sparse=True)
                                  for _ in range(26)])
    em, tm, np, torch, ember = _pair(build)
    rng = np.random.default_rng(0)
    lengths = rng.poisson(10, (26, 2048)).clip(1, None)
    ids = [rng.integers(0, 100_000, int(n.sum())) for n in lengths]
    offs = [np.concatenate([[0], np.cumsum(n)[:-1]]) for n in lengths]
    e_in = [(ember.from_numpy(i), ember.from_numpy(o)) for i, o in zip(ids, offs)]
    t_in = [(torch.from_numpy(i), torch.from_numpy(o)) for i, o in zip(ids, offs)]

    def run_e():
        sum(m(i, o).sum() for m, (i, o) in zip(em, e_in)).backward()
        em.zero_grad()

    def run_t():
        sum(m(i, o).sum() for m, (i, o) in zip(tm, t_in)).backward()
        tm.zero_grad()
    return run_e, run_t


if __name__ == "__main__":
    suite.main()
