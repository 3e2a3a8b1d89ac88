"""Process body of tests/test_rpc.py; run it, don't import it.

    python tests/_rpc_worker.py LIB OUT      (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT in the environment)

Three workers of the same library (torch or ember) run the same RPC scenarios; worker 0 drives them and
writes what it saw to OUT/<lib>.json (the other workers only serve, then shut down)."""
import importlib
import json
import os
import sys
import threading

import numpy as np

# the library (torch or ember) from the command line: callees resolve this script's functions by name
LIB = importlib.import_module(sys.argv[1] if len(sys.argv) > 1 else "torch")
RPC = importlib.import_module(LIB.__name__ + ".distributed.rpc")
FUTURES = importlib.import_module(LIB.__name__ + ".futures")


def rpc():
    return RPC


def futures():
    return FUTURES


# ---- functions the callee runs (module level: they travel by reference) --------------------------------------

def add(a, b, scale=1):
    return (a + b) * scale


def nap(seconds):
    import time
    time.sleep(seconds)
    return seconds


def whoami():
    return rpc().get_worker_info().name


class CustomError(Exception):
    pass


def fails(kind):
    raise {"value": ValueError, "key": KeyError, "type": TypeError, "index": IndexError,
           "custom": CustomError, "runtime": RuntimeError}[kind](f"bad {kind}")


def relay(to, a, b):
    """A nested call: this worker asks `to`."""
    return rpc().rpc_sync(to, add, args=(a, b), kwargs={"scale": 10})


def fetch_here(rref):
    """Called on an RRef's owner or another worker: its value fetched there."""
    return rref.to_here() * 2


def owner_local(rref):
    return rref.local_value().sum()


def make_counter(start):
    return Counter(start)


# ---- RRef lifetimes: values dropped on their owner when the last RRef to them is gone -----------------------

def owner_counts(expected=None):
    """This worker's owned values that others hold, and those holds (torch's debug counts); with `expected`,
    waited for up to 10 s first (the ledgers' messages are asynchronous in both libraries)."""
    import time
    deadline = time.monotonic() + 10
    while True:
        info = RPC._rref_context_get_debug_info()
        got = [int(info["num_owner_rrefs"]), int(info["num_forks"])]
        if expected is None or got == expected or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    if LIB.__name__ == "ember":  # the values themselves are gone, not only counted out: each one kept is held
        RPC._ledger.flush(5)
        with RPC._owned_lock:
            unheld = set(RPC._owned) - set(RPC._ledger.holders)
        assert not unheld, f"{len(unheld)} values nobody holds left on {RPC.get_worker_info()}"
    return got


KEPT = []


def keep(rref):
    KEPT.append(rref)
    return len(KEPT)


def use_and_drop_kept():
    values = [value(r.to_here()) for r in KEPT]
    KEPT.clear()
    return values


class Stage1:
    def forward(self, x_rref):
        return x_rref.to_here() * 2


def rref_lifetimes(r):
    """remote() values dropped, a pipeline's per-step RRefs, a fork kept by a third worker, pickling outside RPC."""
    out = {}
    refs = [r.remote("worker1", add, args=(LIB.ones(2), LIB.ones(2))) for _ in range(5)]
    out["five_made"] = [value(x.to_here()) for x in refs[:1]] + [r.rpc_sync("worker1", owner_counts, args=([5, 5],))]
    del refs
    out["five_dropped"] = r.rpc_sync("worker1", owner_counts, args=([0, 0],))
    stage = r.remote("worker1", Stage1)
    for step in range(3):  # pytorch/examples' RPC pipeline: an RRef of the input, an RRef of the output
        x_rref = r.RRef(LIB.full((2,), float(step)))
        y_rref = stage.remote().forward(x_rref)
        out[f"pipeline_{step}"] = value(y_rref.to_here())
    del x_rref, y_rref
    out["pipeline_left"] = [r.rpc_sync("worker1", owner_counts, args=([1, 1],)), owner_counts([0, 0])]
    del stage
    out["pipeline_done"] = r.rpc_sync("worker1", owner_counts, args=([0, 0],))
    shared = r.remote("worker1", add, args=(LIB.ones(3), LIB.ones(3)))
    out["forked"] = [r.rpc_sync("worker2", keep, args=(shared,))]
    del shared
    out["forked"] += [r.rpc_sync("worker1", owner_counts, args=([1, 1],)), r.rpc_sync("worker2", use_and_drop_kept),
                      r.rpc_sync("worker1", owner_counts, args=([0, 0],))]
    mine = r.RRef(LIB.ones(2))
    out["own_shared"] = [r.rpc_sync("worker2", keep, args=(mine,)), owner_counts([1, 1])]
    del mine
    out["own_shared"] += [owner_counts([1, 1]), r.rpc_sync("worker2", use_and_drop_kept), owner_counts([0, 0])]
    import pickle
    try:
        pickle.dumps(r.RRef(LIB.ones(1)))
        out["pickled_outside_rpc"] = None
    except Exception as e:  # noqa: BLE001 -- the type is compared
        out["pickled_outside_rpc"] = type(e).__name__
    return out


