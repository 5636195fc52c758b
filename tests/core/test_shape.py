"""Shape ops against PyTorch: forward, backward, double backward and a float64 gradcheck
(tests/core/optest.py) over tables of cases; plus memory sharing of views, autograd through
writes into views, and error messages."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
from optest import Const, check_op


# A case is ``lib -> callable``: the same test code builds the ember and the torch version.
def M(name, *a, **k):
    """``x.name(*rest, *a, **k)``."""
    return lambda lib: (lambda x, *rest: getattr(x, name)(*rest, *a, **k))


def F(name, *a, **k):
    """``lib.name(*inputs, *a, **k)``."""
    return lambda lib: (lambda *xs: getattr(lib, name)(*xs, *a, **k))


def FL(name, *a, **k):
    """``lib.name([inputs...], *a, **k)`` (cat, stack, ...)."""
    return lambda lib: (lambda *xs: getattr(lib, name)(list(xs), *a, **k))


def PAD(*a, **k):
    return lambda lib: (lambda x: (ember.pad if lib is ember else TF.pad)(x, *a, **k))


def arr(values, dtype=np.float32):
    return np.array(values, dtype=dtype)


NC = {"noncontig": True}
INTS = np.arange(12, dtype=np.int64).reshape(3, 4) - 5
I32 = np.arange(6, dtype=np.int32).reshape(2, 3)
BOOLS = np.array([[True, False, True, False], [False, False, True, True], [True] * 4])
REPS = Const(np.array([1, 0, 2], dtype=np.int64))

DIFF = [
    # reshape / view
    ("reshape", M("reshape", 3, 2), [(2, 3)], {}),
    ("reshape_tuple_neg", M("reshape", (-1, 2)), [(2, 3)], {}),
    ("reshape_noncontig", M("reshape", 6), [(2, 3)], NC),
    ("reshape_fn", F("reshape", (3, 1, 2)), [(2, 3)], NC),
    ("reshape_to_0d", M("reshape", ()), [(1, 1)], {}),
    ("reshape_from_0d", M("reshape", 1, 1), [()], {}),
    ("reshape_empty", M("reshape", 3, 0), [(0, 3)], {}),
    ("reshape_empty_infer", M("reshape", -1, 2), [(0, 4)], {}),
    ("view", M("view", 3, 2), [(2, 3)], {}),
    ("view_neg", M("view", -1), [(2, 3, 2)], {}),
    ("view_split_dim", M("view", 2, 2, 3), [(4, 3)], NC),
    ("view_as", lambda lib: lambda x, y: x.view_as(y), [(2, 3), Const(np.zeros((3, 2)))], {}),
    ("reshape_as", lambda lib: lambda x, y: x.reshape_as(y), [(2, 3), Const(np.zeros((6,)))],
     NC),
    # transpose / permute / movedim
    ("transpose", M("transpose", 0, -1), [(2, 3, 2)], NC),
    ("transpose_same", M("transpose", 1, 1), [(2, 3)], {}),
    ("transpose_0d", M("transpose", 0, -1), [()], {}),
    ("swapaxes", F("swapaxes", 0, 1), [(2, 3)], NC),
    ("swapdims", M("swapdims", -1, -2), [(2, 3, 2)], {}),
    ("t_2d", M("t"), [(2, 3)], NC),
    ("t_1d", F("t"), [(3,)], {}),
    ("t_0d", M("t"), [()], {}),
    ("T", lambda lib: lambda x: x.T, [(2, 3)], {}),
    ("mT", lambda lib: lambda x: x.mT, [(2, 3, 2)], {}),
    ("permute", M("permute", 2, 0, 1), [(2, 3, 2)], {}),
    ("permute_tuple_neg", M("permute", (-1, 0, 1)), [(2, 3, 2)], NC),
    ("permute_fn", F("permute", (1, 0)), [(2, 3)], NC),
    ("permute_empty", M("permute", 1, 0), [(0, 3)], {}),
    ("movedim", F("movedim", 0, -1), [(2, 3, 2)], {}),
    ("movedim_tuple", M("movedim", (0, 1), (2, 0)), [(2, 3, 2)], NC),
    ("moveaxis", F("moveaxis", -1, 0), [(2, 3, 2)], {}),
    # squeeze / unsqueeze
    ("squeeze_all", M("squeeze"), [(2, 1, 3, 1)], {}),
    ("squeeze_dim", M("squeeze", 1), [(2, 1, 3, 1)], {}),
    ("squeeze_neg", F("squeeze", -1), [(2, 1, 3, 1)], {}),
    ("squeeze_tuple", M("squeeze", (1, -1)), [(2, 1, 3, 1)], {}),
    ("squeeze_noop", M("squeeze", 0), [(2, 1, 3)], {}),
    ("squeeze_0d", M("squeeze", 0), [()], {}),
    ("squeeze_empty", M("squeeze"), [(0, 1, 2)], {}),
    ("unsqueeze0", M("unsqueeze", 0), [(2, 3)], NC),
    ("unsqueeze_end", F("unsqueeze", -1), [(2, 3)], {}),
    ("unsqueeze_mid", M("unsqueeze", 1), [(2, 3)], NC),
    ("unsqueeze_0d", M("unsqueeze", -1), [()], {}),
    # expand / broadcast
    ("expand", M("expand", 2, 3, 4), [(3, 1)], {}),
    ("expand_minus1", M("expand", (3, -1)), [(1, 2)], {}),
    ("expand_same", M("expand", 2, 3), [(2, 3)], {}),
    ("expand_0d", M("expand", 2, 2), [()], {}),
    ("expand_noncontig", M("expand", 2, 3, 2), [(3, 2)], NC),
    ("expand_empty", M("expand", 2, 0, 3), [(0, 1)], {}),
    ("expand_as", lambda lib: lambda x, y: x.expand_as(y), [(1, 3), Const(np.zeros((2, 3)))],
     {}),
    ("broadcast_to", F("broadcast_to", (2, 2, 3)), [(2, 1, 3)], {}),
    ("broadcast_tensors", F("broadcast_tensors"), [(2, 1), (3,), ()], {}),
    # flatten / unflatten / ravel / atleast
    ("flatten", M("flatten"), [(2, 3, 2)], {}),
    ("flatten_mid", M("flatten", 1, 2), [(2, 3, 2)], NC),
    ("flatten_neg", F("flatten", -2), [(2, 3, 2)], NC),
    ("flatten_same", M("flatten", 1, 1), [(2, 3)], {}),
    ("flatten_0d", M("flatten"), [()], {}),
    ("unflatten", F("unflatten", 1, (2, -1)), [(2, 6)], {}),
    ("unflatten_neg", M("unflatten", -1, (3, 1, 2)), [(2, 6)], NC),
    ("ravel", M("ravel"), [(2, 3)], NC),
    ("ravel_fn", F("ravel"), [(2, 3)], {}),
    ("atleast_1d", F("atleast_1d"), [()], {}),
    ("atleast_2d_1d", F("atleast_2d"), [(3,)], {}),
    ("atleast_3d_1d", F("atleast_3d"), [(3,)], {}),
    ("atleast_3d_2d", F("atleast_3d"), [(2, 3)], {}),
    ("atleast_3d_many", F("atleast_3d"), [(), (2,), (2, 3), (1, 2, 2)], {}),
    ("atleast_2d_list", FL("atleast_2d"), [(), (2, 2)], {}),
    # cat / stack family
    ("cat0", FL("cat"), [(2, 3), (1, 3)], NC),
    ("cat_neg", FL("cat", -1), [(2, 3), (2, 1), (2, 2)], NC),
    ("cat_dim_kw", FL("cat", dim=1), [(2, 1, 2), (2, 3, 2)], {}),
    ("cat_mixed_grad", FL("cat", 1), [(2, 2), Const(np.ones((2, 3), np.float32)), (2, 1)], {}),
    ("cat_skip_empty", FL("cat", 1), [(0,), (2, 3), (2, 2)], {}),
    ("cat_empty_piece", FL("cat", 1), [(2, 0), (2, 3)], {}),
    ("cat_promote", FL("cat"), [(2, 2), arr([[1.0, 2.0]], np.float64)], {}),
    ("cat_int_float", FL("cat"), [(1, 2), np.array([[3, 4]], np.int32)], {}),
    ("cat_single", FL("cat"), [(2, 3)], {}),
    ("concat", FL("concat", dim=1), [(2, 3), (2, 1)], {}),
    ("concatenate", FL("concatenate", axis=-1), [(2, 3), (2, 1)], {}),
    ("stack", FL("stack"), [(2, 3), (2, 3)], NC),
    ("stack_neg", FL("stack", -1), [(2, 3), (2, 3), (2, 3)], {}),
    ("stack_mid", FL("stack", dim=1), [(2, 3), (2, 3)], {}),
    ("stack_0d", FL("stack"), [(), ()], {}),
    ("stack_mixed", FL("stack"), [(2,), Const(np.ones(2, np.float32))], {}),
    ("hstack_1d", FL("hstack"), [(2,), (3,)], {}),
    ("hstack_2d", FL("hstack"), [(2, 1), (2, 3)], {}),
    ("vstack", FL("vstack"), [(3,), (2, 3)], {}),
    ("row_stack", FL("row_stack"), [(3,), (3,)], {}),
    ("dstack", FL("dstack"), [(2, 3), (2, 3)], {}),
    ("column_stack", FL("column_stack"), [(2,), (2, 3), (2, 1)], {}),
    ("column_stack_0d", FL("column_stack"), [(), (1, 2)], {}),
    # split family
    ("split_int", M("split", 2), [(5, 2)], {}),
    ("split_dim", F("split", 2, 1), [(2, 5)], NC),
    ("split_sizes", M("split", [1, 3], -1), [(2, 4)], NC),
    ("split_with_sizes", M("split_with_sizes", [2, 0, 1]), [(3, 2)], {}),
    ("split_empty", M("split", 2), [(0, 2)], {}),
    ("chunk", M("chunk", 3), [(5, 2)], {}),
    ("chunk_fewer", F("chunk", 4, 1), [(2, 6)], NC),
    ("chunk_dim", M("chunk", 2, dim=-1), [(2, 4)], {}),
    ("chunk_empty", M("chunk", 3), [(0,)], {}),
    ("tensor_split_n", M("tensor_split", 3), [(7,)], {}),
    ("tensor_split_dim", F("tensor_split", 3, 1), [(2, 4)], NC),
    ("tensor_split_idx", M("tensor_split", [1, 4], dim=1), [(2, 5)], {}),
    ("tensor_split_overlap", M("tensor_split", [3, 1, 4]), [(5, 2)], {}),
    ("tensor_split_neg_idx", M("tensor_split", (-2, 9)), [(5,)], {}),
    ("tensor_split_tensor", M("tensor_split", dim=0),
     [(5,), Const(np.array([2, 3], np.int64))], {}),
    ("hsplit", F("hsplit", 2), [(2, 4)], {}),
    ("hsplit_1d", F("hsplit", [1]), [(4,)], {}),
    ("vsplit", M("vsplit", [1]), [(3, 2)], {}),
    ("dsplit", F("dsplit", 2), [(1, 2, 4)], {}),
    ("unbind", M("unbind"), [(3, 2)], {}),
    ("unbind_neg", F("unbind", -1), [(2, 3)], NC),
    ("unbind_mid", M("unbind", 1), [(2, 3, 2)], {}),
    # narrow / select
    ("narrow", M("narrow", 0, 1, 2), [(4, 3)], {}),
    ("narrow_neg_start", F("narrow", -1, -3, 2), [(2, 4)], NC),
    ("narrow_empty", M("narrow", 1, 4, 0), [(2, 4)], {}),
    ("select", M("select", 0, 1), [(3, 2)], {}),
    ("select_neg", F("select", -1, -1), [(2, 3)], NC),
    ("select_mid", M("select", 1, 2), [(2, 3, 2)], NC),
    # flip / roll
    ("flip", F("flip", (0,)), [(3, 2)], {}),
    ("flip_both", M("flip", 0, 1), [(2, 3)], NC),
    ("flip_list_neg", M("flip", [-1]), [(2, 3, 2)], {}),
    ("flip_none", F("flip", ()), [(2, 3)], {}),
    ("fliplr", F("fliplr"), [(2, 3)], NC),
    ("flipud", M("flipud"), [(3, 2)], {}),
    ("roll_flat", F("roll", 2), [(2, 3)], NC),
    ("roll_dim", M("roll", 1, 1), [(2, 3)], NC),
    ("roll_multi", F("roll", (1, -2), (0, -1)), [(2, 3)], {}),
    ("roll_big", M("roll", 7, 0), [(3, 2)], {}),
    ("roll_empty", M("roll", 1, 0), [(0, 2)], {}),
    # repeat family
    ("repeat", M("repeat", 2, 1), [(2, 3)], NC),
    ("repeat_lead", M("repeat", (2, 1, 3)), [(2, 2)], {}),
    ("repeat_zero", M("repeat", 0, 2), [(2, 2)], {}),
    ("repeat_0d", M("repeat", 3), [()], {}),
    ("repeat_ones", M("repeat", 1, 1), [(2, 3)], {}),
    ("tile", F("tile", (2,)), [(2, 3)], NC),
    ("tile_lead", M("tile", 2, 1, 2), [(2, 2)], {}),
    ("rint_flat", M("repeat_interleave", 2), [(2, 3)], NC),
    ("rint_dim", F("repeat_interleave", 3, dim=1), [(2, 2)], NC),
    ("rint_neg_dim", M("repeat_interleave", 2, -2), [(2, 3)], {}),
    ("rint_tensor", M("repeat_interleave", dim=0), [(3, 2), REPS], {}),
    ("rint_tensor_dim1", lambda lib: lambda x, r: lib.repeat_interleave(x, r, dim=1),
     [(2, 3), REPS], NC),
    ("rint_tensor_flat", M("repeat_interleave"),
     [(2, 2), Const(np.array([2, 1, 0, 3], np.int64))], {}),
    ("rint_tensor_all_pos", M("repeat_interleave", dim=0),
     [(3,), Const(np.array([2, 1, 3], np.int64))], {}),
    ("rint_tensor_one", M("repeat_interleave", dim=1), [(2, 3), Const(np.array([2]))], {}),
    ("rint_0d", M("repeat_interleave", 2), [()], {}),
    # tril / triu
    ("tril", F("tril"), [(3, 4)], NC),
    ("tril_k", M("tril", 1), [(3, 4)], {}),
    ("tril_neg", M("tril", diagonal=-1), [(2, 3, 3)], {}),
    ("triu", M("triu"), [(4, 3)], NC),
    ("triu_k", F("triu", -1), [(3, 4)], {}),
    ("triu_big", M("triu", 5), [(3, 4)], {}),
    # diagonals
    ("diagonal", M("diagonal"), [(3, 4)], NC),
    ("diagonal_pos", F("diagonal", 1), [(3, 4)], {}),
    ("diagonal_neg", M("diagonal", -1), [(3, 4)], NC),
    ("diagonal_dims", M("diagonal", 0, 0, 2), [(2, 3, 4)], {}),
    ("diagonal_rev_dims", M("diagonal", 1, 2, 0), [(3, 2, 4)], NC),
    ("diagonal_kw", F("diagonal", offset=-1, dim1=-1, dim2=-2), [(2, 3, 4)], {}),
    ("diagonal_out_of_range", M("diagonal", 5), [(3, 4)], {}),
    ("diag_vec", F("diag"), [(3,)], {}),
    ("diag_vec_k", M("diag", 1), [(3,)], {}),
    ("diag_vec_neg", F("diag", -2), [(2,)], {}),
    ("diag_mat", F("diag"), [(3, 4)], NC),
    ("diag_mat_k", M("diag", 1), [(3, 4)], {}),
    ("diag_mat_neg", F("diag", -2), [(3, 4)], {}),
    ("diag_embed", F("diag_embed"), [(2, 3)], {}),
    ("diag_embed_k", M("diag_embed", 1), [(2, 3)], NC),
    ("diag_embed_dims", F("diag_embed", -1, 0, 2), [(2, 3)], {}),
    ("diag_embed_rev", M("diag_embed", 0, -1, 0), [(3, 2)], {}),
    # pad
    ("pad_const", PAD((1, 2)), [(2, 3)], {}),
    ("pad_const_2d_value", PAD((1, 1, 2, 0), value=1.5), [(2, 3)], NC),
    ("pad_const_neg", PAD((-1, 2, 0, -1)), [(3, 3)], {}),
    ("pad_const_all_dims", PAD((0, 1, 1, 0, 1, 1)), [(1, 2, 2)], {}),
    ("pad_const_zero", PAD((0, 0)), [(2, 3)], {}),
    ("pad_const_empty", PAD((1, 1)), [(0, 2)], {}),
    ("pad_reflect", PAD((2, 1), mode="reflect"), [(1, 2, 4)], {}),
    ("pad_reflect_2d", PAD((1, 2, 2, 1), mode="reflect"), [(1, 3, 4)], NC),
    ("pad_reflect_4d", PAD((1, 0, 0, 1), mode="reflect"), [(1, 1, 3, 3)], {}),
    ("pad_reflect_neg", PAD((-1, 2), mode="reflect"), [(1, 1, 5)], {}),
    ("pad_reflect_wide", PAD((9, 1), mode="reflect"), [(1, 10)], {}),
    ("pad_circular_wide", PAD((0, 10, 1, 0), mode="circular"), [(1, 2, 10)], {}),
    ("pad_replicate", PAD((2, 1), mode="replicate"), [(1, 3)], {}),
    ("pad_replicate_2d", PAD((1, 2, 2, 1), mode="replicate"), [(1, 2, 3)], NC),
    ("pad_replicate_3d", PAD((1, 0, 0, 1, 1, 1), mode="replicate"), [(1, 1, 2, 2, 2)], {}),
    ("pad_circular", PAD((1, 2), mode="circular"), [(1, 2, 3)], {}),
    ("pad_circular_2d", PAD((1, 1, 2, 0), mode="circular"), [(1, 2, 3)], NC),
    ("pad_circular_neg", PAD((-1, 2), mode="circular"), [(1, 1, 4)], {}),
    # copies
    ("clone", M("clone"), [(2, 3)], NC),
    ("clone_fn", F("clone"), [(2, 3)], {}),
    ("contiguous", M("contiguous"), [(2, 3)], NC),
    ("contiguous_already", M("contiguous"), [(2, 3)], {}),
    # Tensor.unfold
    ("unfold", M("unfold", 1, 2, 1), [(2, 4)], NC),
    ("unfold_step", M("unfold", 0, 2, 2), [(5, 2)], {}),
    ("unfold_neg_overlap", M("unfold", -1, 3, 1), [(2, 5)], {}),
    ("unfold_wide", M("unfold", 0, 3, 1), [(4,)], {}),
    ("unfold_gap", M("unfold", 0, 1, 3), [(7,)], {}),
]

NON_FLOAT = [  # forward only (integer and bool inputs)
    ("reshape_int", M("reshape", 4, 3), [INTS], {}),
    ("view_int", M("view", -1), [INTS], {}),
    ("transpose_bool", M("transpose", 0, 1), [BOOLS], {}),
    ("permute_int", F("permute", (1, 0)), [INTS], NC),
    ("squeeze_int", M("squeeze"), [np.zeros((1, 3, 1), np.int16)], {}),
    ("expand_bool", M("expand", 2, 3, 4), [BOOLS], {}),
    ("flatten_bool", F("flatten"), [BOOLS], {}),
    ("cat_int", FL("cat", 1), [INTS, INTS], {}),
    ("cat_int_bool", FL("cat"), [INTS, BOOLS], {}),
    ("cat_int32_int64", FL("cat"), [I32, np.ones((1, 3), np.int64)], {}),
    ("stack_bool", FL("stack", -1), [BOOLS, BOOLS], {}),
    ("stack_int_float", FL("stack"), [I32, I32.astype(np.float16)], {}),
    ("split_int", M("split", [1, 3], 1), [INTS], {}),
    ("chunk_bool", M("chunk", 2), [BOOLS], {}),
    ("unbind_int", F("unbind", 1), [I32], {}),
    ("narrow_int", M("narrow", 1, 1, 2), [INTS], {}),
    ("select_bool", M("select", 1, -1), [BOOLS], {}),
    ("flip_int", M("flip", 0, 1), [INTS], {}),
    ("roll_bool", F("roll", 1), [BOOLS], {}),
    ("repeat_int", M("repeat", 2, 2), [I32], {}),
    ("tile_bool", F("tile", (2,)), [BOOLS], {}),
    ("rint_int", M("repeat_interleave", 2, 0), [INTS], {}),
    ("rint_counts", lambda lib: lambda r: lib.repeat_interleave(r),
     [np.array([2, 0, 1], np.int64)], {}),
    ("tril_int", F("tril", 1), [INTS], {}),
    ("triu_bool", M("triu"), [BOOLS], {}),
    ("diagonal_int", M("diagonal", 1), [INTS], {}),
    ("diag_int", F("diag"), [np.array([1, 2], np.int32)], {}),
    ("diag_embed_bool", F("diag_embed"), [BOOLS], {}),
    ("pad_int", PAD((1, 1), value=7), [INTS], {}),
    ("pad_bool", PAD((1, 0)), [BOOLS], {}),
    ("clone_int", M("clone"), [INTS], {}),
    ("unfold_int", M("unfold", 1, 2, 2), [INTS], {}),
    ("movedim_int", F("movedim", 0, 1), [INTS], {}),
    ("hstack_int", FL("hstack"), [INTS, INTS], {}),
]


def _ids(table):
    return [c[0] for c in table]


@pytest.mark.parametrize("case", DIFF, ids=_ids(DIFF))
def test_op(case, device):
    _, make, inputs, kw = case
    check_op(make(ember), make(torch), inputs, device=device, **kw)


def _squared(f):
    """``op(x) ** 2``: makes the first gradient depend on x, so that the op's backward
    formula is itself differentiated (double backward through the op)."""
    def g(*xs):
        r = f(*xs)
        if isinstance(r, (tuple, list)):
            return tuple(o * o for o in r)
        return r * r
    return g


@pytest.mark.parametrize("case", DIFF, ids=_ids(DIFF))
def test_op_double_backward(case, device):
    _, make, inputs, kw = case
    check_op(_squared(make(ember)), _squared(make(torch)), inputs, device=device,
             **{**kw, "gradcheck": False})


@pytest.mark.parametrize("case", NON_FLOAT, ids=_ids(NON_FLOAT))
def test_op_int_bool(case, device):
    _, make, inputs, kw = case
    check_op(make(ember), make(torch), inputs, device=device, **kw)


# --------------------------------------------------------------------------- views

def _base(shape=(2, 3, 4)):
    return ember.arange(float(np.prod(shape))).reshape(shape)


VIEWS = [
    ("reshape", lambda x: x.reshape(6, 4)),
    ("view", lambda x: x.view(-1)),
    ("view_dtype", lambda x: x.view(ember.int32)),
    ("permute", lambda x: x.permute(2, 0, 1)),
    ("transpose", lambda x: x.transpose(0, 2)),
    ("swapaxes", lambda x: ember.swapaxes(x, 0, 1)),
    ("t", lambda x: x.select(0, 0).t()),
    ("mT", lambda x: x.mT),
    ("squeeze", lambda x: x.unsqueeze(1).squeeze()),
    ("unsqueeze", lambda x: x.unsqueeze(-1)),
    ("flatten", lambda x: x.flatten(0, 1)),
    ("unflatten", lambda x: x.unflatten(2, (2, 2))),
    ("narrow", lambda x: x.narrow(2, 1, 2)),
    ("select", lambda x: x.select(1, 2)),
    ("split", lambda x: x.split(2, dim=2)[1]),
    ("chunk", lambda x: x.chunk(3, 1)[2]),
    ("tensor_split", lambda x: x.tensor_split([1, 3], 2)[1]),
    ("unbind", lambda x: x.unbind(0)[1]),
    ("diagonal", lambda x: x.diagonal(1, 1, 2)),
    ("movedim", lambda x: x.movedim(0, -1)),
    ("unfold", lambda x: x.unfold(2, 2, 2)),
    ("alias_expand", lambda x: x.expand(2, 3, 4)),
    ("contiguous_noop", lambda x: x.contiguous()),
]


@pytest.mark.parametrize("name,op", VIEWS, ids=[v[0] for v in VIEWS])
def test_views_share_memory(name, op):
    x = _base()
    v = op(x)
    assert np.shares_memory(v.numpy(), x.numpy()), name
    assert v._version is x._version  # one version counter
    before = x.numpy().copy()
    v.add_(1)
    changed = x.numpy() != before
    assert changed.any(), f"{name}: writing through the view is not visible in the base"
    assert x._version_count >= 1


def test_expanded_view_shares_memory_read_only():
    x = ember.arange(3.0).reshape(3, 1)
    v = x.expand(2, 3, 4)
    assert np.shares_memory(v.numpy(), x.numpy())
    assert v._version is x._version
    x.add_(1)
    # the base's writes show through the view
    assert v.select(0, 1).select(0, 2).select(0, 3).item() == 3.0
    with pytest.raises(RuntimeError, match="clone"):
        v.add_(1)


@pytest.mark.parametrize("name,op", [
    ("reshape_copy", lambda x: x.transpose(0, 1).reshape(-1)),
    ("flip", lambda x: x.flip(0)),
    ("roll", lambda x: x.roll(1)),
    ("repeat", lambda x: x.repeat(1, 1, 1)),
    ("tile", lambda x: x.tile((1,))),
    ("clone", lambda x: x.clone()),
    ("cat", lambda x: ember.cat([x])),
    ("stack", lambda x: ember.stack([x])),
    ("tril", lambda x: x.tril()),
    ("diag", lambda x: x.select(0, 0).diag()),
    ("pad", lambda x: ember.pad(x, (0, 0))),
    ("ravel_noncontig", lambda x: x.transpose(1, 2).ravel()),
    ("repeat_interleave", lambda x: x.repeat_interleave(1)),
])
def test_copies_do_not_share_memory(name, op):
    x = _base()
    y = op(x)
    assert not np.shares_memory(y.numpy(), x.numpy()), name
    assert y._base is not x and y._version is not x._version


def test_reshape_views_when_strides_allow():
    x = _base().transpose(0, 2)  # (4, 3, 2), not contiguous
    v = x.reshape(4, 3, 2, 1)  # no copy needed
    assert np.shares_memory(v.numpy(), x.numpy())
    with pytest.raises(RuntimeError, match="reshape"):
        x.view(-1)
    assert x.contiguous().view(-1).shape == (24,)


def test_view_of_view_tracks_root():
    x = ember.tensor(np.arange(24.0, dtype=np.float32).reshape(2, 3, 4))
    v = x.transpose(0, 1).narrow(0, 1, 2).select(2, 0)
    assert v._base is x and v._version is x._version
    v.fill_(-1.0)
    ref = torch.arange(24.0).reshape(2, 3, 4)
    ref.transpose(0, 1).narrow(0, 1, 2).select(2, 0).fill_(-1.0)
    np.testing.assert_array_equal(x.numpy(), ref.numpy())


_SAME = None


@pytest.mark.parametrize("name,op,torch_op", [
    ("select", lambda y: y.select(0, 1), _SAME),
    ("narrow", lambda y: y.narrow(1, 0, 2), _SAME),
    ("diagonal", lambda y: y.diagonal(), _SAME),
    ("diagonal_off", lambda y: y.diagonal(-1), _SAME),
    ("transpose", lambda y: y.t(), _SAME),
    ("view", lambda y: y.view(-1), _SAME),
    ("unsqueeze", lambda y: y.unsqueeze(0), _SAME),
    ("unfold", lambda y: y.unfold(0, 1, 2), _SAME),  # windows that do not overlap
    # torch refuses in-place writes into outputs of multi-view ops; ember allows them and
    # gives what the equivalent single view gives
    ("split", lambda y: y.split(1)[1], lambda y: y.narrow(0, 1, 1)),
    ("unbind", lambda y: y.unbind(1)[2], lambda y: y.select(1, 2)),
])
def test_inplace_through_view_autograd(name, op, torch_op):
    """Writing into a view with autograd moves the history onto the base, as in PyTorch."""
    a = np.random.default_rng(1).standard_normal((3, 3)).astype(np.float32)
    res = []
    for lib in (ember, torch):
        x = lib.tensor(a, requires_grad=True)
        y = x * 1.0
        v = (torch_op or op)(y) if lib is torch else op(y)
        v.mul_(v.detach() + 2.0)
        (y * y).sum().backward()
        res.append((y.detach().numpy(), x.grad.numpy()))
    np.testing.assert_allclose(res[0][0], res[1][0], rtol=1e-5)
    np.testing.assert_allclose(res[0][1], res[1][1], rtol=1e-5)


def test_saved_view_modified_in_place_raises():
    x = ember.randn(2, 3, requires_grad=True)
    y = x * 1.0
    s = y.select(0, 0)
    z = (s * s).sum()  # saves s
    y.narrow(0, 0, 1).mul_(2.0)  # another view of the same base writes over s
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        z.backward()


def test_split_pieces_partially_used():
    a = np.random.default_rng(2).standard_normal((5, 2)).astype(np.float32)
    grads = []
    for lib in (ember, torch):
        x = lib.tensor(a, requires_grad=True)
        p = x.split(2)
        q = x.unbind(1)
        (p[1] * 3.0).sum().backward(retain_graph=True)
        (q[0] * q[0]).sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6)


def test_iteration_uses_unbind():
    x = ember.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    rows = list(x)
    assert [r.tolist() for r in rows] == [[1.0, 2.0], [3.0, 4.0]]
    (rows[0] * rows[1]).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[3.0, 4.0], [1.0, 2.0]])


def test_tensor_repeats_grad_matches_torch_large():
    """repeat_interleave with tensor repeats: the segment-sum backward (no add.at)."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((50, 4)).astype(np.float32)
    r = rng.integers(0, 4, 50)
    g = []
    for lib in (ember, torch):
        x = lib.tensor(a, requires_grad=True)
        y = lib.repeat_interleave(x, lib.tensor(r), dim=0)
        (y * lib.arange(y.shape[0] * 4.0).reshape(-1, 4)).sum().backward()
        g.append(x.grad.numpy())
    np.testing.assert_allclose(g[0], g[1], rtol=1e-5)


