"""torch.distributed.checkpoint (DCP): save a state dict to a directory, load it back in place.

Files as torch's (Note [DCP files] in _format.py): torch loads what ember saves and the other way round.
Nested dicts (and lists holding tensors) are flattened to dotted keys as torch's default planner does;
tensors are written with their values and loaded by copying into the tensors of the state dict given to
load(); other values are pickled and replaced. With a process group of several ranks ember writes rank 0's
state dict (a replicated one, as DDP's: torch writes each replicated entry once too) and every rank reads;
sharded tensors (DTensor, FSDP) do not exist in ember. Planners other than the default ones are not
supported; async_save runs synchronously and returns a completed Future."""
import contextlib
import enum
import io
import os
import uuid

from . import state_dict  # noqa: F401  (torch.distributed.checkpoint.state_dict)
from .api import CheckpointException
from ._format import (BytesStorageMetadata, ChunkStorageMetadata, Metadata, MetadataIndex, StorageMeta,
                      TensorProperties, TensorStorageMetadata, _StorageInfo, dumps_metadata, loads_metadata)

__all__ = ["CheckpointException", "DefaultLoadPlanner", "DefaultSavePlanner", "FileSystemReader", "FileSystemWriter", "Metadata", "async_save",
           "load", "load_state_dict", "save", "save_state_dict"]

_METADATA = ".metadata"


class SerializationFormat(enum.Enum):
    TORCH_SAVE = "torch_save"
    SAFETENSORS = "safetensors"


class AsyncCheckpointerType(enum.Enum):
    THREAD = "thread"
    PROCESS = "process"


class FileSystemWriter:
    """Where save() writes: a directory (made if missing). Entries are torch.save archives (TORCH_SAVE) only."""

    def __init__(self, path, single_file_per_rank=True, sync_files=True, thread_count=1, per_thread_copy_ahead=10000000,
                 cache_staged_state_dict=False, overwrite=True, _extensions=None,
                 serialization_format=SerializationFormat.TORCH_SAVE):
        if serialization_format is not SerializationFormat.TORCH_SAVE:
            raise NotImplementedError("ember's FileSystemWriter writes torch.save entries (SerializationFormat.TORCH_SAVE)")
        self.path = os.fspath(path)
        self.sync_files = sync_files
        self.overwrite = overwrite


class FileSystemReader:
    """Where load() reads: a directory save() wrote."""

    def __init__(self, path, _extension_registry=None):
        self.path = os.fspath(path)

    def read_metadata(self):
        with open(os.path.join(self.path, _METADATA), "rb") as f:
            return loads_metadata(f.read())


class DefaultSavePlanner:
    def __init__(self, flatten_state_dict=True, flatten_sharded_tensors=True, dedup_replicated_tensors=None,
                 dedup_save_to_lowest_rank=False, enable_plan_caching=False):
        if not flatten_state_dict:
            raise NotImplementedError("ember's DCP always flattens the state dict (flatten_state_dict=True)")


class DefaultLoadPlanner:
    def __init__(self, flatten_state_dict=True, flatten_sharded_tensors=True, allow_partial_load=False):
        if not flatten_state_dict:
            raise NotImplementedError("ember's DCP always flattens the state dict (flatten_state_dict=True)")
        self.allow_partial_load = allow_partial_load


def _is_tensor(value):
    from ..._tensor import Tensor
    return isinstance(value, Tensor)


def _flatten(state_dict):
    """{fqn: (path, value)} as torch's traversal: mappings always, lists when they hold tensors or mappings."""
    out = {}

    def terminal(value):
        if isinstance(value, dict):
            return False
        if not isinstance(value, list):
            return True
        return all(not _is_tensor(v) and (not isinstance(v, (dict, list)) or terminal(v)) for v in value)

    def walk(path, value):
        if isinstance(value, dict):
            for k, v in value.items():
                walk(path + (str(k),), v)
        elif terminal(value):
            out[".".join(str(p) for p in path)] = (path, value)
        elif isinstance(value, (list, tuple)):
            for i, v in enumerate(value):
                walk(path + (i,), v)

    for key, value in state_dict.items():
        walk((str(key),), value)
    return out


def _dist_info(process_group, no_dist):
    from .. import distributed_c10d as c10d
    if no_dist or not c10d.is_initialized():
        return None, 0, 1
    from ... import distributed as dist
    return process_group, dist.get_rank(process_group), dist.get_world_size(process_group)


