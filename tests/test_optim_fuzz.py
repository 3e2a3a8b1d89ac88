"""Random SGD, Adam and AdamW runs against torch: random hyperparameters (momentum, nesterov,
dampening, weight decay plain or decoupled, amsgrad, maximize, lr), float32 or float64 parameters of
random shapes (0-d and transposed views included), three steps. Parameters and optimizer state
must match torch.
"""
import numpy as np
import pytest
import torch

import ember

TOL = {"float32": dict(rtol=1e-5, atol=1e-6), "float64": dict(rtol=1e-10, atol=1e-12)}


def _hyper(rng, name):
    if name == "SGD":
        momentum = float(rng.choice([0.0, 0.5, 0.9]))
        nesterov = momentum > 0 and bool(rng.random() < 0.5)
        return dict(lr=float(rng.choice([0.01, 0.5])), momentum=momentum, nesterov=nesterov,
                    dampening=0.0 if nesterov else float(rng.choice([0.0, 0.3])),
                    weight_decay=float(rng.choice([0, 0.1])), maximize=bool(rng.random() < 0.2))
    kw = dict(lr=float(rng.choice([1e-3, 0.1, 1.0])), betas=(float(rng.choice([0.0, 0.3, 0.9])), float(rng.choice([0.5, 0.999]))),
              eps=float(rng.choice([1e-8, 1e-3])), weight_decay=float(rng.choice([0, 0.01, 0.5])),
              amsgrad=bool(rng.random() < 0.3), maximize=bool(rng.random() < 0.2))
    if name == "Adam" and rng.random() < 0.3:
        kw["decoupled_weight_decay"] = True
    return kw


def _run(lib, name, kw, values, grads, transposed):
    params = []
    for v in values:
        t = lib.from_numpy(v.T.copy()).t() if transposed and v.ndim == 2 else lib.from_numpy(v.copy())
        params.append(lib.nn.Parameter(t))
    opt = getattr(lib.optim, name)(params, **kw)
    for step in grads:
        for p, g in zip(params, step):
            p.grad = lib.from_numpy(g.copy())
        opt.step()
    state = [v for p in params for k, v in sorted(opt.state[p].items()) if k != "step"]
    return [t.detach().numpy() for t in params + state]


@pytest.mark.parametrize("seed", range(3))
def test_random_optimizer_runs_match_torch(seed):
    rng = np.random.default_rng(seed)
    for _ in range(60):
        name = str(rng.choice(["SGD", "Adam", "AdamW"]))
        kw = _hyper(rng, name)
        dtype = str(rng.choice(["float32", "float64"]))
        shapes = [tuple(int(s) for s in rng.integers(1, 6, size=int(rng.integers(0, 3)))) for _ in range(3)]
        values = [rng.standard_normal(s).astype(dtype) for s in shapes]
        grads = [[rng.standard_normal(s).astype(dtype) for s in shapes] for _ in range(3)]
        transposed = bool(rng.random() < 0.3)
        what = (name, kw, dtype, shapes, transposed)
        for e, t in zip(_run(ember, name, kw, values, grads, transposed), _run(torch, name, kw, values, grads, transposed)):
            assert e.shape == t.shape, what
            np.testing.assert_allclose(e, t, err_msg=str(what), **TOL[dtype])
