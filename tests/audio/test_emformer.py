"""ember.audio.models.Emformer against torchaudio's outputs for the same seeded weights
(fixture written by tests/audio/fixtures/make_rnnt.py), and streaming == whole utterance."""
import json
import os

import numpy as np
import pytest

import ember
from ember.audio.models import Emformer

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "rnnt_ref.npz")
CASES = ["emformer_lc", "emformer_mem", "emformer_longlc"]


@pytest.fixture(scope="module")
def ref():
    return np.load(FIXTURE)


def load_case(ref, name):
    cfg = json.loads(str(ref[f"{name}/config"]))
    m = Emformer(**cfg).eval()
    prefix = f"{name}/sd/"
    sd = {k[len(prefix):]: ember.tensor(ref[k]) for k in ref.files if k.startswith(prefix)}
    assert set(sd) == set(m.state_dict())
    m.load_state_dict(sd)
    return m, cfg


@pytest.mark.parametrize("name", CASES)
def test_forward_matches_torchaudio(ref, name):
    m, _ = load_case(ref, name)
    with ember.no_grad():
        out, lengths = m(ember.tensor(ref[f"{name}/input"]), ember.tensor(ref[f"{name}/lengths"]))
    np.testing.assert_allclose(out.numpy(), ref[f"{name}/output"], rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(lengths.numpy(), ref[f"{name}/output_lengths"])


@pytest.mark.parametrize("name", CASES)
def test_streaming_matches_torchaudio_and_whole_utterance(ref, name):
    m, cfg = load_case(ref, name)
    x = ref[f"{name}/input"][:1]
    L, R = cfg["segment_length"], cfg["right_context_length"]
    states, chunks = None, []
    with ember.no_grad():
        for k in range((x.shape[1] - R) // L):
            seg = ember.tensor(x[:, k * L:k * L + L + R])
            out, out_len, states = m.infer(seg, ember.tensor([L + R]), states)
            assert out_len.tolist() == [L]
            chunks.append(out.numpy())
        whole, _ = m(ember.tensor(x), ember.tensor([x.shape[1] - R]))
    stream = np.concatenate(chunks, 1)
    np.testing.assert_allclose(stream, ref[f"{name}/stream_output"], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(stream, whole.numpy()[:, :stream.shape[1]], rtol=1e-4, atol=1e-5)
    # the carried state: left-context keys/values and the frame count, as torchaudio's
    st = states[0]
    np.testing.assert_allclose(np.concatenate([st[1].numpy(), st[2].numpy()]),
                               ref[f"{name}/stream_state0"], rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(st[3].numpy(), ref[f"{name}/stream_past"])


@pytest.mark.parametrize("name", CASES)
def test_batched_streaming_with_short_chunks_matches_torchaudio(ref, name):
    m, cfg = load_case(ref, name)
    x = ref[f"{name}/input"]
    L, R = cfg["segment_length"], cfg["right_context_length"]
    states, outs = None, []
    with ember.no_grad():
        for k, lens in enumerate(([L + R, L + R], [L + R - 1, L], [L, L + R - 2])):
            out, out_len, states = m.infer(ember.tensor(x[:, k * L:k * L + L + R]),
                                           ember.tensor(lens), states)
            np.testing.assert_array_equal(out_len.numpy(),
                                          ref[f"{name}/batch_stream_lengths{k}"])
            outs.append(out.numpy())
    np.testing.assert_allclose(np.concatenate(outs, 1), ref[f"{name}/batch_stream_output"],
                               rtol=1e-4, atol=1e-5)


def test_batched_forward_rows_are_independent(ref):
    m, cfg = load_case(ref, "emformer_lc")
    x = ref["emformer_lc/input"]
    lengths = ref["emformer_lc/lengths"]
    R = cfg["right_context_length"]
    with ember.no_grad():
        both, _ = m(ember.tensor(x), ember.tensor(lengths))
        one, _ = m(ember.tensor(x[:1]), ember.tensor(lengths[:1]))
    np.testing.assert_allclose(both.numpy()[:1], one.numpy(), rtol=1e-4, atol=1e-5)
    assert both.shape == (2, x.shape[1] - R, cfg["input_dim"])


def test_gradients_flow_in_training_mode():
    m = Emformer(8, 2, 16, 2, segment_length=3, left_context_length=2, right_context_length=1,
                 max_memory_size=2, dropout=0.1).train()
    x = ember.randn(2, 10, 8, requires_grad=True)
    out, _ = m(x, ember.tensor([9, 7]))
    out.sum().backward()
    assert x.grad is not None and np.isfinite(x.grad.numpy()).all()
    for name, p in m.named_parameters():
        assert p.grad is not None, name


def test_bad_arguments():
    with pytest.raises(ValueError, match="not a multiple of num_heads"):
        Emformer(10, 3, 16, 1, segment_length=4)
    with pytest.raises(ValueError, match="activation"):
        Emformer(8, 2, 16, 1, segment_length=4, activation="tanh")
    with pytest.raises(ValueError, match="weight_init_scale_strategy"):
        Emformer(8, 2, 16, 1, segment_length=4, weight_init_scale_strategy="wide")
    m = Emformer(8, 2, 16, 1, segment_length=4, right_context_length=1)
    with pytest.raises(ValueError, match="expected size of 5 for dimension 1"):
        m.infer(ember.randn(1, 4, 8), ember.tensor([4]))
