"""ember.save / ember.load in PyTorch's own checkpoint format.

The file is a zip archive (stored, not compressed) holding `data.pkl` (the object, pickled
with protocol 2, tensors reduced to `torch._utils._rebuild_tensor_v2` over persistent
storage ids), one `data/<key>` record of raw bytes per storage (64-byte aligned),
`version`, `byteorder` and a few markers. Real torch loads ember's files and ember loads
torch's, without importing torch: the torch names in the pickle are written and read as
plain strings.

Loading is safe by default (weights_only=True, as torch >= 2.6): only an allow-list of
globals may be unpickled; anything else raises pickle.UnpicklingError naming it.
"""
import collections
import io
import operator
import os
import pickle
import secrets
import struct
import sys
import tempfile
import zipfile

import numpy as np

from . import _dtype as D
from ._backend import numpy_cpu as B
from ._tensor import Size, Tensor

__all__ = ["save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals",
           "get_unsafe_globals_in_checkpoint"]

DEFAULT_PROTOCOL = 2
_ALIGN = 64

_STORAGE_NAMES = {
    D.float32: "FloatStorage", D.float64: "DoubleStorage", D.float16: "HalfStorage",
    D.bfloat16: "BFloat16Storage", D.int64: "LongStorage", D.int32: "IntStorage", D.int16: "ShortStorage",
    D.int8: "CharStorage", D.uint8: "ByteStorage", D.bool: "BoolStorage", D.complex64: "ComplexFloatStorage",
    D.complex128: "ComplexDoubleStorage"}
_DTYPE_OF_STORAGE = {v: k for k, v in _STORAGE_NAMES.items()}


class _TorchGlobal:
    """A torch global (module, name) written into the pickle as a GLOBAL opcode, no import."""
    __slots__ = ("module", "name")

    def __init__(self, module, name):
        self.module = module
        self.name = name

    def __call__(self, *args):  # pickle insists that a reduce function be callable
        raise TypeError(f"{self.module}.{self.name} is a name written into checkpoints, not a function")


# ---- save -----------------------------------------------------------------------------------

class _StorageRef:
    """One storage to write: the array owning the memory, its dtype and its key."""
    __slots__ = ("key", "array", "dtype")

    def __init__(self, key, array, dtype):
        self.key = key
        self.array = array
        self.dtype = dtype


def _tensor_storage(t, storages):
    """(storage ref, element offset) of tensor t; tensors viewing one array share a storage."""
    arr = t._data
    root = B.storage_root(arr)
    dtype = t._dtype
    if root.dtype != arr.dtype or not (root.flags.c_contiguous or root.flags.f_contiguous):
        root = np.ascontiguousarray(arr)
        arr = root
    key = (id(root), dtype)
    ref = storages.get(key)
    if ref is None:
        ref = storages[key] = _StorageRef(str(len(storages)), root, dtype)
    offset = (B.data_ptr(arr) - B.data_ptr(root)) // arr.itemsize if arr.size else 0
    return ref, offset, arr


