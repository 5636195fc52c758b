import os
import sys

# the shared op-test harness (tests/core/optest.py): check_op against torch, on every backend
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "core"))