class Counter:
    def __init__(self, start):
        self.value = start
        self.lock = threading.Lock()

    def bump(self, by=1):
        with self.lock:
            self.value += by
            return self.value

    def get(self):
        return self.value

    @RPC.functions.async_execution
    def bump_later(self, to, by):
        """async_execution method: bumps once a call to `to` has answered."""
        return RPC.rpc_async(to, add, args=(LIB.tensor(float(by)), LIB.tensor(0.0))).then(
            lambda f: self.bump(int(f.value().item())))

    @staticmethod
    @RPC.functions.async_execution
    def doubled(to, x):
        return RPC.rpc_async(to, add, args=(x, x))


class Batcher:
    """A parameter-server pattern: callers wait until `need` of them have reported (async_execution)."""

    def __init__(self, need):
        self.need = need
        self.seen = []
        self.lock = threading.Lock()
        self.future = futures().Future()

    @staticmethod
    @RPC.functions.async_execution
    def report(rref, value):
        self = rref.local_value()
        with self.lock:
            self.seen.append(value)
            future = self.future
            if len(self.seen) == self.need:
                future.set_result(sorted(self.seen))
                self.seen = []
                self.future = futures().Future()
        return future


@RPC.functions.async_execution
def doubled_later(to, a):
    """async_execution: a Future chained on a call to another worker."""
    return rpc().rpc_async(to, add, args=(a, a)).then(lambda f: f.value() * 2)


def init_linear(layer, seed):
    rng = np.random.default_rng(seed)
    with LIB.no_grad():
        for p in layer.parameters():
            p.copy_(LIB.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32) * 0.5))
    return layer


class Stage:
    """A pipeline stage on some worker: a linear layer and tanh, then (maybe) the next stage, by RPC."""

    def __init__(self, fin, fout, seed, nxt=None):
        self.layer = init_linear(LIB.nn.Linear(fin, fout), seed)
        self.next = nxt

    def forward(self, x):
        h = LIB.tanh(self.layer(x))
        if self.next is not None:
            h = RPC.rpc_sync(self.next.owner(), Stage.call, args=(self.next, h))
        return h

    @staticmethod
    def call(rref, x):
        return rref.local_value().forward(x)

    @staticmethod
    def param_rrefs(rref):
        return [RPC.RRef(p) for p in rref.local_value().layer.parameters()]

    @staticmethod
    def grads(rref, context_id):
        found = DIST_AUTOGRAD().get_gradients(context_id)
        return [found[p] for p in rref.local_value().layer.parameters()]

    @staticmethod
    def params(rref):
        return [p.detach().clone() for p in rref.local_value().layer.parameters()]


class SeededLinear(LIB.nn.Linear):
    def __init__(self, fin, fout, seed):
        super().__init__(fin, fout)
        init_linear(self, seed)


def remote_module(r):
    """A RemoteModule on worker1: forward, forward_async, a distributed step through remote_parameters, the
    methods it refuses and pickling."""
    import pickle
    dist_autograd = DIST_AUTOGRAD()
    optim = importlib.import_module(LIB.__name__ + ".distributed.optim")
    nn = importlib.import_module(LIB.__name__ + ".distributed.nn")
    module = nn.RemoteModule("worker1/cpu", SeededLinear, args=(4, 3), kwargs={"seed": 5})
    x = LIB.tensor(np.random.default_rng(2).standard_normal((2, 4)).astype(np.float32))
    out = {"forward": value(module(x)), "forward_async": value(module.forward_async(x).wait())}
    opt = optim.DistributedOptimizer(LIB.optim.SGD, module.remote_parameters(), lr=0.1)
    with dist_autograd.context() as cid:
        dist_autograd.backward(cid, [module(x).square().sum()])
        opt.step(cid)
    out["after_step"] = value(module(x))
    out["owner"] = module.get_module_rref().owner_name()
    out["by_rank"] = value(nn.RemoteModule("rank:2/cpu", SeededLinear, args=(4, 2, 1))(x))
    for name, call in (("parameters", lambda: list(module.parameters())), ("to", lambda: module.to("cpu")),
                       ("state_dict", module.state_dict), ("train", module.train), ("pickle", lambda: pickle.dumps(module)),
                       ("bad_device", lambda: nn.RemoteModule("worker1", SeededLinear, args=(4, 3, 0)))):
        try:
            call()
            out[f"error_{name}"] = None
        except Exception as e:  # noqa: BLE001 -- the type is compared
            out[f"error_{name}"] = type(e).__name__
    return out


