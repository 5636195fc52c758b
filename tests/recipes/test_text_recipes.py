"""The text recipes end to end on generated data: ``text_classify`` (from scratch on a folder
per class, on CSV files, and fine-tuning a local pretrained directory) and ``embed`` (a local
model directory), each with interrupt + resume equal to an uninterrupted run."""
import csv
import json
import os
import random

import numpy as np
import pytest
from recipe_helpers import StopAfter

import ember

TOPICS = {
    "sport": "goal match team score league coach player win stadium ball referee".split(),
    "weather": "rain cloud storm sunny wind forecast snow cold humid temperature fog".split(),
    "food": "recipe oven bake flour sugar taste dinner spicy sauce kitchen butter".split(),
}
FILLER = "the a of and to in is it was on for with this that at by from".split()
# short settings: a one-layer encoder, a small BPE vocabulary
SHORT = ["quiet=true", "batch_size=16", "model.hidden_size=32", "model.num_layers=1",
         "model.num_heads=2", "model.intermediate_size=64", "model.max_positions=64",
         "tokenizer.vocab_size=400", "max_length=48"]


def _text(rng, words):
    k = rng.randint(4, 24)
    return " ".join(rng.choice(words) if rng.random() < 0.4 else rng.choice(FILLER)
                    for _ in range(k))


def make_topics(root, n_train=40, n_test=15, seed=0):
    """root/{train,test}/<topic>/NNN.txt: texts whose topic words give the class away."""
    rng = random.Random(seed)
    for split, n in (("train", n_train), ("test", n_test)):
        for topic, words in TOPICS.items():
            d = root / split / topic
            d.mkdir(parents=True, exist_ok=True)
            for i in range(n):
                (d / f"{i:03d}.txt").write_text(_text(rng, words) + "\n")
    return root


def make_csvs(root, seed=1):
    """AG_NEWS's layout: label (1-3), title, text; no header."""
    rng = random.Random(seed)
    paths = []
    for split, n in (("train", 40), ("test", 15)):
        p = root / f"{split}.csv"
        with open(p, "w", newline="") as f:
            w = csv.writer(f, quoting=csv.QUOTE_ALL)
            for i in range(n * 3):
                label = 1 + i % 3
                words = list(TOPICS.values())[label - 1]
                w.writerow([label, _text(rng, words)[:20], _text(rng, words)])
        paths.append(p)
    return paths


def tiny_hf_dir(path, corpus, seed=0):
    """A Hugging Face model directory (config.json, model.safetensors, tokenizer.json) of a
    one-layer BERT with random weights and a BPE tokenizer trained on ``corpus``."""
    from ember.text.models import EncoderConfig, EncoderModel
    from ember.text.tokenizers import Tokenizer, train_bpe

    path.mkdir(parents=True, exist_ok=True)
    tok = train_bpe(corpus, 350, special_tokens=["[PAD]", "[CLS]"])
    Tokenizer.save(tok, path / "tokenizer.json")
    cfg = EncoderConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=1,
                        num_attention_heads=2, intermediate_size=64,
                        max_position_embeddings=64)
    cfg.save(path / "config.json")
    ember.manual_seed(seed)
    ember.save(EncoderModel(cfg).state_dict(), path / "model.safetensors")
    return path


def _rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


