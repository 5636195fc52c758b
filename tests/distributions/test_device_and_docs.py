"""The families on every device (the cupy paths run under -m cuda) against the CPU result,
and the docstring examples of ember.distributions as doctests."""
import doctest
import importlib
import pkgutil

import numpy as np
import pytest

import ember
import ember.distributions as D
from ember.distributions import _special as S


_MADE = []  # the parameter leaves made by the latest builder call


def _on(device, v):
    t = ember.tensor(np.asarray(v, dtype=np.float64), device=device, requires_grad=True)
    _MADE.append(t)
    return t


def _builders(dev):
    return {
        "normal": lambda: D.Normal(_on(dev, [0.3, -1.0]), _on(dev, [0.5, 2.0])),
        "gamma": lambda: D.Gamma(_on(dev, [0.4, 5.0]), _on(dev, [1.0, 2.0])),
        "beta": lambda: D.Beta(_on(dev, [0.5, 2.0]), _on(dev, [3.0, 1.0])),
        "dirichlet": lambda: D.Dirichlet(_on(dev, [[0.5, 2.0, 3.0]])),
        "categorical": lambda: D.Categorical(logits=_on(dev, [[0.1, -2.0, 0.3]])),
        "bernoulli": lambda: D.Bernoulli(logits=_on(dev, [0.1, -2.0])),
        "uniform": lambda: D.Uniform(_on(dev, [0.0, -1.0]), _on(dev, [1.0, 3.0])),
        "mvn": lambda: D.MultivariateNormal(_on(dev, [0.0, 1.0]),
                                            scale_tril=_on(dev, [[1.0, 0.0], [0.5, 2.0]])),
        "tanh_normal": lambda: D.TransformedDistribution(
            D.Normal(_on(dev, [0.3, -1.0]), _on(dev, [0.5, 2.0])), [D.TanhTransform(1)]),
    }


@pytest.mark.parametrize("name", list(_builders("cpu")))
def test_family_on_device_matches_cpu(device, name):
    _MADE.clear()
    d = _builders(device)[name]()
    leaves = list(_MADE)
    ref = _builders("cpu")[name]()
    s = d.sample((64,))
    assert s.device == ember.device(device) and not s.requires_grad
    assert s.shape == (64,) + d.batch_shape + d.event_shape
    lp = d.log_prob(s)
    assert lp.device == ember.device(device)
    np.testing.assert_allclose(lp.detach().cpu().numpy(),
                               ref.log_prob(s.cpu()).detach().numpy(), rtol=1e-9)
    if name != "tanh_normal":
        np.testing.assert_allclose(d.entropy().detach().cpu().numpy(),
                                   ref.entropy().detach().numpy(), rtol=1e-9)
    if d.has_rsample:
        x = d.rsample((8,))
        assert x.device == ember.device(device)
        (x.sum() + d.log_prob(x).sum()).backward()
        for p in leaves:
            assert p.grad is not None
            assert p.grad.device == ember.device(device)
            assert bool(ember.isfinite(p.grad).all())


def test_gamma_gradient_on_device(device):
    c = ember.tensor(np.full((500,), 2.5), device=device, requires_grad=True)
    x = D.Gamma(c, 1.0).rsample()
    x.sum().backward()
    want = S.standard_gamma_grad_array(x.detach().cpu().numpy(), np.full(500, 2.5))
    np.testing.assert_allclose(c.grad.cpu().numpy(), want, rtol=1e-10)


def _modules():
    yield D
    for m in pkgutil.iter_modules(D.__path__):
        yield importlib.import_module(f"ember.distributions.{m.name}")


@pytest.mark.parametrize("module", list(_modules()), ids=lambda m: m.__name__)
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
