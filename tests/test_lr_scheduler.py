"""Learning-rate schedulers against torch: the lr (and momentum) sequence of 100 steps, state_dict keys
and round trips, chained and sequential combinations, and ReduceLROnPlateau on a fixed metric sequence."""
import math
import warnings

import pytest
import torch

import ember

from ._stories import check_story, warned

STEPS = 100


def make_optimizer(lib, kind="sgd", groups=1):
    params = [lib.zeros(2, requires_grad=True) for _ in range(groups)]
    if kind == "adam":
        return lib.optim.Adam([{"params": [p], "lr": 0.1 * (i + 1)} for i, p in enumerate(params)])
    return lib.optim.SGD([{"params": [p], "lr": 0.1 * (i + 1)} for i, p in enumerate(params)], momentum=0.9)


def trace(lib, build, steps=STEPS, kind="sgd", groups=1, metrics=None):
    """[(lrs, momenta)] after construction and after each step; optimizer.step() first, as in training."""
    opt = make_optimizer(lib, kind, groups)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # composite schedulers step their children before any optimizer step
        sched = build(lib.optim.lr_scheduler, opt)

    def snapshot():
        if kind == "adam":
            mom = [g["betas"][0] for g in opt.param_groups]
        else:
            mom = [g["momentum"] for g in opt.param_groups]
        return list(sched.get_last_lr()), [g["lr"] for g in opt.param_groups], mom
    out = [snapshot()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns when a test steps without gradients
        for i in range(steps):
            opt.step()
            if metrics is None:
                sched.step()
            else:
                sched.step(metrics[i])
            out.append(snapshot())
    return out, sched


def assert_same_trace(e, t):
    assert len(e) == len(t)
    for i, (es, ts) in enumerate(zip(e, t)):
        for ev, tv in zip(es, ts):
            # the formulas are the same operations in the same order: bit-for-bit equal
            assert ev == tv, (i, es, ts)


def _cyclic(**kw):
    return lambda S, opt: S.CyclicLR(opt, **kw)


def _sequential(S, opt):
    warm = S.LinearLR(opt, start_factor=0.1, total_iters=10)
    mid = S.ExponentialLR(opt, gamma=0.95)
    cos = S.CosineAnnealingLR(opt, T_max=30, eta_min=0.001)
    return S.SequentialLR(opt, [warm, mid, cos], milestones=[10, 40])


def _chained(S, opt):
    return S.ChainedScheduler([S.ConstantLR(opt, factor=0.5, total_iters=7), S.ExponentialLR(opt, gamma=0.97),
                               S.MultiStepLR(opt, milestones=[20, 50, 50], gamma=0.5)])


def _sequential_of_chained(S, opt):
    first = S.ChainedScheduler([S.LinearLR(opt, start_factor=0.2, total_iters=8), S.StepLR(opt, 3, gamma=0.9)])
    return S.SequentialLR(opt, [first, S.PolynomialLR(opt, total_iters=40, power=2.0)], milestones=[15])


SCHEDULERS = {
    "LambdaLR": lambda S, opt: S.LambdaLR(opt, lambda e: 0.95 ** e + 0.01 * (e % 7)),
    "LambdaLR-per-group": lambda S, opt: S.LambdaLR(opt, [lambda e: 1 / (1 + e), lambda e: 0.99 ** e]),
    "MultiplicativeLR": lambda S, opt: S.MultiplicativeLR(opt, lambda e: 0.97 if e % 2 else 1.01),
    "StepLR": lambda S, opt: S.StepLR(opt, step_size=7, gamma=0.5),
    "MultiStepLR": lambda S, opt: S.MultiStepLR(opt, milestones=[10, 30, 30, 75], gamma=0.3),
    "ConstantLR": lambda S, opt: S.ConstantLR(opt, factor=0.25, total_iters=12),
    "LinearLR": lambda S, opt: S.LinearLR(opt, start_factor=0.05, end_factor=0.9, total_iters=40),
    "LinearLR-decay": lambda S, opt: S.LinearLR(opt, start_factor=1.0, end_factor=0.1, total_iters=30),
    "ExponentialLR": lambda S, opt: S.ExponentialLR(opt, gamma=0.93),
    "PolynomialLR": lambda S, opt: S.PolynomialLR(opt, total_iters=60, power=1.5),
    "CosineAnnealingLR": lambda S, opt: S.CosineAnnealingLR(opt, T_max=17, eta_min=0.01),  # past T_max too
    "CosineAnnealingLR-0": lambda S, opt: S.CosineAnnealingLR(opt, T_max=50),
    "CosineAnnealingWarmRestarts": lambda S, opt: S.CosineAnnealingWarmRestarts(opt, T_0=9, eta_min=0.002),
    "CosineAnnealingWarmRestarts-mult": lambda S, opt: S.CosineAnnealingWarmRestarts(opt, T_0=5, T_mult=2),
    "CyclicLR-triangular": _cyclic(base_lr=0.01, max_lr=0.1, step_size_up=7),
    "CyclicLR-triangular2": _cyclic(base_lr=0.01, max_lr=0.1, step_size_up=5, step_size_down=9,
                                    mode="triangular2"),
    "CyclicLR-exp_range": _cyclic(base_lr=[0.01, 0.02], max_lr=0.3, step_size_up=6, mode="exp_range",
                                  gamma=0.97, base_momentum=0.7, max_momentum=0.95),
    "CyclicLR-no-momentum": _cyclic(base_lr=0.01, max_lr=0.1, step_size_up=4, cycle_momentum=False),
    "CyclicLR-scale_fn": _cyclic(base_lr=0.01, max_lr=0.1, step_size_up=6, scale_fn=lambda x: 1 / (1 + x),
                                 scale_mode="iterations"),
    "OneCycleLR-cos": lambda S, opt: S.OneCycleLR(opt, max_lr=0.5, total_steps=STEPS),
    "OneCycleLR-linear": lambda S, opt: S.OneCycleLR(opt, max_lr=[0.5, 0.2], total_steps=STEPS + 20,
                                                     anneal_strategy="linear", pct_start=0.4),
    "OneCycleLR-three_phase": lambda S, opt: S.OneCycleLR(opt, max_lr=0.5, epochs=10, steps_per_epoch=10,
                                                          three_phase=True, div_factor=10.0,
                                                          final_div_factor=100.0),
    "SequentialLR": _sequential,
    "ChainedScheduler": _chained,
    "SequentialLR-of-ChainedScheduler": _sequential_of_chained,
}


PER_GROUP_LISTS = ("LambdaLR-per-group", "CyclicLR-exp_range", "OneCycleLR-linear")  # need two groups
SEQUENCE_CASES = [(n, g) for n in SCHEDULERS for g in (1, 2) if g == 2 or n not in PER_GROUP_LISTS]


@pytest.mark.parametrize("name,groups", SEQUENCE_CASES, ids=[f"{n}-{g}" for n, g in SEQUENCE_CASES])
def test_lr_sequence_matches_torch(name, groups):
    build = SCHEDULERS[name]
    t, tsched = trace(torch, build, groups=groups)
    e, esched = trace(ember, build, groups=groups)
    assert_same_trace(e, t)
    assert sorted(esched.state_dict()) == sorted(tsched.state_dict())


@pytest.mark.parametrize("name", ["CyclicLR-triangular", "OneCycleLR-cos", "OneCycleLR-three_phase"])
def test_beta1_is_cycled_for_adam(name):
    t, _ = trace(torch, SCHEDULERS[name], kind="adam")
    e, _ = trace(ember, SCHEDULERS[name], kind="adam")
    assert_same_trace(e, t)


PLATEAU_METRICS = [1.0 / (1 + i) if i < 20 else 0.05 + 0.001 * math.sin(i) for i in range(STEPS)]


@pytest.mark.parametrize("options", [
    dict(),
    dict(patience=3, factor=0.5),
    dict(mode="max", patience=2, factor=0.3, threshold=0.01),
    dict(patience=2, threshold_mode="abs", threshold=1e-3, cooldown=4),
    dict(patience=1, factor=0.5, min_lr=[0.01, 0.03], eps=1e-4),
    dict(patience=0, factor=0.9, min_lr=0.02),
], ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "defaults")
def test_reduce_on_plateau_matches_torch(options):
    metrics = PLATEAU_METRICS if options.get("mode") != "max" else [-m for m in PLATEAU_METRICS]

    def build(S, opt):
        return S.ReduceLROnPlateau(opt, **options)
    t, tsched = trace(torch, build, groups=2, metrics=metrics)
    e, esched = trace(ember, build, groups=2, metrics=metrics)
    assert_same_trace(e, t)
    tsd, esd = tsched.state_dict(), esched.state_dict()
    assert sorted(esd) == sorted(tsd)
    for key in ("best", "num_bad_epochs", "cooldown_counter", "last_epoch", "min_lrs"):
        assert esd[key] == tsd[key]


@pytest.mark.parametrize("name", ["StepLR", "CosineAnnealingLR", "CyclicLR-triangular2", "OneCycleLR-cos",
                                  "CosineAnnealingWarmRestarts-mult", "SequentialLR", "ChainedScheduler",
                                  "LambdaLR", "MultiStepLR"])
def test_state_dict_round_trip(name):
    """Save a scheduler after 40 steps, load it into one built over a fresh optimizer (with the optimizer's
    state restored too), step 60 more: the lrs are those of the run that never stopped."""
    build = SCHEDULERS[name]
    full, _ = trace(ember, build)
    opt = make_optimizer(ember)
    sched = build(ember.optim.lr_scheduler, opt)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(40):
            opt.step()
            sched.step()
    saved_sched, saved_opt = sched.state_dict(), opt.state_dict()
    opt2 = make_optimizer(ember)
    sched2 = build(ember.optim.lr_scheduler, opt2)
    opt2.load_state_dict(saved_opt)
    sched2.load_state_dict(saved_sched)
    resumed = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(60):
            opt2.step()
            sched2.step()
            resumed.append(list(sched2.get_last_lr()))
    assert resumed == [lrs for lrs, _, _ in full[41:]]


@pytest.mark.parametrize("epoch_steps", [[3, 5, 10, 11, 20], [0, 7, 14, 2]])
@pytest.mark.parametrize("name", ["StepLR", "MultiStepLR", "ConstantLR", "LinearLR", "ExponentialLR", "PolynomialLR",
                                  "CosineAnnealingLR", "CosineAnnealingWarmRestarts-mult"])
def test_explicit_epoch_uses_closed_form(name, epoch_steps):
    results = []
    for lib in (torch, ember):
        opt = make_optimizer(lib)
        sched = SCHEDULERS[name](lib.optim.lr_scheduler, opt)
        lrs = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for epoch in epoch_steps:
                opt.step()
                sched.step(epoch)
                lrs.append(sched.get_last_lr())
        results.append(lrs)
    assert results[1] == results[0]


def test_resume_with_last_epoch():
    """last_epoch >= 0 needs initial_lr in the groups; CosineAnnealingLR then starts from its closed form."""
    messages = []
    for lib in (torch, ember):
        opt = make_optimizer(lib)
        with pytest.raises(KeyError) as info:
            lib.optim.lr_scheduler.StepLR(opt, 3, last_epoch=5)
        messages.append(str(info.value))
    assert messages[0] == messages[1]
    results = []
    for lib in (torch, ember):
        opt = make_optimizer(lib)
        opt.param_groups[0]["initial_lr"] = 0.5
        sched = lib.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=20, last_epoch=6)
        lrs = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for _ in range(10):
                opt.step()
                sched.step()
                lrs.append(sched.get_last_lr())
        results.append(lrs)
    assert results[1] == results[0]


