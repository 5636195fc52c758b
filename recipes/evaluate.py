"""Recipe ``evaluate``: top-1/top-5 accuracy of a model + weights on a dataset, with a confusion
matrix (PNG if matplotlib is installed, always as CSV).

    ember run evaluate                                   # the classify run's weights, shipped test split
    ember run evaluate weights=path/to/run data.train=true

``weights`` is a run folder written by ``classify`` (or its ``weights.json``) or a zoo name such
as ``ResNet18_Weights.DEFAULT``; ``model`` (optional) is the model's ``_component_`` config.
"""
from __future__ import annotations

import csv
import json
import os

from ember.data import DataLoader

from ember.recipes._config import instantiate
from ember.recipes._registry import register_recipe
from ember.recipes._runtime import final_lines
from ember.recipes._weights import load_for_inference
from ember.recipes.classify import evaluate_model

__all__ = ["main", "plot_confusion"]


def plot_confusion(conf, categories, png_path):
    """Draw the confusion matrix into ``png_path``; None (and a notice) without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("notice: matplotlib is not installed, so the confusion matrix is only written as "
              "CSV (pip install matplotlib for the PNG)")
        return None
    n = len(conf)
    fig, ax = plt.subplots(figsize=(max(4, n * 0.5), max(4, n * 0.5)))
    ax.imshow(conf, cmap="Blues")
    ax.set_xticks(range(n), categories, rotation=90)
    ax.set_yticks(range(n), categories)
    ax.set_xlabel("predicted")
    ax.set_ylabel("true")
    fig.tight_layout()
    fig.savefig(png_path)
    plt.close(fig)
    return png_path


@register_recipe("evaluate")
def main(cfg):
    """Evaluate per ``cfg`` (see ``configs/evaluate.yaml``); returns the exit code."""
    out, device, weights, model = load_for_inference(cfg, "evaluate")
    data = instantiate(cfg["data"])
    categories = weights.meta.get("categories") or [str(c) for c in getattr(data, "classes", [])]
    n_cls = len(categories)
    loader = DataLoader(data, batch_size=int(cfg.get("batch_size", 256)), shuffle=False,
                        num_workers=int(cfg.get("num_workers", 0)), rank=0, world_size=1)
    loss_fn = instantiate(cfg.get("loss") or {"_component_": "ember.nn.CrossEntropyLoss"})
    topk = tuple(k for k in (1, 5) if k <= n_cls)
    loss, acc, conf = evaluate_model(model, loader, loss_fn, device, topk=topk,
                                     num_classes=n_cls)
    result = {"weights": str(cfg["weights"]), "samples": int(conf.sum()), "loss": loss,
              **{f"acc@{k}": acc[k] for k in topk}}
    print("  ".join(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}"
                    for k, v in result.items()))
    metrics = os.path.join(out, "metrics.json")
    with open(metrics, "w") as f:
        json.dump(result, f, indent=2)
    conf_csv = os.path.join(out, "confusion.csv")
    with open(conf_csv, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["true\\predicted", *categories])
        for c, row in zip(categories, conf.tolist()):
            w.writerow([c, *row])
    png = plot_confusion(conf, categories, os.path.join(out, "confusion.png"))
    final_lines([("metrics", metrics), ("confusion", conf_csv), ("plot", png),
                 ("config", os.path.join(out, "config.yaml"))])
    return 0
