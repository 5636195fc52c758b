"""``Tensor``: one ndarray (numpy or cupy) plus autograd bookkeeping.

The op families live in mixins, one file each under ``ember/ops/`` (elementwise, reduce,
shape, index, linalg); this file holds the object itself: construction, properties,
conversions, devices and the autograd entry points.
"""
from __future__ import annotations

import numpy as np

from . import _backend as B
from . import dtypes as D
from ._convert import Convertible, parse_to_args
from .autograd.grad_mode import STATE
from .autograd import graph as G
from .ops.elementwise import ElementwiseOps
from .ops.reduce import ReduceOps
from .ops.shape import ShapeOps
from .ops.index import IndexOps
from .ops.linalg import LinalgOps
from .ops.special import SpecialOps
from .ops.extra import ExtraOps
from .ops.stats import StatsOps
from .ops.complex import ComplexOps
from .spectral import SpectralOps

_ndarray = np.ndarray
_generic = np.generic
_asarray = np.asarray


class Tensor(ElementwiseOps, ReduceOps, ShapeOps, IndexOps, LinalgOps, SpecialOps, ExtraOps,
             StatsOps, ComplexOps, SpectralOps, Convertible):
    """An n-dimensional array on a device, with autograd.

    >>> import ember
    >>> x = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    >>> (x * x).sum().backward()
    >>> x.grad
    tensor([2., 4., 6.])
    """

    # _view_ver: for views (``_base`` set), the version at which grad_fn was derived from the
    # base; an in-place op through another view makes it stale (see autograd/graph.record).
    __slots__ = ("array", "requires_grad", "grad", "grad_fn", "_out_nr", "_version", "_base",
                 "_hooks", "_view_ver", "__weakref__")
    __array_priority__ = 1000  # numpy defers `ndarray <op> Tensor` to Tensor's reflected ops

    def __init__(self, *args, dtype=None, device=None, requires_grad=False):
        # ``ember.Tensor`` is torch's legacy constructor: ``Tensor(2, 3)`` is a zero-filled
        # (2, 3) tensor and ``Tensor([1, 2])`` converts to the default dtype (float32). Prefer
        # ``ember.tensor`` / ``ember.zeros``. Subclasses (vision's typed parts) pass one array
        # and keep its dtype.
        from .factories import _to_array

        if type(self) is Tensor:
            arr = _legacy_array(args, dtype, device)
        else:
            if len(args) != 1:
                raise TypeError(f"{type(self).__name__}() takes one array, got {len(args)} "
                                "arguments")
            arr = _to_array(args[0], dtype, device)
        self.array = arr
        self.requires_grad = False
        self.grad = None
        self.grad_fn = None
        self._out_nr = 0
        self._version = None
        self._base = None
        self._hooks = None
        if requires_grad:
            self.requires_grad_(True)

    @property
    def data(self):
        """This tensor's storage as a new leaf that does not require grad, as torch's ``.data``:
        it shares memory, and in-place changes through it are invisible to autograd (no
        version bump). ``tensor.data = other`` swaps in ``other``'s storage (shape may change).
        The backend array itself is ``tensor.array`` (numpy or cupy)."""
        return Tensor._make(self.array)

    @data.setter
    def data(self, value):
        if not isinstance(value, Tensor):
            raise TypeError(f"Tensor.data must be set to a Tensor, got {type(value).__name__} "
                            "(wrap an array with ember.as_tensor)")
        self.array = value.array

    @staticmethod
    def _make(data):
        """Wrap an array (no copy, no checks): the constructor every op uses."""
        if data.__class__ is not _ndarray and isinstance(data, _generic):
            data = _asarray(data)
        t = _new(Tensor)  # the body of _bare, inline: this is every op's hot path
        t.array = data
        t.requires_grad = False
        t.grad = None
        t.grad_fn = None
        t._out_nr = 0
        t._version = None
        t._base = None
        t._hooks = None
        return t

    @staticmethod
    def _make_as(cls, data):
        """``_make`` for a subclass ``cls`` (vision's typed parts, audio's chunks): an instance
        over ``data`` with no copy and no checks; subclass slots are left for the caller."""
        return _bare(cls, data)

    # ------------------------------------------------------------------ properties
    @property
    def shape(self):
        return self.array.shape

    def size(self, dim=None):
        if dim is None:
            return self.array.shape
        return self.array.shape[_dim(dim, self.array.ndim)]

    @property
    def dtype(self):
        return self.array.dtype

    @property
    def device(self):
        return B.device_of(self.array)

    @property
    def ndim(self):
        return self.array.ndim

    def dim(self):
        return self.array.ndim

    ndimension = dim

    def numel(self):
        return int(self.array.size)

    nelement = numel

    def element_size(self):
        return self.array.dtype.itemsize

    @property
    def itemsize(self):
        return self.array.dtype.itemsize

    @property
    def nbytes(self):
        return self.array.nbytes

    @property
    def is_leaf(self):
        return self.grad_fn is None

    is_sparse = False  # dense; a row-sparse gradient is an ember.sparse.RowSparseGrad

    @property
    def is_cuda(self):
        return B.is_cuda_array(self.array)

    @property
    def is_cpu(self):
        return type(self.array) is _ndarray and not B.is_meta(self.array)

    is_xpu = False  # ember's devices are cpu, cuda and meta
    is_mps = False
    is_mkldnn = False
    is_quantized = False

    @property
    def is_meta(self):
        """True for a tensor on the ``meta`` device: a shape and dtype, no memory."""
        return B.is_meta(self.array)

    def is_floating_point(self):
        return D.is_floating(self.array.dtype)

    def is_complex(self):
        return self.array.dtype.kind == "c"

    def stride(self, dim=None):
        st = tuple(s // self.array.dtype.itemsize for s in self.array.strides)
        return st if dim is None else st[_dim(dim, self.array.ndim)]

    def is_contiguous(self, memory_format=None):
        if memory_format is None:
            return bool(self.array.flags.c_contiguous)
        from ._memory_format import is_laid_out

        return is_laid_out(self.array, memory_format)

    def data_ptr(self):
        d = self.array
        return d.ctypes.data if type(d) is _ndarray else d.data.ptr

    def get_device(self):
        d = self.device
        return -1 if d.type == "cpu" else d.index

    @property
    def _version_count(self):
        return 0 if self._version is None else self._version[0]

    # ------------------------------------------------------------------ conversion
    def numpy(self, *, force=False):
        """The underlying numpy array (zero copy on CPU). ``force=True`` also detaches and
        copies from the GPU."""
        if self.requires_grad and not force:
            raise RuntimeError(
                "can't call numpy() on a tensor that requires grad: use tensor.detach().numpy()")
        d = self.array
        if type(d) is _ndarray:
            return d
        if force:
            return B.to_device(d, "cpu")
        raise TypeError(
            f"can't convert a {self.device} tensor to numpy: use tensor.cpu() to copy it to "
            "host memory first")

    def __array__(self, dtype=None, copy=None):
        d = self.array
        if type(d) is not _ndarray:
            d = B.to_device(d, "cpu")
        if dtype is not None and d.dtype != dtype:
            return d.astype(dtype)
        if copy:
            return d.copy()
        return d

    def __dlpack__(self, *args, **kwargs):
        return self.array.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()

    def item(self):
        if self.array.size != 1:
            raise RuntimeError(
                f"a Tensor with {self.array.size} elements cannot be converted to a Python scalar")
        return self.array.reshape(()).item() if type(self.array) is _ndarray \
            else self.array.reshape(()).get().item()

    def tolist(self):
        d = self.array if type(self.array) is _ndarray else B.to_device(self.array, "cpu")
        return d.tolist()

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __index__(self):
        if self.array.dtype.kind not in "iub" or self.array.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __bool__(self):
        if self.array.size != 1:
            raise RuntimeError(
                f"Boolean value of a Tensor with {self.array.size} elements is ambiguous")
        return bool(self.item())

    def __complex__(self):
        return complex(self.item())

    def __len__(self):
        if self.array.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.array.shape[0]

    def __iter__(self):
        if self.array.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    __hash__ = object.__hash__

    def __reduce_ex__(self, proto):
        d = self.array if type(self.array) is _ndarray else B.to_device(self.array, "cpu")
        return (_rebuild, (d, str(self.device), self.requires_grad))

    def __deepcopy__(self, memo):
        if not self.is_leaf:
            raise RuntimeError("only leaf tensors (created by the user) support deepcopy")
        t = Tensor._make(self.array.copy())
        t.requires_grad = self.requires_grad
        if self.grad is not None:
            t.grad = Tensor._make(self.grad.array.copy())
        memo[id(self)] = t
        return t

    # ------------------------------------------------------------------ device / dtype
    def to(self, *args, dtype=None, device=None, non_blocking=False, copy=False,
           memory_format=None):
        """``to(device)``, ``to(dtype)``, ``to(device, dtype)`` or ``to(other_tensor)``;
        ``memory_format`` (``ember.channels_last``, ...) lays the result out in that order."""
        if memory_format is not None and memory_format.name != "preserve_format":
            from ._memory_format import is_laid_out

            out = self.to(*args, dtype=dtype, device=device, copy=copy)
            return out if is_laid_out(out.array, memory_format) else \
                out.contiguous(memory_format=memory_format)
        device, dtype = parse_to_args(args, device, dtype)
        dt = D.to_dtype(dtype)
        out = self
        if device is not None:
            dev = B.device(device)
            if dev != self.device:
                out = _ToDevice.apply(out, dev)
        if dt is not None and dt != out.array.dtype:
            out = out._cast(dt)
        if copy and out is self:
            out = self.clone()
        return out

    def type(self, dtype=None):
        if dtype is None:
            return f"ember.{D.name(self.dtype)}"
        return self.to(dtype)

    def type_as(self, other):
        return self.to(other.dtype)

    def long(self):
        return self.to(D.int64)

    def int(self):
        return self.to(D.int32)

    def short(self):
        return self.to(D.int16)

    def char(self):
        return self.to(D.int8)

    def byte(self):
        return self.to(D.uint8)

    def bool(self):
        return self.to(D.bool)

    # ------------------------------------------------------------------ layouts
    @property
    def layout(self):
        from ._sparse_coo import strided

        return strided

    def share_memory_(self):
        """Move this tensor's storage into shared memory, in place, so processes started
        through ``ember.multiprocessing`` see its updates (Hogwild). Returns self."""
        from .multiprocessing import share_memory_

        return share_memory_(self)

    def is_shared(self):
        from .multiprocessing import is_shared

        return is_shared(self)

    def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
        """A sparse COO copy (see ``ember.sparse_coo_tensor``)."""
        from ._sparse_coo import to_sparse

        return to_sparse(self, sparse_dim, layout=layout, blocksize=blocksize,
                         dense_dim=dense_dim)

    def to_dense(self, dtype=None, *, masked_grad=None):
        return self if dtype is None else self.to(dtype)

    # ------------------------------------------------------------------ new_* factories
    def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False):
        from .factories import tensor

        return tensor(data, dtype=dtype or self.dtype, device=device or self.device,
                      requires_grad=requires_grad)

    def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
        from .factories import zeros

        return zeros(*size, dtype=dtype or self.dtype, device=device or self.device,
                     requires_grad=requires_grad)

    def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
        from .factories import ones

        return ones(*size, dtype=dtype or self.dtype, device=device or self.device,
                    requires_grad=requires_grad)

    def new_empty(self, *size, dtype=None, device=None, requires_grad=False):
        from .factories import empty

        return empty(*size, dtype=dtype or self.dtype, device=device or self.device,
                     requires_grad=requires_grad)

    def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
        from .factories import full

        return full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device,
                    requires_grad=requires_grad)

    # ------------------------------------------------------------------ in-place random fills
    def _fill_random(self, draw, generator):
        """Fill with samples ``draw(rng, shape, dtype)`` (no autograd: like torch, these are
        used on parameters under no_grad, e.g. by ember.nn.init)."""
        from .random import _gen

        if self.requires_grad and self.grad_fn is None and STATE.enabled:
            raise RuntimeError(
                "a leaf tensor that requires grad is being used in an in-place operation; wrap "
                "the initialization in ember.no_grad()")
        d = self.array
        if B.is_meta(d):  # nothing to fill: a meta tensor has no values
            self._bump()
            return self
        rng = _gen(generator, self.device)
        work = d.dtype if d.dtype in (D.float32, D.float64) else D.float32
        vals = draw(rng, d.shape, work)
        B.namespace(d).copyto(d, vals, casting="unsafe")
        self._bump()
        return self

    def uniform_(self, a=0.0, b=1.0, *, generator=None):
        return self._fill_random(lambda g, s, dt: g.random(s, dtype=dt) * (b - a) + a, generator)

    def normal_(self, mean=0.0, std=1.0, *, generator=None):
        return self._fill_random(lambda g, s, dt: g.standard_normal(s, dtype=dt) * std + mean,
                                 generator)

    def bernoulli_(self, p=0.5, *, generator=None):
        pv = p.array if isinstance(p, Tensor) else p
        return self._fill_random(lambda g, s, dt: (g.random(s, dtype=dt) < pv), generator)

    def exponential_(self, lambd=1.0, *, generator=None):
        return self._fill_random(
            lambda g, s, dt: g.standard_exponential(s, dtype=dt) / lambd, generator)

    def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
        return self._fill_random(
            lambda g, s, dt: B.namespace(self.array).exp(g.standard_normal(s, dtype=dt) * std + mean),
            generator)

    def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
        import math

        return self._fill_random(
            lambda g, s, dt: median + sigma * B.namespace(self.array).tan(
                math.pi * (g.random(s, dtype=dt) - 0.5)), generator)

    def random_(self, from_=0, to=None, *, generator=None):
        if to is None:
            from_, to = 0, (from_ if from_ else (2 ** 24 if self.is_floating_point()
                                                 else int(np.iinfo(self.dtype).max) + 1))
        return self._fill_random(lambda g, s, dt: g.integers(from_, to, s), generator)

    # ------------------------------------------------------------------ autograd
    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulate d(self)/d(leaf) into each leaf's ``.grad``."""
        _autograd_backward(self, gradient, retain_graph=retain_graph, create_graph=create_graph,
                 inputs=inputs)

    def requires_grad_(self, requires_grad=True):
        if not requires_grad and self.grad_fn is not None:
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables; use .detach() to "
                "get a tensor that does not require grad")
        if requires_grad and not (D.is_floating(self.array.dtype) or self.array.dtype.kind == "c"):
            raise RuntimeError(
                f"only tensors of floating point or complex dtype can require gradients, got "
                f"{D.name(self.array.dtype)}")
        self.requires_grad = bool(requires_grad)
        return self

    def detach(self):
        t = Tensor._make(self.array)
        t._version = self._vc()
        return t

    def detach_(self):
        self.grad_fn = None
        self.requires_grad = False
        return self

    def retain_grad(self):
        if self.grad_fn is None:
            return
        ex = self.grad_fn._get_extra()
        if ex.get("retains", set()).__contains__(self._out_nr):
            return
        ex.setdefault("retains", set()).add(self._out_nr)
        self.grad_fn.register_prehook(G.retain_grad_hook(self), self._out_nr)

    @property
    def retains_grad(self):
        fn = self.grad_fn
        return fn is not None and fn._extra is not None and \
            self._out_nr in fn._extra.get("retains", ())

    def register_hook(self, hook):
        """``hook(grad) -> grad or None``, called with the gradient w.r.t. this tensor."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            return self.grad_fn.register_prehook(hook, self._out_nr)
        if self._hooks is None:
            self._hooks = {}
        lst = self._hooks.setdefault("pre", [])
        lst.append(hook)
        return G.RemovableHandle(lst, hook)

    def register_post_accumulate_grad_hook(self, hook):
        """``hook(tensor)`` after a leaf's ``.grad`` was updated (DDP uses this)."""
        if self.grad_fn is not None:
            raise RuntimeError("post-accumulate-grad hooks can only be registered on leaf tensors")
        if self._hooks is None:
            self._hooks = {}
        lst = self._hooks.setdefault("post", [])
        lst.append(hook)
        return G.RemovableHandle(lst, hook)

    # ------------------------------------------------------------------ versioning
    def _vc(self):
        """This tensor's version counter (created on first need; shared with views)."""
        c = self._version
        if c is None:
            c = self._version = [0]
        return c

    def _bump(self):
        c = self._version
        if c is None:
            self._version = [1]
        else:
            c[0] += 1

    # ------------------------------------------------------------------ repr
    def __repr__(self):
        from ._format import format_tensor

        return format_tensor(self)

    def __format__(self, spec):
        if self.array.ndim == 0 and spec:
            return format(self.item(), spec)
        return repr(self)