# ------------------------------------------------------------------------------ text_classify
def test_text_classify_from_scratch_on_a_folder_per_class(workdir, cli):
    data = make_topics(workdir / "topics")
    rc, out, err = cli("run", "text_classify", *SHORT, "epochs=4", f"data.root={data}",
                       "output_dir=run")
    assert rc == 0, err
    run = workdir / "run"
    rows = _rows(run / "metrics.csv")
    assert [r["epoch"] for r in rows] == ["1", "2", "3", "4"]
    assert list(rows[0]) == ["epoch", "step", "lr", "train_loss", "train_acc", "test_loss",
                             "accuracy"]
    acc = float(rows[-1]["accuracy"])
    assert acc > 0.8, rows          # three classes: chance is 1/3
    assert float(rows[-1]["train_loss"]) < float(rows[0]["train_loss"])
    assert f"test accuracy {100 * acc:.2f}%" in out
    assert "confusion matrix (rows: true class, columns: predicted)" in out
    conf = list(csv.reader(open(run / "confusion.csv")))
    assert conf[0] == ["true\\predicted", "food", "sport", "weather"]
    counts = np.array([[int(v) for v in r[1:]] for r in conf[1:]])
    assert counts.sum() == 45 and abs(np.trace(counts) / 45 - acc) < 1e-6
    # the saved weights, tokenizer and manifest rebuild the model that scored this accuracy
    from ember.recipes._weights import build_model, load_weights
    from ember.text.collate import collate
    from ember.text.datasets import TextFolder

    w = load_weights(str(run))
    assert w.meta["categories"] == ["food", "sport", "weather"]
    model = build_model(w).eval()
    tok = w.transforms()
    prefix = w.meta["prefix_ids"]
    test = list(TextFolder(data / "test"))
    batch = collate([(prefix + tok.encode(t), y) for y, t in test],
                    max_length=w.meta["max_length"])
    with ember.no_grad():
        pred = model(batch.ids).argmax(1).numpy()
    assert abs(float((pred == batch.labels.numpy()).mean()) - acc) < 1e-6


def test_text_classify_on_csv_files_in_ag_news_layout(workdir, cli):
    train, test = make_csvs(workdir)
    rc, out, err = cli("run", "text_classify", *SHORT, "epochs=3", f"data.train={train}",
                       f"data.test={test}", "output_dir=csvrun")
    assert rc == 0, err
    rows = _rows(workdir / "csvrun" / "metrics.csv")
    assert float(rows[-1]["accuracy"]) > 0.6
    assert json.load(open(workdir / "csvrun" / "weights.json"))["meta"]["categories"] == \
        ["1", "2", "3"]
    # the same files as the published AG_NEWS in its cache: the classes get their names
    cache = workdir / "cache" / "AG_NEWS"
    cache.mkdir(parents=True)
    (cache / "train.csv").write_bytes(train.read_bytes())
    (cache / "test.csv").write_bytes(test.read_bytes())
    rc, out, err = cli("run", "text_classify", *SHORT, "epochs=1", "data.dataset=AG_NEWS",
                       f"data.cache={workdir / 'cache'}", "output_dir=agrun")
    assert rc == 0, err
    assert json.load(open(workdir / "agrun" / "weights.json"))["meta"]["categories"] == \
        ["World", "Sports", "Business"]
    assert "data: 120 training and 45 test texts, 3 classes" in out


def test_text_classify_bad_rows_are_named_or_skipped_and_data_is_required(workdir, cli):
    train, test = make_csvs(workdir)
    with open(train, "a") as f:
        f.write('"4"\n')                     # a row without text: line 121
    rc, _, err = cli("run", "text_classify", *SHORT, "epochs=1", f"data.train={train}",
                     f"data.test={test}", "output_dir=bad")
    assert rc == 2 and f"{train}, line 121: expected at least 2 fields" in err
    rc, out, err = cli("run", "text_classify", *SHORT, "epochs=1", f"data.train={train}",
                       f"data.test={test}", "data.on_error=skip", "output_dir=skip")
    assert rc == 0, err
    assert "left out 1 bad record(s)" in out and "line 121" in out
    rc, _, err = cli("run", "text_classify", *SHORT, "output_dir=none")
    assert rc == 2 and "text_classify needs its data as one of: data.root=DIR" in err
    for only in (f"data.train={train}", f"data.test={test}"):
        rc, _, err = cli("run", "text_classify", *SHORT, only, "output_dir=none")
        assert rc == 2 and "needs its data" in err
    rc, _, err = cli("run", "text_classify", *SHORT, f"data.root={workdir}",
                     "data.dataset=AG_NEWS", "output_dir=none")
    assert rc == 2 and "needs its data" in err
    assert not (workdir / "none").exists()   # refused before anything was written


