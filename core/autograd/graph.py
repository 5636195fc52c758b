"""The autograd graph and its engine.

A differentiable op that ran with grad enabled leaves a ``Node`` as its output's ``grad_fn``.
``node.next`` holds one edge per differentiable input: ``None`` (the input needs no grad),
``(leaf_tensor, 0)`` for a leaf that requires grad, or ``(producer_node, output_nr)``.
Nodes hold no input tensors unless they saved them for backward, so memory is only what
backward needs. ``node.backward(grad)`` returns one gradient per edge, computed with
ember's own (differentiable) ops, which is what makes higher-order gradients work: under
``create_graph=True`` the backward pass records a graph of its own.

The engine is iterative (dependency counts + a stack), so graph depth is unlimited.
"""
from __future__ import annotations

import traceback
import weakref

from .. import _backend as B
from .grad_mode import STATE


Tensor = None  # bound by core/_tensor.py once the class exists (avoids import cycles)


class _Freed:
    __slots__ = ()


FREED = _Freed()


def _edge(t):
    if not t.requires_grad:
        return None
    fn = t.grad_fn
    return (t, 0) if fn is None else (fn, t._out_nr)


class Node:
    """Base of all backward nodes. Subclasses implement ``backward(grad) -> tuple``."""

    __slots__ = ("next", "saved", "_extra", "__weakref__")
    n_outputs = 1
    # False for nodes whose backward uses raw arrays (no double backward).
    differentiable = True

    def backward(self, grad):  # pragma: no cover - always overridden
        raise RuntimeError(f"{self.name()} has no backward")

    def name(self) -> str:
        return type(self).__name__

    def __repr__(self):
        return f"<{self.name()}>"

    @property
    def next_functions(self):
        out = []
        for e in self.next:
            if e is None:
                out.append((None, 0))
            elif isinstance(e[0], Node):
                out.append(e)
            else:
                out.append((AccumulateGrad(e[0]), 0))
        return tuple(out)

    # -- saved tensors -------------------------------------------------------------
    def save(self, *tensors):
        """Save input tensors for backward; each one's version is checked when unpacked."""
        self.saved = tuple(None if t is None else (t, 0 if t._version is None else t._version[0])
                           for t in tensors)

    def unpack(self):
        saved = self.saved
        if saved is FREED:
            raise RuntimeError(
                f"{self.name()}: trying to backward through the graph a second time, or to use "
                "saved tensors after backward freed them. Pass retain_graph=True to the first "
                "backward() or autograd.grad() call if you need to go through the graph again.")
        out = []
        for s in saved:
            if s is None:
                out.append(None)
                continue
            t, v = s
            if type(t) is _SavedOutput:
                t = t.unpack(self)
            elif (0 if t._version is None else t._version[0]) != v:
                raise RuntimeError(
                    f"one of the tensors needed for gradient computation has been modified by an "
                    f"in-place operation: a tensor of shape {list(t.shape)} saved by "
                    f"{self.name()} is at version {t._version[0]}, expected version {v}. "
                    "Use an out-of-place op (or .clone()) before modifying it.")
            out.append(t)
        return out

    def release(self):
        if self.saved is not None:
            self.saved = FREED

    # -- hooks ---------------------------------------------------------------------
    def _get_extra(self):
        ex = self._extra
        if ex is None:
            ex = self._extra = {}
        return ex

    def register_prehook(self, fn, output_nr=0):
        hooks = self._get_extra().setdefault("pre", {}).setdefault(output_nr, [])
        hooks.append(fn)
        return RemovableHandle(hooks, fn)

    def register_hook(self, fn):
        """``fn(grad_inputs, grad_outputs)`` after this node's backward ran."""
        hooks = self._get_extra().setdefault("post", [])
        hooks.append(fn)
        return RemovableHandle(hooks, fn)