def _path(checkpoint_id, storage):
    if storage is not None:
        return storage.path
    if checkpoint_id is None:
        raise RuntimeError("`checkpoint_id` must be specified if storage_reader/storage_writer is None.")
    return os.fspath(checkpoint_id)


def save(state_dict, *, checkpoint_id=None, storage_writer=None, planner=None, process_group=None, no_dist=False,
         use_collectives=True):
    """Write state_dict to the checkpoint directory; returns its Metadata. Over an existing checkpoint: a warning,
    or with FileSystemWriter(overwrite=False) CheckpointException holding torch's RuntimeError."""
    _check_planner(planner, DefaultSavePlanner)
    path = _path(checkpoint_id, storage_writer)
    group, rank, world = _dist_info(process_group, no_dist)
    metadata = None
    if rank == 0:
        with _failures(rank):
            metadata = _write(state_dict, path, storage_writer)
    if world > 1:
        from ... import distributed as dist
        dist.barrier(group=group)  # nobody returns before the files exist
        if metadata is None:
            metadata = FileSystemReader(path).read_metadata()
    return metadata


def _write(state_dict, path, writer):
    """The checkpoint's files (Note [DCP files]), each written beside its place and moved there when complete."""
    import pathlib
    import warnings
    from ... import Size
    from ... import save as ember_save
    overwrite = getattr(writer, "overwrite", True)
    os.makedirs(path, exist_ok=True)
    if os.path.exists(os.path.join(path, _METADATA)):
        if not overwrite:
            raise RuntimeError(f"Checkpoint already exists and self.overwrite={overwrite}.")
        warnings.warn(f"Detected an existing checkpoint in {path}, overwriting since self.overwrite={overwrite}. Past "
                      "version 2.5 of PyTorch, `overwrite` will default to False. Set this variable to True to maintain "
                      "this functionality or False to raise when an existing checkpoint is found.", stacklevel=4)
    entries, planner_data, storage_data = {}, {}, {}
    data_file = "__0_0.distcp"
    tmp = os.path.join(path, data_file + ".tmp")
    with open(tmp, "wb") as f:
        # torch writes the non-tensor values first, then the tensors
        for fqn, (obj_path, value) in sorted(_flatten(state_dict).items(), key=lambda kv: _is_tensor(kv[1][1])):
            planner_data[fqn] = obj_path
            start = f.tell()
            archive = io.BytesIO()  # each entry a whole archive of its own (torch reads it from a slice)
            if _is_tensor(value):
                t = value.detach()
                ember_save(t.contiguous() if not t.is_contiguous() else t, archive)
                zeros = Size([0] * t.dim())
                entries[fqn] = TensorStorageMetadata(TensorProperties(t.dtype, None, False, None, False), t.shape,
                                                     [ChunkStorageMetadata(zeros, t.shape)])
                key = MetadataIndex(fqn, zeros, 0)
            else:
                ember_save(value, archive)
                entries[fqn] = BytesStorageMetadata()
                key = MetadataIndex(fqn, None, None)
            f.write(archive.getvalue())
            storage_data[key] = _StorageInfo(data_file, start, f.tell() - start, None)
        if getattr(writer, "sync_files", True):
            f.flush()
            os.fsync(f.fileno())
    os.replace(tmp, os.path.join(path, data_file))
    metadata = Metadata(entries, planner_data, storage_data,
                        StorageMeta(pathlib.Path(path), str(uuid.uuid4()), None, []), "1.0.0")
    tmp = os.path.join(path, _METADATA + ".tmp")
    with open(tmp, "wb") as f:
        f.write(dumps_metadata(metadata))
    os.replace(tmp, os.path.join(path, _METADATA))
    return metadata


def load(state_dict, *, checkpoint_id=None, storage_reader=None, planner=None, process_group=None, no_dist=False):
    """Fill state_dict in place from the checkpoint: tensors copied into, other values replaced. A missing key or
    a shape that differs raises CheckpointException holding the RuntimeError or ValueError, as torch's."""
    _check_planner(planner, DefaultLoadPlanner)
    reader = storage_reader if storage_reader is not None else FileSystemReader(_path(checkpoint_id, None))
    with _failures(_dist_info(process_group, no_dist)[1]):
        _load(state_dict, reader, planner)


