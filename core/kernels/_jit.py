"""numba, loaded on first use: the lazy ``@jit`` decorator, the on-disk cache, the fallback.

``@jit`` records a plain Python function; numba is imported and the function handed to
``numba.njit`` only when a kernel is first called (``import ember`` compiles nothing and does
not import numba). Every kernel is compiled with the same options:

* ``nogil=True``: a kernel runs on one thread and releases the GIL, so ember's own pool
  (``ember._parallel.parallel_for``) splits the work over ``ember.set_num_threads`` threads;
  numba's threading layers are never loaded (see README.md: measured, and why);
* ``cache=True`` with ember's cache locator: compiled code is kept in
  ``$EMBER_HOME/kernels`` (``EMBER_HOME`` defaults to ``~/.cache/ember``), never next to the
  source, which may sit read-only in site-packages;
* ``fastmath`` without ``nnan``/``ninf``: reductions may be reassociated (that is what lets
  LLVM vectorise a sum) and ``a * b + c`` contracted to an FMA, while NaN and inf keep
  their IEEE behaviour (a NaN in the input still shows in the output);
* ``error_model="numpy"``: ``x / 0`` gives inf/NaN as in numpy instead of raising, which
  also removes the zero test that kept every loop with a division from vectorising
  (``p[i] += m[i] / (sqrt(v[i]) + eps)`` over 10M float32 on one thread: 17.8 ms against
  2.8 ms).

A kernel calling another ``@jit`` function works: when a kernel compiles, the ``@jit``
functions it names are swapped for their numba dispatchers in the module's globals.
"""
from __future__ import annotations

import os
import threading
import warnings

FASTMATH = frozenset({"nsz", "arcp", "contract", "reassoc"})
_OPTIONS = {"nogil": True, "cache": True, "error_model": "numpy"}  # every kernel's, + fastmath

_lock = threading.RLock()
_state = {"numba": None, "tried": False, "mode": None}