def _raises_like_torch(fn):
    kinds = []
    for lib in (torch, ember):
        try:
            fn(lib.optim.lr_scheduler, make_optimizer(lib), lib)
            kinds.append(None)
        except Exception as e:  # noqa: BLE001 - the type is what is compared
            kinds.append(type(e))
    assert kinds[0] is not None and kinds[0] == kinds[1], kinds


@pytest.mark.parametrize("fn", [
    lambda S, opt, lib: S.StepLR(object(), 3),
    lambda S, opt, lib: S.ConstantLR(opt, factor=1.5),
    lambda S, opt, lib: S.LinearLR(opt, start_factor=0),
    lambda S, opt, lib: S.LinearLR(opt, end_factor=1.5),
    lambda S, opt, lib: S.LambdaLR(opt, [lambda e: 1.0, lambda e: 1.0]),
    lambda S, opt, lib: S.MultiplicativeLR(opt, 3),
    lambda S, opt, lib: S.CosineAnnealingWarmRestarts(opt, T_0=0),
    lambda S, opt, lib: S.CosineAnnealingWarmRestarts(opt, T_0=5, T_mult=1.5),
    lambda S, opt, lib: S.CyclicLR(opt, 0.01, 0.1, mode="sawtooth"),
    lambda S, opt, lib: S.CyclicLR(lib.optim.Adagrad([lib.zeros(1, requires_grad=True)]), 0.01, 0.1),
    lambda S, opt, lib: S.OneCycleLR(opt, max_lr=0.1),
    lambda S, opt, lib: S.OneCycleLR(opt, max_lr=0.1, total_steps=10, pct_start=1.5),
    lambda S, opt, lib: S.OneCycleLR(opt, max_lr=0.1, total_steps=10, anneal_strategy="step"),
    lambda S, opt, lib: S.OneCycleLR(opt, max_lr=[0.1, 0.2], total_steps=10),
    lambda S, opt, lib: S.ReduceLROnPlateau(opt, factor=1.0),
    lambda S, opt, lib: S.ReduceLROnPlateau(opt, mode="middle"),
    lambda S, opt, lib: S.ReduceLROnPlateau(opt, threshold_mode="log"),
    lambda S, opt, lib: S.SequentialLR(opt, [S.StepLR(opt, 2), S.StepLR(opt, 3)], milestones=[]),
    lambda S, opt, lib: S.SequentialLR(opt, [], milestones=[]),
    lambda S, opt, lib: S.ChainedScheduler([S.StepLR(opt, 2), S.ReduceLROnPlateau(opt)]),
    lambda S, opt, lib: S.SequentialLR(opt, [S.StepLR(opt, 2), S.StepLR(make_optimizer(lib), 3)], milestones=[4]),
], ids=lambda f: "")
def test_errors_match_torch(fn):
    _raises_like_torch(fn)


