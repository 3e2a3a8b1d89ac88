"""Process body of the DistributedDataParallel tests (tests/test_ddp.py); run it, don't import it.

    python tests/_ddp_worker.py torch OUT          torch's DDP on gloo (RANK, WORLD_SIZE, MASTER_* in the env)
    mpiexec -n N python tests/_ddp_worker.py ember OUT [checks]   ember's DDP on MPI

Both sides train the same models from the same per-rank initial weights (rank 1 starts from other weights
than rank 0, so the broadcast at construction matters) on the same per-rank batches, and write every
parameter and buffer after every step to OUT/<lib>_<config>_r<rank>.npz; the test compares the files.
The ember side also writes the checks that need no torch: `concat` (N ranks with batch B == one process on
the concatenated N*B batch), `nosync` (no_sync accumulation == one synchronized step on the summed loss)
and `overlap` (the order of gradient hooks, all-reduce launches and waits in one backward).
"""
import contextlib
import json
import os
import sys

import numpy as np

STEPS = 10
BATCH = 6
# config -> DDP keyword arguments, and which model; every config runs STEPS steps on 2 ranks
CONFIGS = {
    "default": ({}, "convbn"),
    "buckets": ({"bucket_cap_mb": 0.0004, "gradient_as_bucket_view": True}, "convbn"),
    "unused": ({"find_unused_parameters": True, "bucket_cap_mb": 0.0004}, "branchy"),
    "nobuffers": ({"broadcast_buffers": False}, "convbn"),
    "nosync": ({}, "convbn"),  # steps alternate: a no_sync micro-batch, then a synchronized one
    "static": ({"static_graph": True}, "convbn"),
    "caplist": ({"bucket_cap_mb_list": [0.0002, 0.0005]}, "convbn"),  # per-bucket limits
    "forwardsync": ({"forward_sync_buffers": False}, "convbn"),  # buffers synced at init only
    # communication hooks (register_comm_hook): torch's default ones, and one that sums instead of averaging
    "hook_allreduce": ({"bucket_cap_mb": 0.0004}, "convbn", "allreduce"),
    "hook_fp16": ({}, "convbn", "fp16"),
    "hook_fp16_wrapper": ({"gradient_as_bucket_view": True}, "convbn", "fp16_wrapper"),
    "hook_sum": ({"bucket_cap_mb": 0.0004}, "convbn", "sum"),
    # uneven inputs inside ddp.join(): the ranks run JOIN's numbers of steps
    "join": ({}, "convbn"),
    "join_world": ({}, "mlp"),
    "join_unused": ({"find_unused_parameters": True, "bucket_cap_mb": 0.0004}, "branchy"),
    "join_hook": ({"bucket_cap_mb": 0.0004}, "convbn", "allreduce"),
    "join_nosync": ({}, "convbn"),
    "join_empty": ({"bucket_cap_mb": 0.0004}, "convbn"),
    # ZeroRedundancyOptimizer (ZERO) instead of SGD; zero_join: DDP and ZeRO in one Join, uneven inputs
    "zero_adam": ({}, "mlp"),  # (Adam on the convolution's bias before BatchNorm, whose gradient is rounding noise,
    # would amplify each library's own noise)
    "zero_bucket": ({"find_unused_parameters": True}, "branchy"),
    "zero_join": ({}, "mlp"),
}
# config -> (optimizer class name, its options, ZeroRedundancyOptimizer options); the param groups of zero_bucket
# are two: the body and the rest at another learning rate
ZERO = {
    "zero_adam": ("Adam", {"lr": 0.01}, {}),
    "zero_bucket": ("SGD", {"lr": 0.05, "momentum": 0.9}, {"parameters_as_bucket_view": True}),
    "zero_join": ("Adam", {"lr": 0.01}, {}),
}
# config -> (steps of rank 0, steps of rank 1, join() keyword arguments)
JOIN = {
    "join": (6, 10, {}),
    "join_world": (10, 4, {"divide_by_initial_world_size": False}),
    "join_unused": (5, 10, {}),
    "join_hook": (7, 10, {}),
    "join_nosync": (5, 10, {}),
    "join_empty": (0, 5, {}),  # rank 0 joins before any step: it shadows the bucket rebuild too
    "zero_join": (7, 10, {}),
}


def steps(config, rank):
    """How many steps `rank` trains in `config`."""
    return JOIN[config][rank] if config in JOIN else STEPS


