"""The RL losses against references written here in torch (float64) from the papers'
formulas, on fixed small batches: every loss term's value and the gradients it sends to each
network, plus the target-network updaters.

The networks are small ember MLPs; the reference evaluates the same weights (``tp``) with
torch ops. Where a loss samples (SAC's actions, TD3's smoothing noise) the reference re-draws
the same standard normals by reseeding ember's generator (the losses draw them in a
documented order: SAC the current then the next actions, TD3 the noise)."""
import math

import numpy as np
import pytest
import torch

import ember
from ember import nn
from ember.distributions import Categorical
from ember.rl import TensorDict
from ember.rl.envs import Bounded
from ember.rl.modules import (MLP, Actor, DuelingMlpDQNet, NormalParamExtractor,
                              ProbabilisticActor, QValueActor, TanhNormal, TensorDictModule,
                              ValueOperator)
from ember.rl.objectives import (A2CLoss, ClipPPOLoss, DDPGLoss, DQNLoss, HardUpdate,
                                 KLPENPPOLoss, PPOLoss, SACLoss, SoftUpdate, TD3Loss)

B, OBS, ACT, NA = 8, 3, 2, 3
GAMMA = 0.9
T = torch.float64


# --------------------------------------------------------------------------- helpers
def tp(module):
    """torch float64 leaf copies of ``module``'s parameters, by name."""
    return {k: torch.tensor(v.detach().numpy().astype(np.float64), requires_grad=True)
            for k, v in module.named_parameters()}


def tmlp(p, x, prefix=""):
    """Evaluate an ember MLP (Linear at even indices, tanh between) with torch weights."""
    i = 0
    while f"{prefix}{i}.weight" in p:
        if i:
            x = torch.tanh(x)
        x = x @ p[f"{prefix}{i}.weight"].T + p[f"{prefix}{i}.bias"]
        i += 2
    return x


def close(a, b, tol=2e-4):
    a = a.detach().numpy() if isinstance(a, ember.Tensor) else np.asarray(a)
    b = b.detach().numpy() if isinstance(b, torch.Tensor) else np.asarray(b)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def grads_close(module, ref, prefix_map=lambda k: k, tol=2e-4):
    for k, p in module.named_parameters():
        r = ref[prefix_map(k)].grad
        g = p.grad
        if r is None or float(r.abs().max()) == 0:
            assert g is None or float(g.abs().max().item()) < 1e-7, k
        else:
            assert g is not None, f"no gradient for {k}"
            close(g, r, tol)


def t(x):
    return torch.tensor(np.asarray(x.numpy() if isinstance(x, ember.Tensor) else x), dtype=T)


def batch(seed=0, discrete=False, shape=(B,)):
    rng = np.random.default_rng(seed)
    obs = rng.standard_normal(shape + (OBS,)).astype(np.float32)
    nobs = rng.standard_normal(shape + (OBS,)).astype(np.float32)
    r = rng.standard_normal(shape + (1,)).astype(np.float32)
    term = rng.random(shape + (1,)) < 0.3
    done = term | (rng.random(shape + (1,)) < 0.2)
    act = rng.integers(0, NA, shape) if discrete else \
        rng.uniform(-0.9, 0.9, shape + (ACT,)).astype(np.float32)
    td = TensorDict({"observation": ember.tensor(obs), "action": ember.tensor(act), "next": {
        "observation": ember.tensor(nobs), "reward": ember.tensor(r),
        "done": ember.tensor(done), "terminated": ember.tensor(term)}}, list(shape))
    return td, {"obs": t(obs), "nobs": t(nobs), "r": t(r)[..., 0],
                "term": t(term.astype(np.float64))[..., 0],
                "done": t(done.astype(np.float64))[..., 0], "act": act}


def cat_actor():
    ember.manual_seed(0)
    net = MLP(in_features=OBS, out_features=NA, num_cells=[8])
    return ProbabilisticActor(TensorDictModule(net, ["observation"], ["logits"]), ["logits"],
                              distribution_class=Categorical, return_log_prob=True), net


def critic():
    net = MLP(in_features=OBS, out_features=1, num_cells=[8])
    return ValueOperator(net), net


def smooth_l1(a, b):
    return torch.nn.functional.smooth_l1_loss(a, b, reduction="none")