class _SavedOutput:
    """An op's own output saved for its backward: holds the array, not the Tensor, so the
    graph has no reference cycle; unpacking re-links a Tensor to the node."""

    __slots__ = ("array", "version", "counter", "out_nr")

    def unpack(self, node):
        if self.counter[0] != self.version:
            raise RuntimeError(
                f"one of the tensors needed for gradient computation has been modified by an "
                f"in-place operation: the output of {node.name()} (shape "
                f"{list(self.array.shape)}) is at version {self.counter[0]}, expected version "
                f"{self.version}. Use an out-of-place op (or .clone()) before modifying it.")
        t = Tensor._make(self.array)
        t.grad_fn = node
        t.requires_grad = True
        t._out_nr = self.out_nr
        t._version = self.counter
        return t


def saved_output(t):
    """Token for saving the op's own output ``t`` (see ``Node.save``)."""
    s = _SavedOutput()
    s.array = t.array
    c = t._version
    if c is None:
        c = t._version = [0]
    s.counter = c
    s.version = c[0]
    s.out_nr = t._out_nr
    return (s, 0)


class AccumulateGrad(Node):
    """Shown in ``next_functions`` for leaves (the engine accumulates into them directly)."""

    __slots__ = ("variable",)

    def __init__(self, variable):
        self.next = ()
        self.saved = None
        self._extra = None
        self.variable = variable


class RemovableHandle:
    __slots__ = ("_hooks", "_fn")

    def __init__(self, hooks, fn):
        self._hooks = hooks
        self._fn = fn

    def remove(self):
        try:
            self._hooks.remove(self._fn)
        except ValueError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def record(node, out, *inputs):
    """Attach ``node`` as ``out``'s grad_fn with one edge per input (``None`` allowed)."""
    edges = []
    for t in inputs:
        if t is None or not t.requires_grad:
            edges.append(None)
        else:
            if t._base is not None and t._version[0] != t._view_ver:
                _refresh_view(t)
            fn = t.grad_fn
            edges.append((t, 0) if fn is None else (fn, t._out_nr))
    node.next = tuple(edges)
    out.grad_fn = node
    out.requires_grad = True
    if STATE.anomaly:
        node._get_extra()["trace"] = "".join(traceback.format_stack()[:-2])
    return out


def record2(node, out, a, b):
    """``record(node, out, a, b)`` for two tensor inputs, unrolled (the binary ops' hot path)."""
    if a.requires_grad:
        if a._base is not None and a._version[0] != a._view_ver:
            _refresh_view(a)
        fn = a.grad_fn
        ea = (a, 0) if fn is None else (fn, a._out_nr)
    else:
        ea = None
    if b.requires_grad:
        if b._base is not None and b._version[0] != b._view_ver:
            _refresh_view(b)
        fn = b.grad_fn
        eb = (b, 0) if fn is None else (fn, b._out_nr)
    else:
        eb = None
    node.next = (ea, eb)
    out.grad_fn = node
    out.requires_grad = True
    if STATE.anomaly:
        node._get_extra()["trace"] = "".join(traceback.format_stack()[:-2])
    return out


def _refresh_view(t):
    """The base changed in place since this view's history was recorded: re-derive the view
    from the base's current history (see ops/_views.py)."""
    t._view_ver = t._version[0]
    if t._base.requires_grad:
        from ..ops._views import rederive_view

        rederive_view(t)


def new_node(cls):
    n = cls.__new__(cls)
    n.saved = None
    n._extra = None
    return n


# ---------------------------------------------------------------------------------
# engine
# ---------------------------------------------------------------------------------

def _root(arr):
    b = arr.base
    return arr if b is None else b


def _check_anomaly(node, grads):
    from .._backend import namespace

    for i, g in enumerate(grads):
        if g is None:
            continue
        xp = namespace(g.array)
        if g.array.dtype.kind in "fc" and not bool(xp.isfinite(g.array).all()):
            trace = (node._extra or {}).get("trace", "")
            where = f"\nThe forward call that created it:\n{trace}" if trace else ""
            bad = "nan" if bool(xp.isnan(g.array).any()) else "inf"
            raise RuntimeError(
                f"Function '{node.name()}' returned {bad} values in its {i}th output.{where}")