class _Pickler(pickle._Pickler):
    """Writes ember objects under torch's names (pure-Python pickler: it lets us emit GLOBALs)."""

    def __init__(self, file, storages, protocol=DEFAULT_PROTOCOL):
        super().__init__(file, protocol=protocol)
        self.storages = storages

    def persistent_id(self, obj):
        if isinstance(obj, _StorageRef):
            if obj.dtype.limited:  # torch has no typed storage for uint16/32/64: untyped, sized in bytes
                return ("storage", _TorchGlobal("torch.storage", "UntypedStorage"), obj.key, "cpu", obj.array.nbytes)
            return ("storage", _TorchGlobal("torch", _STORAGE_NAMES[obj.dtype]), obj.key, "cpu",
                    obj.array.size)
        return None

    def reducer_override(self, obj):
        if isinstance(obj, Tensor):
            return self._reduce_tensor(obj)
        if isinstance(obj, Size):
            return (_TorchGlobal("torch", "Size"), (tuple(obj),))
        from ._device import device
        if isinstance(obj, device):
            return (_TorchGlobal("torch", "device"), (str(obj),))
        return NotImplemented

    def _reduce_tensor(self, t):
        """A non-leaf is saved as torch saves it: its values, loading as a leaf that requires grad."""
        ref, offset, arr = _tensor_storage(t, self.storages)
        isz = arr.itemsize
        stride = tuple(s // isz for s in arr.strides)
        args = (ref, offset, Size(arr.shape), stride, t.requires_grad, collections.OrderedDict())
        rebuild = (_TorchGlobal("torch._utils", "_rebuild_tensor_v2"), args)
        if t._dtype.limited:  # as torch: v3 names the dtype of an untyped storage
            dtype = _TorchGlobal("torch", t._dtype.name)
            rebuild = (_TorchGlobal("torch._utils", "_rebuild_tensor_v3"), args + (dtype,))
        param_mod = sys.modules.get("ember.nn.parameter")  # no Parameter can exist before it is imported
        if param_mod is not None and isinstance(t, param_mod.Parameter):
            plain = Tensor._make(t._data, t._dtype)
            return (_TorchGlobal("torch._utils", "_rebuild_parameter"),
                    (plain, t._requires_grad, collections.OrderedDict()))
        return rebuild

    def save_torch_global(self, obj):
        self.write(pickle.GLOBAL + obj.module.encode() + b"\n" + obj.name.encode() + b"\n")
        self.memoize(obj)

    dispatch = pickle._Pickler.dispatch.copy()
    dispatch[_TorchGlobal] = save_torch_global


class _Pickler2(_Pickler):
    """dtype objects pickle as bare globals (`torch float32`), not as a call."""

    def save(self, obj, save_persistent_id=True):
        if isinstance(obj, D.dtype):
            return self.save_torch_global(_TorchGlobal("torch", obj.name))
        return super().save(obj, save_persistent_id)


def _padded_info(zf, name):
    """A ZipInfo whose extra field pads the record so its data starts 64-byte aligned."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    pos = zf.fp.tell()
    start = pos + 30 + len(name.encode()) + 4
    pad = (-start) % _ALIGN
    info.extra = struct.pack("<HH", 0x4246, pad) + b"Z" * pad
    return info


def _write_archive(obj, f, prefix, protocol=DEFAULT_PROTOCOL):
    storages = {}
    buf = io.BytesIO()
    _Pickler2(buf, storages, protocol).dump(obj)
    with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        def record(name, data):
            info = _padded_info(zf, f"{prefix}/{name}")
            with zf.open(info, "w", force_zip64=len(data) > 2 ** 31) as w:
                w.write(data)
        record("data.pkl", buf.getvalue())
        record(".format_version", b"1")
        record(".storage_alignment", b"64")
        record("byteorder", sys.byteorder.encode())
        for ref in storages.values():
            arr = ref.array
            flat = arr.ravel(order="K")  # memory order: no copy for C- or F-contiguous owners
            record(f"data/{ref.key}", memoryview(np.ascontiguousarray(flat).view(np.uint8)))
        record("version", b"3\n")
        record(".data/serialization_id", "".join(str(secrets.randbelow(10)) for _ in range(40)).encode())


def save(obj, f, pickle_module=pickle, pickle_protocol=DEFAULT_PROTOCOL, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False):
    """torch.save. A path is written through a temporary file in the same directory that
    replaces the target only once complete, so a failure leaves any old file intact."""
    if pickle_protocol is not None:  # the C pickler's checks of the protocol, before any file is touched
        pickle_protocol = operator.index(pickle_protocol)
        if pickle_protocol > pickle.HIGHEST_PROTOCOL:
            raise ValueError(f"pickle protocol must be <= {pickle.HIGHEST_PROTOCOL}")
    if not _use_new_zipfile_serialization:
        import warnings
        warnings.warn("ember.save writes only the zip checkpoint format (torch >= 1.6 reads it); "
                      "_use_new_zipfile_serialization=False is ignored", UserWarning, stacklevel=2)
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        directory = os.path.dirname(os.path.abspath(path))
        prefix = os.path.splitext(os.path.basename(path))[0] or "archive"
        fd, tmp = tempfile.mkstemp(prefix=".ember-save-", dir=directory)
        try:
            with os.fdopen(fd, "wb") as fh:
                _write_archive(obj, fh, prefix, pickle_protocol)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        return
    _write_archive(obj, f, "archive", pickle_protocol)


# ---- load -----------------------------------------------------------------------------------

_safe_globals = {}


def add_safe_globals(safe_globals):
    """Allow more globals under weights_only=True: objects, or (object, "module.name") pairs."""
    for g in safe_globals:
        if isinstance(g, tuple):
            obj, name = g
        else:
            obj, name = g, f"{g.__module__}.{g.__qualname__}"
        _safe_globals[name] = obj


def get_safe_globals():
    return list(_safe_globals.values())


def clear_safe_globals():
    _safe_globals.clear()


class safe_globals:
    """Context manager form of add_safe_globals."""

    def __init__(self, safe_globals):
        self.globals = safe_globals

    def __enter__(self):
        self.saved = dict(_safe_globals)
        add_safe_globals(self.globals)

    def __exit__(self, *exc):
        _safe_globals.clear()
        _safe_globals.update(self.saved)


class _Storage:
    """A loaded storage: a flat array of its dtype."""
    __slots__ = ("array", "dtype")

    def __init__(self, array, dtype):
        self.array = array
        self.dtype = dtype


class _StorageType:
    __slots__ = ("dtype",)

    def __init__(self, dtype):
        self.dtype = dtype


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None,
                       metadata=None):
    size = tuple(size)
    stride = tuple(stride)
    flat = storage.array
    if all(size):  # at least one element (a 0-d tensor has one)
        need = storage_offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1
        if need > flat.size or storage_offset < 0 or any(s < 0 for s in stride):
            raise RuntimeError(f"checkpoint tensor of size {list(size)}, stride {list(stride)} and offset "
                               f"{storage_offset} lies outside its storage of {flat.size} elements")
        arr = B.strided_from(flat, size, stride, storage_offset)
    else:
        arr = np.empty(size, dtype=flat.dtype)
    t = Tensor._make(arr, storage.dtype)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype, metadata=None):
    """torch's rebuild for tensors over an untyped (byte) storage: offset and strides count dtype's elements."""
    typed = _Storage(storage.array.view(dtype.np), dtype)
    return _rebuild_tensor_v2(typed, storage_offset, size, stride, requires_grad, backward_hooks, metadata)


def _rebuild_parameter(data, requires_grad, backward_hooks, state=None):
    from .nn.parameter import Parameter
    p = Parameter(data, requires_grad)
    if state:
        p.__dict__.update(state)
    return p


def _rebuild_from_type_v2(func, new_type, args, state):
    ret = func(*args)
    if new_type is not Tensor and new_type is not type(ret):
        ret = new_type(ret) if new_type is not None else ret
    if state:
        ret.__dict__.update(state if isinstance(state, dict) else {})
    return ret


def _torch_global(module, name):
    """The ember object standing for a torch global in a checkpoint, or None."""
    if module == "torch._utils":
        return {"_rebuild_tensor_v2": _rebuild_tensor_v2, "_rebuild_tensor_v3": _rebuild_tensor_v3,
                "_rebuild_parameter": _rebuild_parameter,
                "_rebuild_parameter_with_state": _rebuild_parameter}.get(name)
    if module == "torch.storage" and name == "UntypedStorage":
        return _StorageType(D.uint8)  # bytes; _rebuild_tensor_v3 views them as its dtype
    if module == "torch._tensor" and name == "_rebuild_from_type_v2":
        return _rebuild_from_type_v2
    if module == "torch.serialization" and name == "_get_layout":
        return _get_layout
    if module == "torch":
        if name in _DTYPE_OF_STORAGE:
            return _StorageType(_DTYPE_OF_STORAGE[name])
        if name == "Size":
            return Size
        if name == "device":
            from ._device import device
            return device
        if name == "Tensor":
            return Tensor
        d = D._BY_NAME.get(name) or D.ALIASES.get(name)
        if d is not None:
            return d
    if module == "torch.nn.parameter" and name == "Parameter":
        from .nn.parameter import Parameter
        return Parameter
    return None


# the non-torch globals torch 2.13's weights-only unpickler allows (torch/_weights_only_unpickler.py); other
# builtins (slice, frozenset, range, int ...) are refused there, so here too
_SAFE_BUILTINS = {("collections", "OrderedDict"): collections.OrderedDict,
                  ("collections", "Counter"): collections.Counter, ("builtins", "set"): set,
                  ("builtins", "bytearray"): bytearray, ("builtins", "complex"): complex}


def _get_layout(name):
    """torch.serialization._get_layout: a pickled layout ('torch.strided') back to the layout object."""
    from . import _layout
    return getattr(_layout, name.split(".")[-1])


def _weights_only_error(module, name):
    """torch's UnpicklingError text for a global outside the allow-list (builtins named bare)."""
    full = name if module == "builtins" else f"{module}.{name}"
    return _weights_only_failure(
        f"Unsupported global: GLOBAL {full} was not an allowed global by default. Please use "
        f"`torch.serialization.add_safe_globals([{full}])` or the `torch.serialization.safe_globals([{full}])` "
        "context manager to allowlist this global if you trust this class/function.")


def _weights_only_failure(reason):
    """torch's UnpicklingError of a weights-only load, around its WeightsUnpickler reason."""
    return pickle.UnpicklingError(
        "Weights only load failed. This file can still be loaded, to do so you have two options, \x1b[1mdo those "
        "steps only if you trust the source of the checkpoint\x1b[0m. \n\t(1) In PyTorch 2.6, we changed the "
        "default value of the `weights_only` argument in `torch.load` from `False` to `True`. Re-running "
        "`torch.load` with `weights_only` set to `False` will likely succeed, but it can result in arbitrary code "
        "execution. Do it only if you got the file from a trusted source.\n\t(2) Alternatively, to load with "
        "`weights_only=True` please check the recommended steps in the following error message.\n\t"
        f"WeightsUnpickler error: {reason}\n\n" + _DOCS_TAIL)


_DOCS_TAIL = ("Check the documentation of torch.load to learn more about types accepted by default with weights_only "
              "https://pytorch.org/docs/stable/generated/torch.load.html.")


def _weights_only_framed(data):
    """torch's UnpicklingError for a framed pickle (protocol >= 4, FRAME right after PROTO): torch's weights-only
    unpickler reads no FRAME opcode (149), so it refuses such a checkpoint before any global."""
    if len(data) > 2 and data[0] == 0x80 and data[1] >= 4 and data[2] == 0x95:
        return pickle.UnpicklingError(
            "Weights only load failed. In PyTorch 2.6, we changed the default value of the `weights_only` argument "
            "in `torch.load` from `False` to `True`. Re-running `torch.load` with `weights_only` set to `False` will "
            "likely succeed, but it can result in arbitrary code execution. Do it only if you got the file from a "
            "trusted source.\nPlease file an issue with the following so that we can make `weights_only=True` "
            "compatible with your use case: WeightsUnpickler error: \n\nUnsupported operand 149\n\n" + _DOCS_TAIL)
    return None


def _codecs_encode(obj, encoding="utf-8"):
    import codecs
    return codecs.encode(obj, encoding)


def _compat_name(module, name):
    """Python 2 module/name pairs of protocol-2 pickles mapped to Python 3's, as pickle's own find_class does."""
    import _compat_pickle
    if (module, name) in _compat_pickle.NAME_MAPPING:
        return _compat_pickle.NAME_MAPPING[(module, name)]
    return _compat_pickle.IMPORT_MAPPING.get(module, module), name


class _Unpickler(pickle.Unpickler):
    def __init__(self, file, load_storage, weights_only):
        super().__init__(file, encoding="utf-8")
        self.load_storage = load_storage
        self.weights_only = weights_only
        self.storages = {}

    def find_class(self, module, name):
        module, name = _compat_name(module, name)  # protocol 2 (torch.save's) names Python 2 modules
        obj = _torch_global(module, name)
        if obj is not None:
            return obj
        key = (module, name)
        if key in _SAFE_BUILTINS:
            return _SAFE_BUILTINS[key]
        if key == ("_codecs", "encode"):
            return _codecs_encode
        if f"{module}.{name}" in _safe_globals:
            return _safe_globals[f"{module}.{name}"]
        if self.weights_only:
            raise _weights_only_error(module, name)
        if module == "torch" or module.startswith("torch."):
            module = "ember" + module[len("torch"):]
        return super().find_class(module, name)

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and pid and pid[0] == "storage"):
            raise pickle.UnpicklingError(f"unsupported persistent id {pid!r}")
        _, stype, key, location, numel = pid
        if not isinstance(stype, _StorageType):
            raise pickle.UnpicklingError(f"unsupported storage type {stype!r}")
        st = self.storages.get(key)
        if st is None:
            st = self.storages[key] = _Storage(self.load_storage(key, stype.dtype, numel), stype.dtype)
        return st


