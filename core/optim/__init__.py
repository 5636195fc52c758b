"""``ember.optim``: optimizers and learning-rate schedulers (PyTorch's algorithms and layouts).

Every dense step runs in place on the parameters' arrays and allocates nothing once the state
exists (see ``ember/_fused.py``); ``ember.optim.lr_scheduler`` holds the schedulers.

    >>> import ember
    >>> w = ember.randn(4, 3, requires_grad=True)
    >>> opt = ember.optim.AdamW([w], lr=1e-2)
    >>> sched = ember.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10)
    >>> for _ in range(3):
    ...     opt.zero_grad()
    ...     (w ** 2).sum().backward()
    ...     opt.step()
    ...     sched.step()
"""
from .optimizer import Optimizer, required
from .sgd import SGD
from .adam import Adam
from .adamw import AdamW
from .adamax import Adamax
from .nadam import NAdam
from .radam import RAdam
from .rmsprop import RMSprop
from .adagrad import Adagrad
from .sparse_adam import SparseAdam
from .adadelta import Adadelta
from .asgd import ASGD
from .rprop import Rprop
from .lbfgs import LBFGS
from . import lr_scheduler
from .._fused import num_threads, set_num_threads

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "Adamax", "NAdam", "RAdam", "RMSprop", "Adagrad",
           "SparseAdam", "Adadelta", "ASGD", "Rprop", "LBFGS", "lr_scheduler", "required",
           "num_threads", "set_num_threads"]
