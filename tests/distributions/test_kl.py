"""kl_divergence for every registered pair against torch (values and gradients), the
registry against torch's, and register_kl's dispatch."""
import warnings

import numpy as np
import pytest
import torch
import torch.distributions as TD
import torch.distributions.kl as torch_kl
import torch.distributions.transforms as TT

import ember
import ember.distributions as D
import ember.distributions.kl as ember_kl
from dist_helpers import close

# name -> (params, builder(module, **params)); params are float64 leaves on both sides
FAMILIES = {
    "Normal": (dict(loc=[0.3, -1.0, 2.0], scale=[0.5, 1.5, 3.0]),
               lambda M, loc, scale: M.Normal(loc, scale)),
    "Bernoulli": (dict(probs=[0.1, 0.5, 0.8]), lambda M, probs: M.Bernoulli(probs)),
    "Categorical": (dict(logits=[[0.1, -2.0, 0.3], [2.0, 1.0, 0.5], [0.0, 0.0, 0.0]]),
                    lambda M, logits: M.Categorical(logits=logits)),
    "OneHotCategorical": (dict(probs=[[0.2, 0.3, 0.5], [0.6, 0.3, 0.1], [0.1, 0.1, 0.8]]),
                          lambda M, probs: M.OneHotCategorical(probs=probs)),
    "Beta": (dict(c1=[0.5, 2.0, 3.0], c0=[0.7, 1.0, 6.0]), lambda M, c1, c0: M.Beta(c1, c0)),
    "Dirichlet": (dict(c=[[0.5, 2.0, 3.0], [1.5, 1.0, 4.0], [1.0, 1.0, 1.0]]),
                  lambda M, c: M.Dirichlet(c)),
    "Gamma": (dict(c=[0.4, 1.0, 5.5], r=[0.7, 2.0, 1.0]), lambda M, c, r: M.Gamma(c, r)),
    "Uniform": (dict(low=[0.1, 0.05, 0.3], high=[0.9, 0.5, 0.95]),
                lambda M, low, high: M.Uniform(low, high)),
    "MultivariateNormal": (
        dict(loc=[[0.0, 1.0], [2.0, -1.0], [0.5, 0.5]],
             tril=[[[1.0, 0.0], [0.3, 0.8]], [[2.0, 0.0], [-0.5, 0.4]], [[0.7, 0.0], [0.0, 1.1]]]),
        lambda M, loc, tril: M.MultivariateNormal(loc, scale_tril=tril)),
    "Independent": (dict(loc=[[0.3, -1.0], [2.0, 0.1], [0.0, 0.0]],
                         scale=[[0.5, 1.5], [3.0, 1.0], [1.0, 2.0]]),
                    lambda M, loc, scale: M.Independent(M.Normal(loc, scale), 1)),
    "TransformedDistribution": (
        dict(loc=[0.3, -1.0, 2.0], scale=[0.5, 1.5, 3.0]),
        lambda M, loc, scale: M.TransformedDistribution(
            M.Normal(loc, scale), [(D if M is D else TT).ExpTransform()])),
}
# second parameter sets (for q), same shapes
Q_PARAMS = {
    "Normal": dict(loc=[1.0, 0.0, -1.0], scale=[1.0, 0.7, 2.0]),
    "Bernoulli": dict(probs=[0.3, 0.6, 0.2]),
    "Categorical": dict(logits=[[1.0, 0.0, -1.0], [0.2, 0.3, 0.1], [3.0, -3.0, 0.0]]),
    "OneHotCategorical": dict(probs=[[0.5, 0.3, 0.2], [0.2, 0.2, 0.6], [0.3, 0.3, 0.4]]),
    "Beta": dict(c1=[1.5, 0.5, 2.0], c0=[1.0, 2.0, 0.6]),
    "Dirichlet": dict(c=[[1.0, 1.0, 2.0], [0.5, 3.0, 1.0], [2.0, 2.0, 2.0]]),
    "Gamma": dict(c=[2.0, 0.6, 3.0], r=[1.0, 0.5, 4.0]),
    "Uniform": dict(low=[-1.0, -0.5, 0.0], high=[2.0, 1.0, 1.0]),
    "MultivariateNormal": dict(loc=[[1.0, 0.0], [0.0, 0.0], [0.5, -0.5]],
                               tril=[[[0.5, 0.0], [0.1, 1.2]], [[1.0, 0.0], [0.0, 1.0]],
                                     [[1.5, 0.0], [0.9, 0.3]]]),
    "Independent": dict(loc=[[1.0, 0.0], [-1.0, 0.5], [0.2, 0.3]],
                        scale=[[1.0, 0.7], [2.0, 0.5], [0.3, 1.0]]),
    "TransformedDistribution": dict(loc=[1.0, 0.0, -1.0], scale=[1.0, 0.7, 2.0]),
}

