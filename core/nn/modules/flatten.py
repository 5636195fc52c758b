"""Identity, Flatten and Unflatten: shape plumbing as modules."""
from __future__ import annotations

from .module import Module


class Identity(Module):
    """Returns its input; accepts (and ignores) any constructor arguments, as in PyTorch."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Flatten(Module):
    """``input.flatten(start_dim, end_dim)``; defaults keep the batch dim: (N, *) -> (N, prod)."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """``input.unflatten(dim, unflattened_size)``: one dim becomes several."""

    def __init__(self, dim, unflattened_size):
        super().__init__()
        if not isinstance(unflattened_size, (tuple, list)):
            raise TypeError(f"unflattened_size must be a tuple or list of ints, got "
                            f"{type(unflattened_size).__name__}")
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, input):
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