def test_text_classify_reads_json_lines_and_maps_test_labels():
    from ember.recipes.text_classify import load_text_data

    import tempfile
    d = tempfile.mkdtemp()
    tr, te = os.path.join(d, "tr.jsonl"), os.path.join(d, "te.jsonl")
    with open(tr, "w") as f:
        for lab, t in (("pos", "good"), ("neg", "bad"), ("pos", "fine")):
            f.write(json.dumps({"text": t, "label": lab}) + "\n")
    with open(te, "w") as f:
        f.write(json.dumps({"text": "great", "label": "pos"}) + "\n")
    train, test, classes = load_text_data({"train": tr, "test": te})
    assert classes == ["neg", "pos"] and train == [(1, "good"), (0, "bad"), (1, "fine")]
    assert test == [(1, "great")]
    with open(te, "a") as f:
        f.write(json.dumps({"text": "meh", "label": "neutral"}) + "\n")
    from ember.recipes._config import ConfigError
    with pytest.raises(ConfigError, match=r"test labels \['neutral'\] never occur"):
        load_text_data({"train": tr, "test": te})


def test_text_classify_interrupt_then_resume_equals_an_uninterrupted_run(workdir, cli,
                                                                        monkeypatch):
    from ember.recipes import _loop as L

    data = make_topics(workdir / "topics", n_train=20, n_test=6)
    args = [*SHORT, "epochs=3", f"data.root={data}", "checkpoint.every_n_steps=2"]
    rc, _, err = cli("run", "text_classify", *args, "output_dir=ref")
    assert rc == 0, err
    ref = _rows(workdir / "ref" / "metrics.csv")
    assert len(ref) == 3                      # 60 texts / 16 per batch: 4 steps per epoch
    with monkeypatch.context() as m:
        m.setattr(L, "Interrupt", StopAfter(6))
        rc, out, _ = cli("run", "text_classify", *args, "output_dir=run")
    assert rc == 130
    assert "interrupted at step 6" in out and "resume=true" in out   # mid epoch 2
    assert len(_rows(workdir / "run" / "metrics.csv")) == 1
    rc, out, err = cli("run", "text_classify", *args, "output_dir=run", "resume=true")
    assert rc == 0, err
    assert "resumed from" in out and "(epoch 2, step 6)" in out
    assert _rows(workdir / "run" / "metrics.csv") == ref
    # a finished run resumed again trains nothing and reports the same accuracy
    rc, out, err = cli("run", "text_classify", *args, "output_dir=run", "resume=true")
    assert rc == 0, err
    assert f"test accuracy {100 * float(ref[-1]['accuracy']):.2f}%" in out
    assert _rows(workdir / "run" / "metrics.csv") == ref
    # a fresh run into the folder needs overwrite=true
    rc, _, err = cli("run", "text_classify", *args, "output_dir=run")
    assert rc == 2 and "holds an earlier run" in err


def test_text_classify_fine_tunes_a_local_pretrained_directory(workdir, cli):
    data = make_topics(workdir / "topics", n_train=20, n_test=6)
    corpus = [" ".join(w) for w in TOPICS.values()] * 10
    hf = tiny_hf_dir(workdir / "hf", corpus)
    rc, out, err = cli("run", "text_classify", "quiet=true", "epochs=2", "batch_size=16",
                       f"data.root={data}", f"pretrained={hf}", "output_dir=ft",
                       "optimizer.lr=0.003", "lr_scheduler.max_lr=0.003")
    assert rc == 0, err
    assert "tokenizer: " in out and "test accuracy" in out
    run = workdir / "ft"
    assert json.load(open(run / "tokenizer.json")) == json.load(open(hf / "tokenizer.json"))
    from ember.recipes._weights import build_model, load_weights

    w = load_weights(str(run))
    model = build_model(w)
    saved = ember.load(str(run / "model.safetensors"))
    assert set(model.state_dict()) == set(saved)
    assert "encoder.embeddings.word_embeddings.weight" in saved


