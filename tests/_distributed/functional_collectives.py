"""Process body of tests/test_distributed_functional.py; run it, don't import it.

    python tests/_distributed/functional_collectives.py torch OUT      (2 gloo processes: RANK, WORLD_SIZE, MASTER_*)
    mpiexec -n 2 python tests/_distributed/functional_collectives.py ember OUT

Each rank runs every differentiable collective of <lib>.distributed.nn.functional on its own inputs, takes
the gradient of a rank-specific weighted sum of the outputs, and saves outputs and input gradients to
OUT/<lib>_r<rank>.npz."""
import importlib
import os
import sys
import warnings

import numpy as np


def main():
    lib_name, out = sys.argv[1], sys.argv[2]
    lib = importlib.import_module(lib_name)
    dist = importlib.import_module(lib_name + ".distributed")
    F = importlib.import_module(lib_name + ".distributed.nn.functional")
    if lib_name == "torch":
        lib.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    rng = np.random.default_rng(10 + rank)

    def leaf(*shape):
        return lib.tensor(rng.standard_normal(shape).astype(np.float32), requires_grad=True)

    def weight(t):
        return lib.tensor(rng.standard_normal(tuple(t.shape)).astype(np.float32))

    record = {}

    def run(name, fn, x):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = fn(x)
        record[f"{name}_warned"] = np.array(" | ".join(str(w.message) for w in caught if w.category is FutureWarning))
        outs = list(result) if isinstance(result, tuple) else [result]
        loss = sum((o * weight(o)).sum() for o in outs)
        loss.backward()
        for i, o in enumerate(outs):
            if name == "reduce" and rank != 0:
                continue  # off the destination the output is unspecified (gloo leaves partial sums there)
            record[f"{name}_out{i}"] = o.detach().numpy()
        record[f"{name}_grad"] = x.grad.numpy()

    empty = lib.empty
    run("all_reduce", lambda x: F.all_reduce(x * 1.5), leaf(3, 4))
    run("all_reduce_max", lambda x: F.all_reduce(x, op=dist.ReduceOp.MAX), leaf(3, 4))
    run("broadcast", lambda x: F.broadcast(x * 2, src=1), leaf(3, 4))
    run("reduce", lambda x: F.reduce(x.tanh(), dst=0), leaf(2, 5))
    run("all_gather", lambda x: F.all_gather(x.sin()), leaf(3, 2))
    run("gather", lambda x: F.gather(x, dst=1), leaf(4))
    run("scatter", lambda x: F.scatter([x * 1.0, x * 2.0], src=0), leaf(2, 3))
    run("reduce_scatter", lambda x: F.reduce_scatter(empty(3, 4), [x, x * 3.0]), leaf(3, 4))
    run("all_to_all", lambda x: F.all_to_all([empty(3, 4), empty(3, 4)], [x, x * 2.0]), leaf(3, 4))
    run("all_to_all_single", lambda x: F.all_to_all_single(empty(4, 2), x), leaf(4, 2))
    rows = 2 if rank == 0 else 6  # rank r gets 1 row from every rank (rank 0) or 3 (rank 1)
    splits = [1, 1] if rank == 0 else [3, 3]
    run("all_to_all_uneven", lambda x: F.all_to_all_single(empty(rows, 2), x, output_split_sizes=splits,
                                                           input_split_sizes=[1, 3]), leaf(4, 2))
    np.savez(os.path.join(out, f"{lib_name}_r{rank}.npz"), **record)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