@contextlib.contextmanager
def _failures(rank):
    """A RuntimeError or ValueError of this rank's step raised as torch raises it: inside a CheckpointException."""
    try:
        yield
    except (RuntimeError, ValueError) as e:
        raise CheckpointException("checkpoint", {rank: e}) from None


def _load(state_dict, reader, planner):
    from ... import load as ember_load
    from ...autograd.grad_mode import no_grad
    metadata = reader.read_metadata()
    by_fqn = {}
    for index, info in metadata.storage_data.items():
        by_fqn.setdefault(index.fqn, []).append((index, info))
    partial = getattr(planner, "allow_partial_load", False)
    for fqn, (obj_path, value) in _flatten(state_dict).items():
        if fqn not in metadata.state_dict_metadata:
            if partial:
                continue
            raise RuntimeError(f"Missing key in checkpoint state_dict: {fqn}.")
        kind = metadata.state_dict_metadata[fqn]
        parts = by_fqn[fqn]
        if isinstance(kind, BytesStorageMetadata):
            (_, info), = parts
            loaded = ember_load(io.BytesIO(_read(reader.path, info)), weights_only=False)
            _assign(state_dict, obj_path, loaded)
            continue
        if not _is_tensor(value):
            raise RuntimeError(f"{fqn}: the checkpoint holds a tensor, the state_dict a {type(value).__name__}")
        if tuple(value.shape) != tuple(kind.size):
            raise ValueError(f"Size mismatch between saved {kind.size} and current: {value.shape} for {fqn}")
        with no_grad():
            for index, info in parts:  # each saved chunk into its place
                chunk = ember_load(io.BytesIO(_read(reader.path, info)), weights_only=True)
                target = value
                for dim, (start, length) in enumerate(zip(index.offset or (), chunk.shape)):
                    target = target.narrow(dim, int(start), int(length))
                target.copy_(chunk)


def _read(path, info):
    with open(os.path.join(path, info.relative_path), "rb") as f:
        f.seek(info.offset)
        return f.read(info.length)


def _assign(state_dict, obj_path, value):
    container = state_dict
    for key in obj_path[:-1]:
        container = container[key] if isinstance(container, list) else container[_key_in(container, key)]
    last = obj_path[-1]
    if isinstance(container, list):
        container[last] = value
    else:
        container[_key_in(container, last)] = value


def _key_in(mapping, key):
    """The mapping's own key whose str() is `key` (paths hold str keys, as torch's)."""
    if key in mapping:
        return key
    for k in mapping:
        if str(k) == key:
            return k
    return key


def _check_planner(planner, default):
    if planner is not None and not isinstance(planner, default):
        raise NotImplementedError(f"ember's DCP supports {default.__name__} only, got {type(planner).__name__}")


def save_state_dict(state_dict, storage_writer, process_group=None, coordinator_rank=0, no_dist=False, planner=None):
    """The older form of save (torch deprecates it)."""
    import warnings
    warnings.warn("'save_state_dict' is deprecated and will be removed in future versions.Please use 'save' instead.",
                  FutureWarning, stacklevel=2)
    return save(state_dict, storage_writer=storage_writer, process_group=process_group, no_dist=no_dist,
                planner=planner)


def load_state_dict(state_dict, storage_reader, process_group=None, coordinator_rank=0, no_dist=False, planner=None):
    """The older form of load (torch deprecates it)."""
    import warnings
    warnings.warn("'load_state_dict' is deprecated and will be removed in future versions. Please use 'load' "
                  "instead.", FutureWarning, stacklevel=2)
    return load(state_dict, storage_reader=storage_reader, process_group=process_group, no_dist=no_dist,
                planner=planner)


def async_save(state_dict, *, checkpoint_id=None, storage_writer=None, planner=None, process_group=None,
               async_checkpointer_type=AsyncCheckpointerType.THREAD, async_stager=None, no_dist=False,
               use_collectives=True):
    """save(), run now (not in the background); a completed concurrent.futures.Future of its Metadata."""
    import concurrent.futures
    future = concurrent.futures.Future()
    future.set_result(save(state_dict, checkpoint_id=checkpoint_id, storage_writer=storage_writer, planner=planner,
                           process_group=process_group, no_dist=no_dist))
    return future