def register_hook(lib, ddp, name):
    """The communication hook `name` of CONFIGS on ddp, from lib's own default_hooks."""
    import importlib
    hooks = importlib.import_module(lib.__name__ + ".distributed.algorithms.ddp_comm_hooks.default_hooks")
    dist = importlib.import_module(lib.__name__ + ".distributed")

    def sum_hook(state, bucket):  # not averaged: checks the bucket holds the gradients undivided
        return dist.all_reduce(bucket.buffer(), async_op=True).get_future().then(lambda fut: fut.value()[0])
    hook = {"allreduce": hooks.allreduce_hook, "fp16": hooks.fp16_compress_hook,
            "fp16_wrapper": hooks.fp16_compress_wrapper(hooks.allreduce_hook), "sum": sum_hook}[name]
    ddp.register_comm_hook(None, hook)


def build(lib, kind):
    nn = lib.nn
    if kind == "convbn":
        return nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 10))
    if kind == "mlp":
        return nn.Sequential(nn.Linear(12, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 3))
    return Branchy(lib)


def Branchy(lib):
    """A model whose `extra` layer is used on some steps only, and `rank0` only on rank 0 on odd steps."""
    nn = lib.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(64, 16)
            self.extra = nn.Linear(16, 16)
            self.rank0 = nn.Linear(16, 16)
            self.head = nn.Linear(16, 10)

        def forward(self, x, step, rank):
            h = lib.tanh(self.body(x.flatten(1)))
            if step % 3 == 1:
                h = lib.tanh(self.extra(h))
            if rank == 0 and step % 2 == 1:
                h = h + self.rank0(h)
            return self.head(h)
    return Net()


def Pair(lib):
    """A model returning two outputs: a hidden layer and the output computed from it."""
    nn = lib.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(12, 4)
            self.b = nn.Linear(4, 1)

        def forward(self, x):
            h = self.a(x)
            return h, self.b(h)
    return Net()


def initial_weights(model, rank):
    """Per-rank initial state (numpy): different on each rank."""
    rng = np.random.default_rng(1000 + rank)
    return {k: rng.standard_normal(tuple(v.shape)).astype(np.float32) * 0.3 if v.dtype.is_floating_point
            else np.zeros(tuple(v.shape), dtype=np.int64) for k, v in model.state_dict().items()}


def batch(rank, step, kind, n=BATCH):
    rng = np.random.default_rng(100 * rank + step)
    x = rng.standard_normal((n, 1, 8, 8)).astype(np.float32)
    if kind == "mlp":
        x = x.reshape(n, -1)[:, :12].copy()
    y = rng.integers(0, 10 if kind != "mlp" else 3, n)
    return x, y


def load(lib, model, state):
    model.load_state_dict({k: lib.tensor(v) for k, v in state.items()})


def snapshot(model):
    return {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}


def train(lib, ddp_cls, rank, config, out):
    """STEPS SGD steps of one config; returns {step_name: array} for every step."""
    kwargs, kind, *hook = CONFIGS[config]
    lib.manual_seed(0)
    model = build(lib, kind)
    load(lib, model, initial_weights(model, rank))
    ddp = ddp_cls(model, **kwargs)
    if hook:
        register_hook(lib, ddp, hook[0])
    if config in ZERO:
        opt = make_zero(lib, ddp, config)
    else:
        opt = lib.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    record = {f"init_{k}": v for k, v in snapshot(model).items()}
    if config in ZERO and config in JOIN:
        joining = lib.distributed.algorithms.Join([ddp, opt])
    else:
        joining = ddp.join(**JOIN[config][2]) if config in JOIN else contextlib.nullcontext()
    with joining:
        for step in range(steps(config, rank)):
            x, y = batch(rank, step, kind)
            x, y = lib.tensor(x), lib.tensor(y)
            args = (x, step, rank) if kind == "branchy" else (x,)
            synchronized = not (config in ("nosync", "join_nosync") and step % 2 == 0)
            if synchronized:
                lib.nn.functional.cross_entropy(ddp(*args), y).backward()
            else:
                with ddp.no_sync():
                    lib.nn.functional.cross_entropy(ddp(*args), y).backward()
            for k, p in model.named_parameters():
                record[f"s{step}_grad_{k}"] = np.zeros(0) if p.grad is None else p.grad.numpy().copy()
            if synchronized:
                opt.step()
                opt.zero_grad()
            for k, v in snapshot(model).items():
                record[f"s{step}_{k}"] = v
            if step in (0, 2, 3):
                record[f"buckets_s{step}"] = np.array(describe_buckets(lib, ddp))
    if config in JOIN:  # after join(): every rank holds the model of the last rank to finish
        for k, v in snapshot(model).items():
            record[f"final_{k}"] = v
    if config in ZERO:
        record.update(zero_state(lib, opt, rank, config, kind, kwargs))
    np.savez(os.path.join(out, f"{lib.__name__}_{config}_r{rank}.npz"), **record)


