"""Pooling layers and functions against torch: max/avg/adaptive/lp pooling (1-3 d) and max_unpool.

Values, flat indices (torch's per-plane format), gradients and second-order gradients are compared
through the helpers of test_nn_conv.py.
"""
import numpy as np
import pytest
import torch

import ember

from .test_nn_conv import check, check_module, raises_like

from ._stories import check_story

def _f(lib, name):
    return getattr(lib.nn.functional, name)


MAX_POOL = [
    ("max_pool2d", (2, 3, 6, 7), (2,), {}),
    ("max_pool2d", (2, 3, 7, 8), (3, 2, 1), {}),
    ("max_pool2d", (2, 3, 9, 8), ((3, 2), (2, 1), (1, 1)), dict(dilation=(2, 1), ceil_mode=True)),
    ("max_pool2d", (3, 7, 7), (3, 2), dict(ceil_mode=True)),  # unbatched
    ("max_pool2d", (1, 2, 5, 5), (2, 2, 1), dict(ceil_mode=True)),
    ("max_pool1d", (2, 3, 10), (3, 2, 1), dict(ceil_mode=True)),
    ("max_pool1d", (3, 10), (4, 3, 2), dict(dilation=2)),
    ("max_pool3d", (1, 2, 4, 5, 6), (2,), {}),
    ("max_pool3d", (1, 2, 5, 5, 6), ((3, 2, 2), 2, 1), dict(ceil_mode=True)),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,shape,args,kwargs", MAX_POOL, ids=[f"m{i}" for i in range(len(MAX_POOL))])
def test_max_pool(name, shape, args, kwargs, dtype):
    check(lambda lib, x: _f(lib, name)(x, *args, return_indices=True, **kwargs), shape, dtype=dtype,
          gradgrad=dtype == "float64")


def test_max_pool_ties_and_nan():
    ties = np.array([[[[1.0, 3, 3, 0], [3, 2, 1, 1], [5, 5, 5, 5], [5, 5, 2, 5]]]])
    check(lambda lib, x: _f(lib, "max_pool2d")(x, 2, return_indices=True), ties)
    check(lambda lib, x: _f(lib, "max_pool2d")(x, 3, 1, 1, return_indices=True), ties)
    nan = np.array([[[[np.nan, 1.0, 2, 3], [np.nan, 5, np.nan, 1], [1, 2, 3, 4], [1, np.nan, 5, 2]]]])
    check(lambda lib, x: _f(lib, "max_pool2d")(x, 2, return_indices=True), nan)
    check(lambda lib, x: _f(lib, "adaptive_max_pool2d")(x, 3, True), nan)
    inf = np.array([[[-np.inf, -np.inf, 1.0, -np.inf]]])
    check(lambda lib, x: _f(lib, "max_pool1d")(x, 2, return_indices=True), inf)


def test_max_pool_integer():
    x = np.random.default_rng(0).integers(-9, 9, (2, 3, 6, 7))
    check(lambda lib, a: _f(lib, "max_pool2d")(a, 3, 2, 1, return_indices=True), x)
    check(lambda lib, a: lib.max_pool3d(a, 2), x[None].astype(np.int32))


AVG_POOL = [
    ("avg_pool2d", (2, 3, 7, 8), (3, 2, 1), {}),
    ("avg_pool2d", (2, 3, 8, 8), (3, 2, 1), dict(ceil_mode=True)),
    ("avg_pool2d", (2, 3, 8, 8), (3, 2, 1), dict(ceil_mode=True, count_include_pad=False)),
    ("avg_pool2d", (2, 3, 8, 7), ((2, 3), (1, 2), (1, 1)), dict(divisor_override=5)),
    ("avg_pool2d", (3, 6, 6), (2,), {}),
    ("avg_pool1d", (2, 3, 10), (3, 2, 1), dict(ceil_mode=True, count_include_pad=False)),
    ("avg_pool1d", (3, 9), (4, 4, 2), dict(ceil_mode=True)),
    ("avg_pool3d", (1, 2, 4, 5, 6), (2, 1, 1), {}),
    ("avg_pool3d", (1, 2, 5, 5, 4), (3, 2, 1), dict(ceil_mode=True, count_include_pad=False)),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,shape,args,kwargs", AVG_POOL, ids=[f"a{i}" for i in range(len(AVG_POOL))])
def test_avg_pool(name, shape, args, kwargs, dtype):
    check(lambda lib, x: _f(lib, name)(x, *args, **kwargs), shape, dtype=dtype, gradgrad=dtype == "float64")


def test_avg_pool_integer():
    x = np.random.default_rng(0).integers(-9, 9, (2, 3, 6, 7))
    check(lambda lib, a: _f(lib, "avg_pool2d")(a, 3, 2, 1), x)  # truncating division, as torch
    check(lambda lib, a: lib.avg_pool1d(a, 2, ceil_mode=True), x[0])


ADAPTIVE = [
    ("adaptive_avg_pool2d", (2, 3, 6, 9), ((2, 3),)),  # regular windows
    ("adaptive_avg_pool2d", (2, 3, 7, 9), ((4, None),)),
    ("adaptive_avg_pool2d", (2, 3, 3, 4), (5,)),  # more outputs than inputs
    ("adaptive_avg_pool2d", (3, 5, 5), (1,)),
    ("adaptive_avg_pool1d", (2, 3, 7), (4,)),
    ("adaptive_avg_pool3d", (1, 2, 4, 5, 6), ((2, 3, 4),)),
    ("adaptive_max_pool2d", (2, 3, 7, 9), ((4, 3), True)),
    ("adaptive_max_pool2d", (2, 3, 3, 4), (5, True)),
    ("adaptive_max_pool2d", (2, 3, 6, 6), ((None, 2), True)),
    ("adaptive_max_pool1d", (3, 7), (4, True)),
    ("adaptive_max_pool3d", (1, 2, 4, 5, 3), ((2, 3, 2), True)),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,shape,args", ADAPTIVE, ids=[f"p{i}" for i in range(len(ADAPTIVE))])
def test_adaptive_pool(name, shape, args, dtype):
    check(lambda lib, x: _f(lib, name)(x, *args), shape, dtype=dtype, gradgrad=dtype == "float64")


def test_adaptive_pool_zero_size_output():
    # empty outputs (torch refuses to backpropagate through them)
    check(lambda lib, x: _f(lib, "adaptive_max_pool2d")(x, (0, 2), True), (1, 2, 5, 5), grad=False)
    check(lambda lib, x: _f(lib, "adaptive_avg_pool2d")(x, (3, 0)), (1, 2, 5, 5), grad=False)
    for lib in (torch, ember):
        x = lib.ones(1, 2, 5, 5, requires_grad=True)
        assert lib.nn.functional.adaptive_max_pool2d(x, (0, 2)).requires_grad


@pytest.mark.parametrize("fn", [
    lambda lib, x: lib.nn.functional.lp_pool2d(x, 2, 2),
    lambda lib, x: lib.nn.functional.lp_pool2d(x.abs() + 0.1, 3, (2, 3), stride=1, ceil_mode=True),
    lambda lib, x: lib.nn.functional.lp_pool1d(x[0], 2, 3, 2),
    lambda lib, x: lib.nn.functional.lp_pool2d(x, 1, 2),
], ids=["p2", "p3", "1d", "p1"])
def test_lp_pool(fn):
    check(fn, (2, 3, 6, 7))


def test_lp_pool3d():
    check(lambda lib, x: lib.nn.functional.lp_pool3d(x.abs() + 0.1, 2, 2), (1, 2, 4, 4, 5))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_max_unpool(dtype):
    def unpool2(lib, x, **kw):
        y, i = lib.nn.functional.max_pool2d(x, 2, return_indices=True)
        return lib.nn.functional.max_unpool2d(y, i, 2, **kw)
    check(unpool2, (2, 3, 6, 8), dtype=dtype, gradgrad=True)
    check(lambda lib, x: unpool2(lib, x, output_size=(7, 9)), (2, 3, 7, 9), dtype=dtype)
    check(lambda lib, x: unpool2(lib, x, output_size=(2, 3, 7, 9)), (2, 3, 7, 9), dtype=dtype)

    def unpool1(lib, x):
        y, i = lib.nn.functional.max_pool1d(x, 3, 2, 1, return_indices=True)
        return lib.nn.functional.max_unpool1d(y, i, 3, 2, 1)
    check(unpool1, (3, 9), dtype=dtype)

    def unpool3(lib, x):
        y, i = lib.nn.functional.max_pool3d(x, 2, return_indices=True)
        return lib.nn.functional.max_unpool3d(y, i, 2)
    check(unpool3, (1, 2, 4, 4, 6), dtype=dtype)


# ---- modules ------------------------------------------------------------------------------------

MODULES = [
    ("MaxPool1d", (3,), {}, (2, 3, 10)),
    ("MaxPool2d", ((2, 3), 1, 1), dict(return_indices=True), (2, 3, 6, 7)),
    ("MaxPool2d", (3, 2), dict(ceil_mode=True, dilation=1), (2, 3, 7, 7)),
    ("MaxPool3d", (2,), {}, (1, 2, 4, 4, 4)),
    ("AvgPool1d", (3, 2, 1), dict(count_include_pad=False), (2, 3, 9)),
    ("AvgPool2d", (3,), dict(stride=2, padding=1, divisor_override=2), (2, 3, 7, 8)),
    ("AvgPool3d", (2, 1), {}, (1, 2, 3, 4, 5)),
    ("AdaptiveAvgPool1d", (4,), {}, (2, 3, 9)),
    ("AdaptiveAvgPool2d", ((3, None),), {}, (2, 3, 7, 5)),
    ("AdaptiveAvgPool3d", (2,), {}, (1, 2, 4, 5, 3)),
    ("AdaptiveMaxPool1d", (4, True), {}, (2, 3, 9)),
    ("AdaptiveMaxPool2d", (3,), dict(return_indices=True), (2, 3, 7, 5)),
    ("AdaptiveMaxPool3d", (2,), {}, (1, 2, 4, 5, 3)),
    ("LPPool1d", (2, 3, 2), {}, (2, 3, 9)),
    ("LPPool2d", (2, 3), {}, (2, 3, 7, 8)),
    ("LPPool3d", (2, 2), {}, (1, 2, 4, 4, 4)),
]


@pytest.mark.parametrize("cls,args,kwargs,shape", MODULES, ids=[f"{m[0]}-{i}" for i, m in enumerate(MODULES)])
def test_pool_modules(cls, args, kwargs, shape):
    check_module(cls, args, kwargs, shape, "float64")


def test_max_unpool_modules():
    for nd, shape in ((1, (2, 3, 8)), (2, (2, 3, 6, 8)), (3, (1, 2, 4, 4, 6))):
        for lib in (torch, ember):
            assert repr(getattr(lib.nn, f"MaxUnpool{nd}d")(2, 1)) == repr(getattr(torch.nn, f"MaxUnpool{nd}d")(2, 1))

        def fn(lib, x, nd=nd):
            pool = getattr(lib.nn, f"MaxPool{nd}d")(2, return_indices=True)
            unpool = getattr(lib.nn, f"MaxUnpool{nd}d")(2)
            y, i = pool(x)
            return unpool(y, i, output_size=tuple(x.shape))
        check(fn, shape)


def test_pool_grad_fn_names():
    x = ember.randn(1, 2, 4, 4, requires_grad=True)
    F_ = ember.nn.functional
    assert F_.max_pool2d(x, 2).grad_fn.name() == "MaxPool2DWithIndicesBackward0"
    assert F_.avg_pool2d(x, 2).grad_fn.name() == "AvgPool2DBackward0"
    assert F_.adaptive_avg_pool2d(x, 3).grad_fn.name() == "AdaptiveAvgPool2DBackward0"
    assert F_.adaptive_max_pool2d(x, 3).grad_fn.name() == "AdaptiveMaxPool2DBackward0"


# ---- errors ------------------------------------------------------------------------------------

@pytest.mark.parametrize("fn", [
    lambda lib: lib.nn.functional.max_pool2d(lib.ones(2, 3, 7, 8), 3, 2, 2),
    lambda lib: lib.nn.functional.max_pool2d(lib.ones(2, 3, 7, 8), 3, 0),
    lambda lib: lib.nn.functional.max_pool2d(lib.ones(2, 3, 7, 8), 3, 2, 1, dilation=0),
    lambda lib: lib.nn.functional.max_pool2d(lib.ones(1, 2, 9, 9), 3, 1, 2, dilation=2),
    lambda lib: lib.nn.functional.max_pool2d(lib.ones(1, 2, 9, 9), 3, 1, 3, dilation=2),
    lambda lib: lib.nn.functional.max_pool2d(lib.ones(2, 3, 7, 8), (3, 3, 3)),
    lambda lib: lib.nn.functional.max_pool2d(lib.ones(2, 3, 7, 8), 3, (1, 2, 3)),
    lambda lib: lib.nn.functional.max_pool2d(lib.ones(2, 3, 7, 8), 9),
    lambda lib: lib.nn.functional.max_pool2d(lib.ones(7, 8), 3),
    lambda lib: lib.nn.functional.max_pool2d(lib.ones(2, 3, 0, 4), 1),
    lambda lib: lib.nn.functional.max_pool2d(lib.ones(2, 3, 7, 8, dtype=lib.bool), 3),
    lambda lib: lib.nn.functional.max_pool1d(lib.ones(3, 7), 3, 2, 2),
    lambda lib: lib.nn.functional.max_pool1d(lib.ones(3, 7), 9),
    lambda lib: lib.nn.functional.max_pool1d(lib.ones(2, 3, 7, 8), 3),
    lambda lib: lib.nn.functional.max_pool1d(lib.ones(3, 7), 3, 0),
    lambda lib: lib.nn.functional.max_pool1d(lib.ones(3, 7), 0),
    lambda lib: lib.nn.functional.max_pool1d(lib.ones(3, 7), (2, 2)),
    lambda lib: lib.nn.functional.max_pool1d(lib.ones(3, 7, dtype=lib.int64), 2),
    lambda lib: lib.nn.functional.avg_pool2d(lib.ones(2, 3, 7, 8), 3, 2, 2),
    lambda lib: lib.nn.functional.avg_pool2d(lib.ones(2, 3, 7, 8), 9),
    lambda lib: lib.nn.functional.avg_pool2d(lib.ones(2, 3, 7, 8), 3, divisor_override=0),
    lambda lib: lib.nn.functional.avg_pool2d(lib.ones(2, 3, 7, 8), 2, padding=-1),
    lambda lib: lib.nn.functional.avg_pool2d(lib.ones(2, 3, 7, 8, dtype=lib.uint8), 2),
    lambda lib: lib.nn.functional.avg_pool1d(lib.ones(2, 3, 7, 8), 3),
    lambda lib: lib.nn.functional.avg_pool1d(lib.ones(1, 2, 2), 3),
    lambda lib: lib.nn.functional.adaptive_avg_pool2d(lib.ones(7, 8), 3),
    lambda lib: lib.nn.functional.adaptive_avg_pool2d(lib.ones(1, 2, 9, 9), (3, 2, 1)),
    lambda lib: lib.nn.functional.adaptive_avg_pool2d(lib.ones(1, 2, 9, 9), -1),
    lambda lib: lib.nn.functional.adaptive_avg_pool2d(lib.ones(1, 2, 0, 9), 3),
    lambda lib: lib.nn.functional.adaptive_avg_pool2d(lib.ones(1, 2, 9, 9, dtype=lib.int64), 3),
    lambda lib: lib.nn.functional.adaptive_avg_pool1d(lib.ones(1, 2, 9, 9), 3),
    lambda lib: lib.nn.functional.adaptive_max_pool2d(lib.ones(1, 2, 9, 9), (3, 2, 1)),
    lambda lib: lib.nn.functional.adaptive_max_pool2d(lib.ones(9, 9), 3),
    lambda lib: lib.nn.functional.adaptive_max_pool2d(lib.ones(1, 2, 0, 9), 3),
    lambda lib: lib.nn.functional.adaptive_max_pool1d(lib.ones(1, 2, 9), (3, 2)),
    lambda lib: lib.nn.functional.adaptive_max_pool1d(lib.ones(9), 3),
    lambda lib: lib.nn.functional.max_unpool2d(lib.ones(1, 1, 2, 2), lib.tensor([[[[0, 1], [2, 99]]]]), 2),
    lambda lib: lib.nn.functional.max_unpool2d(lib.ones(1, 1, 2, 2), lib.tensor([[[[0, 1], [2, 3]]]]).int(), 2),
    lambda lib: lib.nn.functional.max_unpool2d(lib.ones(1, 1, 2, 2), lib.tensor([[[[0, 1, 2, 3]]]]), 2),
    lambda lib: lib.nn.functional.max_unpool2d(lib.ones(1, 1, 2, 2), lib.zeros(1, 1, 2, 2, dtype=lib.int64), 2,
                                               output_size=(1, 2, 3)),
    lambda lib: lib.nn.functional.max_unpool2d(lib.ones(1, 1, 2, 2), lib.zeros(1, 1, 2, 2, dtype=lib.int64), 2,
                                               output_size=(9, 4)),
])
def test_pool_errors(fn):
    raises_like(fn)


def test_avg_pool3d_input_smaller_than_kernel_raises_like_torch():
    """torch's avg_pool3d (only it) refuses an input dim shorter than the kernel even when padding
    would make the window fit."""
    msgs = []
    for lib in (torch, ember):
        with pytest.raises(RuntimeError) as info:
            lib.nn.functional.avg_pool3d(lib.zeros(1, 1, 1, 4, 4), kernel_size=(3, 1, 1), padding=(1, 0, 0), stride=1)
        msgs.append(str(info.value))
        assert tuple(lib.nn.functional.max_pool3d(lib.zeros(1, 1, 1, 4, 4), (3, 1, 1), 1, (1, 0, 0)).shape) == (1, 1, 1, 4, 4)
    assert msgs[1] == msgs[0]


def test_pool_grad_fn_names_match_torch():
    """test_pool_grad_fn_names against torch's names, 2-d and 3-d (torch's 1-d pools end in SqueezeBackward1, its
    2-d kernel wrapped in unsqueeze/squeeze; ember's name the 2-d node: a known difference)."""
    def story(lib):
        F_ = lib.nn.functional
        out = []
        for d, shape in ((2, (1, 2, 6, 6)), (3, (1, 2, 4, 4, 4))):
            x = lib.ones(*shape, requires_grad=True)
            out += [F_.__dict__[f"max_pool{d}d"](x, 2).grad_fn.name(),
                    F_.__dict__[f"avg_pool{d}d"](x, 2).grad_fn.name(),
                    F_.__dict__[f"adaptive_avg_pool{d}d"](x, 3).grad_fn.name(),
                    F_.__dict__[f"adaptive_max_pool{d}d"](x, 3).grad_fn.name(),
                    F_.__dict__[f"max_pool{d}d"](x, 2, return_indices=True)[0].grad_fn.name()]
        out.append(F_.lp_pool2d(lib.ones(1, 2, 4, 4, requires_grad=True), 2, 2).grad_fn.name())
        return out
    check_story(story)
