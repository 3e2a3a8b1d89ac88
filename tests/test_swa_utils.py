"""torch.optim.swa_utils against torch: the same small model (weights from NumPy) trained a few SGD steps in
both libraries while an AveragedModel (plain SWA, EMA by multi_avg_fn or avg_fn, use_buffers) follows it;
SWALR's learning rates; update_bn's recomputed BatchNorm statistics; state_dict keys and errors."""
import warnings

import numpy as np
import pytest
import torch

import ember
import ember.optim.swa_utils as eswa
import torch.optim.swa_utils as tswa

RNG = np.random.default_rng(0)
WEIGHTS = [RNG.standard_normal(s).astype(np.float32) * 0.5 for s in ((6, 4), (6,), (6,), (6,), (2, 6), (2,))]
DATA = [(RNG.standard_normal((8, 4)).astype(np.float32), RNG.standard_normal((8, 2)).astype(np.float32))
        for _ in range(5)]


def _model(lib):
    nn = lib.nn
    m = nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.ReLU(), nn.Linear(6, 2))
    with lib.no_grad():
        for p, w in zip(m.parameters(), WEIGHTS):
            p.copy_(lib.tensor(w))
    return m


def _same(e, t, exact=False):
    assert tuple(e.shape) == tuple(t.shape)
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    if exact:
        np.testing.assert_array_equal(e.detach().numpy(), t.detach().numpy())
    else:
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=2e-6, atol=2e-6)


def _train_and_average(lib, swa, **averaged_kwargs):
    model = _model(lib)
    averaged = swa.AveragedModel(model, **averaged_kwargs)
    opt = lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for x, y in DATA:
        opt.zero_grad()
        lib.nn.functional.mse_loss(model(lib.tensor(x)), lib.tensor(y)).backward()
        opt.step()
        averaged.update_parameters(model)
    return averaged


AVERAGERS = {
    "swa": lambda swa: {},
    "ema_multi": lambda swa: {"multi_avg_fn": swa.get_ema_multi_avg_fn(0.9)},
    "ema_multi_buffers": lambda swa: {"multi_avg_fn": swa.get_ema_multi_avg_fn(0.8), "use_buffers": True},
    "swa_buffers": lambda swa: {"use_buffers": True},
    "swa_multi": lambda swa: {"multi_avg_fn": swa.get_swa_multi_avg_fn()},
    "ema_avg_fn": lambda swa: {"avg_fn": swa.get_ema_avg_fn(0.7)},
    "swa_avg_fn": lambda swa: {"avg_fn": swa.get_swa_avg_fn()},
}


@pytest.mark.parametrize("kind", list(AVERAGERS))
def test_averaged_model_follows_torch(kind):
    e = _train_and_average(ember, eswa, **AVERAGERS[kind](eswa))
    t = _train_and_average(torch, tswa, **AVERAGERS[kind](tswa))
    esd, tsd = e.state_dict(), t.state_dict()
    assert list(esd) == list(tsd)
    assert list(esd)[0] == "n_averaged" and "module.0.weight" in esd
    for k in tsd:
        _same(esd[k], tsd[k], exact=k.endswith(("n_averaged", "num_batches_tracked")))
    x = DATA[0][0]
    e.eval()
    t.eval()
    _same(e(ember.tensor(x)), t(torch.tensor(x)))  # forward runs the averaged copy


def test_swa_multi_avg_fn_on_integer_buffers_fails_as_torch():
    """get_swa_multi_avg_fn divides integer tensors with addcdiv_: torch refuses (num_batches_tracked)."""
    for lib, swa in ((ember, eswa), (torch, tswa)):
        with pytest.raises(RuntimeError, match="Integer division with addcdiv is no longer supported"):
            _train_and_average(lib, swa, multi_avg_fn=swa.get_swa_multi_avg_fn(), use_buffers=True)


def test_averaged_model_arguments():
    for lib, swa in ((ember, eswa), (torch, tswa)):
        with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn"):
            swa.AveragedModel(_model(lib), avg_fn=swa.get_swa_avg_fn(), multi_avg_fn=swa.get_swa_multi_avg_fn())
        for bad in (-0.1, 1.5):
            with pytest.raises(ValueError, match=f"Invalid decay value {bad}"):
                swa.get_ema_multi_avg_fn(bad)
            with pytest.raises(ValueError, match=f"Invalid decay value {bad}"):
                swa.get_ema_avg_fn(bad)
    e, t = eswa.AveragedModel(_model(ember)), tswa.AveragedModel(_model(torch))
    assert e.n_averaged.dtype == ember.int64 and e.n_averaged.item() == t.n_averaged.item() == 0
    assert e.module is not e  # a deep copy
    assert [n for n, _ in e.named_parameters()] == [n for n, _ in t.named_parameters()]


