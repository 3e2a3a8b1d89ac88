"""Process body of tests/test_device_mesh.py: one rank of 4 builds a 2 x 2 DeviceMesh and records what it sees.

    python tests/_distributed/device_mesh.py LIB OUT     (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT set)

The same script runs on torch (gloo) and ember (its TCP transport); each rank writes OUT/<lib>-<rank>.json."""
import importlib
import json
import os
import sys

import numpy as np

LIB = importlib.import_module(sys.argv[1])
dist = importlib.import_module(LIB.__name__ + ".distributed")
mesh_mod = importlib.import_module(LIB.__name__ + ".distributed.device_mesh")
DeviceMesh, init_device_mesh = mesh_mod.DeviceMesh, mesh_mod.init_device_mesh


def error(fn):
    try:
        fn()
        return None
    except Exception as e:  # noqa: BLE001 -- the type and message are compared
        return [type(e).__name__, str(e).replace("torch.", "").replace("ember.", "")]


def groups(gs):
    return [dist.get_process_group_ranks(g) for g in gs]


def summed(group):
    t = LIB.tensor([float(dist.get_rank() + 1)])
    dist.all_reduce(t, group=group)
    return t.item()


def gathered(group):
    parts = [LIB.zeros(1) for _ in range(dist.get_world_size(group))]
    dist.all_gather(parts, LIB.tensor([float(dist.get_rank())]), group=group)
    return [p.item() for p in parts]


def describe(mesh):
    return {"repr": repr(mesh).replace("torch.", "").replace("ember.", ""), "mesh": mesh.mesh.tolist(),
            "shape": list(mesh.shape), "ndim": mesh.ndim, "names": mesh.mesh_dim_names, "size": mesh.size(),
            "sizes": [mesh.size(d) for d in range(mesh.ndim)], "rank": mesh.get_rank(),
            "coordinate": mesh.get_coordinate(), "device_type": mesh.device_type,
            "local_ranks": [mesh.get_local_rank(d) for d in range(mesh.ndim)],
            "groups": groups(mesh.get_all_groups()), "sums": [summed(mesh.get_group(d)) for d in range(mesh.ndim)],
            "gathered": [gathered(mesh.get_group(d)) for d in range(mesh.ndim)]}


def main():
    out = {}
    rank = int(os.environ["RANK"])
    out["before_init"] = error(lambda: init_device_mesh("cpu", (2, 2), mesh_dim_names=("a",)))
    mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
    out["initialized"] = dist.is_initialized()
    out["mesh"] = describe(mesh)
    out["by_name"] = [dist.get_process_group_ranks(mesh.get_group("dp")), mesh.get_local_rank("tp")]
    out["errors"] = {"group without dim": error(lambda: mesh.get_group()),
                     "local rank without dim": error(lambda: mesh.get_local_rank()),
                     "unknown name": error(lambda: mesh["ep"]),
                     "bad dim": error(lambda: mesh.get_group(2)),
                     "too big": error(lambda: init_device_mesh("cpu", (2, 4))),
                     "names repeated": error(lambda: init_device_mesh("cpu", (2, 2), mesh_dim_names=("x", "x")))}
    out["tp"] = describe(mesh["tp"])
    out["dp"] = describe(mesh["dp"])
    out["both"] = describe(mesh["dp", "tp"])
    flat = mesh._flatten("dp_tp")
    out["flat"] = describe(flat)
    out["flat_by_name"] = describe(mesh["dp_tp"])
    out["from_group"] = describe(DeviceMesh.from_group(mesh.get_group("tp"), "cpu"))
    out["one_dim"] = describe(init_device_mesh("cpu", (4,)))
    out["explicit"] = describe(DeviceMesh("cpu", [[0, 2], [1, 3]], mesh_dim_names=("x", "y")))
    out["permuted"] = describe(DeviceMesh("cpu", [[3, 1], [0, 2]], mesh_dim_names=("a", "b")))
    out["equal"] = [mesh["tp"] == mesh["tp"], hash(mesh) == hash(mesh)]
    # DDP over the mesh's data-parallel dimension: gradients averaged within dp only
    LIB.manual_seed(0)
    model = LIB.nn.Linear(3, 1)
    ddp = LIB.nn.parallel.DistributedDataParallel(model, device_mesh=mesh["dp"])
    x = LIB.tensor(np.full((2, 3), float(rank + 1), dtype=np.float32))
    ddp(x).sum().backward()
    out["ddp_grad"] = model.weight.grad.tolist()
    out["ddp_2d"] = error(lambda: LIB.nn.parallel.DistributedDataParallel(LIB.nn.Linear(3, 1), device_mesh=mesh))
    dist.barrier()  # leave together (torch's gloo can abort a rank tearing down while another still works)
    dist.destroy_process_group()
    with open(os.path.join(sys.argv[2], f"{LIB.__name__}-{rank}.json"), "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