def _call_node(node, grad):
    """Run one node's backward with its hooks; returns the tuple of input grads."""
    extra = node._extra
    if extra is not None and "pre" in extra:
        pre = extra["pre"]
        if node.n_outputs == 1:
            for fn in list(pre.get(0, ())):
                r = fn(grad)
                if r is not None:
                    grad = r
        else:
            grad = list(grad)
            for nr, fns in pre.items():
                for fn in list(fns):
                    r = fn(grad[nr])
                    if r is not None:
                        grad[nr] = r
    grads = node.backward(grad)
    if type(grads) is not tuple:
        grads = tuple(grads) if isinstance(grads, list) else (grads,)
    if extra is not None and "post" in extra:
        for fn in list(extra["post"]):
            fn(grads, grad if node.n_outputs > 1 else (grad,))
    if STATE.anomaly and STATE.anomaly_nan_check:
        _check_anomaly(node, grads)
    return grads


def leaf_edge(edge):
    """True when ``edge`` (an entry of ``node.next``) leads straight to a leaf tensor: the
    only place a backward may send a ``RowSparseGrad`` (see core/sparse.py)."""
    return edge is not None and not isinstance(edge[0], Node)


def _sum_grads(a, b):
    """``a + b`` for gradients, either of which may be row-sparse."""
    if a is None:
        return b
    if getattr(b, "is_sparse", False) and not getattr(a, "is_sparse", False):
        return b + a
    return a + b


def _accumulate_leaf(leaf, g, handed, create_graph):
    hooks = leaf._hooks
    if hooks is not None:
        for fn in list(hooks.get("pre", ())):
            r = fn(g)
            if r is not None:
                g = r
    if g.is_sparse or (leaf.grad is not None and leaf.grad.is_sparse):
        if tuple(g.shape) != tuple(leaf.array.shape):
            raise RuntimeError(
                f"gradient computed for a leaf of shape {list(leaf.array.shape)} has shape "
                f"{list(g.shape)} (a backward formula returned a wrongly shaped gradient)")
        leaf.grad = _sum_grads(leaf.grad, g)
        if hooks is not None:
            for fn in list(hooks.get("post", ())):
                fn(leaf)
        return
    if g.array.shape != leaf.array.shape:
        raise RuntimeError(
            f"gradient computed for a leaf of shape {list(leaf.array.shape)} has shape "
            f"{list(g.array.shape)} (a backward formula returned a wrongly shaped gradient)")
    old = leaf.grad
    if old is None:
        d = g.array
        if not d.flags.c_contiguous:  # e.g. matmul's transposed adjoint: .grad is contiguous
            g = g.contiguous() if create_graph else Tensor._make(B.namespace(d).ascontiguousarray(d))
        elif not create_graph:
            b = d.base
            r = id(d if b is None else b)
            if r in handed or g.requires_grad:
                g = Tensor._make(d.copy())
            else:
                handed.add(r)
        leaf.grad = g
    elif create_graph or old.requires_grad:
        leaf.grad = old + g
    else:
        od, gd = old.array, g.array
        if od.flags.writeable and od.base is None and type(od) is type(gd) and \
                od.dtype == gd.dtype and od.shape == gd.shape:
            od += gd  # in place, as torch accumulates: .grad keeps its identity and memory
            old._bump()
        else:  # a read-only or borrowed array (e.g. a broadcast view handed over as is)
            leaf.grad = Tensor._make(od + gd)
    if hooks is not None:
        for fn in list(hooks.get("post", ())):
            fn(leaf)


def _materialize(node, slots):
    """Multi-output nodes receive one grad per output; missing ones become zeros."""
    shapes = getattr(node, "output_meta", None)
    out = []
    for i, g in enumerate(slots):
        if g is None and shapes is not None and getattr(node, "materialize_grads", True):
            shape, dtype, xp = shapes[i]
            if xp is not None:  # None marks an output that is not a tensor
                g = Tensor._make(xp.zeros(shape, dtype))
        out.append(g)
    return tuple(out)


_CALLBACKS: list = []  # one list per backward pass in progress (nested passes stack)


def queue_callback(fn):
    """Run ``fn()`` once when the backward pass now running has finished (after every
    gradient was accumulated), e.g. to wait for gradient all-reduces started by hooks.
    Only callable from inside a backward pass (a hook or a node's backward)."""
    if not _CALLBACKS:
        raise RuntimeError("queue_callback can only be called during a backward pass (from a "
                           "tensor hook or a Function's backward)")
    _CALLBACKS[-1].append(fn)


