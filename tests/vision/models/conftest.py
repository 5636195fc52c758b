import json
import os
import sys

import pytest

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
if DATA not in sys.path:
    sys.path.insert(0, DATA)


@pytest.fixture(scope="session")
def manifest():
    """torchvision's num_params and state-dict key -> shape per builder
    (written by data/make_fixtures.py)."""
    with open(os.path.join(DATA, "manifest.json")) as f:
        return json.load(f)