def make_zero(lib, ddp, config):
    name, options, zero_options = ZERO[config]
    import importlib
    zero_cls = importlib.import_module(lib.__name__ + ".distributed.optim").ZeroRedundancyOptimizer
    params = list(ddp.module.named_parameters())
    if config == "zero_bucket":
        groups = [{"params": [p for n, p in params if n.startswith("body")]},
                  {"params": [p for n, p in params if not n.startswith("body")], "lr": 0.02}]
        return zero_cls(groups, optimizer_class=getattr(lib.optim, name), **zero_options, **options)
    return zero_cls([p for _, p in params], optimizer_class=getattr(lib.optim, name), **zero_options, **options)


def zero_state(lib, opt, rank, config, kind, kwargs):
    """The consolidated state dict (on rank 0; rank 1's error), and one more step of a fresh model and
    optimizer that loaded it (rank 0's, broadcast) on every rank."""
    out = {}
    opt.consolidate_state_dict(to=0)
    try:
        state = opt.state_dict()
    except RuntimeError as e:
        state = None
        out["zero_error"] = np.array(str(e))
    if state is not None:
        for i, entry in state["state"].items():
            for name, value in entry.items():
                out[f"zstate_{i}_{name}"] = np.asarray(value.numpy() if hasattr(value, "numpy") else value)
        out["zgroups"] = np.array(json.dumps([{k: v for k, v in g.items()} for g in state["param_groups"]],
                                             sort_keys=True, default=str))
    box = [None if state is None else {"state": {i: {n: (v.numpy() if hasattr(v, "numpy") else v)
                                                     for n, v in e.items()} for i, e in state["state"].items()},
                                       "param_groups": state["param_groups"]}]
    lib.distributed.broadcast_object_list(box, src=0)
    loaded = {"state": {i: {n: lib.tensor(v) for n, v in e.items()} for i, e in box[0]["state"].items()},
              "param_groups": box[0]["param_groups"]}
    lib.manual_seed(0)
    model = build(lib, kind)
    load(lib, model, initial_weights(model, 0))
    ddp = lib.nn.parallel.DistributedDataParallel(model, **kwargs)
    fresh = make_zero(lib, ddp, config)
    fresh.load_state_dict(loaded)
    x, y = batch(rank, 99, kind)
    args = (lib.tensor(x), 1, rank) if kind == "branchy" else (lib.tensor(x),)
    lib.nn.functional.cross_entropy(ddp(*args), lib.tensor(y)).backward()
    fresh.step()
    for k, v in snapshot(model).items():
        out[f"reload_{k}"] = v
    return out


def describe_buckets(lib, ddp):
    """The buckets as torch's DDP logging data describes them: byte sizes (before the rebuild) or the
    parameter indices of each bucket (after it)."""
    if lib.__name__ == "torch":
        data = ddp._get_ddp_logging_data()
        return data.get("rebuilt_per_bucket_param_indices", data["bucket_sizes"])
    reducer = ddp.reducer
    if reducer.rebuilt and reducer.ready_order:
        return ", ".join(" ".join(str(i) for i in b.indices) for b in reducer.buckets)
    return ", ".join(str(b.flat.numel() * b.flat.element_size()) for b in reducer.buckets)