def cache_dir() -> str:
    """Where compiled kernels are kept: ``$EMBER_HOME/kernels`` (read when numba loads),
    in a folder per numba version and compile options, one subfolder per kernel module."""
    home = os.environ.get("EMBER_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join("~", ".cache"), "ember")
    return os.path.join(os.path.expanduser(home), "kernels")


def mode() -> str:
    """``"numpy"``: every kernel runs its numpy reference; ``"auto"``: compiled kernels
    where numba is installed. Read from ``EMBER_KERNELS`` when first needed, changed by
    ``set_mode``."""
    m = _state.get("mode")
    if m is None:
        env = os.environ.get("EMBER_KERNELS", "auto").strip().lower()
        m = _state["mode"] = "numpy" if env == "numpy" else "auto"
    return m


def set_mode(m: str) -> str:
    """Switch between ``"auto"`` and ``"numpy"`` (e.g. to compare both paths in one
    process); returns the previous mode."""
    if m not in ("auto", "numpy"):
        raise ValueError(f"ember.kernels.set_mode: expected 'auto' or 'numpy', got {m!r}")
    old = mode()
    _state["mode"] = m
    return old


def numba():
    """The numba module set up for ember (cache locator installed), or None when numba is
    not installed or ``EMBER_KERNELS=numpy``. Says once when it falls back."""
    if mode() == "numpy":
        return None
    if _state["tried"]:
        return _state["numba"]
    with _lock:
        if not _state["tried"]:
            try:
                import numba as nb
            except ImportError as e:  # no wheel for this platform, or not installed
                nb = None
                _warn_once("numba", f"ember: numba is not available ({e}); compiled CPU "
                           "kernels fall back to their numpy references (correct, slower). "
                           "`pip install numba` to enable them, or set EMBER_KERNELS=numpy "
                           "to silence this.")
            if nb is not None:
                _install_locator(nb)
            _state["numba"] = nb
            _state["tried"] = True
    return _state["numba"]


_HERE = os.path.dirname(os.path.abspath(__file__))


def _warn_once(key, msg):
    warned = _state.setdefault("warned_keys", set())
    if key not in warned:
        warned.add(key)
        warnings.warn(msg, RuntimeWarning, stacklevel=4)


def _install_locator(nb):
    """Put ember's cache locator first in numba's list: kernels defined under this folder
    are cached in ``cache_dir()``; everyone else's numba code keeps numba's own rules."""
    import hashlib

    from numba.core import caching

    # numba's cache index keys on the kernel's source file, not on the compile options set
    # here: a folder per (numba version, options) keeps a change of options from loading
    # code compiled under the old ones
    tag = hashlib.sha1(repr((sorted(FASTMATH), sorted(_OPTIONS.items()))).encode()).hexdigest()
    root = os.path.join(cache_dir(), f"numba-{nb.__version__}-{tag[:10]}")

    class EmberCacheLocator(caching._SourceFileBackedLocatorMixin, caching._CacheLocator):
        def __init__(self, py_func, py_file):
            self._py_file = py_file
            self._lineno = py_func.__code__.co_firstlineno
            self._cache_path = os.path.join(root, os.path.splitext(
                os.path.relpath(os.path.abspath(py_file), _HERE))[0].replace(os.sep, "."))

        def get_cache_path(self):
            return self._cache_path

        @classmethod
        def from_function(cls, py_func, py_file):
            if os.path.dirname(os.path.abspath(py_file)) != _HERE:
                return None
            return super().from_function(py_func, py_file)

    classes = caching.CacheImpl._locator_classes
    classes[:] = [c for c in classes if c.__name__ != "EmberCacheLocator"]
    classes.insert(0, EmberCacheLocator)


def available() -> bool:
    """True when compiled CPU kernels are in use (numba importable, not disabled)."""
    return numba() is not None


class jit:
    """``@jit`` (or ``@jit(boundscheck=...)``): a numba kernel compiled on its first call.

    Calling the object calls the compiled function; ``.py_func`` is the plain Python one."""

    def __init__(self, fn=None, **options):
        self.py_func = fn
        self.options = options
        self._dispatcher = None
        if fn is not None:
            self.__name__ = fn.__name__
            self.__doc__ = fn.__doc__

    def __call__(self, *args):
        if self.py_func is None:  # used as @jit(...): receive the function
            (fn,) = args
            return jit(fn, **self.options)
        d = self._dispatcher
        if d is None:
            d = self.dispatcher()
        return d(*args)

    def dispatcher(self):
        """The numba dispatcher (created on first use; compilation happens at its first call,
        or is loaded from the disk cache)."""
        if self._dispatcher is None:
            nb = numba()
            if nb is None:
                raise RuntimeError("ember.kernels: numba is not available or EMBER_KERNELS=numpy")
            with _lock:
                if self._dispatcher is None:
                    g = self.py_func.__globals__
                    for name in self.py_func.__code__.co_names:
                        other = g.get(name)
                        if isinstance(other, jit) and other is not self:
                            g[name] = other.dispatcher()
                        elif isinstance(other, LazyIntrinsic):
                            g[name] = other.build()
                    opts = dict(_OPTIONS, fastmath=set(FASTMATH))
                    opts.update(self.options)
                    try:
                        self._dispatcher = nb.njit(**opts)(self.py_func)
                    except RuntimeError as e:  # no writable cache folder anywhere
                        if "cannot cache" not in str(e):
                            raise
                        _warn_once("nocache", f"ember: compiled kernels cannot be cached ({e}); "
                                   "they compile in every process. Set EMBER_HOME to a "
                                   "writable folder.")
                        opts["cache"] = False
                        self._dispatcher = nb.njit(**opts)(self.py_func)
        return self._dispatcher


class LazyIntrinsic:
    """A numba ``@intrinsic`` built when the first kernel naming it compiles (numba is not
    imported before): ``build(numba) -> intrinsic``. Kernels call it like a function."""

    def __init__(self, build):
        self._build, self._made = build, None
        self.__name__ = build.__name__

    def build(self):
        if self._made is None:
            self._made = self._build(numba())
        return self._made


def _prefetch(nb):
    from llvmlite import ir
    from numba.core import cgutils, types

    @nb.extending.intrinsic
    def prefetch(typingctx, arr, i):
        """Hint the CPU to load the cache line of ``arr.flat[i]`` (``llvm.prefetch``, read,
        high locality); no bounds check is needed: a prefetch never faults."""
        def codegen(context, builder, sig, args):
            aty = sig.args[0]
            ary = context.make_array(aty)(context, builder, args[0])
            ptr = cgutils.get_item_pointer(context, builder, aty, ary, [args[1]],
                                           wraparound=False)
            i8p, i32 = ir.PointerType(ir.IntType(8)), ir.IntType(32)
            fn = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
                "llvm.prefetch.p0i8")
            builder.call(fn, [builder.bitcast(ptr, i8p), ir.Constant(i32, 0),
                              ir.Constant(i32, 3), ir.Constant(i32, 1)])
            return context.get_dummy_value()
        return types.void(arr, i), codegen
    return prefetch


prefetch = LazyIntrinsic(_prefetch)
"""``prefetch(flat_array, i)`` inside a kernel: software prefetch of a row that a gather
reads a few iterations later (random table rows: memory latency, not bandwidth, is the
limit; 26 embedding-bag lookups over 100k x 64 tables: 16-30 ms -> 15 ms on one thread)."""
