"""The mechanism: lookup per device, the numpy switch, the fallback without numba, the
on-disk cache, and no compilation (not even a numba import) at ``import ember``."""
import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from ember import kernels

HAVE_NUMBA = importlib.util.find_spec("numba") is not None
needs_numba = pytest.mark.skipif(
    not HAVE_NUMBA, reason="numba is not installed: only the numpy references can be tested")


def run_py(code, env=None, timeout=300):
    """Run ``code`` in a fresh interpreter; its last stdout line, parsed as JSON."""
    e = dict(os.environ)
    e.pop("EMBER_KERNELS", None)
    e.update(env or {})
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=e,
                       capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1]), p.stderr


def test_every_kernel_has_a_reference_and_a_cpu_kernel():
    assert set(kernels.names()) >= {
        "depthwise_conv2d", "depthwise_conv2d_backward_input",
        "depthwise_conv2d_backward_weight", "layer_norm", "layer_norm_backward", "gae",
        "td_lambda_return", "segment_sum", "segment_mean", "segment_max", "adam_step"}
    for name in kernels.names():
        k = kernels.lookup(name)
        assert k.name == name and callable(k.reference) and callable(k.cpu)
        assert k.reference is not k.cpu and k.doc, name


def test_register_refuses_duplicates_and_lookup_names_the_known_ones():
    with pytest.raises(ValueError, match="already registered"):
        kernels.register("gae", reference=lambda: None)
    with pytest.raises(KeyError, match="registered: .*segment_sum"):
        kernels.get("no_such_op", np.zeros(1))


def test_get_picks_by_device_and_availability():
    k = kernels.lookup("segment_sum")
    x = np.zeros(3, np.float32)
    if HAVE_NUMBA and kernels.mode() != "numpy":
        assert kernels.available() and kernels.get("segment_sum", x) is k.cpu
    else:
        assert kernels.get("segment_sum", x) is k.reference


@needs_numba
def test_set_mode_switches_between_the_two_paths_in_process():
    k = kernels.lookup("layer_norm")
    x = np.ones((2, 3), np.float32)
    old = kernels.set_mode("numpy")
    try:
        assert kernels.mode() == "numpy" and not kernels.available()
        assert kernels.get("layer_norm", x) is k.reference
        kernels.set_mode("auto")
        assert kernels.get("layer_norm", x) is k.cpu
    finally:
        kernels.set_mode(old)
    with pytest.raises(ValueError, match="'auto' or 'numpy'"):
        kernels.set_mode("numba")


def test_get_on_a_cupy_array_without_cuda_twin_is_the_reference():
    class FakeCupy:  # the registry asks the backend, so pretend to be a CUDA array
        pass

    import ember._backend as B

    k = kernels.lookup("gae")
    orig = B.is_cuda_array
    B.is_cuda_array = lambda a: isinstance(a, FakeCupy)
    try:
        assert k.for_array(FakeCupy()) is k.reference
        cuda_twin = object()
        k.cuda = cuda_twin
        assert k.for_array(FakeCupy()) is cuda_twin
        assert k.for_array(np.zeros(1)) is not cuda_twin
    finally:
        k.cuda = None
        B.is_cuda_array = orig


def test_import_ember_compiles_nothing_and_does_not_import_numba(tmp_path):
    got, _ = run_py("""
        import json, os, sys
        import ember, ember.nn, ember.optim, ember.kernels
        home = os.environ["EMBER_HOME"]
        print(json.dumps({"numba": "numba" in sys.modules,
                          "cache": os.path.exists(os.path.join(home, "kernels"))}))
    """, env={"EMBER_HOME": str(tmp_path)})
    assert got == {"numba": False, "cache": False}


def test_numpy_switch_runs_references_without_numba(tmp_path):
    got, err = run_py("""
        import json, sys, warnings
        import numpy as np
        warnings.simplefilter("error")
        from ember import kernels
        v = np.arange(6, dtype=np.float32)
        f = kernels.get("segment_sum", v)
        out = f(v, np.array([0, 2, 6])).tolist()
        print(json.dumps({"ref": f is kernels.lookup("segment_sum").reference, "out": out,
                          "mode": kernels.mode(), "available": kernels.available(),
                          "numba": "numba" in sys.modules}))
    """, env={"EMBER_KERNELS": "numpy", "EMBER_HOME": str(tmp_path)})
    assert got == {"ref": True, "out": [1.0, 14.0], "mode": "numpy", "available": False,
                   "numba": False}


