import numpy as np
import pytest
import torch

import ember
from optest import check_op


@pytest.mark.parametrize("shapes", [[(3, 4), (3, 4)], [(3, 4), (4,)], [(2, 1, 4), (3, 1)]])
def test_mul_add(shapes):
    check_op(lambda a, b: a * b + a, lambda a, b: a * b + a, shapes)


def test_exp_tanh_noncontig():
    check_op(lambda a: a.exp().tanh(), lambda a: a.exp().tanh(), [(3, 4)], noncontig=True)