def DIST_AUTOGRAD():
    return importlib.import_module(LIB.__name__ + ".distributed.autograd")


def distributed_training(r):
    """Trainer layers around two remote stages (worker1's calls worker2's): 3 steps of distributed backward and
    DistributedOptimizer (SGD with momentum) over all of them; the gradients of every step and the final weights."""
    dist_autograd = DIST_AUTOGRAD()
    optim = importlib.import_module(LIB.__name__ + ".distributed.optim")
    s2 = r.remote("worker2", Stage, args=(3, 3, 2))
    s1 = r.remote("worker1", Stage, args=(4, 3, 1), kwargs={"nxt": s2})
    pre = init_linear(LIB.nn.Linear(5, 4), 0)
    post = init_linear(LIB.nn.Linear(3, 2), 3)
    rrefs = ([r.RRef(p) for p in pre.parameters()] + r.rpc_sync("worker1", Stage.param_rrefs, args=(s1,))
             + r.rpc_sync("worker2", Stage.param_rrefs, args=(s2,)) + [r.RRef(p) for p in post.parameters()])
    opt = optim.DistributedOptimizer(LIB.optim.SGD, rrefs, lr=0.1, momentum=0.9)
    out = {"grads": [], "untouched": []}
    rng = np.random.default_rng(11)
    for step in range(3):
        x = LIB.tensor(rng.standard_normal((6, 5)).astype(np.float32))
        with dist_autograd.context() as cid:
            h = r.rpc_sync("worker1", Stage.call, args=(s1, pre(x)))
            loss = post(h).square().mean()
            dist_autograd.backward(cid, [loss])
            local = dist_autograd.get_gradients(cid)
            grads = [local[p] for p in pre.parameters()]
            grads += r.rpc_sync("worker1", Stage.grads, args=(s1, cid)) + r.rpc_sync("worker2", Stage.grads, args=(s2, cid))
            grads += [local[p] for p in post.parameters()]
            out["grads"].append(value(grads))
            out["untouched"].append(all(p.grad is None for p in list(pre.parameters()) + list(post.parameters())))
            opt.step(cid)
    out["final"] = value([p.detach() for p in pre.parameters()] + r.rpc_sync("worker1", Stage.params, args=(s1,))
                         + r.rpc_sync("worker2", Stage.params, args=(s2,)) + [p.detach() for p in post.parameters()])
    return out


def main():
    lib_name, out = sys.argv[1], sys.argv[2]
    if lib_name == "torch":
        LIB.set_num_threads(1)
    r = rpc()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    options = r.TensorPipeRpcBackendOptions(num_worker_threads=8, rpc_timeout=60)
    r.init_rpc(f"worker{rank}", rank=rank, world_size=world, rpc_backend_options=options)
    results = {}
    if rank == 0:
        results = scenarios(r)
    r.shutdown()
    if rank == 0:
        with open(os.path.join(out, f"{lib_name}.json"), "w") as f:
            json.dump(results, f, indent=1, sort_keys=True)


def value(x):
    """JSON-able form of a result (tensors as nested lists)."""
    if hasattr(x, "tolist"):
        return x.tolist()
    if isinstance(x, (list, tuple)):
        return [value(v) for v in x]
    return x


