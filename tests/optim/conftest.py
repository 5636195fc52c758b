import os
import sys

# the shared op-test harness (tests/core/optest.py): check_op against torch, on every backend;
# and this folder's own helpers (optim_parity.py)
_here = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(os.path.dirname(_here), "core"))
sys.path.insert(0, _here)
