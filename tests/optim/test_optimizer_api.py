"""The Optimizer base: argument checks, groups, zero_grad, closures, hooks, pickling; and the
runnable examples in the docstrings of ember.optim and ember.nn.utils."""
import doctest
import importlib
import pickle

import numpy as np
import pytest
import torch

import ember
import ember.optim as O

BAD = [
    (lambda p: O.SGD(p, lr=-1.0), "Invalid learning rate: -1.0"),
    (lambda p: O.SGD(p, momentum=-0.1), "Invalid momentum value: -0.1"),
    (lambda p: O.SGD(p, weight_decay=-1), "Invalid weight_decay value: -1"),
    (lambda p: O.SGD(p, nesterov=True), "Nesterov momentum requires a momentum"),
    (lambda p: O.Adam(p, betas=(1.0, 0.9)), "Invalid beta parameter at index 0: 1.0"),
    (lambda p: O.Adam(p, betas=(0.9, -0.1)), "Invalid beta parameter at index 1: -0.1"),
    (lambda p: O.Adam(p, eps=-1e-8), "Invalid epsilon value: -1e-08"),
    (lambda p: O.AdamW(p, weight_decay=-0.1), "Invalid weight_decay value: -0.1"),
    (lambda p: O.NAdam(p, momentum_decay=-1), "Invalid momentum_decay value: -1"),
    (lambda p: O.RMSprop(p, alpha=-1), "Invalid alpha value: -1"),
    (lambda p: O.Adagrad(p, lr_decay=-1), "Invalid lr_decay value: -1"),
    (lambda p: O.Adagrad(p, initial_accumulator_value=-1),
     "Invalid initial_accumulator_value value: -1"),
    (lambda p: O.SparseAdam(p, lr=0.0), "Invalid learning rate: 0.0"),
    (lambda p: O.Adam(p, differentiable=True), "differentiable=True is not supported"),
]


@pytest.mark.parametrize("make,msg", BAD, ids=[m for _, m in BAD])
def test_invalid_hyper_parameters(make, msg):
    with pytest.raises(ValueError, match=msg.replace("(", r"\(").replace("+", r"\+")):
        make([ember.zeros(2, requires_grad=True)])


def test_param_checks():
    w = ember.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="empty parameter list"):
        O.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="iterable of Tensors"):
        O.SGD(w, lr=0.1)
    with pytest.raises(ValueError, match="more than one parameter group"):
        O.SGD([{"params": [w]}, {"params": [w]}], lr=0.1)
    with pytest.raises(ValueError, match="non-leaf"):
        O.SGD([w * 2], lr=0.1)
    with pytest.raises(TypeError, match="can only optimize Tensors"):
        O.SGD([np.zeros(2)], lr=0.1)
    with pytest.raises(TypeError, match="ordered collections"):
        O.SGD([{"params": {w}}], lr=0.1)
    with pytest.warns(UserWarning, match="duplicate parameters"):
        O.SGD([w, w], lr=0.1)
    opt = O.SGD([w], lr=0.1)
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": w})
    with pytest.raises(ValueError, match="didn't specify a value of required"):
        O.Optimizer([w], {"lr": O.required})
    w.grad = ember.ones(3)
    with pytest.raises(RuntimeError, match="gradient of shape"):
        opt.step()


def test_add_param_group_and_named_params():
    a, b = ember.zeros(2, requires_grad=True), ember.zeros(3, requires_grad=True)
    opt = O.Adam([("a", a)], lr=0.1)
    opt.add_param_group({"params": [("b", b)], "lr": 0.5})
    assert opt.param_groups[1]["lr"] == 0.5 and opt.param_groups[1]["betas"] == (0.9, 0.999)
    assert [g["param_names"] for g in opt.state_dict()["param_groups"]] == [["a"], ["b"]]
    ta, tb = torch.zeros(2, requires_grad=True), torch.zeros(3, requires_grad=True)
    topt = torch.optim.Adam([("a", ta)], lr=0.1)
    topt.add_param_group({"params": [("b", tb)], "lr": 0.5})
    assert opt.state_dict()["param_groups"] == topt.state_dict()["param_groups"]
    with pytest.raises(ValueError, match="with/without names"):
        opt.add_param_group({"params": [ember.zeros(1, requires_grad=True)]})


