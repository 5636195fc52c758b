"""Int8 row-wise (and fp16) quantized tables: the error against fp32, stated and bounded."""
import numpy as np
from rec_helpers import random_features

import ember
from ember import nn
from ember.rec import (DataType, EmbeddingBagCollection, EmbeddingBagConfig, EmbeddingCollection,
                       EmbeddingConfig, quantize_embeddings)
from ember.rec.modules.quant import (QuantEmbeddingBagCollection, dequantize_rowwise,
                                     quantize_rowwise)

ROWS = {"f1": 200, "f2": 50}


def _ebc():
    return EmbeddingBagCollection([
        EmbeddingBagConfig(name="t1", num_embeddings=200, embedding_dim=16,
                           feature_names=["f1"]),
        EmbeddingBagConfig(name="t2", num_embeddings=50, embedding_dim=8, feature_names=["f2"],
                           pooling="mean")], is_weighted=True)


def test_rowwise_codes_and_error_bound():
    rng = np.random.default_rng(0)
    w = rng.standard_normal((300, 32)).astype(np.float32) * rng.uniform(0.01, 3, (300, 1))
    w[7] = 0.25                                                   # a constant row
    q, scale, bias = quantize_rowwise(w)
    assert q.dtype == np.uint8 and q.shape == w.shape
    assert scale.dtype == bias.dtype == np.float16 and scale.shape == (300, 1)
    d = dequantize_rowwise(q, scale, bias)
    err = np.abs(d - w)
    s = scale.astype(np.float32)
    # every element within half a step of its row (no clipping: bias <= min, codes fit)
    assert np.all(err <= 0.5 * s * (1 + 1e-3) + 1e-7)
    assert np.all(bias.astype(np.float32) <= w.min(1, keepdims=True))
    np.testing.assert_allclose(d[7], 0.25, atol=1e-7)
    # both ends of each row's range are used: min -> 0, max -> 255 (within rounding)
    assert q.min(1).max() == 0 and np.delete(q, 7, 0).max(1).min() >= 254


def test_quantized_ebc_vs_fp32():
    """Stated error of int8 row-wise tables vs fp32, for tables initialised in
    +-sqrt(1/N): each pooled element is within sum_k |w_k| * scale_k / 2 of the fp32 one
    (measured: the largest error is ~0.4% of the largest output, the mean ~0.1%)."""
    ebc = _ebc()
    q = quantize_embeddings(ebc)
    assert isinstance(q, QuantEmbeddingBagCollection)
    sd = q.state_dict()
    assert sorted(sd) == ["embedding_bags.t1.weight", "embedding_bags.t1.weight_qbias",
                          "embedding_bags.t1.weight_qscale", "embedding_bags.t2.weight",
                          "embedding_bags.t2.weight_qbias", "embedding_bags.t2.weight_qscale"]
    assert sd["embedding_bags.t1.weight"].dtype == np.uint8
    bytes_q = sum(v.numpy().nbytes for v in sd.values())
    bytes_f = sum(m.weight.detach().numpy().nbytes for m in ebc.embedding_bags.values())
    assert bytes_q < 0.35 * bytes_f          # (D + 4) bytes per row instead of 4 * D
    rng = np.random.default_rng(1)
    kjt, data = random_features(rng, ["f1", "f2"], 64, ROWS, weighted=True, max_len=8)
    with ember.no_grad():
        ref = ebc(kjt).values().numpy()
    got = q(kjt).values().numpy()
    assert got.dtype == np.float32 and got.shape == ref.shape
    err = np.abs(got - ref)
    # the bound, per bag and table: sum of |weight| * scale / 2 over the bag's ids
    cols = {"f1": slice(0, 16), "f2": slice(16, 24)}
    for f, t in [("f1", "t1"), ("f2", "t2")]:
        ids, ln, w = data[f]
        s = q.embedding_bags[t].weight_qscale.numpy().astype(np.float32)[:, 0]
        per_id = np.abs(w) * s[ids] / 2
        bags = np.add.reduceat(per_id, np.concatenate([[0], np.cumsum(ln)[:-1]])) if ids.size \
            else np.zeros(len(ln))
        bags[ln == 0] = 0
        if f == "f2":
            bags = bags / np.maximum(ln, 1)
        assert np.all(err[:, cols[f]] <= bags[:, None] * (1 + 1e-3) + 1e-6)
    rel = err.max() / np.abs(ref).max()
    assert rel < 0.01, f"largest int8 error is {rel:.2%} of the largest output"
    assert err.mean() / np.abs(ref).mean() < 0.005


def test_fp16_and_per_table_types():
    ebc = _ebc()
    q = quantize_embeddings(ebc, per_table_dtype={"t2": DataType.FP16})
    assert q.embedding_bags["t1"].weight.dtype == np.uint8
    assert q.embedding_bags["t2"].weight.dtype == np.float16
    t2 = ebc.embedding_bags["t2"].weight.detach().numpy()
    np.testing.assert_allclose(q.embedding_bags["t2"].dequantize().numpy(), t2, rtol=2 ** -11)
    full = quantize_embeddings(ebc, dtype=DataType.FP32)
    kjt, _ = random_features(np.random.default_rng(2), ["f1", "f2"], 8, ROWS, weighted=True)
    with ember.no_grad():
        np.testing.assert_allclose(full(kjt).values().numpy(), ebc(kjt).values().numpy(),
                                   rtol=1e-6, atol=1e-7)


def test_quantize_replaces_submodules_and_keeps_the_original():
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.sparse = _ebc()
            self.seq = EmbeddingCollection([EmbeddingConfig(name="s", num_embeddings=200,
                                                            embedding_dim=4,
                                                            feature_names=["f1"])])
            self.dense = nn.Linear(24, 1)

    m = Model()
    qm = quantize_embeddings(m)
    assert isinstance(m.sparse, EmbeddingBagCollection)            # untouched
    assert type(qm.sparse).__name__ == "QuantEmbeddingBagCollection"
    assert type(qm.seq).__name__ == "QuantEmbeddingCollection"
    assert isinstance(qm.dense, nn.Linear)
    kjt, data = random_features(np.random.default_rng(3), ["f1", "f2"], 5, ROWS, weighted=True)
    rows = qm.seq(kjt)["f1"].values().numpy()
    with ember.no_grad():
        ref = m.seq(kjt)["f1"].values().numpy()
    s = qm.seq.embeddings["s"].weight_qscale.numpy().astype(np.float32)[data["f1"][0]]
    assert np.all(np.abs(rows - ref) <= 0.5 * s * (1 + 1e-3) + 1e-7)
