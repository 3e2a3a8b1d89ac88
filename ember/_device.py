"""Device objects. Each device type names the array module its kernels run on."""

__all__ = ["device"]

_KNOWN_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia", "xla",
                "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone")  # torch's; ember runs on cpu only


class device:
    """torch.device: a type ('cpu', 'cuda', ...) and an optional index."""
    __slots__ = ("type", "index")

    def __new__(cls, type, index=None):  # torch's names: device(type, index), device(device)
        type_or_device = type
        if isinstance(type_or_device, device):
            return type_or_device
        if isinstance(type_or_device, int) and type_or_device.__class__ is not bool:
            if type_or_device < 0:
                raise RuntimeError("Device index must not be negative")
            # torch.device(0) means the current accelerator; ember has none.
            raise RuntimeError("Torch not compiled with CUDA enabled")
        if not isinstance(type_or_device, str):
            raise TypeError(f"device() received an invalid combination of arguments - got "
                            f"({type_or_device.__class__.__name__})")
        if index is not None:
            if index.__class__ is bool or not isinstance(index, int):
                raise TypeError(f"device(): argument 'index' (position 2) must be int, not {index.__class__.__name__}")
            if index < 0:
                raise RuntimeError("Device index must not be negative")
        type_, sep, idx = type_or_device.partition(":")
        if type_ not in _KNOWN_TYPES:
            if type_.strip() != type_ or not type_.isalpha():
                raise RuntimeError(f"Invalid device string: '{type_or_device}'")
            raise RuntimeError(f"Expected one of {', '.join(_KNOWN_TYPES)} device type at start of device "
                               f"string: {type_or_device}")
        if sep:
            if index is not None:
                raise RuntimeError(f"type (string) must not include an index because index was passed "
                                   f"explicitly: {type_or_device}")
            if not (idx.isascii() and idx.isdigit()) or (len(idx) > 1 and idx[0] == "0"):  # torch: no '01'
                raise RuntimeError(f"Invalid device string: '{type_or_device}'")
            index = int(idx)
        self = object.__new__(cls)
        self.type = type_
        self.index = index
        return self

    def __eq__(self, other):
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and self.type == other.type and self.index == other.index

    def __hash__(self):
        return hash((self.type, self.index))

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __reduce__(self):
        return (device, (str(self),))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


CPU = device("cpu")


def as_device(d):
    """Normalize a device argument (str, device, None) and refuse devices ember lacks."""
    if d is None or d is CPU:
        return CPU
    d = device(d)
    if d.type != "cpu":
        if d.type == "cuda":
            raise AssertionError("Torch not compiled with CUDA enabled")
        if d.type == "meta":
            raise NotImplementedError("ember has no meta device")
        raise RuntimeError(f"{d.type} device is not available in ember")
    return CPU