def test_zero_grad():
    w = ember.ones(2, requires_grad=True)
    opt = O.SGD([w], lr=0.1)
    (w * 3).sum().backward()
    g = w.grad
    opt.zero_grad(set_to_none=False)
    assert w.grad is g and w.grad.tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert w.grad is None


def test_closure_runs_with_grad_and_returns_loss():
    w = ember.tensor([2.0], requires_grad=True)
    opt = O.SGD([w], lr=0.25)
    seen = []

    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        seen.append(ember.is_grad_enabled())
        loss.backward()
        return loss

    with ember.no_grad():
        loss = opt.step(closure)
    assert seen == [True] and float(loss) == 4.0 and w.tolist() == [1.0]


def test_step_hooks():
    w = ember.ones(1, requires_grad=True)
    w.grad = ember.ones(1)
    opt = O.SGD([w], lr=0.5)
    calls = []
    h1 = opt.register_step_pre_hook(lambda o, a, k: calls.append(("pre", w.tolist()[0])))
    h2 = opt.register_step_post_hook(lambda o, a, k: calls.append(("post", w.tolist()[0])))
    h3 = O.optimizer.register_optimizer_step_pre_hook(lambda o, a, k: calls.append(("g", o)))
    opt.step()
    assert calls == [("g", opt), ("pre", 1.0), ("post", 0.5)]
    h1.remove()
    h2.remove()
    h3.remove()
    opt.step()
    assert len(calls) == 3
    with pytest.raises(RuntimeError, match="pre-hook must return None or a tuple"):
        opt.register_step_pre_hook(lambda o, a, k: 1)
        opt.step()


def test_subclass_step_is_wrapped_once():
    class Twice(O.SGD):
        def step(self, closure=None):
            super().step(closure)
            return super().step(closure)

    w = ember.ones(1, requires_grad=True)
    w.grad = ember.ones(1)
    opt = Twice([w], lr=0.25)
    n = []
    opt.register_step_pre_hook(lambda o, a, k: n.append(1))
    opt.step()
    assert n == [1] and w.tolist() == [0.5] and ember.is_grad_enabled()


def test_state_dict_hooks_and_pickle_and_repr():
    w = ember.ones(2, requires_grad=True)
    w.grad = ember.ones(2)
    opt = O.Adam([w], lr=0.1)
    opt.step()
    opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1})
    assert opt.state_dict()["extra"] == 1
    seen = []
    opt.register_load_state_dict_post_hook(lambda o: seen.append(True))
    opt.load_state_dict(opt.state_dict())
    assert seen == [True]
    clone = pickle.loads(pickle.dumps(opt))
    assert float(clone.state[clone.param_groups[0]["params"][0]]["step"]) == 1.0
    text = repr(opt)
    assert text.startswith("Adam (") and "lr: 0.1" in text and "Parameter Group 0" in text


MODULES = ["ember.optim", "ember._fused", "ember.optim.optimizer", "ember.optim.sgd",
           "ember.optim.adam", "ember.optim.adamw", "ember.optim.adamax", "ember.optim.nadam",
           "ember.optim.radam", "ember.optim.rmsprop", "ember.optim.adagrad",
           "ember.optim.sparse_adam", "ember.optim.lr_scheduler", "ember.optim._lr_cyclic",
           "ember.optim._lr_compose", "ember.optim.adadelta", "ember.optim.asgd",
           "ember.optim.rprop", "ember.optim.lbfgs", "ember.nn.utils.clip_grad",
           "ember.nn.utils.convert_parameters"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    mod = importlib.import_module(name)
    res = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert res.failed == 0 and res.attempted > 0