def check_surface(lib, ddp_cls, rank, out):
    """(exception type, message) of misuses, state_dict keys, DistributedSampler's defaults from the
    process group: for comparison with torch's."""
    results = {}

    def attempt(name, fn):
        try:
            fn()
            results[name] = None
        except Exception as e:  # noqa: BLE001 (the type is what is compared)
            results[name] = [type(e).__name__, str(e)]

    def unused_without_find_unused():
        model = Branchy(lib)
        ddp = ddp_cls(model)
        x = lib.tensor(batch(rank, 0, "branchy")[0])
        ddp(x, 0, rank).sum().backward()  # extra and rank0 get no gradient
        ddp(x, 0, rank)

    def backward_twice_through_one_parameter():
        ddp = ddp_cls(Pair(lib))
        hidden, out = ddp(lib.tensor(batch(rank, 0, "mlp")[0]))
        hidden.sum().backward(retain_graph=True)  # a's gradients: a's bucket is not full (b's are missing)
        out.sum().backward()  # a's hooks fire again in the same iteration

    attempt("unused", unused_without_find_unused)
    attempt("marked_twice", backward_twice_through_one_parameter)
    # which parameter is named depends on the order the engine runs the leaves of one node in
    results["marked_twice"][1] = results["marked_twice"][1].split("\nParameter at index")[0]
    attempt("frozen", lambda: ddp_cls(lib.nn.Linear(2, 2).requires_grad_(False)))
    attempt("device_ids", lambda: ddp_cls(lib.nn.Linear(2, 2), device_ids=[0]))
    attempt("two_device_ids", lambda: ddp_cls(lib.nn.Linear(2, 2), device_ids=[0, 1]))
    attempt("hook_not_callable", lambda: ddp_cls(lib.nn.Linear(2, 2)).register_comm_hook(None, 3))

    def hook_twice():
        ddp = ddp_cls(lib.nn.Linear(2, 2))
        for _ in range(2):
            ddp.register_comm_hook(None, lambda state, bucket: None)
    attempt("hook_twice", hook_twice)

    def join_throw():  # rank 0 runs out after 2 of rank 1's 4 steps: both raise, each its own message
        ddp = ddp_cls(build(lib, "mlp"))
        with ddp.join(throw_on_early_termination=True):
            for step in range(2 + 2 * rank):
                x, y = batch(rank, step, "mlp")
                lib.nn.functional.cross_entropy(ddp(lib.tensor(x)), lib.tensor(y)).backward()
    attempt("join_throw", join_throw)
    attempt("join_nothing", lambda: lib.distributed.algorithms.join.Join([]))
    ddp = ddp_cls(build(lib, "convbn"))
    results["state_dict"] = list(ddp.state_dict())
    results["attributes"] = [ddp.broadcast_buffers, ddp.bucket_bytes_cap, ddp.find_unused_parameters,
                             ddp.gradient_as_bucket_view, ddp.dim, ddp.device_ids, ddp.output_device,
                             ddp.require_backward_grad_sync, type(ddp.module).__name__, ddp.train() is ddp]
    ddp.load_state_dict(ddp.state_dict())
    ddp.eval()  # buffers are broadcast before each forward without bumping their versions, as torch does
    x = lib.tensor(batch(rank, 0, "convbn")[0])
    (ddp(x).sum() + ddp(x).sum()).backward()
    results["buffer_versions"] = [b._version for b in ddp.module.buffers()]
    sampler = lib.utils.data.DistributedSampler(range(11), shuffle=False)
    results["sampler"] = [sampler.num_replicas, sampler.rank, list(sampler)]
    with open(os.path.join(out, f"{lib.__name__}_surface_r{rank}.json"), "w") as f:
        json.dump(results, f)


def check_mismatch(lib, ddp_cls, rank, out):
    """Ranks holding different models: construction must fail on every rank (no hang)."""
    model = lib.nn.Linear(4, 3 + rank)
    try:
        ddp_cls(model)
        result = None
    except RuntimeError as e:
        result = str(e)
    with open(os.path.join(out, f"mismatch_r{rank}.json"), "w") as f:
        json.dump(result, f)


# ---- ember-only checks -------------------------------------------------------------------------------

def check_concat(lib, ddp_cls, rank, world, out):
    """DDP with batch B on each of `world` ranks against one process on the concatenated batch."""
    lib.manual_seed(0)
    reference = build(lib, "mlp")
    model = build(lib, "mlp")
    load(lib, model, initial_weights(model, rank))
    load(lib, reference, initial_weights(reference, 0))
    ddp = ddp_cls(model)
    opt = lib.optim.Adam(ddp.parameters(), lr=0.01)
    ref_opt = lib.optim.Adam(reference.parameters(), lr=0.01)
    record = {}
    for step in range(5):
        x, y = batch(rank, step, "mlp")
        lib.nn.functional.cross_entropy(ddp(lib.tensor(x)), lib.tensor(y)).backward()
        opt.step()
        opt.zero_grad()
        parts = [batch(r, step, "mlp") for r in range(world)]
        xs = lib.tensor(np.concatenate([p[0] for p in parts]))
        ys = lib.tensor(np.concatenate([p[1] for p in parts]))
        lib.nn.functional.cross_entropy(reference(xs), ys).backward()
        ref_opt.step()
        ref_opt.zero_grad()
        for k, v in snapshot(model).items():
            record[f"s{step}_ddp_{k}"] = v
        for k, v in snapshot(reference).items():
            record[f"s{step}_single_{k}"] = v
    np.savez(os.path.join(out, f"concat_w{world}_r{rank}.npz"), **record)


