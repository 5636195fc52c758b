"""text benchmarks: ember.text against transformers/torch in one run (ratios ember/anchor).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/text.py --threads 2 [--filter bert]

Goals (issue "text", item 5): BERT-base inference at batch 8 x 128 <= 1.3 against
transformers' ``BertModel`` on torch (both in eval mode without autograd, the same random
weights: ember loads the torch model's state dict through ``load_hf_state_dict``, and the
figure checks once that both give the same hidden states).

Padding-free vs padded encoder (goal: the padding-free one >= 1.5x faster, forward and
forward + backward; the anchor is ember's own padded path, so "ratio" is jagged/padded and
the goal column checks padded/jagged >= 1.5): one ember encoder (6 layers, d=384, 12 heads,
FFN 1536, vocabulary 30522: MiniLM-L6's shape) on a batch of 32 sequences with lengths drawn
uniformly with mean/max = 0.6 and max 256, given once as a JaggedTensor and once padded to
256 with an attention mask. Eval mode (no dropout, so both compute the same function); the
backward is of the sum of the valid tokens' states times fixed random weights, into every
parameter. The figure checks once that both paths give the same hidden states and gradients.
"""
from __future__ import annotations

from harness import Suite  # first: fixes the thread count

suite = Suite("text")


def _bert_pair(batch, length, **cfg):
    """(ember model, torch model, ids, mask) for a BERT-shaped encoder with shared weights."""
    import numpy as np
    import torch
    import transformers

    import ember
    from ember.text.models import EncoderConfig, EncoderModel, load_hf_state_dict

    torch.manual_seed(0)
    tcfg = transformers.BertConfig(**cfg)
    tm = transformers.BertModel(tcfg).eval()
    em = EncoderModel(EncoderConfig.from_dict(tcfg.to_dict())).eval()
    load_hf_state_dict(em, {k: v.numpy() for k, v in tm.state_dict().items()})
    rng = np.random.default_rng(0)
    ids = rng.integers(1000, tcfg.vocab_size, (batch, length))
    mask = np.ones((batch, length), dtype=np.int64)
    e_ids, e_mask = ember.tensor(ids), ember.tensor(mask)
    t_ids, t_mask = torch.from_numpy(ids), torch.from_numpy(mask)
    with ember.no_grad(), torch.no_grad():
        a = em(e_ids, e_mask).last_hidden_state.numpy()
        b = tm(input_ids=t_ids, attention_mask=t_mask).last_hidden_state.numpy()
    err = float(np.abs(a - b).max() / np.abs(b).max())
    if err > 1e-3:
        raise AssertionError(f"ember and transformers hidden states differ (max rel {err:.2e})")

    def run_e():
        with ember.no_grad():
            em(e_ids, e_mask)

    def run_t():
        with torch.no_grad():
            tm(input_ids=t_ids, attention_mask=t_mask)
    return run_e, run_t


def _bert_flops(batch, length, d=768, layers=12, ffn=3072):
    tokens = batch * length
    per_layer = 2 * tokens * (4 * d * d + 2 * d * ffn) + 4 * batch * length * length * d
    return layers * per_layer


@suite.figure("BERT-base inference, batch 8 x 128", unit="ms", goal=1.3, number=1,
              flops=_bert_flops(8, 128))
def bert_base_inference():
    return _bert_pair(8, 128)


def _jagged_lengths(batch=32, max_len=256, ratio=0.6, seed=0):
    """Lengths uniform in [lo, max_len] (mean ratio * max_len), the first set to max_len,
    redrawn (deterministically) until mean/max is within 0.005 of ``ratio``."""
    import numpy as np

    rng = np.random.default_rng(seed)
    lo = round((2 * ratio - 1) * max_len)
    while True:
        lens = rng.integers(lo, max_len + 1, batch)
        lens[0] = max_len
        if abs(lens.mean() / max_len - ratio) < 0.005:
            return lens


def _jagged_pair(backward):
    """(jagged run, padded run) of one encoder on the same batch."""
    import numpy as np

    import ember
    from ember.jagged import JaggedTensor
    from ember.text.models import EncoderConfig, EncoderModel

    cfg = EncoderConfig(vocab_size=30522, hidden_size=384, num_hidden_layers=6,
                        num_attention_heads=12, intermediate_size=1536,
                        max_position_embeddings=512)
    ember.manual_seed(0)
    model = EncoderModel(cfg).eval()
    lens = _jagged_lengths()
    rng = np.random.default_rng(1)
    seqs = [rng.integers(1000, cfg.vocab_size, n) for n in lens]
    width = int(lens.max())
    ids = np.zeros((len(lens), width), np.int64)
    mask = np.zeros((len(lens), width), np.int64)
    for i, s in enumerate(seqs):
        ids[i, :len(s)], mask[i, :len(s)] = s, 1
    valid = mask.astype(bool)
    w = rng.standard_normal((int(lens.sum()), cfg.hidden_size)).astype(np.float32)
    grid = np.zeros(ids.shape + (cfg.hidden_size,), np.float32)
    grid[valid] = w
    jt = JaggedTensor(ember.tensor(np.concatenate(seqs)), lengths=lens)
    e_ids, e_mask, e_w, e_grid = (ember.tensor(a) for a in (ids, mask, w, grid))

    def fwd_j():
        with ember.no_grad():
            return model(jt)[0].values()

    def fwd_p():
        with ember.no_grad():
            return model(e_ids, e_mask)[0]

    def bwd_j():
        model.zero_grad()
        (model(jt)[0].values() * e_w).sum().backward()

    def bwd_p():
        model.zero_grad()
        (model(e_ids, e_mask)[0] * e_grid).sum().backward()

    a, b = fwd_j().numpy(), fwd_p().numpy()[valid]
    err_h = float(np.abs(a - b).max() / np.abs(b).max())
    if err_h > 1e-5:
        raise AssertionError(f"jagged and padded hidden states differ (max rel {err_h:.2e})")
    if backward:
        grads = []
        for run in (bwd_j, bwd_p):
            run()
            grads.append({k: p.grad.numpy().copy() for k, p in model.named_parameters()
                          if p.grad is not None})
        scale = max(float(np.abs(g).max()) for g in grads[1].values())
        worst = 0.0
        for k, g in grads[1].items():
            err = float(np.abs(grads[0][k] - g).max()) / max(float(np.abs(g).max()),
                                                              1e-4 * scale)   # key bias: 0
            worst = max(worst, err)
            if err > 1e-5:
                raise AssertionError(f"jagged and padded gradients of {k} differ (max rel "
                                     f"{err:.2e})")
        print(f"# padding-free check: hidden states max rel {err_h:.1e}, gradients {worst:.1e}")
        return bwd_j, bwd_p
    return fwd_j, fwd_p


@suite.figure("encoder 6x384, 32 seqs <=256 (0.6): forward", unit="ms", goal=1.5, number=1,
              anchor="padded", higher_is_better=True)
def jagged_encoder_forward():
    return _jagged_pair(backward=False)


@suite.figure("encoder 6x384, 32 seqs <=256 (0.6): fwd+bwd", unit="ms", goal=1.5, number=1,
              anchor="padded", higher_is_better=True)
def jagged_encoder_backward():
    return _jagged_pair(backward=True)


if __name__ == "__main__":
    suite.main()
