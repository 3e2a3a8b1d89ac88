"""torch.distributed.checkpoint against torch: a checkpoint ember writes loads in torch and the other way round
(model, optimizer state keyed by parameter names, nested dicts and lists, plain values), the state-dict helpers
give torch's keys for wrapped models and train on identically after a reload, and the errors match."""
import numpy as np
import pytest
import torch
import torch.distributed.checkpoint as tdcp
import torch.distributed.checkpoint.state_dict as tsd
import torch.distributed.algorithms._checkpoint.checkpoint_wrapper as tcw

import ember
import ember.distributed.checkpoint as edcp
import ember.distributed.checkpoint.state_dict as esd
import ember.distributed.algorithms._checkpoint.checkpoint_wrapper as ecw

LIBS = {"torch": (torch, tdcp, tsd, tcw), "ember": (ember, edcp, esd, ecw)}


def _trained(name, steps=2):
    """A small wrapped model and its Adam after `steps` steps, the same in both libraries."""
    lib, _, _, cw = LIBS[name]
    rng = np.random.default_rng(0)
    model = lib.nn.Sequential(lib.nn.Linear(4, 5), lib.nn.Tanh(), lib.nn.BatchNorm1d(5), lib.nn.Linear(5, 2))
    with lib.no_grad():
        for p in model.parameters():
            p.copy_(lib.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32)))
    cw.apply_activation_checkpointing(model, check_fn=lambda m: isinstance(m, lib.nn.Linear))
    opt = lib.optim.Adam(model.parameters(), lr=0.05)
    for step in range(steps):
        x = lib.tensor(np.random.default_rng(step).standard_normal((6, 4)).astype(np.float32))
        model(x).square().mean().backward()
        opt.step()
        opt.zero_grad()
    return model, opt


def _state(name, model, opt):
    lib, _, sd, _ = LIBS[name]
    model_sd, optim_sd = sd.get_state_dict(model, opt)
    return {"model": model_sd, "optim": optim_sd, "epoch": 3, "meta": {"tags": ["a", "b"], "best": 0.25},
            "extras": [lib.arange(3.0), lib.ones(2, 2)]}


