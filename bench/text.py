"""text benchmarks: ember.text against transformers/torch in one run (ratios ember/anchor).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/text.py --threads 2 [--filter bert]

Goals (issue "text", item 5): BERT-base inference at batch 8 x 128 <= 1.3 against
transformers' ``BertModel`` on torch (both in eval mode without autograd, the same random
weights: ember loads the torch model's state dict through ``load_hf_state_dict``, and the
figure checks once that both give the same hidden states).
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


if __name__ == "__main__":
    suite.main()