_new = object.__new__


def _bare(cls, data):
    t = _new(cls)
    t.array = data
    t.requires_grad = False
    t.grad = None
    t.grad_fn = None
    t._out_nr = 0
    t._version = None
    t._base = None
    t._hooks = None
    return t


def _autograd_backward(*args, **kwargs):
    from .autograd import backward

    global _autograd_backward
    _autograd_backward = backward
    return backward(*args, **kwargs)


def _bind():
    from .ops import _util

    _util._make = Tensor._make
    _util.Tensor = Tensor
    G.Tensor = Tensor


_bind()


def _rebuild(arr, dev, requires_grad):
    t = Tensor._make(arr)
    if dev != "cpu":
        t = t.to(dev)
    t.requires_grad = requires_grad
    return t


def _dim(dim, ndim):
    lo, hi = -max(ndim, 1), max(ndim, 1) - 1
    if not lo <= dim <= hi:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{lo}, {hi}], but got {dim})")
    return dim + ndim if dim < 0 else dim


class _ToDeviceBackward(G.Node):
    __slots__ = ("src",)

    def backward(self, g):
        return (g.to(self.src),)


class _ToDevice:
    @staticmethod
    def apply(x, dev):
        out = Tensor._make(B.to_device(x.array, dev))
        if STATE.enabled and x.requires_grad:
            n = G.new_node(_ToDeviceBackward)
            n.src = x.device
            G.record(n, out, x)
        return out


def _legacy_array(args, dtype, device):
    """The array for ``Tensor(*sizes)`` / ``Tensor(data)`` under torch's legacy rules."""
    from .factories import _to_array, zeros

    dt = D.to_dtype(dtype) or D.get_default_dtype()
    if len(args) == 1 and isinstance(args[0], (tuple, list)) and len(args[0]) == 0:
        args = ()
    if all(isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in args):
        if any(a < 0 for a in args):
            raise ValueError(f"Tensor(*sizes): sizes must be non-negative, got {list(args)}")
        return zeros(*(args or (0,)), dtype=dt, device=device).array
    if len(args) != 1:
        raise TypeError("Tensor() takes sizes as ints or one sequence, array or tensor of data, "
                        f"got {len(args)} arguments of types {[type(a).__name__ for a in args]}")
    return _to_array(args[0], dt, device, copy=False)
