"""The special functions behind the distributions, against torch (values and gradients)."""
import math

import numpy as np
import pytest
import torch

import ember
from ember.distributions import _special as S
from dist_helpers import close, leaf

POS = np.concatenate([np.linspace(1e-4, 0.5, 23), np.linspace(0.5, 30, 57),
                      np.logspace(1.5, 7, 17)])
NEG = -np.linspace(0.05, 20.3, 29)  # non-integers below zero (reflection formulas)


@pytest.mark.parametrize("x", [POS, NEG], ids=["positive", "negative"])
def test_lgamma_digamma_polygamma_match_torch(x):
    xt = torch.tensor(x)
    close(S.lgamma(ember.tensor(x)), torch.lgamma(xt), rtol=1e-12, atol=1e-12)
    close(S.digamma(ember.tensor(x)), torch.digamma(xt), rtol=1e-11, atol=1e-11)
    for n in (1, 2, 3):
        # torch's trigamma is good to ~1e-9 (ours to ~1e-14, checked against mpmath in development)
        close(S.polygamma(n, ember.tensor(x)), torch.polygamma(n, xt), rtol=1e-8, atol=1e-12)


def test_special_values():
    e = ember.tensor([0.0, -1.0, -2.0], dtype=ember.float64)
    t = torch.tensor([0.0, -1.0, -2.0], dtype=torch.float64)
    close(S.lgamma(e), torch.lgamma(t))
    assert S.digamma(e).numpy()[0] == -math.inf and np.isnan(S.digamma(e).numpy()[1:]).all()
    close(S.erfinv(ember.tensor([1.0, -1.0, 1.5, 0.0])), torch.erfinv(
        torch.tensor([1.0, -1.0, 1.5, 0.0])))


def test_float32_in_float32_out():
    x = ember.tensor([0.3, 2.5, 40.0])
    for f in (S.lgamma, S.digamma):
        assert f(x).dtype == ember.float32
    close(S.lgamma(x), torch.lgamma(torch.tensor([0.3, 2.5, 40.0])), np.float32)


def test_erfinv_matches_torch_into_the_tails():
    y = np.concatenate([np.linspace(-0.999999, 0.999999, 2001),
                        [1 - 1e-12, -1 + 1e-12, 1 - 2e-16, 1e-300, 1e-8]])
    close(S.erfinv(ember.tensor(y)), torch.erfinv(torch.tensor(y)), rtol=1e-12, atol=1e-14)


def test_gradients_are_the_next_derivative_and_double_backward_works():
    e, t = leaf([0.2, 1.7, 9.0, -0.4])
    for fe, ft in ((S.lgamma, torch.lgamma), (S.digamma, torch.digamma),
                   (lambda x: S.polygamma(1, x), lambda x: torch.polygamma(1, x))):
        ge, = ember.autograd.grad(fe(e).sum(), e, create_graph=True)
        gt, = torch.autograd.grad(ft(t).sum(), t, create_graph=True)
        close(ge, gt, rtol=1e-8)  # torch's trigamma is good to ~1e-9
        close(ember.autograd.grad(ge.sum(), e)[0], torch.autograd.grad(gt.sum(), t)[0],
              rtol=1e-8)
    e, t = leaf([-0.9, 0.1, 0.99])
    S.erfinv(e).sum().backward()
    torch.erfinv(t).sum().backward()
    close(e.grad, t.grad, rtol=1e-10)


def test_gammainc_values_and_x_gradient_match_torch():
    a = np.array([0.05, 0.5, 1.0, 3.0, 20.0, 300.0, 2e5])[:, None]
    x = np.array([1e-3, 0.2, 1.0, 2.5, 19.0, 280.0, 2e5 + 300.0])[None, :]
    a = np.broadcast_to(a, (7, 7)).copy()
    ae, at = ember.tensor(a), torch.tensor(a)  # torch has no gradient in a
    xe, xt = leaf(np.broadcast_to(x, (7, 7)))
    pe, pt = S.gammainc(ae, xe), torch.special.gammainc(at, xt)
    close(pe, pt, rtol=1e-9, atol=1e-13)
    pe.sum().backward()
    pt.sum().backward()
    close(xe.grad, xt.grad, rtol=1e-9, atol=1e-13)


