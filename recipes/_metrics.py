"""Metric logging for recipes: rows to CSV (and TensorBoard if ``tensorboardX`` is installed),
a PNG plot of the curves at the end when matplotlib is installed.

    >>> import os, tempfile
    >>> d = tempfile.mkdtemp()
    >>> log = MetricLogger(os.path.join(d, "metrics.csv"))
    >>> log.log({"epoch": 1, "step": 10, "train_loss": 0.5})
    >>> log.log({"epoch": 2, "step": 20, "train_loss": 0.25})
    >>> log.close(); read_csv(os.path.join(d, "metrics.csv"))[-1]["train_loss"]
    '0.25'
"""
from __future__ import annotations

import csv
import os

__all__ = ["MetricLogger", "read_csv", "plot_curves"]


def read_csv(path):
    """The rows of a metrics CSV as dicts of strings."""
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


class MetricLogger:
    """Appends one row per ``log`` call to ``path``. ``resume_step``: keep the rows of an
    earlier run up to that step (a resumed run continues the same file); otherwise the file
    starts fresh. Columns are fixed by the first row written."""

    def __init__(self, path, resume_step=None, tensorboard_dir=None):
        self.path = path
        self.fields = None
        rows = []
        if resume_step is not None and os.path.exists(path):
            rows = [r for r in read_csv(path) if int(r["step"]) <= int(resume_step)]
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        self._f = open(path, "w", newline="")
        self._w = None
        for r in rows:
            self._write(r)
        self._tb = None
        if tensorboard_dir is not None:
            try:
                from tensorboardX import SummaryWriter
            except ImportError:
                pass
            else:
                self._tb = SummaryWriter(tensorboard_dir)

    def _write(self, row):
        if self._w is None:
            self.fields = list(row)
            self._w = csv.DictWriter(self._f, fieldnames=self.fields, extrasaction="ignore")
            self._w.writeheader()
        self._w.writerow(row)
        self._f.flush()

    def log(self, row):
        row = {k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in row.items()}
        self._write(row)
        if self._tb is not None:
            for k, v in row.items():
                if k not in ("epoch", "step"):
                    self._tb.add_scalar(k, float(v), int(row["step"]))

    def close(self):
        self._f.close()
        if self._tb is not None:
            self._tb.close()


def plot_curves(csv_path, png_path):
    """Plot every metric column of ``csv_path`` against ``step`` into ``png_path``. Returns the
    PNG path, or None (with a one-line notice printed) when matplotlib is not installed."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("notice: matplotlib is not installed, so no plot was drawn "
              "(pip install matplotlib); the metrics are in the CSV")
        return None
    rows = read_csv(csv_path)
    if not rows:
        return None
    cols = [c for c in rows[0] if c not in ("epoch", "step")]
    fig, axes = plt.subplots(1, len(cols), figsize=(4 * len(cols), 3), squeeze=False)
    steps = [int(r["step"]) for r in rows]
    for ax, c in zip(axes[0], cols):
        ax.plot(steps, [float(r[c]) for r in rows], marker="o")
        ax.set_title(c)
        ax.set_xlabel("step")
    fig.tight_layout()
    fig.savefig(png_path)
    plt.close(fig)
    return png_path