def _is_zip(f):
    start = f.tell()
    magic = f.read(4)
    f.seek(start)
    return magic == b"PK\x03\x04"


def _data_offset(fileobj, info):
    """Byte offset of a stored record's data (after its local header)."""
    fileobj.seek(info.header_offset)
    header = fileobj.read(30)
    if header[:4] != b"PK\x03\x04":
        raise RuntimeError("bad local header")
    name_len, extra_len = struct.unpack("<HH", header[26:30])
    return info.header_offset + 30 + name_len + extra_len


def _load_zip(f, path, weights_only, mmap):
    try:
        zf = zipfile.ZipFile(f)
    except zipfile.BadZipFile as e:
        raise RuntimeError(f"PytorchStreamReader failed reading zip archive: {e} (file: {path})") from None
    names = zf.namelist()
    if not names:
        raise RuntimeError(f"PytorchStreamReader failed reading zip archive: empty archive (file: {path})")
    prefix = names[0].split("/")[0]
    mm = None
    if mmap:
        if path is None:
            raise ValueError("mmap=True requires loading from a file path")
        mm = np.memmap(path, dtype=np.uint8, mode="r")

    def load_storage(key, dtype, numel):
        name = f"{prefix}/data/{key}"
        try:
            info = zf.getinfo(name)
        except KeyError:
            raise RuntimeError(f"checkpoint is missing record {name} (file: {path})") from None
        nbytes = numel * dtype.itemsize
        if info.file_size != nbytes:
            raise RuntimeError(f"checkpoint record {name} holds {info.file_size} bytes, expected {nbytes} "
                               f"(file: {path}); the file is truncated or corrupt")
        if mm is not None and info.compress_type == zipfile.ZIP_STORED:
            off = _data_offset(zf.fp, info)
            return np.asarray(mm[off:off + nbytes]).view(dtype.np)
        try:
            raw = zf.read(name)
        except (zipfile.BadZipFile, EOFError, OSError) as e:
            raise RuntimeError(f"failed reading record {name}: {e} (file: {path}); the file is truncated or "
                               "corrupt") from None
        return np.frombuffer(bytearray(raw), dtype=dtype.np)

    try:
        data = zf.read(f"{prefix}/data.pkl")
    except KeyError:
        raise RuntimeError(f"PytorchStreamReader failed locating file data.pkl: file not found (file: {path})") \
            from None
    except (zipfile.BadZipFile, EOFError, OSError) as e:
        raise RuntimeError(f"failed reading data.pkl: {e} (file: {path})") from None
    byteorder = f"{prefix}/byteorder"
    if byteorder in names and zf.read(byteorder).decode() != sys.byteorder:
        raise RuntimeError("loading a checkpoint written with a different byte order is not supported")
    if weights_only and _weights_only_framed(data) is not None:
        raise _weights_only_framed(data)
    try:
        return _Unpickler(io.BytesIO(data), load_storage, weights_only).load()
    except (EOFError, pickle.UnpicklingError) as e:
        if isinstance(e, pickle.UnpicklingError) and "Weights only load failed" in str(e):
            raise
        raise RuntimeError(f"failed unpickling data.pkl: {e} (file: {path}); the file is truncated or corrupt") \
            from None


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **pickle_load_args):
    """torch.load for files written by torch.save or ember.save (zip format, and torch's
    legacy pre-1.6 format)."""
    if weights_only is None:
        weights_only = True
    if map_location is not None:
        _check_map_location(map_location)
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        with open(path, "rb") as fh:
            if _is_zip(fh):
                return _load_zip(fh, path, weights_only, mmap)
            return _load_legacy(fh, path, weights_only)
    if _is_zip(f):
        return _load_zip(f, None, weights_only, mmap)
    return _load_legacy(f, None, weights_only)