def test_gammainc_concentration_gradient_by_finite_differences():
    a = np.array([0.1, 0.7, 2.0, 15.0, 150.0])
    x = np.array([0.05, 1.3, 0.9, 18.0, 140.0])
    ae = ember.tensor(a, requires_grad=True)
    S.gammainc(ae, ember.tensor(x)).sum().backward()
    h = 1e-6 * a
    fd = (torch.special.gammainc(torch.tensor(a + h), torch.tensor(x)) -
          torch.special.gammainc(torch.tensor(a - h), torch.tensor(x))) / torch.tensor(2 * h)
    close(ae.grad, fd, rtol=1e-5, atol=1e-10)


def _fd_standard_gamma_grad(x, alpha):
    """dx/dalpha at fixed CDF level from torch's incomplete gamma: -(dP/dalpha) / pdf, with
    P differenced in the lower half and Q = 1 - P in the upper half (where P ~ 1)."""
    a, xx = torch.tensor(alpha), torch.tensor(x)
    h = 1e-6 * a
    lower = torch.special.gammainc(a, xx) < 0.5
    dP = torch.where(
        lower, torch.special.gammainc(a + h, xx) - torch.special.gammainc(a - h, xx),
        torch.special.gammaincc(a - h, xx) - torch.special.gammaincc(a + h, xx)) / (2 * h)
    pdf = torch.exp((a - 1) * torch.log(xx) - xx - torch.lgamma(a))
    return -dP / pdf


def _gamma_quantile(alpha, u):
    """x with P(alpha, x) = u, by bisection on torch's CDF (in log x)."""
    a = torch.tensor(alpha, dtype=torch.float64)
    lo, hi = math.log(1e-300), math.log(alpha + 60 * math.sqrt(alpha) + 60)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        p = torch.special.gammainc(a, torch.tensor(math.exp(mid), dtype=torch.float64))
        lo, hi = (mid, hi) if p < u else (lo, mid)
    return math.exp(0.5 * (lo + hi))


def test_standard_gamma_grad_matches_torch_where_torch_is_accurate():
    # torch's own approximation is good to ~1e-4 away from the extreme tails
    alpha = np.array([0.3, 0.8, 1.5, 4.0, 9.0, 30.0, 200.0, 1e4])[:, None]
    g = torch.distributions.Gamma(torch.tensor(alpha), 1.0)
    torch.manual_seed(0)
    x = g.sample((400,)).numpy()
    ours = S.standard_gamma_grad_array(x, np.broadcast_to(alpha, x.shape))
    ref = torch._standard_gamma_grad(torch.tensor(np.broadcast_to(alpha, x.shape).copy()),
                                     torch.tensor(x)).numpy()
    np.testing.assert_allclose(ours, ref, rtol=1e-3, atol=1e-6)


@pytest.mark.parametrize("alpha", [0.01, 0.2, 1.0, 3.3, 50.0, 5000.0, 3e4])
def test_standard_gamma_grad_matches_the_implicit_derivative_everywhere(alpha):
    # CDF levels from far in the lower tail to far in the upper tail; the levels whose
    # quantile underflows (tiny alpha) are skipped
    xs = [_gamma_quantile(alpha, u) for u in (1e-6, 0.01, 0.3, 0.5, 0.7, 0.99, 1 - 1e-6)]
    x = np.array([v for v in xs if v > 1e-250])
    ours = S.standard_gamma_grad_array(x, np.full_like(x, alpha))
    ref = _fd_standard_gamma_grad(x, np.full_like(x, alpha)).numpy()
    np.testing.assert_allclose(ours, ref, rtol=2e-5)


def test_large_concentration_branch_is_continuous_with_the_series():
    a = np.full(7, S._BIG_A)
    x = a + np.array([-6, -3, -1, 0, 1, 3, 6]) * np.sqrt(a)
    above = S._gamma_parts(a * (1 + 1e-12), x, True)  # Temme's expansion
    below = S._gamma_parts(a * (1 - 1e-12), x, True)  # series / continued fraction
    np.testing.assert_allclose(above[0], below[0], rtol=1e-8, atol=1e-15)
    np.testing.assert_allclose(above[1], below[1], rtol=1e-6)


def test_gammainc_edge_values_match_torch():
    a = [1.0, math.nan, 2.0, -1.0, 3.0, 0.5, math.inf]
    x = [math.nan, 1.0, math.inf, 1.0, 0.0, -1.0, 3.0]
    close(S.gammainc(ember.tensor(a), ember.tensor(x)),
          torch.special.gammainc(torch.tensor(a), torch.tensor(x)), np.float32)
