"""RNN, LSTM, GRU (multi-layer, bidirectional, batch_first, dropout, packed sequences, LSTM
projections) and their single-step cells, with PyTorch's parameter names and init.

Each layer and direction projects all its inputs with one GEMM, then runs the time loop as one
fused autograd op (core/nn/_recurrence.py).

    >>> import ember
    >>> from ember import nn
    >>> lstm = nn.LSTM(8, 16, num_layers=2, bidirectional=True, batch_first=True)
    >>> out, (h, c) = lstm(ember.randn(4, 5, 8))
    >>> out.shape, h.shape
    ((4, 5, 32), (4, 4, 16))
"""
from __future__ import annotations

import math

import ember

from ... import factories as _f
from .. import _recurrence as R
from .. import functional as F
from .. import init
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]


class RNNBase(Module):
    """Shared machinery of RNN, LSTM and GRU (``mode``: 'RNN_TANH', 'RNN_RELU', 'LSTM',
    'GRU')."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, proj_size=0, device=None,
                 dtype=None):
        super().__init__()
        if not isinstance(hidden_size, int) or hidden_size <= 0:
            raise ValueError(f"hidden_size must be a positive integer, got {hidden_size!r}")
        if not isinstance(num_layers, int) or num_layers <= 0:
            raise ValueError(f"num_layers must be a positive integer, got {num_layers!r}")
        if not 0 <= float(dropout) <= 1 or isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable "
                             "projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional, self.proj_size = float(dropout), bidirectional, \
            proj_size
        gate = R.GATES[mode] * hidden_size
        real_h = proj_size or hidden_size
        dirs = 2 if bidirectional else 1
        self._flat_weights_names = []
        for layer in range(num_layers):
            for d in range(dirs):
                sfx = f"_l{layer}" + ("_reverse" if d else "")
                in_size = input_size if layer == 0 else real_h * dirs
                shapes = [("weight_ih", (gate, in_size)), ("weight_hh", (gate, real_h))]
                if bias:
                    shapes += [("bias_ih", (gate,)), ("bias_hh", (gate,))]
                if proj_size:
                    shapes.append(("weight_hr", (proj_size, hidden_size)))
                for name, shape in shapes:
                    setattr(self, name + sfx,
                            Parameter(_f.empty(*shape, device=device, dtype=dtype)))
                    self._flat_weights_names.append(name + sfx)
        self.reset_parameters()

    def reset_parameters(self):
        bound = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for p in self.parameters():
            init.uniform_(p, -bound, bound)

    def _weights(self, layer, d):
        sfx = f"_l{layer}" + ("_reverse" if d else "")
        get = lambda n: getattr(self, n + sfx, None)  # noqa: E731
        return get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh"), \
            get("weight_hr")

    def _check_input(self, x, batch_sizes):
        expected = 2 if batch_sizes is not None else 3
        if x.ndim != expected:
            raise ValueError(f"input must have {expected} dimensions, got {x.ndim}")
        if x.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {x.shape[-1]}")

    def _hidden_shape(self, n):
        dirs = 2 if self.bidirectional else 1
        return (self.num_layers * dirs, n, self.proj_size or self.hidden_size)

    def _check_hidden(self, h, shape, what="Expected hidden size"):
        if tuple(h.shape) != tuple(shape):
            raise RuntimeError(f"{what} {tuple(shape)}, got {list(h.shape)}")

    def flatten_parameters(self):
        """Does nothing: torch packs cuDNN's weights into one buffer here; ember's recurrence
        reads the per-layer parameters as they are, so there is nothing to pack."""
        return None

    def forward(self, input, hx=None):
        packed = isinstance(input, PackedSequence)
        batch_sizes = None
        if packed:
            data, bs, sorted_idx, unsorted_idx = input
            batch_sizes = bs.numpy()
            n = int(batch_sizes[0])
            x = _packed_to_padded(data, batch_sizes)
            self._check_input(data, batch_sizes)
            unbatched = False
        else:
            sorted_idx = unsorted_idx = None
            unbatched = input.ndim == 2
            if input.ndim not in (2, 3):
                raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got "
                                 f"{input.ndim}D instead")
            x = input.unsqueeze(1) if unbatched else (
                input.transpose(0, 1) if self.batch_first else input)
            self._check_input(x, None)
            n = x.shape[1]
        h0, c0 = self._initial_state(hx, n, x, unbatched, sorted_idx)
        out, hs, cs = self._run(x, h0, c0, batch_sizes)
        h_n = ember.stack(hs)
        c_n = ember.stack(cs) if cs else None
        if packed:
            out = PackedSequence(_padded_to_packed(out, batch_sizes), input.batch_sizes,
                                 sorted_idx, unsorted_idx)
            if unsorted_idx is not None:
                h_n = h_n.index_select(1, unsorted_idx)
                c_n = None if c_n is None else c_n.index_select(1, unsorted_idx)
        else:
            if unbatched:
                out, h_n = out.squeeze(1), h_n.squeeze(1)
                c_n = None if c_n is None else c_n.squeeze(1)
            elif self.batch_first:
                out = out.transpose(0, 1)
        return out, ((h_n, c_n) if self.mode == "LSTM" else h_n)

    def _initial_state(self, hx, n, x, unbatched, sorted_idx):
        hshape = self._hidden_shape(n)
        cshape = hshape[:2] + (self.hidden_size,)
        if hx is None:
            h0 = ember.zeros(hshape, dtype=x.dtype, device=x.device)
            c0 = ember.zeros(cshape, dtype=x.dtype, device=x.device) if self.mode == "LSTM" \
                else None
            return h0, c0
        if self.mode == "LSTM":
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise TypeError("LSTM expects hx as a tuple (h_0, c_0)")
            h0, c0 = hx
        else:
            h0, c0 = hx, None
        if unbatched:
            if h0.ndim != 2:
                raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got "
                                   f"{h0.ndim}-D tensor")
            h0 = h0.unsqueeze(1)
            c0 = None if c0 is None else c0.unsqueeze(1)
        self._check_hidden(h0, hshape)
        if c0 is not None:
            self._check_hidden(c0, cshape, "Expected hidden[1] size")
        if sorted_idx is not None:
            h0 = h0.index_select(1, sorted_idx)
            c0 = None if c0 is None else c0.index_select(1, sorted_idx)
        return h0, c0

    def _run(self, x, h0, c0, batch_sizes):
        dirs = 2 if self.bidirectional else 1
        hs, cs = [], []
        for layer in range(self.num_layers):
            outs = []
            for d in range(dirs):
                w_ih, w_hh, b_ih, b_hh, w_hr = self._weights(layer, d)
                k = layer * dirs + d
                x_proj = x @ w_ih.mT
                if b_ih is not None:
                    x_proj = x_proj + b_ih
                out, h_n, c_n = R.run(self.mode, x_proj, h0[k], None if c0 is None else c0[k],
                                      w_hh, b_hh, w_hr, batch_sizes, reverse=bool(d))
                outs.append(out)
                hs.append(h_n)
                if c_n is not None:
                    cs.append(c_n)
            x = outs[0] if dirs == 1 else ember.cat(outs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, training=True)
        return x, hs, cs

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s


def _packed_to_padded(data, batch_sizes):
    """(sum(bs), H) packed rows -> (L, N, H) zero-padded (differentiable)."""
    from ..utils.rnn import _step_mask
    import numpy as np

    L, n = len(batch_sizes), int(batch_sizes[0])
    flat = ember.from_numpy(np.flatnonzero(_step_mask(batch_sizes, n).reshape(-1)))
    z = ember.zeros((L * n,) + tuple(data.shape[1:]), dtype=data.dtype, device=data.device)
    return z.index_add(0, flat.to(data.device), data).reshape((L, n) + tuple(data.shape[1:]))


def _padded_to_packed(x, batch_sizes):
    from ..utils.rnn import _step_mask
    import numpy as np

    L, n = x.shape[0], x.shape[1]
    flat = ember.from_numpy(np.flatnonzero(_step_mask(batch_sizes, n).reshape(-1)))
    return x.reshape((L * n,) + tuple(x.shape[2:])).index_select(0, flat.to(x.device))


class RNN(RNNBase):
    """Elman RNN: ``h_t = act(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)``, act tanh or relu."""

    def __init__(self, *args, **kwargs):
        nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if len(args) > 3:  # positional (input_size, hidden_size, num_layers, nonlinearity, ...)
            nonlinearity = args[3]
            args = args[:3] + args[4:]
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or "
                             "'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", *args, **kwargs)
        self.nonlinearity = nonlinearity

    def extra_repr(self):
        s = super().extra_repr()
        return s + (", nonlinearity='relu'" if self.nonlinearity != "tanh" else "")


class LSTM(RNNBase):
    """LSTM with gates (i, f, g, o) stacked in that order in ``weight_ih``/``weight_hh``;
    ``proj_size > 0`` projects h with ``weight_hr``. Returns ``output, (h_n, c_n)``."""

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)


class GRU(RNNBase):
    """GRU with gates (r, z, n) stacked in that order; ``n`` uses ``r * (W_hn h + b_hn)``."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)


