"""Random indexing against torch: keys mixing ints, slices (negative bounds, steps), None, Ellipsis,
integer lists and tensors and boolean masks; getitem with its gradient, then setitem of a number and
of a float32 tensor of the selection's shape (into float64: torch's dtype rules for index_put_ and
its masked_fill shortcut). Values, shapes, gradients and raised exception types must match torch.
"""
import numpy as np
import pytest
import torch

import ember


def _key(rng, shape, lib):
    parts = []
    dim = 0
    ellipsis = False
    while dim < len(shape) and len(parts) <= len(shape):
        r = rng.random()
        n = shape[dim]
        if r < 0.25:
            parts.append(int(rng.integers(-n, n)))
            dim += 1
        elif r < 0.55:
            start = int(rng.integers(-n - 1, n + 1)) if rng.random() < 0.7 else None
            stop = int(rng.integers(-n - 1, n + 2)) if rng.random() < 0.7 else None
            parts.append(slice(start, stop, int(rng.choice([1, 1, 2, 3]))))
            dim += 1
        elif r < 0.62:
            parts.append(None)
        elif r < 0.67 and not ellipsis:
            parts.append(Ellipsis)
            ellipsis = True
            dim = len(shape) - int(rng.integers(0, len(shape) - dim + 1))
        elif r < 0.82:
            idx = rng.integers(-n, n, int(rng.integers(0, 4))).tolist()
            parts.append(lib.tensor(idx, dtype=lib.int64) if rng.random() < 0.7 else idx)
            dim += 1
        else:
            parts.append(lib.tensor((rng.random(n) < 0.5).tolist(), dtype=lib.bool))
            dim += 1
    return tuple(parts)


def _run(lib, x, key_seed, number):
    key = _key(np.random.default_rng(key_seed), x.shape, lib)
    xs = lib.from_numpy(x.copy()).requires_grad_()
    try:
        y = xs[key]
        y.backward(lib.ones_like(y) * 0.5)
        z = lib.from_numpy(x.copy())
        z[key] = 7.0 if number else lib.arange(float(y.numel())).reshape(y.shape)
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return type(e).__name__
    return [y.detach().numpy(), xs.grad.numpy(), z.numpy()]


@pytest.mark.parametrize("seed", range(4))
def test_random_indexing_matches_torch(seed):
    rng = np.random.default_rng(seed)
    for _ in range(200):
        x = rng.standard_normal(tuple(int(s) for s in rng.integers(1, 5, size=int(rng.integers(1, 4)))))
        key_seed, number = int(rng.integers(0, 2 ** 31)), bool(rng.random() < 0.5)
        t, e = _run(torch, x, key_seed, number), _run(ember, x, key_seed, number)
        what = (x.shape, key_seed, number)
        if isinstance(t, str) or isinstance(e, str):
            assert e == t, what
            continue
        for a, b in zip(e, t):
            assert a.shape == b.shape, what
            np.testing.assert_allclose(a, b, err_msg=str(what))


@pytest.mark.parametrize("key,value", [
    ([False, True, False, False], [5.0]),   # one mask, a one-element value of another dtype: masked_fill
    ([True, True, False, False], 5.0),      # 0-d value
    ([True, True, False, False], [[5.0]]),  # leading ones dropped
    ([True, True, False, False], [5.0, 6.0]),  # two elements: index_put_ refuses the dtype
    ([0, 2], 5.0),                          # integer index: refused even for a 0-d value
])
def test_setitem_value_dtype_rules_match_torch(key, value):
    results = []
    for lib in (torch, ember):
        x = lib.zeros(4, dtype=lib.float64)
        k = lib.tensor(key)
        try:
            x[k] = lib.tensor(value, dtype=lib.float32)
            results.append(x.tolist())
        except RuntimeError as e:
            results.append(str(e))
    assert results[1] == results[0]


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_take_along_dim_counts_negative_indices_from_the_end_like_torch(dim):
    idx = [[-1, 0, -2], [1, -1, 0]]
    results = []
    for lib in (torch, ember):
        x = lib.arange(6.0).reshape(2, 3).requires_grad_()
        y = lib.take_along_dim(x, lib.tensor(idx), dim)
        y.backward(lib.ones_like(y))
        results.append((y.tolist(), x.grad.tolist()))
    assert results[1] == results[0]


@pytest.mark.parametrize("reduce", ["amin", "amax", "sum", "prod"])
@pytest.mark.parametrize("include_self", [False, True])
def test_scatter_reduce_bool_matches_torch(reduce, include_self):
    """bool scatter_reduce: without self, a reached position starts from the reduction's identity (amin: True)."""
    x = np.array([False, True, False, True])
    src = np.array([True, False, True, False])
    index = np.array([0, 1, 1, 2])
    got = ember.tensor(x).scatter_reduce(0, ember.tensor(index), ember.tensor(src), reduce, include_self=include_self)
    want = torch.tensor(x).scatter_reduce(0, torch.tensor(index), torch.tensor(src), reduce, include_self=include_self)
    assert got.dtype is ember.bool and got.tolist() == want.tolist()


@pytest.mark.parametrize("idx", [[3, -1], [3, 5], [5, 3], [0, 4, -2], [[0, 5], [4, 1]], [[0, 1], [4, -1]]])
def test_gather_scatter_out_of_bounds_message_names_torchs_index(idx):
    """torch names the first out-of-range index in C order (not the lowest or highest)."""
    def messages(lib):
        i = lib.tensor(idx)
        x = lib.zeros(3) if i.dim() == 1 else lib.zeros(2, 3)
        out = []
        for f in [lambda: x.scatter(-1, i, 1.0), lambda: x.gather(-1, i), lambda: x.scatter_add(-1, i, i.float()),
                  lambda: x.scatter_reduce(-1, i, i.float(), "amax")]:
            with pytest.raises(RuntimeError) as err:
                f()
            out.append(str(err.value).split(" (")[0])
        return out
    assert messages(ember) == messages(torch)


@pytest.mark.parametrize("idx", [[0, 3], [-4, 1], [2, 7, -1]])
def test_accumulate_out_of_bounds_message(idx):
    """index_put_(accumulate=True) and x[idx] += v with an index out of range: torch's IndexError text."""
    msgs = {}
    for lib in (torch, ember):
        out = []
        for f in [lambda x, i: x.index_put_((i,), lib.ones(2), accumulate=True),
                  lambda x, i: x.__setitem__(i, x[i.clamp(-3, 2)] + 1),
                  lambda x, i: x.index_add_(0, i, lib.ones(len(idx), 2))]:
            with pytest.raises((IndexError, RuntimeError)) as err:
                f(lib.zeros(3, 2), lib.tensor(idx))
            out.append((err.type, str(err.value).split(" (")[0]))
        msgs[lib] = out
    assert msgs[ember] == msgs[torch]