# ---- torch's legacy (pre-1.6) format: a stream of pickles, then raw storages ---------------

_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
_LEGACY_PROTOCOL = 1001


class _LegacyUnpickler(_Unpickler):
    """Storage ids of the legacy format: ('storage', type, key, location, numel, view_metadata)."""

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and pid and pid[0] == "storage"):
            raise pickle.UnpicklingError(f"unsupported persistent id {pid!r}")
        _, stype, key, location, numel, view = pid
        if not isinstance(stype, _StorageType):
            raise pickle.UnpicklingError(f"unsupported storage type {stype!r}")
        root = self.storages.get(key)
        if root is None:
            root = self.storages[key] = _Storage(np.zeros(numel, dtype=stype.dtype.np), stype.dtype)
        if view is None:
            return root
        _, offset, size = view
        return _Storage(root.array[offset:offset + size], stype.dtype)


def _load_legacy(f, path, weights_only):
    where = f" (file: {path})" if path else ""
    try:
        magic = _Unpickler(f, None, True).load()
    except Exception as e:  # not even a pickle: torch's legacy reader fails in pickle too
        raise pickle.UnpicklingError(f"not a torch checkpoint ({e}): neither a zip archive nor the legacy "
                                     f"format{where}; it may be truncated or corrupt") from None
    if magic != _LEGACY_MAGIC:
        raise RuntimeError(f"not a torch checkpoint (invalid magic number): neither a zip archive nor the legacy "
                           f"format{where}; it may be truncated or corrupt")
    try:
        version = _Unpickler(f, None, True).load()
        if version != _LEGACY_PROTOCOL:
            raise RuntimeError(f"unsupported legacy checkpoint protocol {version}{where}")
        _Unpickler(f, None, True).load()  # sys_info: byte order and type sizes
        unpickler = _LegacyUnpickler(f, None, weights_only)
        result = unpickler.load()
        keys = _Unpickler(f, None, True).load()
        for key in keys:
            storage = unpickler.storages[key]
            count = struct.unpack("<q", f.read(8))[0]
            nbytes = count * storage.dtype.itemsize
            raw = f.read(nbytes)
            if count != storage.array.size or len(raw) != nbytes:
                raise RuntimeError(f"legacy checkpoint storage {key} is truncated or corrupt{where}")
            storage.array[...] = np.frombuffer(raw, dtype=storage.dtype.np)
    except (EOFError, struct.error, KeyError, pickle.UnpicklingError) as e:
        if isinstance(e, pickle.UnpicklingError) and "Weights only load failed" in str(e):
            raise
        raise RuntimeError(f"failed reading legacy checkpoint: {e}{where}; the file is truncated or corrupt") \
            from None
    return result