# --------------------------------------------------------------------------- PPO / A2C
def onpolicy_batch(actor, seed=0):
    td, ref = batch(seed, discrete=True)
    rng = np.random.default_rng(seed + 10)
    with ember.no_grad():
        actor(td)                                   # logits, a sampled action, its log-prob
    old_logits = td["logits"].numpy() + rng.standard_normal((B, NA)).astype(np.float32) * 0.5
    td.set("logits", ember.tensor(old_logits))      # the behaviour policy's parameters
    lp = torch.log_softmax(t(old_logits), -1)
    act = td["action"].numpy()
    td.set("action_log_prob", ember.tensor(lp[np.arange(B), act].numpy().astype(np.float32)))
    td.set("advantage", ember.tensor(rng.standard_normal((B, 1)).astype(np.float32)))
    td.set("value_target", ember.tensor(rng.standard_normal((B, 1)).astype(np.float32)))
    ref.update(act=act, old_logits=t(old_logits), old_lp=lp[np.arange(B), act],
               adv=t(td["advantage"])[:, 0], vt=t(td["value_target"])[:, 0])
    return td, ref


@pytest.mark.parametrize("kind,normalize", [(k, n) for k in ("clip", "plain", "klpen")
                                             for n in (False, True)] + [("a2c", False)])
def test_policy_gradient_losses(kind, normalize):
    actor, anet = cat_actor()
    crit, cnet = critic()
    td, ref = onpolicy_batch(actor)
    common = dict(entropy_coef=0.05, critic_coef=0.7, loss_critic_type="smooth_l1")
    if kind == "a2c":
        loss = A2CLoss(actor, crit, **common)
    else:
        cls = {"clip": ClipPPOLoss, "plain": PPOLoss, "klpen": KLPENPPOLoss}[kind]
        extra = {"clip_epsilon": 0.15} if kind == "clip" else {}
        if kind == "klpen":
            extra = {"beta": 0.5, "dtarg": 0.01}
        loss = cls(actor, crit, normalize_advantage=normalize, **common, **extra)
    out = loss(td)
    total = out["loss_objective"] + out["loss_entropy"] + out["loss_critic"]
    total.backward()

    pa, pc = tp(anet), tp(cnet)
    logits = tmlp(pa, ref["obs"])
    dist = torch.distributions.Categorical(logits=logits)
    lp = dist.log_prob(torch.tensor(ref["act"]))
    adv = ref["adv"]
    if normalize:
        adv = (adv - adv.mean()) / adv.std().clamp_min(1e-6)
    lw = lp - ref["old_lp"]
    if kind == "a2c":
        obj = -(lp * adv).mean()
    elif kind == "plain":
        obj = -(lw.exp() * adv).mean()
    elif kind == "clip":
        clipped = lw.clamp(math.log1p(-0.15), math.log1p(0.15))
        obj = -torch.minimum(lw.exp() * adv, clipped.exp() * adv).mean()
        close(out["clip_fraction"], (clipped != lw).double().mean())
    else:
        old = torch.distributions.Categorical(logits=ref["old_logits"])
        kl = torch.distributions.kl_divergence(old, dist)
        obj = -(lw.exp() * adv - 0.5 * kl).mean()
        close(out["kl"], kl.mean())
        want_beta = 0.5 * (2.0 if kl.mean() > 0.015 else (0.5 if kl.mean() < 0.01 / 1.5
                                                          else 1.0))
        assert abs(loss.beta.item() - want_beta) < 1e-6
    ent = -0.05 * dist.entropy().mean()
    value = tmlp(pc, ref["obs"])[:, 0]
    crit_loss = 0.7 * smooth_l1(value, ref["vt"]).mean()
    close(out["loss_objective"], obj)
    close(out["loss_entropy"], ent)
    close(out["loss_critic"], crit_loss)
    close(out["entropy"], dist.entropy().mean())
    (obj + ent + crit_loss).backward()
    grads_close(anet, pa)
    grads_close(cnet, pc)
    if kind != "a2c":
        close(out["kl_approx"], (ref["old_lp"] - lp).mean())


