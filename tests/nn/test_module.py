"""nn.Module, Parameter, containers: behaviour and state-dict layout against torch twins."""
from __future__ import annotations

import copy
import pickle
from collections import OrderedDict

import numpy as np
import pytest
import torch

import ember
from ember import nn


class _Block(nn.Module):
    def __init__(self, lib):
        super().__init__()
        self.w = lib.nn.Parameter(lib.ones(2, 3))
        self.register_buffer("stat", lib.zeros(3))
        self.register_buffer("scratch", lib.zeros(1), persistent=False)
        self.inner = nn.Sequential(nn.Identity(), nn.Flatten()) if lib is ember else \
            torch.nn.Sequential(torch.nn.Identity(), torch.nn.Flatten())

    def forward(self, x):
        return (x @ self.w) + self.stat


class _TorchBlock(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(2, 3))
        self.register_buffer("stat", torch.zeros(3))
        self.register_buffer("scratch", torch.zeros(1), persistent=False)
        self.inner = torch.nn.Sequential(torch.nn.Identity(), torch.nn.Flatten())


def _pair():
    e = nn.Sequential(OrderedDict(a=_Block(ember), b=nn.ModuleList([_Block(ember)])))
    t = torch.nn.Sequential(OrderedDict(a=_TorchBlock(), b=torch.nn.ModuleList([_TorchBlock()])))
    return e, t