def test_tril_triu_inplace():
    x = ember.arange(9.0).reshape(3, 3)
    assert x.tril_(-1) is x
    np.testing.assert_array_equal(x.numpy(), torch.arange(9.0).reshape(3, 3).tril(-1).numpy())
    y = ember.ones(2, 3).triu_(1)
    np.testing.assert_array_equal(y.numpy(), torch.ones(2, 3).triu(1).numpy())


def test_broadcast_shapes_and_atleast_forms():
    assert ember.broadcast_shapes((2, 1), (3,), ()) == (2, 3)
    assert ember.broadcast_shapes(3, (2, 1)) == (2, 3)
    x = ember.tensor(1.0)
    assert ember.atleast_1d(x).shape == (1,)
    assert isinstance(ember.atleast_2d(x, x), tuple)
    y = ember.ones(2)
    assert ember.atleast_1d(y) is y


def test_view_dtype_reinterprets():
    x = ember.tensor([1.0, -2.0])
    v = x.view(ember.int32)
    np.testing.assert_array_equal(v.numpy(), torch.tensor([1.0, -2.0]).view(torch.int32).numpy())
    with pytest.raises(RuntimeError, match="view"):
        ember.ones(3, 3).t().view(ember.float16)


def test_no_graph_without_grad():
    x = ember.ones(2, 3)
    for y in (x.reshape(3, 2), x.t(), ember.cat([x, x]), x.split(1)[0], ember.pad(x, (1, 1)),
              x.flip(0), x.repeat(2, 1), x.diagonal(), x.unfold(1, 2, 1)):
        assert y.grad_fn is None and not y.requires_grad
    w = ember.ones(2, 3, requires_grad=True)
    with ember.no_grad():
        assert w.reshape(6).grad_fn is None and w.split(1)[0].grad_fn is None


