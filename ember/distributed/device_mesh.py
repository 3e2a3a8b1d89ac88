"""torch.distributed.device_mesh: ranks laid out as an n-dimensional grid, a process group per dimension.

https://pytorch.org/docs/stable/distributed.html#devicemesh. A DeviceMesh is made on every rank with the same
grid; along each dimension every line of the grid becomes a group (new_group, in the same order on every
rank), and each rank keeps the group of its own line: get_group("dp") is the group of the ranks that share
this rank's coordinates on every other dimension. mesh["tp"] and mesh["dp", "tp"] are views of the root
mesh that reuse its groups; _flatten merges dimensions into one, with a group per merged line. CPU only.
ember has no DTensor: a mesh is used for its groups (DistributedDataParallel(device_mesh=...), collectives).
"""
import math

import numpy as np

from . import distributed_c10d as _c10d

__all__ = ["init_device_mesh", "DeviceMesh"]


class DeviceMesh:
    """ranks (a nested list, array or tensor of global ranks) as a grid; made on every rank alike."""

    def __init__(self, device_type, mesh=None, *, mesh_dim_names=None, backend_override=None, _init_backend=True,
                 _rank=None, _layout=None, _rank_map=None, _root_mesh=None):
        _check_device(device_type)
        grid = np.asarray(mesh.tolist() if hasattr(mesh, "tolist") else mesh, dtype=np.int64)
        if not _c10d.is_initialized():
            _c10d.init_process_group()
        names = None if mesh_dim_names is None else tuple(mesh_dim_names)
        _check_names(names, grid.shape)
        self._setup(device_type, grid, names, None, tuple(_contiguous_strides(grid.shape)))
        self._groups = [self._make_groups(grid, (d,)) for d in range(grid.ndim)] if _init_backend else []

    def _setup(self, device_type, grid, names, root, strides):
        from .. import tensor
        self.device_type = device_type
        self._grid = grid
        self.mesh = tensor(grid)
        self.mesh_dim_names = names
        self._root = root  # the mesh this one is a slice or flattening of (None: it is a root)
        self._strides = strides  # its dimensions' steps in the root's row-major order (torch's layout, in repr)
        self._flattened = {}  # on a root: name -> its flattened mesh
        me = np.argwhere(grid == _c10d.get_rank())
        self._coordinate = tuple(int(c) for c in me[0]) if len(me) else None

    @staticmethod
    def _make_groups(grid, dims):
        """The group of this rank's line through `dims` (merged); every line's new_group is called, in order,
        as every rank must."""
        others = [d for d in range(grid.ndim) if d not in dims]
        lines = np.transpose(grid, others + list(dims)).reshape(-1, math.prod(grid.shape[d] for d in dims))
        mine = _c10d.GroupMember.NON_GROUP_MEMBER
        for line in lines:
            group = _c10d.new_group(line.tolist())  # ranks sorted, as torch: group rank = place among them
            if group is not _c10d.GroupMember.NON_GROUP_MEMBER:
                mine = group
        return mine

    @classmethod
    def _view(cls, root, dims, names, groups, strides, flat=False):
        """A mesh over root's dimensions `dims` through this rank (its other coordinates fixed); flat: those
        dimensions merged into one."""
        view = object.__new__(cls)
        at = tuple(slice(None) if d in dims else root._coordinate[d] for d in range(root.ndim))
        grid = root._grid[at]
        view._setup(root.device_type, grid.reshape(-1) if flat else grid, names, root, strides)
        view._groups = groups
        return view

    # ---- shape -----------------------------------------------------------------------------------
    @property
    def ndim(self):
        return self._grid.ndim

    @property
    def shape(self):
        return tuple(self._grid.shape)

    def size(self, mesh_dim=None):
        return self._grid.size if mesh_dim is None else self._grid.shape[mesh_dim]

    # ---- this rank -------------------------------------------------------------------------------
    def get_rank(self):
        return _c10d.get_rank()

    def get_coordinate(self):
        """This rank's index in the grid, or None when it is not in the mesh."""
        return None if self._coordinate is None else list(self._coordinate)

    def get_local_rank(self, mesh_dim=None):
        """This rank's rank in the group of dimension mesh_dim (as torch: its place among the sorted ranks of its
        line, which is its coordinate when the grid's lines are increasing)."""
        if mesh_dim is None:
            if self.ndim > 1:
                raise RuntimeError(f"Found the DeviceMesh have {self.ndim} dimensions",
                                   "Optional kwarg `mesh_dim` needs to be specified when device_mesh.ndim > 1.")
            mesh_dim = 0
        return _c10d.get_rank(self.get_group(mesh_dim))

    # ---- groups ----------------------------------------------------------------------------------
    def get_group(self, mesh_dim=None):
        if mesh_dim is None:
            if self.ndim > 1:
                raise RuntimeError(f"Found the DeviceMesh have {self.ndim} dimensions",
                                   "Optional kwarg `mesh_dim` needs to be specified when device_mesh.ndim > 1.",
                                   "If you want to get the list of all the ProcessGroups in the DeviceMesh,"
                                   "please use `get_all_groups()` instead.")
            mesh_dim = 0
        if isinstance(mesh_dim, str):
            mesh_dim = self._dim_of(mesh_dim)
        return self._groups[mesh_dim]

    def get_all_groups(self):
        return list(self._groups)

    def _dim_of(self, name):
        if not self.mesh_dim_names or name not in self.mesh_dim_names:
            raise KeyError(f"Mesh dimension '{name}' does not exist. Available mesh dimensions are: "
                           f"mesh_dim_names={self.mesh_dim_names}")
        return self.mesh_dim_names.index(name)

    # ---- slices and flattening -------------------------------------------------------------------
    def __getitem__(self, mesh_dim_names):
        wanted = (mesh_dim_names,) if isinstance(mesh_dim_names, str) else tuple(mesh_dim_names)
        root = self._root or self
        if len(wanted) == 1 and wanted[0] in root._flattened:
            return root._flattened[wanted[0]]
        names = self.mesh_dim_names or ()
        if not wanted or any(n not in names for n in wanted) or \
                [names.index(n) for n in wanted] != sorted(names.index(n) for n in wanted):
            raise KeyError(f"Invalid mesh_dim_names {wanted} specified. Valid mesh_dim_names are "
                           f"{list(names)}.")
        if wanted == names:
            return self
        dims = [names.index(n) for n in wanted]
        if self._root is not None:  # a slice of a slice: its dimensions are the root's
            dims = [root.mesh_dim_names.index(n) for n in wanted]
        return DeviceMesh._view(root, dims, wanted, [root._groups[d] for d in dims],
                                tuple(root._strides[d] for d in dims))

    def _flatten(self, mesh_dim_name=None, backend_override=None):
        """This mesh's dimensions merged into one (named after them joined by "_"), with a group per merged
        line of the root; the root then answers root[name] with it."""
        root = self._root or self
        names = self.mesh_dim_names or ()
        name = mesh_dim_name or "_".join(names)
        if name in root._flattened:
            return root._flattened[name]
        dims = [root.mesh_dim_names.index(n) for n in names] if self._root is not None else list(range(self.ndim))
        group = DeviceMesh._make_groups(root._grid, tuple(dims))
        flat = DeviceMesh._view(root, dims, (name,), [group], (root._strides[dims[-1]],), flat=True)
        root._flattened[name] = flat
        return flat

    @staticmethod
    def from_group(group, device_type, mesh=None, *, mesh_dim_names=None):
        """A mesh over existing groups: one group (a 1-D mesh of its ranks), or a list of groups, one per
        dimension of `mesh`."""
        _check_device(device_type)
        groups = [group] if isinstance(group, _c10d.ProcessGroup) else list(group)
        if mesh is None:
            if len(groups) != 1:
                raise ValueError("Expects mesh to be specified if passing in multiple ProcessGroups.")
            mesh = _c10d.get_process_group_ranks(groups[0])
        grid = np.asarray(mesh.tolist() if hasattr(mesh, "tolist") else mesh, dtype=np.int64)
        if grid.ndim != len(groups):
            raise ValueError(f"Expects mesh with ndim equal to number of ProcessGroups but got mesh "
                             f"{grid.tolist()} and {len(groups)} ProcessGroups")
        names = None if mesh_dim_names is None else tuple(mesh_dim_names)
        _check_names(names, grid.shape)
        made = object.__new__(DeviceMesh)
        made._setup(device_type, grid, names, None, tuple(_contiguous_strides(grid.shape)))
        made._groups = groups
        return made

    # ---- identity --------------------------------------------------------------------------------
    def __repr__(self):
        if self.mesh_dim_names:
            dims = ", ".join(f"{n}={s}" for n, s in zip(self.mesh_dim_names, self.shape))
        else:
            dims = ", ".join(str(s) for s in self.shape) + ("," if self.ndim == 1 else "")
        return f"DeviceMesh(({dims}), '{self.device_type}', stride={self._strides})"

    def __eq__(self, other):
        return isinstance(other, DeviceMesh) and (self.device_type, self.shape, self.mesh_dim_names) == \
            (other.device_type, other.shape, other.mesh_dim_names) and np.array_equal(self._grid, other._grid)

    def __hash__(self):
        return hash((self.device_type, self.shape, self.mesh_dim_names, self._grid.tobytes()))