def test_ppo_computes_gae_advantage_and_clip_value():
    actor, anet = cat_actor()
    crit, cnet = critic()
    td, ref = onpolicy_batch(actor, seed=3)
    td = td.exclude("advantage", "value_target")
    loss = ClipPPOLoss(actor, crit, gamma=GAMMA, critic_coef=1.0, loss_critic_type="l2",
                       entropy_bonus=False, clip_value=0.1)
    loss.make_value_estimator(lmbda=0.8)
    # the stored (old) value for value clipping
    td.set("state_value", ember.zeros(B, 1))
    loss.value_estimator.skip_existing = False
    out = loss(td)
    assert "loss_entropy" not in out.keys()
    pc = tp(cnet)
    with torch.no_grad():
        v, nv = tmlp(pc, ref["obs"])[:, 0], tmlp(pc, ref["nobs"])[:, 0]
        adv = torch.zeros(B, dtype=T)
        run = 0.0
        for i in reversed(range(B)):
            delta = ref["r"][i] + GAMMA * (1 - ref["term"][i]) * nv[i] - v[i]
            run = delta + GAMMA * 0.8 * (1 - ref["done"][i]) * run
            adv[i] = run
        target = adv + v
    pa = tp(anet)
    lp = torch.distributions.Categorical(logits=tmlp(pa, ref["obs"])).log_prob(
        torch.tensor(ref["act"]))
    lw = lp - ref["old_lp"]
    clipped = lw.clamp(math.log1p(-0.2), math.log1p(0.2))
    close(out["loss_objective"], -torch.minimum(lw.exp() * adv, clipped.exp() * adv).mean())
    # value clipping around the stored value (the estimator recomputed it: skip_existing off)
    value = tmlp(pc, ref["obs"])[:, 0]
    old = value.detach()
    vclip = old + (value - old).clamp(-0.1, 0.1)
    want = torch.maximum((value - target) ** 2, (vclip - target) ** 2).mean()
    close(out["loss_critic"], want)


def test_ppo_errors():
    actor, _ = cat_actor()
    td, _ = onpolicy_batch(actor)
    with pytest.raises(TypeError, match="probabilistic"):
        ClipPPOLoss(ValueOperator(nn.Linear(3, 1)))
    loss = ClipPPOLoss(actor, None)
    with pytest.raises(KeyError, match="action_log_prob"):
        loss(td.exclude("action_log_prob"))
    with pytest.raises(KeyError, match="no critic"):
        loss(td.exclude("advantage"))
    with pytest.raises(ValueError, match="clip_epsilon"):
        ClipPPOLoss(actor, None, clip_epsilon=1.5)


# --------------------------------------------------------------------------- DQN
def q_ref(p, x):
    """x @ W.T + b for the one Linear layer held in ``p``."""
    (w,) = [v for k, v in p.items() if k.endswith("weight")]
    (b,) = [v for k, v in p.items() if k.endswith("bias")]
    return x @ w.T + b


@pytest.mark.parametrize("double", [False, True])
@pytest.mark.parametrize("space", ["categorical", "one_hot"])
def test_dqn_loss(double, space):
    ember.manual_seed(1)
    qnet = QValueActor(nn.Linear(OBS, NA), action_space=space)
    loss = DQNLoss(qnet, double_dqn=double, loss_function="l2")
    loss.make_value_estimator(gamma=GAMMA)
    with ember.no_grad():                       # online and target differ
        qnet[0].module.weight.add_(0.3)
    td, ref = batch(2, discrete=True)
    if space == "one_hot":
        td.set("action", ember.tensor(np.eye(NA, dtype=np.int64)[ref["act"]]))
    out = loss(td)
    out["loss"].backward()
    p = tp(qnet)
    pt = {k: torch.tensor(v.numpy().astype(np.float64))
          for k, v in loss.target_value_network.state_dict().items()}
    q = q_ref(p, ref["obs"])
    pred = q[torch.arange(B), torch.tensor(ref["act"])]
    with torch.no_grad():
        qt = q_ref(pt, ref["nobs"])
        if double:
            a_star = q_ref(p, ref["nobs"]).argmax(-1)
            nv = qt[torch.arange(B), a_star]
        else:
            nv = qt.max(-1)[0]
        target = ref["r"] + GAMMA * (1 - ref["term"]) * nv
    want = ((pred - target) ** 2).mean()
    close(out["loss"], want)
    close(td["td_error"], (pred - target).abs())
    want.backward()
    grads_close(qnet, p)
    assert all(not k.startswith("target_") for k, _ in loss.named_parameters())


def test_dqn_dueling_and_errors():
    net = DuelingMlpDQNet(NA, mlp_kwargs_feature={"in_features": OBS, "num_cells": [8],
                                                   "out_features": 8},
                          mlp_kwargs_output={"num_cells": [8]})
    loss = DQNLoss(QValueActor(net, action_space="categorical"), delay_value=False)
    td, _ = batch(0, discrete=True)
    loss(td)["loss"].backward()
    assert all(p.grad is not None for p in net.parameters())
    with pytest.raises(ValueError, match="double_dqn"):
        DQNLoss(QValueActor(nn.Linear(3, 2)), double_dqn=True, delay_value=False)
    with pytest.raises(KeyError, match="action"):
        loss(td.exclude("action"))