# ---------------------------------------------------------------------------------- cells

class RNNCellBase(Module):
    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        self.weight_ih = Parameter(_f.empty(num_chunks * hidden_size, input_size,
                                            device=device, dtype=dtype))
        self.weight_hh = Parameter(_f.empty(num_chunks * hidden_size, hidden_size,
                                            device=device, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(_f.empty(num_chunks * hidden_size, device=device,
                                              dtype=dtype))
            self.bias_hh = Parameter(_f.empty(num_chunks * hidden_size, device=device,
                                              dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self):
        bound = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for p in self.parameters():
            init.uniform_(p, -bound, bound)

    def _proj(self, input, hx):
        gi = input @ self.weight_ih.mT
        gh = hx @ self.weight_hh.mT
        if self.bias_ih is not None:
            gi, gh = gi + self.bias_ih, gh + self.bias_hh
        return gi, gh

    def _prepare(self, input, hx, n_states=1):
        if input.ndim not in (1, 2):
            raise ValueError(f"{type(self).__name__}: Expected input to be 1D or 2D, got "
                             f"{input.ndim}D instead")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[-1]} "
                               f"expected {self.input_size}")
        unbatched = input.ndim == 1
        if unbatched:
            input = input.unsqueeze(0)
        n = input.shape[0]
        if hx is None:
            z = ember.zeros(n, self.hidden_size, dtype=input.dtype, device=input.device)
            hx = (z, z) if n_states == 2 else z
        elif unbatched:
            hx = tuple(h.unsqueeze(0) for h in hx) if n_states == 2 else hx.unsqueeze(0)
        return input, hx, unbatched

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s


class RNNCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None,
                 dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        x, h, unbatched = self._prepare(input, hx)
        gi, gh = self._proj(x, h)
        out = (gi + gh).tanh() if self.nonlinearity == "tanh" else (gi + gh).relu()
        return out.squeeze(0) if unbatched else out


class LSTMCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        x, (h, c), unbatched = self._prepare(input, hx, 2)
        gi, gh = self._proj(x, h)
        i, f, g, o = (gi + gh).chunk(4, 1)
        c2 = f.sigmoid() * c + i.sigmoid() * g.tanh()
        h2 = o.sigmoid() * c2.tanh()
        return (h2.squeeze(0), c2.squeeze(0)) if unbatched else (h2, c2)


class GRUCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):
        x, h, unbatched = self._prepare(input, hx)
        gi, gh = self._proj(x, h)
        ir, iz, in_ = gi.chunk(3, 1)
        hr, hz, hn = gh.chunk(3, 1)
        r, z = (ir + hr).sigmoid(), (iz + hz).sigmoid()
        n = (in_ + r * hn).tanh()
        out = (1 - z) * n + z * h
        return out.squeeze(0) if unbatched else out
