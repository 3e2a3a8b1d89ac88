"""The files of torch.distributed.checkpoint, read and written as torch does (Note [DCP files]).

Note [DCP files]: a checkpoint is a directory: `.metadata`, a pickle of torch's Metadata dataclasses
(each entry's kind, tensor shape and dtype, and where its bytes are), and `__<rank>_0.distcp` files holding
one torch.save archive per entry, back to back. The dataclasses are stood in for here by small classes
that pickle under torch's names (module and class) with torch's state, so torch reads what ember writes,
and that an unpickler restricted to these names rebuilds from torch's files; tensors and other values
travel through ember.save / ember.load, which write and read torch's archive format.
"""
import builtins
import collections
import copyreg
import dataclasses
import io
import pickle

from ... import serialization as S

_MD = "torch.distributed.checkpoint.metadata"
_FS = "torch.distributed.checkpoint.filesystem"


class _Record:
    """Base of the stand-ins for torch's metadata dataclasses (Note [DCP files]): pickled under torch's names by
    _Pickler, with torch's state (_torch_state)."""
    _module = _MD

    def _torch_state(self):
        return dict(self.__dict__)

    def __setstate__(self, state):
        self.__dict__.update(state)


@dataclasses.dataclass
class Metadata(_Record):
    state_dict_metadata: dict
    planner_data: object = None
    storage_data: object = None
    storage_meta: object = None
    version: object = None


@dataclasses.dataclass
class StorageMeta(_Record):
    checkpoint_id: object = None
    save_id: object = None
    load_id: object = None
    modules: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class BytesStorageMetadata(_Record):
    pass


@dataclasses.dataclass
class TensorStorageMetadata(_Record):
    properties: object
    size: object
    chunks: list


@dataclasses.dataclass
class ChunkStorageMetadata(_Record):
    offsets: object
    sizes: object


@dataclasses.dataclass(frozen=True)
class MetadataIndex(_Record):
    fqn: str
    offset: object = None
    index: object = None

    def __hash__(self):
        return hash(self.fqn)


@dataclasses.dataclass
class _StorageInfo(_Record):
    relative_path: str
    offset: int
    length: int
    transform_descriptors: object = None
    _module = _FS


@dataclasses.dataclass
class TensorProperties(_Record):
    """dtype, layout, requires_grad, memory_format, pin_memory; pickled as torch's 5-tuple state."""
    dtype: object = None
    layout: object = None
    requires_grad: bool = False
    memory_format: object = None
    pin_memory: bool = False

    def _torch_state(self):
        return (self.dtype, _Layout(), bool(self.requires_grad), _MemoryFormat(0), bool(self.pin_memory))

    def __setstate__(self, state):
        if isinstance(state, dict):
            self.__dict__.update(state)
            return
        self.dtype, self.layout, self.requires_grad, memory_format, self.pin_memory = state
        self.memory_format = memory_format


class _Layout:
    """torch.strided, as torch pickles it: torch.serialization._get_layout('torch.strided')."""

    def __reduce__(self):
        return (S._TorchGlobal("torch.serialization", "_get_layout"), ("torch.strided",))


class _MemoryFormat:
    """torch's _MEM_FORMAT_ENCODING member (0: contiguous)."""

    def __init__(self, code):
        self.code = code

    def __reduce__(self):
        return (S._TorchGlobal(_MD, "_MEM_FORMAT_ENCODING"), (self.code,))


_CLASSES = {(cls._module, cls.__name__): cls for cls in (Metadata, StorageMeta, BytesStorageMetadata,
                                                        TensorStorageMetadata, ChunkStorageMetadata, MetadataIndex,
                                                        _StorageInfo, TensorProperties)}


class _Pickler(S._Pickler2):
    """ember's torch-named pickler, with the stand-in classes written under torch's names."""

    def reducer_override(self, obj):
        if isinstance(obj, _Record):
            return (copyreg.__newobj__, (type(obj),), obj._torch_state())
        return super().reducer_override(obj)

    def save_global(self, obj, name=None):
        if isinstance(obj, type) and issubclass(obj, _Record):
            return self.save_torch_global(S._TorchGlobal(obj._module, obj.__name__))
        return super().save_global(obj, name)


def dumps_metadata(metadata):
    buffer = io.BytesIO()
    _Pickler(buffer, {}, protocol=4).dump(metadata)
    return buffer.getvalue()


class _Unpickler(pickle.Unpickler):
    """Only the names a DCP .metadata file holds: torch's metadata classes, dtypes, Size, layouts, paths."""

    def find_class(self, module, name):
        cls = _CLASSES.get((module, name))
        if cls is not None:
            return cls
        if (module, name) == (_MD, "_MEM_FORMAT_ENCODING"):
            return _memory_format
        if module == "pathlib" and name in ("PosixPath", "WindowsPath", "Path", "PurePosixPath"):
            import pathlib
            return getattr(pathlib, name)
        if module == "builtins" and name in ("set", "frozenset", "tuple", "list", "dict"):
            return getattr(builtins, name)
        if (module, name) == ("collections", "OrderedDict"):
            return collections.OrderedDict
        found = S._torch_global(module, name)
        if found is not None:
            return found
        raise pickle.UnpicklingError(f"a DCP .metadata file should not hold {module}.{name}")


def _memory_format(code):
    from ... import channels_last, contiguous_format, preserve_format
    return {0: contiguous_format, 1: channels_last, 2: preserve_format}[code]


def loads_metadata(data):
    return _Unpickler(io.BytesIO(data)).load()