# --------------------------------------------------------------------------- updaters
def test_soft_and_hard_updates():
    qnet = QValueActor(nn.Linear(OBS, NA), action_space="categorical")
    loss = DQNLoss(qnet)
    tgt = loss.target_value_network
    assert "target_value_network.module.0.module.weight" in loss.state_dict()
    w0 = tgt.state_dict()["module.0.module.weight"].numpy().copy()
    with ember.no_grad():
        qnet[0].module.weight.add_(1.0)
    SoftUpdate(loss, tau=0.1).step()
    close(tgt.state_dict()["module.0.module.weight"], 0.9 * w0 + 0.1 * (w0 + 1.0), 1e-6)
    hard = HardUpdate(loss, value_network_update_interval=3)
    hard.step()
    hard.step()
    close(tgt.state_dict()["module.0.module.weight"], 0.9 * w0 + 0.1 * (w0 + 1.0), 1e-6)
    hard.step()
    close(tgt.state_dict()["module.0.module.weight"], w0 + 1.0, 1e-6)
    assert hard.state_dict() == {"counter": 3}
    with pytest.raises(ValueError, match="eps or tau"):
        SoftUpdate(loss, eps=0.9, tau=0.1)
    with pytest.raises(ValueError, match="no target"):
        SoftUpdate(DQNLoss(QValueActor(nn.Linear(3, 2)), delay_value=False))


# --------------------------------------------------------------------------- SAC
def tanh_actor():
    ember.manual_seed(5)
    net = MLP(in_features=OBS, out_features=2 * ACT, num_cells=[8])
    return ProbabilisticActor(
        TensorDictModule(nn.Sequential(net, NormalParamExtractor(scale_mapping="exp")),
                         ["observation"], ["loc", "scale"]),
        ["loc", "scale"], distribution_class=TanhNormal), net


def qvalue():
    return ValueOperator(MLP(in_features=OBS + ACT, out_features=1, num_cells=[8]),
                         in_keys=["observation", "action"])


def t_tanh_normal(p, obs, eps):
    """(action, log_prob) of the tanh-Normal policy for the standard normals ``eps``."""
    out = tmlp(p, obs)
    loc, scale = out[..., :ACT], out[..., ACT:].exp().clamp_min(1e-4)
    u = loc + scale * eps
    logp = torch.distributions.Normal(loc, scale).log_prob(u) - \
        2 * (math.log(2) - u - torch.nn.functional.softplus(-2 * u))
    return torch.tanh(u), logp.sum(-1)


def test_sac_loss():
    actor, anet = tanh_actor()
    loss = SACLoss(actor, qvalue(), alpha_init=0.3, gamma=GAMMA)
    with ember.no_grad():
        for q in loss.qvalue_networks:            # online and target Q-nets differ
            q.module[0].weight.add_(0.2)
    assert loss.num_qvalue_nets == 2
    w = [q.module[0].weight.detach().numpy() for q in loss.qvalue_networks]
    assert not np.allclose(w[0], w[1])            # re-initialised copies
    td, ref = batch(4)
    ember.manual_seed(11)
    out = loss(td)
    (out["loss_actor"] + out["loss_qvalue"] + out["loss_alpha"]).backward()

    ember.manual_seed(11)
    eps1 = t(ember.randn(B, ACT))
    eps2 = t(ember.randn(B, ACT))
    pa = tp(anet)
    pq = [tp(q) for q in loss.qvalue_networks]
    pqt = [{k: torch.tensor(v.numpy().astype(np.float64)) for k, v in q.state_dict().items()}
           for q in loss.target_qvalue_networks]
    alpha = 0.3
    log_alpha = torch.tensor(math.log(0.3), dtype=T, requires_grad=True)

    def Q(p, obs, a):
        return tmlp(p, torch.cat([obs, a], -1), "module.")[:, 0]

    a, logp = t_tanh_normal(pa, ref["obs"], eps1)
    pq_frozen = [{k: v.detach() for k, v in p.items()} for p in pq]
    min_q = torch.minimum(Q(pq_frozen[0], ref["obs"], a), Q(pq_frozen[1], ref["obs"], a))
    loss_actor = (alpha * logp - min_q).mean()
    with torch.no_grad():
        a2, logp2 = t_tanh_normal(pa, ref["nobs"], eps2)
        nv = torch.minimum(Q(pqt[0], ref["nobs"], a2), Q(pqt[1], ref["nobs"], a2)) - \
            alpha * logp2
        target = ref["r"] + GAMMA * (1 - ref["term"]) * nv
    act = t(td["action"])
    loss_q = sum(smooth_l1(Q(p, ref["obs"], act), target) for p in pq).mean()
    loss_alpha = (-log_alpha * (logp.detach() - ACT)).mean()
    close(out["loss_actor"], loss_actor)
    close(out["loss_qvalue"], loss_q)
    close(out["loss_alpha"], loss_alpha)
    close(out["alpha"], 0.3)
    close(out["entropy"], -logp.mean())
    (loss_actor + loss_q + loss_alpha).backward()
    grads_close(anet, pa)
    for qe, p in zip(loss.qvalue_networks, pq):   # the actor term sends nothing to the Q-nets
        grads_close(qe, p)
    close(loss.log_alpha.grad, log_alpha.grad)
    # fixed alpha: no parameter, clamped alpha
    fixed = SACLoss(actor, qvalue(), alpha_init=5.0, max_alpha=2.0, fixed_alpha=True)
    assert "log_alpha" not in dict(fixed.named_parameters())
    close(fixed(td)["alpha"], 2.0)