def get_unsafe_globals_in_checkpoint(f):
    """The globals a zip checkpoint's pickle names that weights_only=True would refuse ("module.name"),
    found without unpickling anything (torch.serialization.get_unsafe_globals_in_checkpoint)."""
    import pickletools
    if isinstance(f, (str, os.PathLike)):
        with open(os.fspath(f), "rb") as fh:
            return get_unsafe_globals_in_checkpoint(fh)
    if not _is_zip(f):
        raise ValueError("Expected input to be a checkpoint returned by torch.save")
    with zipfile.ZipFile(f) as zf:
        prefix = zf.namelist()[0].split("/")[0]
        data = zf.read(f"{prefix}/data.pkl")
    found = []
    strings = []
    for op, arg, _ in pickletools.genops(data):
        if op.name in ("SHORT_BINUNICODE", "BINUNICODE", "UNICODE"):
            strings.append(arg)
            continue
        if op.name == "GLOBAL":
            module, name = arg.split(" ", 1)
        elif op.name == "STACK_GLOBAL" and len(strings) >= 2:
            module, name = strings[-2], strings[-1]
        else:
            continue
        module, name = _compat_name(module, name)
        allowed = (_torch_global(module, name) is not None or (module, name) in _SAFE_BUILTINS
                   or (module, name) == ("_codecs", "encode") or f"{module}.{name}" in _safe_globals)
        if not allowed and f"{module}.{name}" not in found:
            found.append(f"{module}.{name}")
    return found


