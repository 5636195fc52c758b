"""Run once under torchvision (NOT needed by the tests) to regenerate the committed test data:

    python -m venv /tmp/tv && /tmp/tv/bin/pip install torch==2.13.0 torchvision==0.28.0
    /tmp/tv/bin/python tests/vision/models/data/make_fixtures.py

Writes ``manifest.json`` (per builder: torchvision's num_params and state-dict key -> shape, in
order) and ``parity.npz`` (seeded input and torchvision's eval-mode logits for PARITY models,
with the weights from ``seeded.seeded_state``).
"""
import json
import os
import sys

import numpy as np
import torch
import torchvision

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from seeded import seeded_input, seeded_state  # noqa: E402

BUILDERS = sys.argv[1:] or None
# name -> (input shape, builder kwargs); keep in step with test_architectures.PARITY
PARITY = {"resnet18": ((2, 3, 64, 64), {}), "mobilenet_v3_small": ((2, 3, 64, 64), {}),
          "mobilenet_v2": ((2, 3, 64, 64), {}), "squeezenet1_1": ((2, 3, 64, 64), {}),
          "resnext50_32x4d": ((1, 3, 64, 64), {}), "efficientnet_b0": ((2, 3, 64, 64), {}),
          "regnet_y_400mf": ((2, 3, 64, 64), {}), "convnext_tiny": ((1, 3, 64, 64), {}),
          "vit_b_16": ((1, 3, 32, 32), {"image_size": 32}),
          "densenet121": ((1, 3, 64, 64), {}), "shufflenet_v2_x1_0": ((2, 3, 64, 64), {}),
          "mnasnet0_5": ((2, 3, 64, 64), {}), "googlenet": ((1, 3, 64, 64), {}),
          "inception_v3": ((1, 3, 80, 80), {}), "swin_t": ((1, 3, 64, 64), {}),
          "swin_v2_t": ((1, 3, 64, 64), {}), "maxvit_t": ((1, 3, 224, 224), {})}


def main():
    names = BUILDERS or torchvision.models.list_models(module=torchvision.models)
    manifest = {}
    for name in names:
        try:
            with torch.device("meta"):
                m = torchvision.models.get_model(name)
        except NotImplementedError:   # some builders copy data at init: build on the CPU
            m = torchvision.models.get_model(name)
        manifest[name] = {"num_params": sum(p.numel() for p in m.parameters()),
                          "state_dict": {k: list(v.shape) for k, v in m.state_dict().items()}}
    with open(os.path.join(HERE, "manifest.json"), "w") as f:
        json.dump(manifest, f, separators=(",", ":"))
    arrays = {}
    for name, (shape, kwargs) in PARITY.items():
        m = torchvision.models.get_model(name, **kwargs).eval()
        sd = {k: torch.from_numpy(v) for k, v in
              seeded_state({k: v.shape for k, v in m.state_dict().items()}).items()}
        target = m.state_dict()   # copy in place: keeps the version metadata MNASNet checks
        with torch.no_grad():
            for k, v in sd.items():
                target[k].copy_(v)
        x = seeded_input(shape)
        with torch.no_grad():
            arrays[name] = m(torch.from_numpy(x)).numpy()
    np.savez_compressed(os.path.join(HERE, "parity.npz"), **arrays)


if __name__ == "__main__":
    main()