# --------------------------------------------------------------------------- TD3 / DDPG
def det_actor():
    ember.manual_seed(7)
    net = MLP(in_features=OBS, out_features=ACT, num_cells=[8])
    return Actor(net, spec=Bounded(-1.0, 1.0, (ACT,))), net


def test_td3_loss():
    actor, anet = det_actor()
    loss = TD3Loss(actor, qvalue(), gamma=GAMMA, policy_noise=0.3, noise_clip=0.4)
    with ember.no_grad():
        for q in loss.qvalue_networks:
            q.module[0].weight.add_(0.2)
        anet[0].weight.add_(0.1)
    td, ref = batch(6)
    ember.manual_seed(13)
    out = loss(td)
    (out["loss_actor"] + out["loss_qvalue"]).backward()
    ember.manual_seed(13)
    noise = (t(ember.randn(B, ACT)) * 0.3).clamp(-0.4, 0.4)
    pa = tp(anet)
    pat = {k[len("module."):]: torch.tensor(v.numpy().astype(np.float64))
           for k, v in loss.target_actor_network.state_dict().items()}
    pq = [tp(q) for q in loss.qvalue_networks]
    pqt = [{k: torch.tensor(v.numpy().astype(np.float64)) for k, v in q.state_dict().items()}
           for q in loss.target_qvalue_networks]

    def Q(p, obs, a):
        return tmlp(p, torch.cat([obs, a], -1), "module.")[:, 0]

    loss_actor = -Q({k: v.detach() for k, v in pq[0].items()}, ref["obs"],
                    tmlp(pa, ref["obs"])).mean()
    with torch.no_grad():
        a2 = (tmlp(pat, ref["nobs"]) + noise).clamp(-1, 1)
        target = ref["r"] + GAMMA * (1 - ref["term"]) * torch.minimum(
            Q(pqt[0], ref["nobs"], a2), Q(pqt[1], ref["nobs"], a2))
    act = t(td["action"])
    loss_q = sum(smooth_l1(Q(p, ref["obs"], act), target).mean() for p in pq)
    close(out["loss_actor"], loss_actor)
    close(out["loss_qvalue"], loss_q)
    (loss_actor + loss_q).backward()
    grads_close(anet, pa)
    for qe, p in zip(loss.qvalue_networks, pq):
        grads_close(qe, p)
    with pytest.raises(ValueError, match="bounds"):
        TD3Loss(Actor(nn.Linear(3, 2)), qvalue())


def test_ddpg_loss():
    actor, anet = det_actor()
    qv = qvalue()
    loss = DDPGLoss(actor, qv, gamma=GAMMA)
    with ember.no_grad():
        qv.module[0].weight.add_(0.2)
    td, ref = batch(8)
    out = loss(td)
    (out["loss_actor"] + out["loss_value"]).backward()
    pa, pq = tp(anet), tp(qv)
    pqt = {k: torch.tensor(v.numpy().astype(np.float64))
           for k, v in loss.target_value_network.state_dict().items()}

    def Q(p, obs, a):
        return tmlp(p, torch.cat([obs, a], -1), "module.")[:, 0]

    loss_actor = -Q({k: v.detach() for k, v in pq.items()}, ref["obs"],
                    tmlp(pa, ref["obs"])).mean()
    with torch.no_grad():
        target = ref["r"] + GAMMA * (1 - ref["term"]) * Q(
            pqt, ref["nobs"], tmlp({k: v.detach() for k, v in pa.items()}, ref["nobs"]))
    loss_value = ((Q(pq, ref["obs"], t(td["action"])) - target) ** 2).mean()
    close(out["loss_actor"], loss_actor)
    close(out["loss_value"], loss_value)
    (loss_actor + loss_value).backward()
    grads_close(anet, pa)
    grads_close(qv, pq)
    assert not hasattr(loss, "target_actor_network") or \
        loss._modules.get("target_actor_network") is None