def _swalr_lrs(lib, swa, strategy, anneal_epochs, swa_lr):
    params = [lib.nn.Parameter(lib.zeros(2)), lib.nn.Parameter(lib.zeros(3))]
    opt = lib.optim.SGD([{"params": params[:1]}, {"params": params[1:], "lr": 0.5}], lr=1.0)
    sched = swa.SWALR(opt, swa_lr=swa_lr, anneal_epochs=anneal_epochs, anneal_strategy=strategy)
    lrs = [sched.get_last_lr()]
    for _ in range(10):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr())
    return lrs, [g["swa_lr"] for g in opt.param_groups], sorted(sched.state_dict())


@pytest.mark.parametrize("strategy", ["cos", "linear"])
@pytest.mark.parametrize("anneal_epochs,swa_lr", [(10, 0.05), (3, [0.1, 0.2]), (0, 0.01)])
def test_swalr(strategy, anneal_epochs, swa_lr):
    e = _swalr_lrs(ember, eswa, strategy, anneal_epochs, swa_lr)
    t = _swalr_lrs(torch, tswa, strategy, anneal_epochs, swa_lr)
    np.testing.assert_allclose(np.array(e[0]), np.array(t[0]), rtol=1e-12, atol=1e-15)
    assert e[1:] == t[1:]


def test_swalr_errors_and_state_dict():
    for lib, swa in ((ember, eswa), (torch, tswa)):
        opt = lib.optim.SGD([lib.nn.Parameter(lib.zeros(2))], lr=1.0)
        with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear', instead got exp"):
            swa.SWALR(opt, 0.1, anneal_strategy="exp")
        for bad in (-1, 2.0):
            with pytest.raises(ValueError, match=f"anneal_epochs must be equal or greater than 0, got {bad}"):
                swa.SWALR(opt, 0.1, anneal_epochs=bad)
        with pytest.raises(ValueError, match="swa_lr must have the same length as optimizer.param_groups"):
            swa.SWALR(opt, [0.1, 0.2])
        sched = swa.SWALR(opt, 0.1, anneal_strategy="linear")
        state = sched.state_dict()
        assert "anneal_func" not in state and "optimizer" not in state
        other = swa.SWALR(lib.optim.SGD([lib.nn.Parameter(lib.zeros(2))], lr=1.0), 0.1)
        other.load_state_dict(state)
        assert other.anneal_func(0.25) == 0.25  # the linear strategy is restored
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            sched.get_lr()
        assert "get_last_lr()" in str(caught[0].message)


def test_update_bn():
    loader = [(ember.tensor(x), ember.tensor(y)) for x, y in DATA]
    tloader = [(torch.tensor(x), torch.tensor(y)) for x, y in DATA]
    models = []
    for lib, swa, data in ((ember, eswa, loader), (torch, tswa, tloader)):
        m = _model(lib)
        m.eval()
        bn = m[1]
        bn.momentum = 0.3
        with lib.no_grad():
            bn.running_mean.fill_(5.0)
        swa.update_bn(data, m)
        assert not m.training and bn.momentum == 0.3  # restored
        swa.update_bn([x for x, _ in data], m)  # bare tensors as batches
        swa.update_bn(data, lib.nn.Linear(2, 2))  # no BatchNorm: nothing to do
        models.append(m)
    e, t = models
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        _same(getattr(e[1], name), getattr(t[1], name))


def test_multi_avg_fns_refuse_lists_of_different_lengths_and_a_negative_count_skips_averaging():
    """torch's foreach check before any write (float lists; integer EMA pairs until zip runs out), and
    AveragedModel averages only when n_averaged > 0."""
    got = []
    for lib in (torch, ember):
        U = lib.optim.swa_utils
        rec = []
        for fn in (U.get_ema_multi_avg_fn(), U.get_swa_multi_avg_fn()):
            for dt in (lib.float32, lib.int64):
                a = [lib.zeros(2, dtype=dt), lib.zeros(2, dtype=dt)]
                try:
                    fn(a, [lib.full((2,), 3, dtype=dt)], lib.tensor(1))
                    rec.append(("ok", a[0].tolist()))
                except Exception as e:  # noqa: BLE001 - the error is the observation
                    rec.append((type(e).__name__, str(e), a[0].tolist()))
        lib.manual_seed(0)
        net = lib.nn.Linear(2, 2)
        avg = U.AveragedModel(net)
        avg.n_averaged.fill_(-1)
        with lib.no_grad():
            net.weight.add_(1.0)
        avg.update_parameters(net)
        rec.append((avg.n_averaged.item(), avg.module.weight.tolist()))
        got.append(rec)
    assert got[0] == got[1]