def test_onecycle_too_many_steps():
    for lib in (torch, ember):
        opt = make_optimizer(lib)
        sched = lib.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=3)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for _ in range(3):
                opt.step()
                sched.step()
            with pytest.raises(ValueError, match="Tried to step 4 times"):
                sched.step()


def test_warnings():
    opt = make_optimizer(ember)
    sched = ember.optim.lr_scheduler.StepLR(opt, 3)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        sched.step()
    with pytest.warns(UserWarning, match="get_last_lr"):
        sched.get_lr()
    with pytest.warns(UserWarning, match="epoch parameter"):
        sched.step(5)


def test_tensor_lr_is_filled_in_place():
    for lib in (torch, ember):
        p = lib.zeros(2, requires_grad=True)
        lr = lib.tensor(0.1)
        opt = lib.optim.Adam([p], lr=lr)
        sched = lib.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
        opt.step()
        sched.step()
        assert opt.param_groups[0]["lr"] is lr
        assert abs(float(lr) - 0.05) < 1e-7


# ---- the ember-only tests above, told again on torch (issue 19) -----------------------------------------------

def _story_round_trip(name):
    def story(lib):
        build = SCHEDULERS[name]
        opt = make_optimizer(lib)
        sched = build(lib.optim.lr_scheduler, opt)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for _ in range(10):
                opt.step()
                sched.step()
        saved_sched, saved_opt = sched.state_dict(), opt.state_dict()
        opt2 = make_optimizer(lib)
        sched2 = build(lib.optim.lr_scheduler, opt2)
        opt2.load_state_dict(saved_opt)
        sched2.load_state_dict(saved_sched)
        resumed = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for _ in range(10):
                opt2.step()
                sched2.step()
                resumed.append(list(sched2.get_last_lr()))
        keys = sorted(k for k in saved_sched if not callable(saved_sched[k]))
        return [resumed, keys]
    return story


@pytest.mark.parametrize("name", ["StepLR", "CosineAnnealingLR", "CyclicLR-triangular2", "OneCycleLR-cos",
                                  "CosineAnnealingWarmRestarts-mult", "SequentialLR", "ChainedScheduler",
                                  "LambdaLR", "MultiStepLR"])
def test_state_dict_round_trip_matches_torch(name):
    """test_state_dict_round_trip on both libraries: the resumed lrs and the saved state_dict's keys are torch's."""
    check_story(_story_round_trip(name), atol=1e-12)


def test_warnings_match_torch():
    """test_warnings' three warnings, and their categories, are torch's."""
    def story(lib):
        opt = make_optimizer(lib)
        sched = lib.optim.lr_scheduler.StepLR(opt, 3)
        return [warned(sched.step)[0], warned(sched.get_lr), warned(lambda: sched.step(5))[0], sched.get_last_lr()]
    check_story(story)