def run_backward(roots, root_grads, retain_graph=False, create_graph=False, inputs=None,
                 allow_unused=False):
    """Backpropagate ``root_grads`` from ``roots``.

    With ``inputs`` (``autograd.grad``) nothing is accumulated into ``.grad``; the gradients
    flowing into ``inputs`` are returned instead. Callbacks queued during the pass run at its
    end, in order (callbacks may queue more).
    """
    prev = STATE.enabled
    STATE.enabled = create_graph
    _CALLBACKS.append([])
    try:
        out = _run(roots, root_grads, retain_graph, create_graph, inputs, allow_unused)
        callbacks = _CALLBACKS[-1]
        i = 0
        while i < len(callbacks):
            callbacks[i]()
            i += 1
        return out
    finally:
        _CALLBACKS.pop()
        STATE.enabled = prev


def _run(roots, root_grads, retain_graph, create_graph, inputs, allow_unused):
    handed = set()
    for g in root_grads:
        handed.add(id(_root(g.array)))

    # targets for autograd.grad: leaf tensors by id, non-leaf by (node, nr)
    capture = None
    if inputs is not None:
        capture = {}
        leaf_targets = {}
        node_targets = {}
        for i, t in enumerate(inputs):
            if not t.requires_grad:
                raise RuntimeError(f"input {i} of autograd.grad does not require grad")
            if t.grad_fn is None:
                leaf_targets.setdefault(id(t), []).append(i)
            else:
                node_targets.setdefault((t.grad_fn, t._out_nr), []).append(i)
        target_nodes = {k[0] for k in node_targets}

    # phase 1: dependency counts over nodes reachable from the roots
    deps = {}
    stack = []
    for r in roots:
        fn = r.grad_fn
        if fn is not None and fn not in deps:
            deps[fn] = 0
            stack.append(fn)
    order = [] if capture is not None else None  # discovery order, for autograd.grad's pruning
    leaf_deps = {}  # id(leaf) -> edges still to deliver: a leaf is accumulated once per pass
    while stack:
        n = stack.pop()
        if order is not None:
            order.append(n)
        for e in n.next:
            if e is not None:
                t = e[0]
                if isinstance(t, Node):
                    c = deps.get(t)
                    if c is None:
                        deps[t] = 1
                        stack.append(t)
                    else:
                        deps[t] = c + 1
                else:
                    k = id(t)
                    leaf_deps[k] = leaf_deps.get(k, 0) + 1
    leaf_bufs = {}  # id(leaf) -> gradient summed so far

    needed = None
    if capture is not None:
        # a node is needed when it is a target or leads to one: walk the reversed edges
        parents = {}
        for n in order:
            for e in n.next:
                if e is not None:
                    key = e[0] if isinstance(e[0], Node) else id(e[0])
                    parents.setdefault(key, []).append(n)
        needed = set(target_nodes)
        stack = list(target_nodes)
        for lid in leaf_targets:
            stack.extend(parents.get(lid, ()))
        while stack:
            n = stack.pop()
            needed.add(n)
            for p in parents.get(n, ()):
                if p not in needed:
                    needed.add(p)
                    stack.append(p)

    # phase 2: run nodes when all their consumers have contributed
    buffers = {}
    owned = set()  # buffer keys whose summed array the engine allocated (safe to add into)
    dense = not create_graph  # sums of plain gradients may then run on the arrays
    ready = []
    for r, g in zip(roots, root_grads):
        fn = r.grad_fn
        if fn is None:
            if capture is not None:
                for i in leaf_targets.get(id(r), ()):
                    capture[i] = _sum_grads(capture.get(i), g)
            else:
                _accumulate_leaf(r, g, handed, create_graph)
            continue
        _add_to_buffer(buffers, fn, r._out_nr, g, owned if dense else None)
    for r in roots:
        fn = r.grad_fn
        if fn is not None and deps.get(fn) == 0 and fn not in ready:
            ready.append(fn)

    anomaly = STATE.anomaly
    while ready:
        node = ready.pop()
        grad = buffers.pop(node, None)
        if capture is not None:
            if node in target_nodes:
                for nr in range(node.n_outputs):
                    for i in node_targets.get((node, nr), ()):
                        g = grad if node.n_outputs == 1 else (
                            grad[nr] if grad is not None else None)
                        capture[i] = g
            run = grad is not None and node in needed
        else:
            run = grad is not None
        nxt = node.next
        if run:
            if node.n_outputs > 1:
                grad = _materialize(node, grad)
            if node._extra is None and not anomaly:  # no hooks: _call_node's work, inline
                grads = node.backward(grad)
                if type(grads) is not tuple:
                    grads = tuple(grads) if isinstance(grads, list) else (grads,)
            else:
                grads = _call_node(node, grad)
            if not retain_graph:
                node.release()
            if len(grads) < len(nxt):
                raise RuntimeError(
                    f"{node.name()} returned {len(grads)} gradients, expected {len(nxt)}")
        k = -1
        for e in nxt:
            k += 1
            if e is None:
                continue
            t = e[0]
            g = grads[k] if run else None
            if isinstance(t, Node):
                if g is not None:
                    _add_to_buffer(buffers, t, e[1], g, owned if dense else None)
                c = deps[t] - 1
                deps[t] = c
                if c == 0:
                    ready.append(t)
            elif capture is not None:
                if g is not None:
                    for i in leaf_targets.get(id(t), ()):
                        capture[i] = _sum_grads(capture.get(i), g)
            else:
                # sum every contribution first, so hooks see the leaf's whole gradient once
                key = id(t)
                c = leaf_deps[key] - 1
                if c == 0 and not leaf_bufs:  # the common case: the leaf's only edge
                    if g is not None:
                        _accumulate_leaf(t, g, handed, create_graph)
                    continue
                leaf_deps[key] = c
                if g is not None:
                    old = leaf_bufs.get(key)
                    leaf_bufs[key] = g if old is None else (
                        _sum_dense(old, g, key, owned) if dense else _sum_grads(old, g))
                if c == 0 and key in leaf_bufs:
                    _accumulate_leaf(t, leaf_bufs.pop(key), handed, create_graph)

    if capture is not None:
        out = []
        for i, t in enumerate(inputs):
            g = capture.get(i)
            if g is None and not allow_unused:
                raise RuntimeError(
                    f"input {i} (shape {list(t.shape)}) was not used to compute the outputs; "
                    "pass allow_unused=True to get None for it")
            out.append(g)
        return tuple(out)
    return None