def test_without_numba_ember_warns_once_and_falls_back(tmp_path):
    got, err = run_py("""
        import json, sys, warnings
        sys.modules["numba"] = None  # as if no wheel existed for this platform
        import numpy as np
        from ember import kernels
        v = np.arange(6.0)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            a = kernels.get("segment_sum", v)(v, np.array([0, 3, 6]))
            b = kernels.get("gae", v)
        print(json.dumps({"warnings": [str(x.message) for x in w], "out": a.tolist(),
                          "ref": b is kernels.lookup("gae").reference}))
    """, env={"EMBER_HOME": str(tmp_path)})
    assert got["out"] == [3.0, 12.0] and got["ref"]
    assert len(got["warnings"]) == 1 and "numba is not available" in got["warnings"][0]


@needs_numba
def test_compiled_code_is_cached_under_ember_home(tmp_path):
    code = """
        import json, os, time
        import numpy as np
        from ember import kernels
        from ember.kernels import segment
        v = np.arange(6, dtype=np.float32)
        t = time.perf_counter()
        out = kernels.get("segment_sum", v)(v, np.array([0, 2, 6])).tolist()
        stats = segment._seg_sum1.dispatcher().stats
        print(json.dumps({"out": out, "hits": sum(stats.cache_hits.values()),
                          "misses": sum(stats.cache_misses.values()),
                          "s": time.perf_counter() - t, "dir": kernels.cache_dir()}))
    """
    env = {"EMBER_HOME": str(tmp_path / "home")}
    cold, _ = run_py(code, env)
    assert cold["out"] == [1.0, 14.0] and cold["misses"] == 1 and cold["hits"] == 0
    assert cold["dir"] == str(tmp_path / "home" / "kernels")
    files = [f for _, _, fs in os.walk(cold["dir"]) for f in fs]
    assert any(f.endswith(".nbi") for f in files) and any(f.endswith(".nbc") for f in files)
    warm, _ = run_py(code, env)
    assert warm["out"] == [1.0, 14.0] and warm["hits"] == 1 and warm["misses"] == 0
    assert warm["s"] < cold["s"]


@needs_numba
def test_numba_cache_of_other_code_is_left_alone(tmp_path):
    """ember's locator only takes functions defined in ember/kernels."""
    mod = tmp_path / "usermod.py"
    mod.write_text("import numba\n@numba.njit(cache=True)\ndef f(x):\n    return x + 1\n")
    got, _ = run_py(f"""
        import json, os, sys
        sys.path.insert(0, {str(tmp_path)!r})
        import numpy as np
        from ember import kernels
        v = np.arange(3.0)
        kernels.get("segment_sum", v)(v, np.array([0, 3]))
        import usermod
        usermod.f(1)
        home = os.path.join(os.environ["EMBER_HOME"], "kernels")
        (tag,) = os.listdir(home)
        ours = sorted(os.listdir(os.path.join(home, tag))) if tag.startswith("numba-") else tag
        print(json.dumps({{"ours": ours,
                          "user": os.path.isdir(os.path.join({str(tmp_path)!r}, "__pycache__"))}}))
    """, env={"EMBER_HOME": str(tmp_path / "home")})
    assert got["ours"] == ["segment"] and got["user"]


@needs_numba
def test_kernels_run_on_ember_threads(monkeypatch):
    """The kernels are split by ember's pool: ``set_num_threads`` governs them, and inside
    one of the pool's threads a kernel runs whole in that thread (no nested split)."""
    import threading

    import ember
    from ember import _parallel
    from ember.kernels import _util

    v = np.ones(1 << 21, np.float32)
    off = np.arange(0, v.size + 1, 1024)
    want = kernels.lookup("segment_sum").reference(v, off)
    seen = []

    def spy(fn, n, work=None, threads=None):
        def body(lo, hi):
            seen.append(threading.get_ident())
            fn(lo, hi)
        _parallel.parallel_for(body, n, work, threads)

    monkeypatch.setattr(_util, "parallel_for", spy)
    n0 = ember.get_num_threads()
    try:
        for n in (1, 2):
            ember.set_num_threads(n)
            seen.clear()
            np.testing.assert_array_equal(kernels.lookup("segment_sum").cpu(v, off), want)
            assert len(set(seen)) == n
        seen.clear()  # called from a pool thread: one range, in that thread
        pool = _parallel._get_pool(ember.get_num_threads())
        out = pool.submit(kernels.lookup("segment_sum").cpu, v, off).result()
        np.testing.assert_array_equal(out, want)
        assert len(seen) == 1 and seen[0] != threading.get_ident()
    finally:
        ember.set_num_threads(n0)