def test_names_and_order_match_torch():
    e, t = _pair()
    assert list(e.state_dict()) == list(t.state_dict())
    assert [n for n, _ in e.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert [n for n, _ in e.named_buffers()] == [n for n, _ in t.named_buffers()]
    assert [n for n, _ in e.named_modules()] == [n for n, _ in t.named_modules()]
    assert [n for n, _ in e.named_children()] == [n for n, _ in t.named_children()]
    assert repr(e).replace("_Block", "X") == repr(t).replace("_TorchBlock", "X")


def test_state_dict_shares_memory_and_load_copies():
    e, _ = _pair()
    sd = e.state_dict()
    assert not sd["a.w"].requires_grad
    assert np.shares_memory(sd["a.w"].numpy(), e.a.w.array)
    new = {k: ember.full(tuple(v.shape), 7.0) for k, v in sd.items()}
    w_before = e.a.w
    r = e.load_state_dict(new)
    assert r.missing_keys == [] and r.unexpected_keys == []
    assert repr(r) == "<All keys matched successfully>"
    assert e.a.w is w_before  # same Parameter object, new values
    assert float(e.a.w.array[0, 0]) == 7.0 and float(e.b[0].stat.array[1]) == 7.0


def test_load_state_dict_reports_like_torch():
    e, t = _pair()
    sd = {k: v.detach().numpy() for k, v in t.state_dict().items()}
    del sd["a.w"]
    sd["a.extra"] = np.zeros(1, np.float32)
    with pytest.raises(RuntimeError) as ee:
        e.load_state_dict(sd)
    with pytest.raises(RuntimeError) as te:
        t.load_state_dict({k: torch.from_numpy(v) for k, v in sd.items()})
    assert str(ee.value).replace("Sequential", "S") == str(te.value).replace("Sequential", "S")
    r = e.load_state_dict(sd, strict=False)
    assert r.missing_keys == ["a.w"] and r.unexpected_keys == ["a.extra"]


def test_size_mismatch_message():
    lin = _Block(ember)
    with pytest.raises(RuntimeError, match=r"size mismatch for w: copying a param with shape "
                                           r"\[3, 2\] from checkpoint, the shape in current "
                                           r"model is \[2, 3\]"):
        lin.load_state_dict({"w": np.zeros((3, 2), np.float32), "stat": np.zeros(3)})


def test_assignment_rules():
    m = nn.Module()
    m.p = nn.Parameter(ember.zeros(2))
    assert "p" in m._parameters
    with pytest.raises(TypeError, match="cannot assign 'Tensor' as parameter 'p'"):
        m.p = ember.zeros(2)
    m.p = None
    assert m.p is None and list(m.parameters()) == []
    m.sub = nn.Identity()
    with pytest.raises(TypeError, match="child module 'sub'"):
        m.sub = 3
    m.register_buffer("b", ember.ones(1))
    m.b = ember.zeros(1)  # buffers may be reassigned with tensors
    assert m._buffers["b"].item() == 0.0
    with pytest.raises(KeyError, match="contain"):
        m.register_parameter("a.b", nn.Parameter(ember.zeros(1)))
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        m.nope
    del m.sub
    assert "sub" not in m._modules
    with pytest.raises(AttributeError, match="before Module.__init__"):
        class Bad(nn.Module):
            def __init__(self):
                self.p = nn.Parameter(ember.zeros(1))
        Bad()


def test_train_eval_requires_grad_zero_grad_apply():
    e, _ = _pair()
    e.eval()
    assert not any(m.training for m in e.modules())
    e.train()
    assert all(m.training for m in e.modules())
    e.requires_grad_(False)
    assert not any(p.requires_grad for p in e.parameters())
    e.requires_grad_(True)
    y = e.a(ember.ones(4, 2)).sum()
    y.backward()
    assert e.a.w.grad is not None
    e.zero_grad(set_to_none=False)
    assert float(e.a.w.grad.abs().sum()) == 0.0
    e.zero_grad()
    assert e.a.w.grad is None
    seen = []
    e.apply(lambda m: seen.append(type(m).__name__))
    assert seen[-1] == "Sequential" and seen.index("Identity") < seen.index("_Block")


def test_to_dtype_only_floats_and_keeps_parameter_identity():
    m = _Block(ember)
    m.register_buffer("count", ember.tensor(3))
    w = m.w
    m.to(ember.float64)
    assert m.w is w and m.w.dtype == ember.float64 and m.stat.dtype == ember.float64
    assert m.count.dtype == ember.int64
    m.float()
    assert m.w.dtype == ember.float32
    with pytest.raises(TypeError, match="floating point or complex"):
        m.to(ember.int32)


def test_forward_hooks():
    m = _Block(ember)
    calls = []
    h1 = m.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
    h2 = m.register_forward_hook(lambda mod, args, out: out + 1)
    h3 = m.register_forward_hook(lambda mod, args, kwargs, out: calls.append(kwargs),
                                 with_kwargs=True)
    x = ember.ones(1, 2)
    y = m(x)
    assert np.allclose(y.detach().numpy(), 2 * 2 + 1)
    assert calls == [{}]
    for h in (h1, h2, h3):
        h.remove()
    assert np.allclose(m(x).detach().numpy(), 2)


def test_containers():
    s = nn.Sequential(nn.Identity(), nn.Flatten(), nn.Identity())
    assert isinstance(s[-1], nn.Identity) and len(s[1:]) == 2
    del s[0]
    assert list(s._modules) == ["0", "1"]
    s.append(nn.Identity()).insert(0, nn.Flatten())
    assert [type(m).__name__ for m in s] == ["Flatten", "Flatten", "Identity", "Identity"]
    with pytest.raises(IndexError, match="out of range"):
        s[9]
    ml = nn.ModuleList([nn.Identity()])
    ml += [nn.Flatten()]
    assert len(ml) == 2 and list(ml.state_dict()) == []
    md = nn.ModuleDict({"x": nn.Identity()})
    md["y"] = nn.Flatten()
    assert list(md.keys()) == ["x", "y"] and "x" in md
    pl = nn.ParameterList([ember.zeros(2), nn.Parameter(ember.ones(3))])
    assert [k for k, _ in pl.named_parameters()] == ["0", "1"]
    assert all(isinstance(p, nn.Parameter) for p in pl)
    pd = nn.ParameterDict({"a": ember.zeros(1)})
    assert list(pd.state_dict()) == ["a"]
    tl = torch.nn.ParameterList([torch.nn.Parameter(torch.zeros(2)),
                                 torch.nn.Parameter(torch.ones(3))])
    assert list(pl.state_dict()) == list(tl.state_dict())


def test_parameter_behaves_as_tensor():
    p = nn.Parameter(ember.tensor([1.0, 2.0]))
    t = ember.tensor([3.0, 4.0])
    out = p + t
    assert type(out) is ember.Tensor and out.requires_grad
    assert repr(p).startswith("Parameter containing:\n")
    q = copy.deepcopy(p)
    assert isinstance(q, nn.Parameter) and q.requires_grad
    assert not np.shares_memory(q.array, p.array)
    r = pickle.loads(pickle.dumps(p))
    assert isinstance(r, nn.Parameter) and r.tolist() == [1.0, 2.0]
    with pytest.raises(TypeError, match="must be a Tensor"):
        nn.Parameter([1.0])


def test_deepcopy_module():
    e, _ = _pair()
    f = copy.deepcopy(e)
    assert list(f.state_dict()) == list(e.state_dict())
    f.a.w.array[...] = 5
    assert float(e.a.w.array[0, 0]) == 1.0


def test_get_submodule_parameter_buffer():
    e, _ = _pair()
    assert e.get_submodule("b.0.inner.1").__class__ is nn.Flatten
    assert e.get_parameter("b.0.w") is e.b[0].w
    assert e.get_buffer("a.stat") is e.a.stat
    with pytest.raises(AttributeError, match="has no submodule `zz`"):
        e.get_submodule("a.zz")