def _check_map_location(m):
    from ._device import device
    if callable(m) or isinstance(m, dict):
        return
    if isinstance(m, (bytes, bytearray)):  # torch matches its device pattern against it
        raise TypeError("cannot use a string pattern on a bytes-like object")
    if not isinstance(m, (str, device)):  # torch calls what is neither a str, a device nor a dict
        raise TypeError(f"'{type(m).__name__}' object is not callable")
    d = device(m) if isinstance(m, str) else m
    if isinstance(d, device) and d.type != "cpu":
        raise RuntimeError(f"Attempting to deserialize object on a {d.type.upper()} device but "
                           f"ember has only the cpu. Please use map_location='cpu'.")


# ---- plain pickling of tensors (deepcopy of modules, multiprocessing) ------------------------

def _rebuild_tensor_pickle(t):
    """__reduce_ex__ of Tensor: the array (NumPy pickles it), dtype, requires_grad, subclass, dict (a non-leaf
    unpickles, as torch's, as a leaf that requires grad)."""
    state = dict(t.__dict__) if t.__dict__ else None
    arr = t._data if t._data.flags.c_contiguous else t._data.copy(order="C")  # (ascontiguousarray makes 0-d 1-d)
    return (_rebuild_from_array, (type(t), arr, t._dtype.name, t.requires_grad, state))


def _rebuild_from_array(cls, arr, dtype_name, requires_grad, state):
    dtype = D._BY_NAME[dtype_name]
    if cls is Tensor:
        t = Tensor._make(arr, dtype)
    else:
        t = object.__new__(cls)
        Tensor._init_copy(t, arr, dtype, False)
    t._requires_grad = requires_grad
    if state:
        t.__dict__.update(state)
    return t
