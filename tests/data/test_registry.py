"""The registry of functional names, and the explicit methods that make them visible."""
import inspect

import pytest

import ember.data as D
from ember.data.pipe import _REGISTRY, register


def test_lists_cover_the_issue():
    names = set(D.list_pipes())
    for n in ("map", "filter", "flatmap", "batch", "unbatch", "shuffle", "sharding_filter",
              "collate", "zip", "concat", "mux", "mux_longest", "fork", "demux", "cycle", "header",
              "enumerate", "in_memory_cache", "prefetch", "bucketbatch", "groupby",
              "rows2columnar", "list_files", "open_files", "load_from_tar", "load_from_zip",
              "webdataset", "readlines", "parse_csv", "parse_jsonlines", "save_to_disk",
              "read_from_http"):
        assert n in names
    assert set(D.list_pipes("map")) == {"map", "batch", "shuffle", "concat", "zip", "to_iter"}


@pytest.mark.parametrize("kind,base", [("iter", D.IterDataPipe), ("map", D.MapDataPipe)])
def test_every_name_is_a_method_with_the_class_signature(kind, base):
    for name in D.list_pipes(kind):
        meth = getattr(base, name, None)
        assert meth is not None and callable(meth), f"{base.__name__}.{name} missing"
        cls = D.get_pipe(name, kind)
        assert cls.functional_name == name
        m_params = list(inspect.signature(meth).parameters)[1:]  # drop self
        c_params = list(inspect.signature(cls.__init__).parameters)[2:]  # drop self, source
        if any(p.kind == p.VAR_POSITIONAL for p in inspect.signature(cls.__init__).parameters.values()):
            continue  # zip/concat/mux: (*others)
        assert m_params == c_params, f"{name}: method {m_params} vs class {c_params}"


def test_registry_refuses_duplicates_and_unknown():
    with pytest.raises(ValueError):
        @register("map")
        class Another(D.IterDataPipe):
            pass
    assert _REGISTRY["iter"]["map"] is D.Mapper
    with pytest.raises(KeyError):
        D.get_pipe("no_such_pipe")
    with pytest.raises(ValueError):
        register("x", kind="other")


def _flat(text):
    return " ".join(text.split())


def test_explain_marks_shuffle_sharding_batching(capsys):
    dp = D.IterableWrapper(range(8)).shuffle().sharding_filter().map(str).batch(2)
    text = dp.explain()
    assert capsys.readouterr().out.strip() == text.strip()
    assert "[shuffling]" in text and "[sharding]" in text and "[batching]" in text
    assert "exactly once" in _flat(text)
    late = D.IterableWrapper(range(8)).sharding_filter().shuffle()
    assert "depends on num_workers" in _flat(late.explain(file=False))
    none = D.IterableWrapper(range(8)).map(str)
    assert "no sharding_filter" in _flat(none.explain(file=False))
    twice = D.IterableWrapper(range(8)).sharding_filter().sharding_filter()
    assert "never be seen" in _flat(twice.explain(file=False))
    a, b = D.IterableWrapper(range(3)).fork(2)
    assert "shared" in a.zip(b).explain(file=False)
