"""``ReduceOp``: how a reducing collective combines the ranks' values."""
from __future__ import annotations

import enum


class ReduceOp(enum.Enum):
    """``SUM``, ``AVG`` (sum / world size; floating dtypes only), ``MAX``, ``MIN``, ``PRODUCT``.

        >>> import ember.distributed as dist
        >>> dist.ReduceOp.SUM.name
        'SUM'
    """

    SUM = "sum"
    AVG = "avg"
    MAX = "max"
    MIN = "min"
    PRODUCT = "product"


def as_op(op):
    """``op`` as a ReduceOp (accepts the enum or its name, e.g. ``"sum"``)."""
    if isinstance(op, ReduceOp):
        return op
    try:
        return ReduceOp[str(op).upper()] if str(op).upper() != "PROD" else ReduceOp.PRODUCT
    except KeyError:
        raise ValueError(f"op must be one of {[o.name for o in ReduceOp]}, got {op!r}") from None