@pytest.mark.parametrize("pooling", ["mean", "cls"])
def test_classifier_logits_are_the_same_padded_and_padding_free(pooling):
    from ember.recipes.text_classify import TextClassifier, small_encoder
    from ember.text.collate import collate

    ember.manual_seed(0)
    enc = small_encoder(60, hidden_size=16, num_layers=2, num_heads=2, intermediate_size=32,
                        max_positions=32)
    if not callable(getattr(enc, "jagged_positions", None)):
        pytest.skip("the encoder does not take JaggedTensor input")
    padded = TextClassifier(enc, 3, pooling=pooling, padding_free=False).eval()
    packed = TextClassifier(enc, 3, pooling=pooling, padding_free=True).eval()
    packed.classifier = padded.classifier
    rng = random.Random(0)
    batch = collate([([1] + [rng.randrange(2, 60) for _ in range(rng.randint(0, 20))], 0)
                     for _ in range(7)])
    with ember.no_grad():
        a, b = padded(batch), packed(batch)
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-5)


def test_published_encoder_entries_resolve_to_their_builders():
    from ember.recipes._config import ConfigError
    from ember.recipes.text_classify import _zoo_builder, pretrained_encoder
    from ember.text import models as M

    w, builder = _zoo_builder("All_MiniLM_L6_V2_Weights.DEFAULT")
    assert w is M.All_MiniLM_L6_V2_Weights.DEFAULT and builder is M.all_minilm_l6_v2
    assert _zoo_builder("RoBERTa_Base_Weights.DEFAULT")[1] is M.roberta_base
    with ember.device("meta"):
        enc, tok = pretrained_encoder("BERT_Base_Uncased_Weights.DEFAULT", load=False)
        assert enc.config.hidden_size == 768 and tok is None
        with pytest.raises(ConfigError, match="not an encoder"):
            pretrained_encoder("GPT2_Weights.DEFAULT", load=False)
    with pytest.raises(ConfigError, match="neither a local directory nor a weights entry"):
        pretrained_encoder("No_Such_Weights.DEFAULT", load=False)


# ------------------------------------------------------------------------------ embed
SENTENCES = ["the cat sat on the mat", "", "a dog barked at the mailman",
             "stock markets fell sharply today", "   ", "a kitten was sitting on a rug",
             "shares dropped in early trading", "rain is expected tomorrow",
             "the forecast says storms", "bake the bread in a hot oven", "a goal in extra time"]


def _embed_setup(workdir):
    hf = tiny_hf_dir(workdir / "hf", [s for s in SENTENCES if s.strip()] * 5)
    src = workdir / "sentences.txt"
    src.write_text("\n".join(SENTENCES) + "\n")
    return hf, src


def test_embed_writes_embeddings_in_file_order_and_prints_neighbours(workdir, cli):
    from safetensors.numpy import load_file
    from ember.text.models import SentenceEmbedder

    hf, src = _embed_setup(workdir)
    rc, out, err = cli("run", "embed", f"input={src}", f"model.dir={hf}", "quiet=true",
                       "batch_size=3", "output_dir=emb", "neighbours.queries=2",
                       "neighbours.k=2")
    assert rc == 0, err
    got = load_file(str(workdir / "emb" / "embeddings.safetensors"))
    texts = [s for s in SENTENCES if s.strip()]
    assert got["embeddings"].shape == (9, 32) and got["embeddings"].dtype == np.float32
    assert got["line_numbers"].tolist() == [1, 3, 4, 6, 7, 8, 9, 10, 11]
    ref = SentenceEmbedder.from_pretrained(hf).encode(texts, batch_size=64).numpy()
    np.testing.assert_allclose(got["embeddings"], ref, rtol=1e-4, atol=1e-5)
    assert np.allclose(np.linalg.norm(got["embeddings"], axis=1), 1, atol=1e-5)
    assert "nearest neighbours (cosine similarity):" in out
    assert "  line 1: the cat sat on the mat" in out and "  line 3: a dog barked" in out
    e = ref / np.linalg.norm(ref, axis=1, keepdims=True)
    sims = e @ e[0]
    sims[0] = -1
    best = int(np.argmax(sims))
    assert f"{sims[best]:.4f}  line {got['line_numbers'][best]}: {texts[best]}" in out
    # .npy output, pooling overridden
    rc, _, err = cli("run", "embed", f"input={src}", f"model.dir={hf}", "quiet=true",
                     "output=vec.npy", "model.pooling=cls", "model.normalize=false",
                     "output_dir=emb2", "neighbours.queries=0")
    assert rc == 0, err
    arr = np.load(workdir / "emb2" / "vec.npy")
    cls = SentenceEmbedder.from_pretrained(hf, pooling="cls", normalize=False).encode(texts)
    np.testing.assert_allclose(arr, cls.numpy(), rtol=1e-4, atol=1e-5)
    rc, _, err = cli("run", "embed", f"input={src}", f"model.dir={hf}", "output=vec.txt")
    assert rc == 2 and "must end in .safetensors or .npy" in err
    rc, _, err = cli("run", "embed", f"model.dir={hf}")
    assert rc == 2 and "embed needs input=FILE" in err