OURS = set(FAMILIES)


def _torch_pairs():
    """The pairs torch registers among the families ember implements."""
    return sorted({(p.__name__, q.__name__) for p, q in torch_kl._KL_REGISTRY
                   if p.__name__ in OURS and q.__name__ in OURS})


def _make(name, params):
    build = FAMILIES[name][1]
    ep = {k: ember.tensor(np.asarray(v, dtype=np.float64), requires_grad=True)
          for k, v in params.items()}
    tp = {k: torch.tensor(np.asarray(v, dtype=np.float64), requires_grad=True)
          for k, v in params.items()}
    return build(D, **ep), build(TD, **tp), ep, tp


def test_registry_covers_torchs_pairs_among_these_families():
    ours = sorted((p.__name__, q.__name__) for p, q in ember_kl._KL_REGISTRY)
    assert ours == _torch_pairs()


@pytest.mark.parametrize("pair", _torch_pairs(), ids=lambda p: f"{p[0]}-{p[1]}")
def test_kl_matches_torch(pair):
    pn, qn = pair
    pe, pt, ppe, ppt = _make(pn, FAMILIES[pn][0])
    qe, qt, qpe, qpt = _make(qn, Q_PARAMS[qn] if pn == qn else FAMILIES[qn][0])
    ke, kt = D.kl_divergence(pe, qe), TD.kl_divergence(pt, qt)
    close(ke, kt, rtol=1e-9, atol=1e-12)
    finite = torch.isfinite(kt)
    if not bool(finite.any()):
        return
    (ke * ember.tensor(finite.numpy().astype(np.float64))).sum().backward()
    (kt * finite).sum().backward()
    for pe_, pt_ in [*zip(ppe.values(), ppt.values()), *zip(qpe.values(), qpt.values())]:
        if pt_.grad is None:
            assert pe_.grad is None or not bool(pe_.grad.abs().sum() != 0)
            continue
        close(pe_.grad, pt_.grad, rtol=1e-8, atol=1e-10)


def test_kl_float32():
    p = D.Gamma(ember.tensor([0.4, 3.0]), ember.tensor([1.0, 2.0]))
    q = D.Gamma(ember.tensor([2.0, 1.0]), ember.tensor([0.5, 2.0]))
    tp = TD.Gamma(torch.tensor([0.4, 3.0]), torch.tensor([1.0, 2.0]))
    tq = TD.Gamma(torch.tensor([2.0, 1.0]), torch.tensor([0.5, 2.0]))
    k = D.kl_divergence(p, q)
    assert k.dtype == ember.float32
    close(k, TD.kl_divergence(tp, tq), np.float32)


