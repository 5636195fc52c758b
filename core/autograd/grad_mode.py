"""Grad-mode switches: ``no_grad``, ``enable_grad``, ``set_grad_enabled``, ``inference_mode``.

The state is thread-local (a background prefetch thread in ``no_grad`` must not switch off
recording in the main thread). Each switch works as a context manager and as a decorator.
"""
from __future__ import annotations

import functools
import inspect
import threading


class _State(threading.local):
    enabled = True
    anomaly = False
    anomaly_nan_check = True


STATE = _State()


def is_grad_enabled() -> bool:
    return STATE.enabled


class _Switch:
    """Base of the grad-mode context managers; also usable as decorators."""

    mode = True

    def __enter__(self):
        self._prev = STATE.enabled
        STATE.enabled = self.mode

    def __exit__(self, *exc):
        STATE.enabled = self._prev
        return False

    def clone(self):
        return type(self)()

    def __call__(self, fn):
        if inspect.isgeneratorfunction(fn):
            @functools.wraps(fn)
            def gen_wrapper(*args, **kwargs):
                # the mode is on only while the generator's own code runs, never while it is
                # suspended at a ``yield`` (the caller's code runs then)
                gen = fn(*args, **kwargs)
                try:
                    with self.clone():
                        resp = gen.send(None)
                    while True:
                        try:
                            req = yield resp
                        except GeneratorExit:
                            with self.clone():
                                gen.close()
                            raise
                        except BaseException as exc:  # thrown in by the caller: pass it on
                            with self.clone():
                                resp = gen.throw(exc)
                        else:
                            with self.clone():
                                resp = gen.send(req)
                except StopIteration as e:
                    return e.value
            return gen_wrapper

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)
        return wrapper


class _BareDecorator(_Switch):
    """Also usable without parentheses: ``@no_grad`` as well as ``@no_grad()``."""

    def __new__(cls, orig_func=None):
        if callable(orig_func):
            return cls()(orig_func)
        return super().__new__(cls)

    def __init__(self, orig_func=None):
        pass


class no_grad(_BareDecorator):
    """Disable graph recording: ops run on arrays only, nothing is saved for backward."""
    mode = False


class enable_grad(_BareDecorator):
    """Re-enable graph recording inside ``no_grad``."""
    mode = True


class inference_mode(_Switch):
    """Like ``no_grad`` (ember's no-grad path already carries no bookkeeping)."""

    def __new__(cls, mode=True):
        if callable(mode):  # bare ``@inference_mode``
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode: bool = True):
        self.mode = not mode

    def clone(self):
        return type(self)(not self.mode)


class set_grad_enabled(_Switch):
    """``set_grad_enabled(False)`` switches recording off at once, and restores it on exit
    when used as a context manager."""

    def __init__(self, mode: bool):
        self._prev = STATE.enabled
        self.mode = bool(mode)
        STATE.enabled = self.mode

    def __enter__(self):
        STATE.enabled = self.mode

    def __exit__(self, *exc):
        STATE.enabled = self._prev
        return False

    def __call__(self, fn):
        # used as a decorator: construction switched the mode at once; switch it back, the
        # mode applies only while ``fn`` runs
        STATE.enabled = self._prev
        return super().__call__(fn)

    def clone(self):
        return set_grad_enabled.__new__(set_grad_enabled)._init_only(self.mode)

    def _init_only(self, mode):
        self._prev = STATE.enabled
        self.mode = mode
        return self


class detect_anomaly:
    """Record where each op was created, and fail at the first backward that produces NaN/inf,
    naming the op and printing the forward trace that created it."""

    def __init__(self, check_nan: bool = True):
        self.check_nan = check_nan

    def __enter__(self):
        self._prev = (STATE.anomaly, STATE.anomaly_nan_check)
        STATE.anomaly, STATE.anomaly_nan_check = True, self.check_nan

    def __exit__(self, *exc):
        STATE.anomaly, STATE.anomaly_nan_check = self._prev
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with detect_anomaly(self.check_nan):
                return fn(*args, **kwargs)
        return wrapper


def set_detect_anomaly(mode: bool, check_nan: bool = True):
    STATE.anomaly, STATE.anomaly_nan_check = bool(mode), bool(check_nan)


def is_anomaly_enabled() -> bool:
    return STATE.anomaly