def _numpy(tree):
    if hasattr(tree, "numpy"):
        return tree.detach().numpy()
    if isinstance(tree, dict):
        return {k: _numpy(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return [_numpy(v) for v in tree]
    return tree


def _assert_same(a, b, path=""):
    if isinstance(b, dict):
        assert sorted(map(str, a)) == sorted(map(str, b)), path
        for k in b:
            _assert_same(a[k], b[k], f"{path}.{k}")
    elif isinstance(b, list):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_same(x, y, f"{path}.{i}")
    elif isinstance(b, np.ndarray):
        # float32 through BatchNorm and two Adam steps: kernels that earlier tests in the same worker switched
        # (thread count, compiled or NumPy paths) round differently; 5e-6 relative was seen (helper run, worksteal)
        np.testing.assert_allclose(np.asarray(a, dtype=np.float64), b.astype(np.float64), rtol=1e-5, atol=1e-6,
                                   err_msg=path)
    else:
        assert a == b, (path, a, b)


def test_state_dict_helpers_give_torchs_names_and_values():
    ours = _numpy(_state("ember", *_trained("ember")))
    theirs = _numpy(_state("torch", *_trained("torch")))
    assert "0.weight" in ours["model"] and not any("_checkpoint_wrapped_module" in k for k in ours["model"])
    _assert_same(ours, theirs)


@pytest.mark.parametrize("writer,reader", [("ember", "torch"), ("torch", "ember"), ("ember", "ember")])
def test_checkpoints_load_across_libraries(tmp_path, writer, reader):
    wlib, wdcp, _, _ = LIBS[writer]
    wdcp.save(_state(writer, *_trained(writer)), checkpoint_id=tmp_path / "ckpt")
    model, opt = _trained(reader, steps=1)  # other values, and the structure to load into
    target = _state(reader, model, opt)
    target["epoch"], target["meta"]["best"] = 0, 1.0
    LIBS[reader][1].load(target, checkpoint_id=tmp_path / "ckpt")
    _assert_same(_numpy(target), _numpy(_state(reader, *_trained(reader))))
    # back into the model and optimizer, one more step: as the writer's run continued
    _, _, sd, _ = LIBS[reader]
    sd.set_state_dict(model, opt, model_state_dict=target["model"], optim_state_dict=target["optim"])
    rlib = LIBS[reader][0]
    x = rlib.tensor(np.random.default_rng(9).standard_normal((6, 4)).astype(np.float32))
    model(x).square().mean().backward()
    opt.step()
    ref_model, ref_opt = _trained("torch", steps=2)
    ref_model(torch.tensor(np.random.default_rng(9).standard_normal((6, 4)).astype(np.float32))).square().mean() \
        .backward()
    ref_opt.step()
    for (n, a), (m, b) in zip(model.state_dict().items(), ref_model.state_dict().items()):
        np.testing.assert_allclose(a.detach().numpy().astype(np.float64), b.detach().numpy().astype(np.float64),
                                   rtol=1e-5, atol=1e-6, err_msg=n)


def test_errors_match_torch(tmp_path):
    edcp.save({"w": ember.ones(4, 3), "step": 7}, checkpoint_id=tmp_path / "c")
    for name in ("torch", "ember"):
        lib, dcp, _, _ = LIBS[name]
        with pytest.raises(BaseException) as missing:
            dcp.load({"nope": lib.zeros(2)}, checkpoint_id=tmp_path / "c")
        assert type(missing.value).__name__ == "CheckpointException"
        assert "RuntimeError: Missing key in checkpoint state_dict: nope." in str(missing.value)
        with pytest.raises(BaseException) as shape:
            dcp.load({"w": lib.zeros(2, 2)}, checkpoint_id=tmp_path / "c")
        assert type(shape.value).__name__ == "CheckpointException" and "ValueError: Size mismatch" in str(shape.value)
        with pytest.raises(RuntimeError, match="checkpoint_id"):
            dcp.load({"w": lib.zeros(4, 3)})


def test_two_ranks_write_rank0s_state_and_both_read_it(tmp_path):
    """With a process group every rank calls save and load; the files hold rank 0's (replicated) state."""
    import subprocess
    import sys
    from tests.test_distributed import ROOT, env, mpiexec
    script = tmp_path / "two.py"
    script.write_text(
        "import sys, ember, ember.distributed as dist, ember.distributed.checkpoint as dcp\n"
        "dist.init_process_group('gloo')\n"
        "r = dist.get_rank()\n"
        "md = dcp.save({'w': ember.full((3,), float(r + 1)), 'step': r + 5}, checkpoint_id=sys.argv[1])\n"
        "back = {'w': ember.zeros(3), 'step': -1}\n"
        "dcp.load(back, checkpoint_id=sys.argv[1])\n"
        "with open(sys.argv[1] + f'.rank{r}', 'w') as f:  # a file each: the ranks' stdout lines interleave\n"
        "    f.write(repr((back['w'].tolist(), back['step'], sorted(md.state_dict_metadata))))\n"
        "dist.destroy_process_group()\n")
    out = subprocess.run([mpiexec(), "-n", "2", sys.executable, str(script), str(tmp_path / "ckpt")],
                         capture_output=True, text=True, timeout=120, env=env(), cwd=ROOT)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    for r in range(2):
        assert (tmp_path / f"ckpt.rank{r}").read_text() == "([1.0, 1.0, 1.0], 5, ['step', 'w'])"
    loaded = {"w": torch.zeros(3), "step": 0}
    tdcp.load(loaded, checkpoint_id=tmp_path / "ckpt")  # and torch reads it
    assert loaded["w"].tolist() == [1.0, 1.0, 1.0] and loaded["step"] == 5


def test_saving_over_a_checkpoint_warns_or_raises_as_torch(tmp_path):
    for name in ("torch", "ember"):
        lib, dcp, _, _ = LIBS[name]
        where = tmp_path / name
        dcp.save({"a": lib.ones(2)}, checkpoint_id=where)
        with pytest.warns(UserWarning, match="Detected an existing checkpoint"):
            dcp.save({"a": lib.zeros(2)}, checkpoint_id=where)
        with pytest.raises(BaseException) as refused:
            dcp.save({"a": lib.ones(2)}, storage_writer=dcp.FileSystemWriter(where, overwrite=False))
        assert type(refused.value).__name__ == "CheckpointException"
        assert "RuntimeError: Checkpoint already exists and self.overwrite=False." in str(refused.value)
        back = {"a": lib.ones(2)}
        dcp.load(back, checkpoint_id=where)
        assert back["a"].tolist() == [0.0, 0.0]  # the refused save wrote nothing


def _initialized(name, optimizer, options, prepare=None):
    lib, _, sd, _ = LIBS[name]
    model = lib.nn.Linear(3, 2)
    with lib.no_grad():
        model.weight.copy_(lib.tensor(np.arange(6, dtype=np.float32).reshape(2, 3) / 7))
        model.bias.fill_(0.5)
    opt = getattr(lib.optim, optimizer)(model.parameters(), **options)
    if prepare is not None:
        prepare(lib, model, opt)
    sd._init_optim_state(opt)
    state = opt.state_dict()
    return ({k: {n: np.asarray(v).tolist() for n, v in s.items()} for k, s in state["state"].items()},
            state["param_groups"], model.weight.detach().numpy().tolist(),
            None if model.weight.grad is None else model.weight.grad.numpy().tolist())


@pytest.mark.parametrize("optimizer, options", [("Adam", {"lr": 0.1}), ("SGD", {"lr": 0.1, "momentum": 0.9}),
                                                ("AdamW", {"lr": 0.1, "weight_decay": 0.1}),
                                                ("RMSprop", {"lr": 0.01, "momentum": 0.5})])
@pytest.mark.parametrize("prepare", [None, "grad", "state"])
def test_init_optim_state_matches_torch(optimizer, options, prepare):
    """state_dict._init_optim_state: state made by a zero step at lr 0, the weights and learning rates untouched,
    the gradients None; nothing done when a gradient exists or the state does."""
    def given(lib, model, opt):
        if prepare == "grad":
            model.bias.grad = lib.ones_like(model.bias)
        elif prepare == "state":
            model(lib.ones(1, 3)).sum().backward()
            opt.step()
    assert _initialized("ember", optimizer, options, prepare and given) == \
        _initialized("torch", optimizer, options, prepare and given)


def test_default_planner_module():
    from ember.distributed.checkpoint import default_planner
    assert default_planner.DefaultSavePlanner is edcp.DefaultSavePlanner
    assert default_planner.DefaultLoadPlanner is edcp.DefaultLoadPlanner