def _sum_dense(old, g, key, owned):
    """``old + g`` for two gradients when no graph is being built. The first sum allocates
    (``old`` may be shared: a root gradient, or one handed to several edges); its result,
    seen by no one else, is marked in ``owned`` and later contributions are added into it in
    place, as torch's engine accumulates. Anything unusual goes through ``_sum_grads``."""
    if type(old) is not Tensor or type(g) is not Tensor:   # e.g. row-sparse gradients
        return _sum_grads(old, g)
    od, gd = old.array, g.array
    if od.shape != gd.shape or od.dtype != gd.dtype or type(od) is not type(gd):
        return _sum_grads(old, g)
    if key in owned:
        od += gd
        return old
    owned.add(key)
    return Tensor._make(od + gd)


def _add_to_buffer(buffers, node, nr, g, owned=None):
    """Add ``g`` into ``node``'s input buffer (slot ``nr``); ``owned`` (a set, when no graph
    is built) enables in-place sums (see ``_sum_dense``)."""
    if node.n_outputs == 1:
        old = buffers.get(node)
        if old is None:
            buffers[node] = g
        else:
            buffers[node] = _sum_dense(old, g, node, owned) if owned is not None else old + g
    else:
        slots = buffers.get(node)
        if slots is None:
            slots = buffers[node] = [None] * node.n_outputs
        old = slots[nr]
        if old is None:
            slots[nr] = g
        else:
            slots[nr] = _sum_dense(old, g, (node, nr), owned) if owned is not None else old + g


def retain_grad_hook(tensor):
    ref = weakref.ref(tensor)

    def hook(grad):
        t = ref()
        if t is not None:
            # a copy: the same array may flow on to a leaf whose .grad accumulates in place
            g = grad if STATE.enabled else Tensor._make(grad.array.copy())
            t.grad = g if t.grad is None else t.grad + g
        return None
    return hook
