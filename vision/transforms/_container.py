"""Containers that pick transforms at random: ``RandomApply`` (all or none), ``RandomChoice``
(one, by weight), ``RandomOrder`` (all, shuffled). Randomness comes from ``generator`` or
ember's default generator, so ``ember.manual_seed`` repeats a run.

    >>> import ember
    >>> from ember.vision.transforms import RandomHorizontalFlip, RandomVerticalFlip
    >>> t = RandomOrder([RandomHorizontalFlip(1.0), RandomVerticalFlip(1.0)])
    >>> t(ember.arange(4).reshape(1, 2, 2)).tolist()
    [[[3, 2], [1, 0]]]
"""
from __future__ import annotations

from ._base import Transform


def _check_transforms(transforms):
    if not isinstance(transforms, (list, tuple)):
        raise TypeError("Argument transforms should be a sequence of callables")
    if not transforms:
        raise ValueError("Pass at least one transform")
    return list(transforms)


def _run(transforms, inputs):
    unpack = len(inputs) > 1
    out = inputs if unpack else inputs[0]
    for t in transforms:
        out = t(*inputs)
        inputs = out if unpack else (out,)
    return out


class RandomApply(Transform):
    """Apply all ``transforms`` in order with probability ``p``, else none."""

    def __init__(self, transforms, p=0.5):
        self.transforms = _check_transforms(transforms)
        if not 0.0 <= p <= 1.0:
            raise ValueError("`p` should be a floating point value in the interval [0.0, 1.0].")
        self.p = p

    def __call__(self, *inputs):
        if self._rng().random() >= self.p:
            return inputs if len(inputs) > 1 else inputs[0]
        return _run(self.transforms, inputs)

    def extra_repr(self):
        return "p={}, transforms=[{}]".format(self.p, ", ".join(map(repr, self.transforms)))


class RandomChoice(Transform):
    """Apply one of ``transforms``, chosen with probabilities proportional to ``p``
    (default: uniform)."""

    def __init__(self, transforms, p=None):
        self.transforms = _check_transforms(transforms)
        if p is None:
            p = [1.0] * len(self.transforms)
        elif len(p) != len(self.transforms):
            raise ValueError(f"Length of p doesn't match the number of transforms: {len(p)} != "
                             f"{len(self.transforms)}")
        total = float(sum(p))
        self.p = [float(v) / total for v in p]

    def __call__(self, *inputs):
        idx = int(self._rng().choice(len(self.transforms), p=self.p))
        return self.transforms[idx](*inputs)

    def extra_repr(self):
        return "p={}, transforms=[{}]".format(self.p, ", ".join(map(repr, self.transforms)))


class RandomOrder(Transform):
    """Apply all ``transforms`` in a random order."""

    def __init__(self, transforms):
        self.transforms = _check_transforms(transforms)

    def __call__(self, *inputs):
        order = self._rng().permutation(len(self.transforms))
        return _run([self.transforms[int(i)] for i in order], inputs)

    def extra_repr(self):
        return "transforms=[{}]".format(", ".join(map(repr, self.transforms)))