def test_grad_fn_names():
    w = ember.ones(2, 3, requires_grad=True)
    assert w.reshape(6).grad_fn.name() == "ReshapeBackward"
    assert w.t().grad_fn.name() == "TransposeBackward"
    assert ember.cat([w, w]).grad_fn.name() == "CatBackward"
    a, b = w.split(1)
    assert a.grad_fn is b.grad_fn and (a._out_nr, b._out_nr) == (0, 1)


# --------------------------------------------------------------------------- errors

def _raises(exc, match, fn):
    with pytest.raises(exc, match=match):
        fn()


X = ember.ones(2, 3)
ERRORS = [
    ("bad_dim", IndexError, r"range of \[-2, 1\], but got 3", lambda: X.transpose(0, 3)),
    ("bad_dim_unsqueeze", IndexError, r"range of \[-3, 2\], but got -4", lambda: X.unsqueeze(-4)),
    ("bad_dim_squeeze", IndexError, r"range of \[-2, 1\], but got 2", lambda: X.squeeze(2)),
    ("bad_dim_cat", IndexError, r"range of \[-2, 1\], but got 2", lambda: ember.cat([X, X], 2)),
    ("bad_dim_stack", IndexError, r"range of \[-3, 2\], but got 3",
     lambda: ember.stack([X, X], 3)),
    ("bad_dim_split", IndexError, r"range of \[-2, 1\]", lambda: X.split(1, 5)),
    ("bad_dim_flip", IndexError, r"range of \[-2, 1\], but got -3", lambda: X.flip(-3)),
    ("bad_dim_movedim", IndexError, r"range of \[-2, 1\]", lambda: X.movedim(0, 2)),
    ("reshape", RuntimeError, r"shape '\[4, 2\]' is invalid for input of size 6",
     lambda: X.reshape(4, 2)),
    ("reshape_infer", RuntimeError, r"shape '\[-1, 4\]' is invalid for input of size 6",
     lambda: X.reshape(-1, 4)),
    ("reshape_two_infer", RuntimeError, "only one dimension can be inferred",
     lambda: X.reshape(-1, -1)),
    ("reshape_ambiguous", RuntimeError, "ambiguous", lambda: ember.ones(0, 2).reshape(-1, 0)),
    ("view_copy", RuntimeError, r"view size is not compatible .*Use \.reshape",
     lambda: X.t().view(6)),
    ("cat_sizes", RuntimeError,
     r"Sizes of tensors must match except in dimension 1\. Expected size 2 but got size 3 "
     r"for tensor number 1 in the list",
     lambda: ember.cat([X, ember.ones(3, 3)], 1)),
    ("cat_ndim", RuntimeError, "same number of dimensions: got 2 and 3",
     lambda: ember.cat([X, ember.ones(1, 2, 3)])),
    ("cat_empty_list", RuntimeError, "non-empty list", lambda: ember.cat([])),
    ("cat_0d", RuntimeError, r"zero-dimensional tensor \(at position 1\)",
     lambda: ember.cat([ember.ones(1), ember.tensor(1.0)])),
    ("stack_sizes", RuntimeError, r"equal size, but got \[2, 3\] at entry 0 and \[3, 2\] at "
     r"entry 1", lambda: ember.stack([X, ember.ones(3, 2)])),
    ("split_sizes", RuntimeError, r"sum exactly to 3 .*split_sizes=\[1, 1\]",
     lambda: X.split([1, 1], 1)),
    ("split_zero", RuntimeError, "split_size can only be 0", lambda: X.split(0)),
    ("chunk_zero", RuntimeError, "greater than 0, got: 0", lambda: X.chunk(0)),
    ("tensor_split_zero", RuntimeError, "larger than 0", lambda: X.tensor_split(0)),
    ("hsplit", RuntimeError, "not divisible by the split_size 2", lambda: X.hsplit(2)),
    ("unbind_0d", RuntimeError, "0-d", lambda: ember.tensor(1.0).unbind()),
    ("narrow", RuntimeError, r"start \(2\) \+ length \(2\) exceeds dimension size \(3\)",
     lambda: X.narrow(1, 2, 2)),
    ("narrow_start", IndexError, r"start out of range", lambda: X.narrow(1, 4, 0)),
    ("select", IndexError, r"index 2 out of range for tensor of size \[2, 3\] at dimension 0",
     lambda: X.select(0, 2)),
    ("expand", RuntimeError, r"expanded size of the tensor \(4\) must match the existing size "
     r"\(3\) at non-singleton dimension 1", lambda: X.expand(2, 4)),
    ("expand_fewer", RuntimeError, "number of sizes provided", lambda: X.expand(3)),
    ("broadcast", RuntimeError, r"size of tensor a \(3\) must match the size of tensor b \(4\)",
     lambda: ember.broadcast_tensors(X, ember.ones(4))),
    ("permute_len", RuntimeError, "number of dims don't match", lambda: X.permute(0)),
    ("permute_dup", RuntimeError, "duplicate dims", lambda: X.permute(0, 0)),
    ("movedim_len", RuntimeError, "same number of dims", lambda: X.movedim((0, 1), (0,))),
    ("movedim_dup", RuntimeError, "repeated dim in `source`", lambda: X.movedim((0, 0), (0, 1))),
    ("t_3d", RuntimeError, r"<= 2 dimensions, but self is 3D", lambda: ember.ones(1, 2, 3).t()),
    ("flatten", RuntimeError, "start_dim .* cannot come after end_dim", lambda: X.flatten(1, 0)),
    ("unflatten", RuntimeError, r"sizes \[2, 2\] don't multiply up to the size of dim 1 \(3\)",
     lambda: X.unflatten(1, (2, 2))),
    ("repeat", RuntimeError, "can not be smaller than number of dimensions",
     lambda: X.repeat(2)),
    ("rint_size", RuntimeError, r"repeats\.size\(0\) = 2 and input\.size\(1\) = 3",
     lambda: X.repeat_interleave(ember.tensor([1, 2]), 1)),
    ("rint_neg", RuntimeError, "can not be negative", lambda: X.repeat_interleave(-1)),
    ("roll", RuntimeError, "shifts and dimensions must align", lambda: X.roll((1, 2), 0)),
    ("flip_dup", RuntimeError, "multiple times", lambda: X.flip(0, -2)),
    ("tril_1d", RuntimeError, "at least 2 dimensions", lambda: ember.ones(3).tril()),
    ("diagonal_same", RuntimeError, "cannot be identical", lambda: X.diagonal(0, 1, -1)),
    ("diag_3d", RuntimeError, "Supports 1D or 2D tensors. Got 3D",
     lambda: ember.ones(1, 1, 1).diag()),
    ("unfold_size", RuntimeError, "maximum size for tensor at dimension 1 is 3 but size is 4",
     lambda: X.unfold(1, 4, 1)),
    ("unfold_step", RuntimeError, "step is 0 but must be > 0", lambda: X.unfold(1, 2, 0)),
    ("pad_odd", RuntimeError, "divisible by 2", lambda: ember.pad(X, (1,))),
    ("pad_long", RuntimeError, "padding length 6 and input of dimension 2",
     lambda: ember.pad(X, (1,) * 6)),
    ("pad_reflect_big", RuntimeError, r"Padding size should be less than the corresponding "
     r"input dimension, but got: padding \(3, 3\) at dimension 2",
     lambda: ember.pad(ember.ones(1, 1, 3), (3, 3), mode="reflect")),
    ("pad_circular_big", RuntimeError, "wrapping around more than once",
     lambda: ember.pad(ember.ones(1, 1, 3), (4, 0), mode="circular")),
    ("pad_nc_dims", NotImplementedError, "Padding size 2 is not supported for 1D input",
     lambda: ember.pad(ember.ones(3), (1, 1), mode="reflect")),
    ("pad_mode", NotImplementedError, "Unrecognised padding mode", lambda: ember.pad(
        X, (1, 1), mode="wrap")),
    ("pad_negative_size", RuntimeError, "negative output size",
     lambda: ember.pad(X, (-2, -2))),
    ("size_type", TypeError, "must be an integer", lambda: X.reshape(2.0, 3)),
]


@pytest.mark.parametrize("name,exc,match,fn", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors(name, exc, match, fn):
    _raises(exc, match, fn)


def test_torch_raises_where_we_raise():
    """Spot-check that the error cases above are errors in PyTorch too."""
    t = torch.ones(2, 3)
    for f in (lambda: t.reshape(4, 2), lambda: t.t().view(6), lambda: torch.cat([t, torch.ones(
            3, 3)], 1), lambda: t.narrow(1, 2, 2), lambda: t.select(0, 2), lambda: t.expand(2, 4),
              lambda: t.unflatten(1, (2, 2)), lambda: t.unfold(1, 4, 1)):
        with pytest.raises((RuntimeError, IndexError)):
            f()