def init_device_mesh(device_type, mesh_shape, *, mesh_dim_names=None, backend_override=None):
    """A DeviceMesh of the world's ranks 0 .. prod(mesh_shape) - 1 in row-major order; starts the default
    process group (init_process_group()) if it is not running yet."""
    shape = tuple(int(s) for s in mesh_shape)
    names = None if mesh_dim_names is None else tuple(mesh_dim_names)
    if names is not None and len(names) != len(shape):
        raise RuntimeError(f"mesh_shape and mesh_dim_names should have same length! Found len(mesh_dim_names): "
                           f"{len(names)} and len(mesh_shape):{len(shape)}.")
    _check_names(names, shape)
    _check_device(device_type)
    if not _c10d.is_initialized():
        _c10d.init_process_group()
    world = _c10d.get_world_size()
    if math.prod(shape) > world:
        raise RuntimeError(f"Mesh should not be bigger than default world size {world}, but found "
                           f"{math.prod(shape)} ranks!")
    return DeviceMesh(device_type, np.arange(math.prod(shape)).reshape(shape), mesh_dim_names=names)


def _check_names(names, shape):
    if names is None:
        return
    if len(set(names)) != len(names):
        raise RuntimeError(f"Each mesh_dim_name must be unique. Found repeated mesh_dim_name in mesh_dim_names "
                           f"{names}")
    if len(names) != len(shape):
        raise RuntimeError(f"mesh_dim_names {names} should have one name per dimension of the mesh {list(shape)}")


def _check_device(device_type):
    if device_type != "cpu":
        raise RuntimeError(f"ember runs on the CPU: a DeviceMesh's device_type must be 'cpu', got {device_type!r}")


def _contiguous_strides(shape):
    strides, step = [], 1
    for s in reversed(shape):
        strides.append(step)
        step *= s
    return strides[::-1]