def test_infinite_and_zero_cases_match_torch():
    cases = [
        ((D.Bernoulli, TD.Bernoulli), dict(probs=[0.0, 1.0, 0.3, 0.3]),
         dict(probs=[0.5, 0.5, 0.0, 1.0])),
        ((D.Categorical, TD.Categorical), dict(probs=[[0.0, 0.5, 0.5], [0.5, 0.5, 0.0]]),
         dict(probs=[[0.2, 0.0, 0.8], [0.3, 0.3, 0.4]])),
    ]
    for (E, T), pp, qp in cases:
        ke = D.kl_divergence(E(**{k: ember.tensor(v) for k, v in pp.items()}),
                             E(**{k: ember.tensor(v) for k, v in qp.items()}))
        kt = TD.kl_divergence(T(**{k: torch.tensor(v) for k, v in pp.items()}),
                              T(**{k: torch.tensor(v) for k, v in qp.items()}))
        close(ke, kt, np.float32)
    close(D.kl_divergence(D.Uniform(0.0, 2.0), D.Uniform(0.5, 3.0)),
          TD.kl_divergence(TD.Uniform(0.0, 2.0), TD.Uniform(0.5, 3.0)), np.float32)
    lo, hi = [-0.5, 0.2], [0.5, 0.7]
    for qe, qt in ((D.Beta(2.0, 3.0), TD.Beta(2.0, 3.0)), (D.Gamma(2.0, 3.0), TD.Gamma(2.0, 3.0)),
                   (D.Normal(0.0, 1.0), TD.Normal(0.0, 1.0))):
        close(D.kl_divergence(D.Uniform(ember.tensor(lo), ember.tensor(hi)), qe),
              TD.kl_divergence(TD.Uniform(torch.tensor(lo), torch.tensor(hi)), qt), np.float32)
    close(D.kl_divergence(D.Beta(ember.tensor([2.0, 0.5]), 3.0), D.Uniform(0.0, 1.0)),
          TD.kl_divergence(TD.Beta(torch.tensor([2.0, 0.5]), 3.0), TD.Uniform(0.0, 1.0)),
          np.float32)


def test_kl_of_a_distribution_with_itself_is_zero():
    for name in ("Normal", "Gamma", "Beta", "Dirichlet", "MultivariateNormal", "Categorical"):
        p, _, _, _ = _make(name, FAMILIES[name][0])
        close(D.kl_divergence(p, p), np.zeros(p.batch_shape), atol=1e-12)


def test_unregistered_pair_and_mismatches_raise():
    with pytest.raises(NotImplementedError, match="p of type Bernoulli and q of type Normal"):
        D.kl_divergence(D.Bernoulli(0.3), D.Normal(0.0, 1.0))
    with pytest.raises(NotImplementedError, match="reinterpreted_batch_ndims"):
        D.kl_divergence(D.Independent(D.Normal(ember.zeros(2, 2), 1.0), 1),
                        D.Independent(D.Normal(ember.zeros(2, 2), 1.0), 2))
    with pytest.raises(NotImplementedError, match="equal transforms"):
        D.kl_divergence(D.TransformedDistribution(D.Normal(0.0, 1.0), [D.ExpTransform()]),
                        D.TransformedDistribution(D.Normal(0.0, 1.0), [D.TanhTransform()]))
    with pytest.raises(TypeError, match="type_p must be a Distribution subclass"):
        D.register_kl(int, D.Normal)


def test_register_kl_dispatches_to_the_most_specific_pair():
    class MyNormal(D.Normal):
        pass

    class Other(D.Normal):
        pass

    p, q = MyNormal(0.0, 1.0), D.Normal(1.0, 1.0)
    close(D.kl_divergence(p, q), torch.tensor(0.5), np.float32)  # inherits Normal-Normal
    saved = dict(ember_kl._KL_REGISTRY)
    try:
        @D.register_kl(MyNormal, D.Normal)
        def _mine(p, q):
            return ember.tensor(-1.0)
        assert D.kl_divergence(p, q).item() == -1.0
        assert D.kl_divergence(q, p).item() == 0.5  # (Normal, MyNormal): still Normal-Normal

        @D.register_kl(D.Normal, Other)
        def _other(p, q):
            return ember.tensor(-2.0)
        with pytest.warns(RuntimeWarning, match="ambiguous kl_divergence"):
            D.kl_divergence(p, Other(0.0, 1.0))
    finally:
        ember_kl._KL_REGISTRY.clear()
        ember_kl._KL_REGISTRY.update(saved)
        ember_kl._KL_MEMO.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        close(D.kl_divergence(p, q), torch.tensor(0.5), np.float32)