def check_nosync(lib, ddp_cls, rank, out):
    """Three micro-batches, two under no_sync, against one synchronized backward of the summed losses."""
    grads = {}
    for mode in ("accumulate", "sum"):
        lib.manual_seed(0)
        model = build(lib, "mlp")
        load(lib, model, initial_weights(model, 0))
        ddp = ddp_cls(model)
        micro = [batch(rank, k, "mlp") for k in range(3)]
        loss = lambda k: lib.nn.functional.cross_entropy(ddp(lib.tensor(micro[k][0])), lib.tensor(micro[k][1]))
        if mode == "accumulate":
            with ddp.no_sync():
                loss(0).backward()
                loss(1).backward()
                grads["local"] = [p.grad.numpy().copy() for p in model.parameters()]
            loss(2).backward()
        else:
            (loss(0) + loss(1) + loss(2)).backward()
        grads[mode] = [p.grad.numpy().copy() for p in model.parameters()]
    lib.manual_seed(0)
    plain = build(lib, "mlp")  # the same two micro-batches without DDP: what no_sync must leave in .grad
    load(lib, plain, initial_weights(plain, 0))
    for k in range(2):
        lib.nn.functional.cross_entropy(plain(lib.tensor(micro[k][0])), lib.tensor(micro[k][1])).backward()
    grads["plain"] = [p.grad.numpy().copy() for p in plain.parameters()]
    np.savez(os.path.join(out, f"nosync_r{rank}.npz"), **{f"{k}_{i}": g for k, gs in grads.items()
                                                          for i, g in enumerate(gs)})


def check_overlap(lib, ddp_cls, dist, rank, out):
    """Record gradient-ready hooks, all-reduce launches and waits over two iterations (the buckets are
    rebuilt after the first), one parameter per bucket."""
    events = []
    real_all_reduce = dist.all_reduce

    def all_reduce(tensor, *args, **kwargs):
        work = real_all_reduce(tensor, *args, **kwargs)
        events.append(["launch", tensor.numel(), bool(kwargs.get("async_op"))])
        real_wait = work.wait

        def wait(*a, **k):
            events.append(["wait", tensor.numel()])
            return real_wait(*a, **k)
        work.wait = wait
        return work

    lib.manual_seed(0)
    model = build(lib, "mlp")
    load(lib, model, initial_weights(model, 0))
    ddp = ddp_cls(model, bucket_cap_mb=0.00001)  # 10 bytes: every parameter in a bucket of its own
    names = [n for n, _ in model.named_parameters()]
    for name, p in model.named_parameters():  # a tensor hook runs before the gradient is accumulated
        p.register_hook(lambda g, name=name: events.append(["computed", name, g.numel()]))
    dist.all_reduce = all_reduce
    try:
        for it in range(2):
            events.append(["iteration", it])
            x, y = batch(rank, it, "mlp")
            loss = lib.nn.functional.cross_entropy(ddp(lib.tensor(x)), lib.tensor(y))
            loss.backward()
            events.append(["backward returned"])
    finally:
        dist.all_reduce = real_all_reduce
    with open(os.path.join(out, f"overlap_r{rank}.json"), "w") as f:
        json.dump({"names": names, "events": events}, f)


def main():
    lib_name, out = sys.argv[1], sys.argv[2]
    if lib_name == "torch":
        import torch as lib
        import torch.distributed as dist
        lib.set_num_threads(1)  # one core per process
        dist.init_process_group("gloo")
    else:
        import ember as lib
        import ember.distributed as dist
        dist.init_process_group("gloo")  # runs on MPI in ember
    from_parallel = lib.nn.parallel.DistributedDataParallel
    rank, world = dist.get_rank(), dist.get_world_size()
    checks = sys.argv[3].split(",") if len(sys.argv) > 3 else ["configs"]
    if "configs" in checks:
        for config in CONFIGS:
            train(lib, from_parallel, rank, config, out)
        check_surface(lib, from_parallel, rank, out)
    if "mismatch" in checks:
        check_mismatch(lib, from_parallel, rank, out)
    if "concat" in checks:
        check_concat(lib, from_parallel, rank, world, out)
    if "nosync" in checks:
        check_nosync(lib, from_parallel, rank, out)
    if "overlap" in checks:
        check_overlap(lib, from_parallel, dist, rank, out)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
