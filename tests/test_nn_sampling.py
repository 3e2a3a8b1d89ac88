"""Resampling and padding against torch: F.interpolate and the Upsample modules, F.pad and the padding
modules, pixel_shuffle/unshuffle, unfold/fold, grid_sample and affine_grid (values, gradients, errors)."""
import numpy as np
import pytest
import torch

import ember

from .test_nn_conv import check, check_module, raises_like

INTERP = [
    ((2, 3, 4, 5), dict(scale_factor=2)),
    ((2, 3, 4, 5), dict(size=(7, 3))),
    ((2, 3, 4, 5), dict(scale_factor=1.7)),
    ((2, 3, 6, 5), dict(scale_factor=(0.5, 0.7))),
    ((2, 3, 4, 5), dict(size=(7, 3), mode="nearest-exact")),
    ((2, 3, 9), dict(scale_factor=0.6, mode="nearest-exact")),
    ((2, 3, 5), dict(size=9, mode="linear")),
    ((2, 3, 5), dict(size=9, mode="linear", align_corners=True)),
    ((2, 3, 4, 5), dict(scale_factor=(1.5, 2.3), mode="bilinear")),
    ((2, 3, 7, 5), dict(size=(3, 2), mode="bilinear", align_corners=True)),
    ((2, 3, 7, 5), dict(size=(1, 4), mode="bilinear", align_corners=True)),
    ((2, 3, 4, 5), dict(scale_factor=1.3, mode="bilinear", recompute_scale_factor=True)),
    ((2, 3, 4, 5), dict(size=(9, 7), mode="bicubic")),
    ((2, 3, 4, 5), dict(scale_factor=2.5, mode="bicubic", align_corners=True)),
    ((2, 3, 8, 6), dict(size=(3, 4), mode="bicubic")),
    ((1, 2, 2, 3, 5), dict(size=(3, 5, 4), mode="trilinear")),
    ((1, 2, 3, 3, 4), dict(scale_factor=2, mode="nearest")),
    ((2, 3, 7, 9), dict(size=(4, 3), mode="area")),
    ((2, 3, 8, 6), dict(scale_factor=0.5, mode="area")),
    ((1, 2, 3, 300), dict(size=(2, 257), mode="bicubic")),  # in * out > 2**16: per-tap gathers, no dense map
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape,kwargs", INTERP, ids=[f"i{i}" for i in range(len(INTERP))])
def test_interpolate(shape, kwargs, dtype):
    check(lambda lib, x: lib.nn.functional.interpolate(x, **kwargs), shape, dtype=dtype,
          gradgrad=dtype == "float64")


def test_interpolate_exact_sizes_and_dtypes():
    # float32 index arithmetic decides these borderline source positions in torch's kernels
    for size in (3, 5, 6, 7, 11, 13, 17, 31):
        check(lambda lib, x: lib.nn.functional.interpolate(x, size=size), (1, 1, 1, 9), dtype="float32")
        check(lambda lib, x: lib.nn.functional.interpolate(x, size=size, mode="nearest-exact"), (1, 1, 1, 9),
              dtype="float32")
    for factor in (0.3, 1.1, 2.2, 3.0, (1.1, 2.0)):
        check(lambda lib, x: lib.nn.functional.interpolate(x, scale_factor=factor, mode="bilinear"), (1, 2, 7, 6),
              dtype="float32")
    u8 = np.random.default_rng(0).integers(0, 255, (1, 2, 3, 4)).astype(np.uint8)
    check(lambda lib, x: lib.nn.functional.interpolate(x, scale_factor=1.5), u8)
    half = np.random.default_rng(0).uniform(-1, 1, (1, 2, 3, 4)).astype(np.float16)
    check(lambda lib, x: lib.nn.functional.interpolate(x, scale_factor=2, mode="bilinear"), half, dtype="float16",
          grad=False)


UPSAMPLE = [
    ("Upsample", (), dict(scale_factor=2), (2, 3, 4, 5)),
    ("Upsample", (), dict(size=(3, 4), mode="bilinear"), (2, 3, 5, 5)),
    ("Upsample", (), dict(scale_factor=(2.0, 1.5), mode="bicubic", align_corners=True), (1, 2, 3, 4)),
    ("Upsample", (5,), dict(mode="linear"), (2, 3, 3)),
    ("UpsamplingNearest2d", (), dict(scale_factor=2), (2, 3, 3, 4)),
    ("UpsamplingBilinear2d", (), dict(size=(5, 7)), (2, 3, 3, 4)),
]


@pytest.mark.parametrize("cls,args,kwargs,shape", UPSAMPLE, ids=[f"{u[0]}-{i}" for i, u in enumerate(UPSAMPLE)])
def test_upsample_modules(cls, args, kwargs, shape):
    check_module(cls, args, kwargs, shape, "float64")


PAD = [
    ((2, 3, 4, 5), (1, 2, -1, 3), dict(value=1.5)),
    ((2, 3, 4, 5), (-1, -2), {}),
    ((2, 3, 4), (0, 0, 1, 0, 2, 1), dict(value=-2.0)),
    ((2, 3, 5), (2, 3), dict(mode="reflect")),
    ((3, 5), (-1, 3), dict(mode="reflect")),
    ((2, 3, 4, 5), (2, 3, 1, 0), dict(mode="reflect")),
    ((1, 2, 3, 4, 5), (1, 2, 2, 1, 1, 1), dict(mode="reflect")),
    ((2, 3, 5), (3, 1), dict(mode="replicate")),
    ((2, 3, 4, 5), (1, 2, 0, 3), dict(mode="replicate")),
    ((2, 3, 4, 5, 3), (1, 2, 0, 3, 2, 1), dict(mode="replicate")),
    ((2, 3, 5), (-1, 3), dict(mode="circular")),
    ((2, 3, 4, 5), (1, 2, 3, 1), dict(mode="circular")),
    ((1, 2, 3, 4, 5), (1, 0, 2, 1, 1, 3), dict(mode="circular")),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape,pads,kwargs", PAD, ids=[f"p{i}" for i in range(len(PAD))])
def test_pad(shape, pads, kwargs, dtype):
    check(lambda lib, x: lib.nn.functional.pad(x, pads, **kwargs), shape, dtype=dtype, gradgrad=dtype == "float64")


def test_pad_integer():
    x = np.arange(24).reshape(2, 3, 4)
    check(lambda lib, a: lib.nn.functional.pad(a, (1, 2), value=7), x)
    check(lambda lib, a: lib.nn.functional.pad(a, (1, 2, 1, 1), mode="reflect"), x)
    check(lambda lib, a: lib.nn.functional.pad(a, (2, 1), mode="circular"), x > 10)


PAD_MODULES = [
    ("ZeroPad1d", ((1, 2),), (2, 3, 4)), ("ZeroPad2d", (2,), (2, 3, 4, 5)), ("ZeroPad3d", (1,), (1, 2, 3, 3, 2)),
    ("ConstantPad1d", (2, 3.5), (2, 3, 4)), ("ConstantPad2d", ((1, 2, 0, 1), -1.0), (3, 4, 5)),
    ("ConstantPad3d", (1, 0.5), (1, 2, 2, 3, 2)),
    ("ReflectionPad1d", (2,), (2, 3, 4)), ("ReflectionPad2d", ((1, 2, 3, 0),), (2, 3, 4, 5)),
    ("ReflectionPad3d", (1,), (1, 2, 3, 3, 2)),
    ("ReplicationPad1d", ((3, 1),), (2, 3, 4)), ("ReplicationPad2d", (2,), (3, 4, 5)),
    ("ReplicationPad3d", (1,), (1, 2, 3, 3, 2)),
    ("CircularPad1d", (2,), (2, 3, 4)), ("CircularPad2d", ((1, 2, 2, 1),), (2, 3, 4, 5)),
    ("CircularPad3d", (1,), (1, 2, 3, 3, 2)),
]


@pytest.mark.parametrize("cls,args,shape", PAD_MODULES, ids=[m[0] for m in PAD_MODULES])
def test_pad_modules(cls, args, shape):
    check_module(cls, args, {}, shape, "float64")


def test_pixel_shuffle():
    check(lambda lib, x: lib.nn.functional.pixel_shuffle(x, 2), (2, 8, 3, 4), gradgrad=True)
    check(lambda lib, x: lib.pixel_shuffle(x, 3), (2, 3, 9, 2, 2))
    check(lambda lib, x: lib.nn.functional.pixel_unshuffle(x, 2), (2, 2, 4, 6), gradgrad=True)
    check(lambda lib, x: lib.pixel_unshuffle(x, 3), (3, 6, 9))
    check_module("PixelShuffle", (2,), {}, (2, 8, 3, 4))
    check_module("PixelUnshuffle", (2,), {}, (2, 2, 4, 6))


FOLD = [
    ((2, 3, 6, 7), dict(kernel_size=(2, 3), dilation=(1, 2), padding=1, stride=(2, 1))),
    ((3, 5, 5), dict(kernel_size=3)),
    ((1, 2, 4, 4), dict(kernel_size=2, stride=2)),
]


@pytest.mark.parametrize("shape,kw", FOLD, ids=[f"f{i}" for i in range(len(FOLD))])
def test_unfold_fold(shape, kw):
    check(lambda lib, x: lib.nn.functional.unfold(x, **kw), shape, gradgrad=True)
    size = shape[-2:]
    cols = ember.nn.functional.unfold(ember.zeros(*shape), **kw).shape
    check(lambda lib, c: lib.nn.functional.fold(c, size, **kw), tuple(cols), gradgrad=True)
    check(lambda lib, x: lib.nn.functional.fold(lib.nn.functional.unfold(x, **kw), size, **kw), shape,
          dtype="float32")


def test_fold_unfold_modules():
    check_module("Unfold", (2,), dict(padding=1, stride=(1, 2)), (2, 3, 4, 5))
    check_module("Fold", ((4, 5), 2), dict(dilation=(1, 2)), (2, 12, 9))


GRID = [(mode, pad, align) for mode in ("bilinear", "nearest") for pad in ("zeros", "border", "reflection")
        for align in (False, True)]


@pytest.mark.parametrize("mode,padding_mode,align", GRID, ids=[f"{m}-{p}-{a}" for m, p, a in GRID])
def test_grid_sample(mode, padding_mode, align):
    grid = np.random.default_rng(3).uniform(-1.3, 1.3, (2, 4, 5, 2))
    check(lambda lib, x, g: lib.nn.functional.grid_sample(x, g, mode, padding_mode, align), (2, 3, 5, 6), grid,
          gradgrad=True)
    check(lambda lib, x, g: lib.nn.functional.grid_sample(x, g, mode, padding_mode, align), (1, 2, 4, 3),
          grid[:1].astype(np.float32), dtype="float32")


@pytest.mark.parametrize("mode,padding_mode,align", GRID, ids=[f"{m}-{p}-{a}" for m, p, a in GRID])
def test_grid_sample_volumetric(mode, padding_mode, align):
    grid = np.random.default_rng(4).uniform(-1.3, 1.3, (2, 3, 2, 4, 3))
    check(lambda lib, x, g: lib.nn.functional.grid_sample(x, g, mode, padding_mode, align), (2, 3, 4, 5, 3), grid,
          gradgrad=True)
    codes = (("bilinear", "nearest").index(mode), ("zeros", "border", "reflection").index(padding_mode))
    check(lambda lib, x, g: lib.grid_sampler_3d(x, g, *codes, align), (1, 2, 3, 4, 2),
          grid[:1].astype(np.float32), dtype="float32")
    check(lambda lib, x, g: lib.grid_sampler_2d(x, g, *codes, align), (1, 2, 3, 4),
          grid[:1, 0, :, :, :2].astype(np.float32), dtype="float32")


def test_grid_sample_warning_and_grad_fn():
    for lib in (torch, ember):
        x = lib.ones(1, 1, 3, 3, requires_grad=True)
        grid = lib.zeros(1, 2, 2, 2, requires_grad=True)
        with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
            y = lib.nn.functional.grid_sample(x, grid)
        assert y.grad_fn.name() == "GridSampler2DBackward0"


@pytest.mark.parametrize("size,align", [((2, 3, 5, 6), False), ((2, 3, 5, 6), True), ((2, 1, 1, 4), False),
                                        ((2, 3, 3, 4, 5), False), ((2, 3, 3, 4, 5), True)])
def test_affine_grid(size, align):
    theta = (2, 2, 3) if len(size) == 4 else (2, 3, 4)
    check(lambda lib, t: lib.nn.functional.affine_grid(t, size, align_corners=align), theta)
    check(lambda lib, t: lib.nn.functional.affine_grid(t, size, align_corners=align), theta, dtype="float32")


# ---- errors ------------------------------------------------------------------------------------

@pytest.mark.parametrize("fn", [
    lambda lib: lib.nn.functional.interpolate(lib.ones(2, 3, 4, 5), size=3, scale_factor=2),
    lambda lib: lib.nn.functional.interpolate(lib.ones(2, 3, 4, 5)),
    lambda lib: lib.nn.functional.interpolate(lib.ones(2, 3, 4, 5), size=(3,)),
    lambda lib: lib.nn.functional.interpolate(lib.ones(2, 3, 4, 5), scale_factor=(2,)),
    lambda lib: lib.nn.functional.interpolate(lib.ones(2, 3, 4, 5), size=3, recompute_scale_factor=True),
    lambda lib: lib.nn.functional.interpolate(lib.ones(2, 3, 4, 5), scale_factor=2, align_corners=True),
    lambda lib: lib.nn.functional.interpolate(lib.ones(2, 3, 4, 5), scale_factor=2, mode="linear"),
    lambda lib: lib.nn.functional.interpolate(lib.ones(2, 3, 4, 5), scale_factor=2, mode="trilinear"),
    lambda lib: lib.nn.functional.interpolate(lib.ones(2, 3, 4, 5), scale_factor=2, mode="foo"),
    lambda lib: lib.nn.functional.interpolate(lib.ones(4, 5), scale_factor=2),
    lambda lib: lib.nn.functional.interpolate(lib.ones(2, 3, 4, 5), scale_factor=0.1),
    lambda lib: lib.nn.functional.interpolate(lib.ones(2, 3, 4), size=0, mode="linear"),
    lambda lib: lib.nn.functional.interpolate(lib.ones(2, 3, 4, 5, dtype=lib.int64), scale_factor=2),
    lambda lib: lib.nn.functional.interpolate(lib.ones(2, 3, 4, 5, dtype=lib.int64), scale_factor=2, mode="bilinear"),
    lambda lib: lib.nn.functional.interpolate(lib.ones(2, 3, 4, 5, dtype=lib.int64), size=3, mode="area"),
    lambda lib: lib.nn.functional.interpolate(lib.ones(2, 3, 4), scale_factor=2, mode="linear", antialias=True),
    lambda lib: lib.nn.functional.pad(lib.ones(2, 3, 4, 5), (1,)),
    lambda lib: lib.nn.functional.pad(lib.ones(2, 3), (1, 1, 1, 1, 1, 1)),
    lambda lib: lib.nn.functional.pad(lib.ones(2, 3, 4, 5), (-6, 2)),
    lambda lib: lib.nn.functional.pad(lib.ones(2, 3, 4, 5), (1, 1), mode="reflect"),
    lambda lib: lib.nn.functional.pad(lib.ones(2, 3, 5), (5, 1), mode="reflect"),
    lambda lib: lib.nn.functional.pad(lib.ones(2, 3, 1, 5), (0, 0, 1, 1), mode="reflect"),
    lambda lib: lib.nn.functional.pad(lib.ones(2, 3, 5), (-6, 1), mode="replicate"),
    lambda lib: lib.nn.functional.pad(lib.ones(2, 3, 5), (6, 1), mode="circular"),
    lambda lib: lib.nn.functional.pad(lib.ones(5), (1, 1), mode="reflect"),
    lambda lib: lib.nn.functional.pad(lib.ones(2, 0, 5), (1, 1), mode="reflect"),
    lambda lib: lib.nn.functional.pad(lib.ones(2, 3, 5), (1, 1), mode="foo"),
    lambda lib: lib.nn.functional.pad(lib.ones(2, 3, 5), (1, 1), mode="reflect", value=3),
    lambda lib: lib.nn.functional.pad(lib.ones(2, 3, 5, dtype=lib.bool), (1, 1), mode="replicate"),
    lambda lib: lib.nn.functional.pad(lib.ones(2, 3, 5), [1.5, 1]),
    lambda lib: lib.nn.CircularPad2d(1)(lib.ones(5, 5)),
    lambda lib: lib.nn.functional.pixel_shuffle(lib.ones(3, 3), 2),
    lambda lib: lib.nn.functional.pixel_shuffle(lib.ones(3, 4, 3), 0),
    lambda lib: lib.nn.functional.pixel_shuffle(lib.ones(3, 5, 3), 2),
    lambda lib: lib.nn.functional.pixel_unshuffle(lib.ones(3, 5, 4), 2),
    lambda lib: lib.nn.functional.pixel_unshuffle(lib.ones(3, 4, 5), 2),
    lambda lib: lib.nn.functional.pixel_unshuffle(lib.ones(3, 4), 2),
    lambda lib: lib.nn.functional.unfold(lib.ones(2, 3, 7, 8), 9),
    lambda lib: lib.nn.functional.unfold(lib.ones(2, 3, 7, 8), 0),
    lambda lib: lib.nn.functional.unfold(lib.ones(2, 3, 7, 8), 3, stride=0),
    lambda lib: lib.nn.functional.unfold(lib.ones(2, 3, 7, 8), 3, padding=-1),
    lambda lib: lib.nn.functional.unfold(lib.ones(2, 3, 7, 8), 3, dilation=0),
    lambda lib: lib.nn.functional.unfold(lib.ones(2, 3, 7, 8), (3, 3, 3)),
    lambda lib: lib.nn.functional.unfold(lib.ones(2, 3, 7, 8, dtype=lib.int64), 3),
    lambda lib: lib.nn.functional.fold(lib.ones(2, 26, 30), (7, 8), 3),
    lambda lib: lib.nn.functional.fold(lib.ones(2, 27, 31), (7, 8), 3),
    lambda lib: lib.nn.functional.fold(lib.ones(1, 2, 27, 30), (7, 8), 3),
    lambda lib: lib.nn.functional.fold(lib.ones(2, 27, 30), 7, 3),
    lambda lib: lib.nn.functional.grid_sample(lib.ones(2, 3, 7, 8), lib.zeros(2, 5, 6, 2), mode="foo"),
    lambda lib: lib.nn.functional.grid_sample(lib.ones(2, 3, 7, 8), lib.zeros(2, 5, 6, 2), padding_mode="foo"),
    lambda lib: lib.nn.functional.grid_sample(lib.ones(2, 3, 7, 8), lib.zeros(1, 5, 6, 2), align_corners=True),
    lambda lib: lib.nn.functional.grid_sample(lib.ones(2, 3, 7, 8), lib.zeros(2, 5, 6, 1), align_corners=True),
    lambda lib: lib.nn.functional.grid_sample(lib.ones(3, 7, 8), lib.zeros(2, 5, 6, 2), align_corners=True),
    lambda lib: lib.nn.functional.grid_sample(lib.ones(2, 3, 7, 8), lib.zeros(2, 5, 6, 2, dtype=lib.float64),
                                              align_corners=True),
    lambda lib: lib.nn.functional.grid_sample(lib.ones(2, 3, 7, 8, dtype=lib.int64),
                                              lib.zeros(2, 5, 6, 2, dtype=lib.int64), align_corners=True),
    lambda lib: lib.nn.functional.grid_sample(lib.ones(1, 2, 3, 4, 5), lib.zeros(1, 2, 2, 2, 3), mode="bicubic",
                                              align_corners=True),
    lambda lib: lib.grid_sampler_2d(lib.ones(1, 2, 3, 4, 5), lib.zeros(1, 2, 2, 2, 3), 0, 0, False),
    lambda lib: lib.grid_sampler_3d(lib.ones(1, 2, 3, 4), lib.zeros(1, 2, 2, 2), 0, 0, False),
    lambda lib: lib.nn.functional.affine_grid(lib.ones(2, 2, 3, dtype=lib.int64), (2, 3, 5, 6), False),
    lambda lib: lib.nn.functional.affine_grid(lib.ones(2, 2, 3), (2, 3, 5), False),
    lambda lib: lib.nn.functional.affine_grid(lib.ones(2, 2, 3), (2, 3, 4, 5, 6), False),
    lambda lib: lib.nn.functional.affine_grid(lib.ones(2, 2, 3), (3, 3, 5, 6), False),
    lambda lib: lib.nn.functional.affine_grid(lib.ones(2, 2, 3), (2, 3, 0, 6), False),
])
def test_sampling_errors(fn):
    raises_like(fn)


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
def test_grid_sample_hook_sees_none_for_input_without_grad(mode):
    """grid_sample's grad_fn post hook gets None for the input (or grid) that needs no gradient, as torch's.
    (bicubic is not here: ember builds it from other ops, so its grad_fn is not GridSampler2DBackward0.)"""
    rng = np.random.default_rng(3)
    xa, ga = rng.standard_normal((1, 2, 3, 4)), rng.uniform(-1, 1, (1, 2, 2, 2))
    seen = {}
    for lib in (torch, ember):
        out = []
        for need in [(False, True), (True, False)]:
            x, g = lib.tensor(xa, requires_grad=need[0]), lib.tensor(ga, requires_grad=need[1])
            y = lib.nn.functional.grid_sample(x, g, mode=mode, align_corners=False)
            y.grad_fn.register_hook(lambda gi, go: out.append(tuple(v is None for v in gi)))
            y.sum().backward()
        seen[lib] = out
    assert seen[ember] == seen[torch] == [(True, False), (False, True)]