def scenarios(r):
    t = LIB.tensor
    out = {"rref_lifetimes": rref_lifetimes(r)}  # first: its counts start from no RRef anywhere
    a = t(np.arange(6, dtype=np.float32).reshape(2, 3))
    b = t(np.ones((2, 3), dtype=np.float32))
    out["sync"] = value(r.rpc_sync("worker1", add, args=(a, b), kwargs={"scale": 3}))
    out["sync_by_info"] = value(r.rpc_sync(r.get_worker_info("worker2"), add, args=(a, b)))
    out["builtin"] = value(r.rpc_sync("worker1", LIB.add, args=(a, b)))
    futs = [r.rpc_async(f"worker{k}", add, args=(a, t(float(k)))) for k in (1, 2)]
    out["async"] = value(futures().wait_all(futs))
    out["then"] = value(r.rpc_async("worker2", add, args=(a, b)).then(lambda f: f.value().sum()).wait())
    out["names"] = [r.rpc_sync(f"worker{k}", whoami) for k in (0, 1, 2)]
    out["infos"] = [[i.name, i.id] for i in (r.get_worker_info(), r.get_worker_info("worker2"))]
    out["nested"] = value(r.rpc_sync("worker1", relay, args=("worker2", a, b)))
    for kind in ("value", "key", "type", "index", "custom", "runtime"):
        try:
            r.rpc_sync("worker1", fails, args=(kind,))
            out[f"error_{kind}"] = None
        except Exception as e:  # noqa: BLE001 -- the type is what is compared
            out[f"error_{kind}"] = [type(e).__name__, f"bad {kind}" in str(e), "worker1" in str(e)]
    # remote references
    rref = r.remote("worker1", make_counter, args=(5,))
    out["rref_owner"] = [rref.owner_name(), rref.owner().id, rref.is_owner()]
    out["rref_bump"] = [rref.rpc_sync().bump(2), rref.rpc_async().bump().wait(), rref.rpc_sync().get()]
    out["proxy_async_execution"] = [rref.rpc_sync().bump_later("worker2", 5), rref.rpc_async().bump_later("worker0", 2).wait(),
                                    value(rref.rpc_sync().doubled("worker2", a))]
    try:
        rref.to_here()  # a Counter holds a lock: its copy cannot be pickled
        out["unpicklable"] = None
    except Exception as e:  # noqa: BLE001
        out["unpicklable"] = [type(e).__name__, "pickle" in str(e)]
    out["rref_to_here"] = value(r.remote("worker1", make_counter, args=(7,)).rpc_sync().get())
    tref = r.remote("worker2", add, args=(a, b))
    out["rref_value"] = value(tref.to_here())
    out["rref_elsewhere"] = value(r.rpc_sync("worker1", fetch_here, args=(tref,)))  # worker1 fetches from 2
    out["rref_on_owner"] = value(r.rpc_sync("worker2", owner_local, args=(tref,)))  # local_value on the owner
    mine = r.RRef(a * 2)
    out["local_rref"] = [mine.is_owner(), value(mine.local_value()), value(r.rpc_sync("worker2", fetch_here,
                                                                                       args=(mine,)))]
    try:
        tref.local_value()
        out["local_value_elsewhere"] = None
    except Exception as e:  # noqa: BLE001
        out["local_value_elsewhere"] = type(e).__name__
    sub = tref.remote().sum()  # a remote call on the owner's value, itself an RRef
    out["proxy_remote"] = value(sub.to_here())
    # async_execution: a chained future, and callers held until all report
    out["async_chain"] = value(r.rpc_sync("worker1", doubled_later, args=("worker2", t(3.0))))
    batcher = r.remote("worker2", Batcher, args=(3,))
    reports = [r.rpc_async(batcher.owner(), Batcher.report, args=(batcher, v)) for v in (10, 0, 5)]
    out["batched"] = [value(f.wait()) for f in reports]
    out["to_self"] = value(r.rpc_sync("worker0", add, args=(a, b)))
    for name, call in (("unknown_worker", lambda: r.rpc_sync("nobody", add, args=(a, b))),
                       ("unknown_info", lambda: r.get_worker_info("nobody")),
                       ("timeout", lambda: r.rpc_sync("worker1", nap, args=(1.0,), timeout=0.2)),
                       ("not_callable", lambda: r.rpc_sync("worker1", 3)),
                       ("init_twice", lambda: r.init_rpc("worker0", rank=0, world_size=3))):
        try:
            call()
            out[f"misuse_{name}"] = None
        except Exception as e:  # noqa: BLE001 -- the type is compared
            out[f"misuse_{name}"] = type(e).__name__
    out["after_timeout"] = value(r.rpc_sync("worker1", add, args=(a, b)))  # the late reply does not get in the way
    out["dist_autograd"] = distributed_training(r)
    out["remote_module"] = remote_module(r)
    return out


if __name__ == "__main__":
    main()