def test_embed_interrupt_then_resume_equals_an_uninterrupted_run(workdir, cli, monkeypatch):
    from safetensors.numpy import load_file
    from ember.recipes import embed as E

    hf, src = _embed_setup(workdir)
    args = [f"input={src}", f"model.dir={hf}", "quiet=true", "batch_size=2",
            "checkpoint.every_n_batches=1"]
    rc, _, err = cli("run", "embed", *args, "output_dir=ref")
    assert rc == 0, err
    ref = load_file(str(workdir / "ref" / "embeddings.safetensors"))
    with monkeypatch.context() as m:
        m.setattr(E, "Interrupt", StopAfter(2))
        rc, out, _ = cli("run", "embed", *args, "output_dir=run")
    assert rc == 130 and "interrupted after 3/5 batches" in out
    assert not (workdir / "run" / "embeddings.safetensors").exists()
    rc, out, err = cli("run", "embed", *args, "output_dir=run", "resume=true")
    assert rc == 0, err
    assert "(3/5 batches done)" in out
    got = load_file(str(workdir / "run" / "embeddings.safetensors"))
    np.testing.assert_array_equal(got["embeddings"], ref["embeddings"])
    np.testing.assert_array_equal(got["line_numbers"], ref["line_numbers"])
    # a checkpoint of another input is refused
    with monkeypatch.context() as m:
        m.setattr(E, "Interrupt", StopAfter(1))
        rc, _, _ = cli("run", "embed", *args, "output_dir=run2")
    assert rc == 130
    src.write_text("something else entirely\nand more\n")
    rc, _, err = cli("run", "embed", *args, "output_dir=run2", "resume=true")
    assert rc == 2 and "made from another input" in err


def test_embed_default_weights_entry_offline_from_the_hub_cache(workdir, cli, monkeypatch,
                                                                minilm_dir):
    """The default model (All_MiniLM_L6_V2_Weights.DEFAULT), its files placed in the hub
    cache from the installed package, EMBER_OFFLINE=1: the embeddings sentence-transformers'
    layout of the same checkpoint gives."""
    from safetensors.numpy import load_file
    from ember.text.models import SentenceEmbedder

    d = minilm_dir
    hub = workdir / "ember_home" / "hub"
    (hub / "checkpoints").mkdir(parents=True)
    (hub / "tokenizers").mkdir(parents=True)
    os.symlink(os.path.join(d, "model.safetensors"),
               hub / "checkpoints" / "all-minilm-l6-v2.safetensors")
    os.symlink(os.path.join(d, "tokenizer.json"),
               hub / "tokenizers" / "all-minilm-l6-v2-tokenizer.json")
    monkeypatch.setenv("EMBER_OFFLINE", "1")
    src = workdir / "s.txt"
    texts = ["the cat sat on the mat", "a kitten was sitting on a rug",
             "stock markets fell sharply today", "shares dropped in early trading"]
    src.write_text("\n".join(texts) + "\n")
    rc, out, err = cli("run", "embed", f"input={src}", "quiet=true", "neighbours.k=1")
    assert rc == 0, err
    got = load_file(str(workdir / "outputs" / "embed" / "embeddings.safetensors"))
    ref = SentenceEmbedder.from_pretrained(d).encode(texts).numpy()
    assert got["embeddings"].shape == (4, 384)
    cos = (got["embeddings"] * ref).sum(1)
    assert cos.min() > 0.9999, cos
    assert "line 1: the cat sat on the mat" in out and "line 2: a kitten" in out
