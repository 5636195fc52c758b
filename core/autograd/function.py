"""The public extension point: ``ember.autograd.Function``.

    class Exp(Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad):
            (y,) = ctx.saved_tensors
            return grad * y

    y = Exp.apply(x)

``forward`` runs with grad recording off; ``backward`` receives one gradient per output and
returns one per ``forward`` argument (``None`` for non-tensors or inputs needing none).
Written with ember ops, a backward is itself differentiable (double backward works).
"""
from __future__ import annotations

import functools

from .grad_mode import STATE
from .graph import FREED, Node, _edge, saved_output


class FunctionCtx(Node):
    """The ``ctx`` of a custom Function, which is also its backward node."""

    __slots__ = ("fn_cls", "needs_input_grad", "to_save", "non_differentiable", "dirty",
                 "materialize_grads", "output_meta", "n_out", "__dict__")

    @property
    def n_outputs(self):
        return self.n_out

    def name(self):
        return self.fn_cls.__name__ + "Backward"

    def save_for_backward(self, *tensors):
        self.to_save = tensors

    def mark_non_differentiable(self, *tensors):
        self.non_differentiable = {id(t) for t in tensors}

    def mark_dirty(self, *tensors):
        self.dirty = {id(t) for t in tensors}

    def set_materialize_grads(self, value: bool):
        self.materialize_grads = bool(value)

    @property
    def saved_tensors(self):
        if self.saved is None:
            return tuple(self.to_save or ())
        return tuple(self.unpack())

    def backward(self, grads):
        if self.n_out == 1:
            grads = (grads,)
        if self.materialize_grads:
            from .._tensor import Tensor

            grads = tuple(g if g is not None or xp is None else Tensor._make(xp.zeros(shape, dtype))
                          for g, (shape, dtype, xp) in zip(grads, self.output_meta))
        res = self.fn_cls.backward(self, *grads)
        if not isinstance(res, tuple):
            res = (res,)
        n_in = len(self.next)
        if len(res) < n_in:
            raise RuntimeError(
                f"function {self.name()} returned an incorrect number of gradients "
                f"(expected {n_in}, got {len(res)})")
        out = []
        for i, (g, e) in enumerate(zip(res, self.next)):
            if e is None or g is None:
                out.append(None)
                continue
            shape = self._in_shapes[i]
            if tuple(g.shape) != shape:
                raise RuntimeError(
                    f"function {self.name()} returned an invalid gradient at index {i}: got "
                    f"shape {list(g.shape)} but expected shape compatible with {list(shape)}")
            out.append(g)
        return tuple(out)


class Function:
    """Base class for custom differentiable operations (see module docstring)."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("subclasses of ember.autograd.Function must define forward")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("subclasses of ember.autograd.Function must define backward "
                                  "to be differentiated")

    @classmethod
    def apply(cls, *args, **kwargs):
        from .._tensor import Tensor
        from .. import _backend as B

        ctx = FunctionCtx.__new__(FunctionCtx)
        ctx.saved = None
        ctx._extra = None
        ctx.fn_cls = cls
        ctx.to_save = None
        ctx.non_differentiable = ()
        ctx.dirty = ()
        ctx.materialize_grads = True
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
        grad = STATE.enabled and any(ctx.needs_input_grad)
        prev = STATE.enabled
        STATE.enabled = False
        try:
            outputs = cls.forward(ctx, *args, **kwargs)
        finally:
            STATE.enabled = prev
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        if not grad:
            return outputs
        ctx.next = tuple(_edge(a) if isinstance(a, Tensor) else None for a in args)
        ctx._in_shapes = tuple(tuple(a.shape) if isinstance(a, Tensor) else None for a in args)
        ctx.n_out = len(outs)
        ctx.output_meta = tuple((o.array.shape, o.array.dtype, B.namespace(o.array))
                                if isinstance(o, Tensor) else ((), None, None) for o in outs)
        input_ids = {id(a) for a in args if isinstance(a, Tensor)}
        new_outs = []
        for i, o in enumerate(outs):
            if not isinstance(o, Tensor):
                new_outs.append(o)
                continue
            if id(o) in ctx.non_differentiable:
                new_outs.append(o)
                continue
            if id(o) in input_ids and id(o) not in ctx.dirty:
                o2 = Tensor._make(o.array)  # an input returned as is becomes a new tensor
                o2._version = o._vc()
                o = o2
            if id(o) in ctx.dirty:
                o._bump()
            o.grad_fn = ctx
            o._out_nr = i
            o.requires_grad = True
            new_outs.append(o)
        out_ids = {id(o): o for o in new_outs if isinstance(o, Tensor)}
        if ctx.to_save is not None:
            saved = []
            for t in ctx.to_save:
                if t is None:
                    saved.append(None)
                elif id(t) in out_ids and t.grad_fn is ctx:
                    saved.append(saved_output(t))
                else:
                    saved.append((t, 0 if t._version is None else t._version[0]))
            ctx.saved = tuple(saved)
            ctx.to_save = None
        if STATE.anomaly:
            import traceback

            ctx._get_extra()["trace"] = "".join(traceback.format_stack()[:-1])
        return new_outs[0] if single else tuple(new_outs)


class _OnceDifferentiableBackward(Node):
    __slots__ = ("fn_name",)

    def backward(self, *g):
        raise RuntimeError(
            f"trying to differentiate twice a function ({self.fn_name}) that was marked "
            "@once_differentiable: its backward uses raw arrays, so double backward is not "
            "supported")


def once_differentiable(backward):
    """Decorator for a ``backward`` that works on raw arrays: it runs without recording, and
    differentiating its results raises a clear error instead of a silently wrong gradient."""

    @functools.wraps(backward)
    def wrapper(ctx, *grads):
        from .._tensor import Tensor
        from .graph import new_node, record

        prev = STATE.enabled
        STATE.enabled = False
        try:
            res = backward(ctx, *grads)
        finally:
            STATE.enabled = prev
        if not prev:  # no create_graph: nothing will differentiate the results
            return res
        # the true results depend on the incoming grads and on the saved tensors: when any
        # of them requires grad, the results get a node that raises if differentiated
        deps = [g for g in grads if isinstance(g, Tensor) and g.requires_grad]
        saved = getattr(ctx, "saved", None)
        if saved is not None and saved is not FREED:
            deps += [t for t in ctx.saved_tensors if isinstance(t, Tensor) and t.requires_grad]
        if not deps:
            return res
        single = not isinstance(res, tuple)
        out = []
        for r in ((res,) if single else res):
            if isinstance(r, Tensor):
                r = Tensor._make(r.array)
                n = new_node(_OnceDifferentiableBackward)
                n.fn_name = getattr(ctx, "name", lambda: "function")()
                record(n, r, *deps)
            out.append(r)
        return out[0] if single else tuple(out)
    return wrapper


__all__ = ["Function", "FunctionCtx", "once_differentiable", "FREED"]
