"""torch.nn.utils.rnn: PackedSequence and the functions that pack, pad and unpad variable-length
sequences. See https://pytorch.org/docs/stable/nn.html#utilities

Packing and unpacking are index_select ops over flat row indices, so gradients flow through
both (pack's backward scatters the gradient back into the padded layout, unpack's gathers it).
"""
from collections import namedtuple
from collections.abc import Iterable

import numpy as np

from ... import _dtype as D
from ..._tensor import Tensor

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "unpad_sequence", "pack_sequence", "unpack_sequence"]


def _ember():
    import ember
    return ember


PackedSequence_ = namedtuple("PackedSequence_", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])


class PackedSequence(PackedSequence_):
    """Data of a batch of variable-length sequences, step by step: data[sum(batch_sizes[:t]) + b]
    is step t of the b-th longest sequence. Made by pack_padded_sequence / pack_sequence."""
    __slots__ = ()

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            if not (isinstance(data, (list, tuple)) and len(data) == 2):
                raise AssertionError("Expected data to be a list or tuple of length 2")
            data, batch_sizes = data
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def pin_memory(self):
        return type(self)(self.data.pin_memory(), self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def to(self, *args, **kwargs):
        """data.to(...); the index tensors follow data's device (batch_sizes stays on the CPU)."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        sorted_indices = None if self.sorted_indices is None else self.sorted_indices.to(data.device)
        unsorted_indices = None if self.unsorted_indices is None else self.unsorted_indices.to(data.device)
        return type(self)(data, self.batch_sizes, sorted_indices, unsorted_indices)

    def cuda(self, *args, **kwargs):
        kwargs["device"] = "cuda"
        return self.to(*args, **kwargs)

    def cpu(self, *args, **kwargs):
        kwargs["device"] = "cpu"
        return self.to(*args, **kwargs)

    def double(self):
        return self.to(dtype=D.float64)

    def float(self):
        return self.to(dtype=D.float32)

    def half(self):
        return self.to(dtype=D.float16)

    def long(self):
        return self.to(dtype=D.int64)

    def int(self):
        return self.to(dtype=D.int32)

    def short(self):
        return self.to(dtype=D.int16)

    def char(self):
        return self.to(dtype=D.int8)

    def byte(self):
        return self.to(dtype=D.uint8)

    @property
    def is_cuda(self):
        return self.data.is_cuda

    def is_pinned(self):
        return self.data.is_pinned()


def invert_permutation(permutation):
    """The permutation q with q[p[i]] = i (None for None)."""
    if permutation is None:
        return None
    p = permutation._data
    out = np.empty_like(p)
    out[p] = np.arange(p.size, dtype=p.dtype)
    return Tensor._make(out, permutation._dtype)


def _as_lengths(lengths):
    """Lengths as an int64 CPU tensor (torch converts lists and other dtypes the same way)."""
    torch = _ember()
    if not isinstance(lengths, Tensor):
        return torch.as_tensor(lengths, dtype=D.int64)
    return lengths.to(dtype=D.int64)


def _pack_padded(input, lengths, batch_first):
    """torch._pack_padded_sequence: (data, batch_sizes) for lengths sorted in decreasing order."""
    torch = _ember()
    if input.numel() == 0:
        raise RuntimeError("Cannot pack empty tensors.")
    if lengths.dim() != 1:
        raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got {lengths.dim()}D cpu Long "
                           "tensor")
    time_dim = 1 if batch_first else 0
    steps = input.shape[time_dim]
    batch = input.shape[1 - time_dim]
    lens = lengths._data
    if lens.shape[0] != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {lens.shape[0]} "
                           f"(batch_size={batch})")
    if lens[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           "that is <= 0")
    if np.any(lens[1:] > lens[:-1]):
        raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You "
                           "can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep "
                           "this requirement if you do not need ONNX exportability.")
    if lens[0] > steps:
        # torch reads past the padded tensor here; a clear error instead
        raise RuntimeError(f"pack_padded_sequence: the longest length ({int(lens[0])}) exceeds the padded "
                           f"sequence length ({steps})")
    t = np.arange(int(lens[0]))
    batch_sizes = (lens[None, :] > t[:, None]).sum(1)
    rows = []
    for step, bs in enumerate(batch_sizes):
        b = np.arange(bs)
        rows.append(b * steps + step if batch_first else step * batch + b)
    index = torch.as_tensor(np.concatenate(rows), dtype=D.int64)
    data = input.flatten(0, 1).index_select(0, index)
    return data, Tensor._make(batch_sizes.astype(np.int64))


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded batch (T, B, *) (or (B, T, *) with batch_first) of sequences of the given lengths."""
    lengths = _as_lengths(lengths)
    if enforce_sorted:
        sorted_indices = None
    else:
        lengths, sorted_indices = _ember().sort(lengths, descending=True)
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    data, batch_sizes = _pack_padded(input, lengths, batch_first)
    return PackedSequence(data, batch_sizes, sorted_indices, None)


def _pad_packed(data, batch_sizes, batch_first, padding_value, total_length):
    """torch._pad_packed_sequence: (padded, lengths) in the packed (sorted) batch order."""
    torch = _ember()
    sizes = batch_sizes._data
    batch = int(sizes[0])
    steps = sizes.shape[0]
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    pad_row = int(np.sum(sizes))
    if batch_first:
        index = np.full((batch, total_length), pad_row, dtype=np.int64)
        for t in range(steps):
            index[:sizes[t], t] = offsets[t] + np.arange(sizes[t])
    else:
        index = np.full((total_length, batch), pad_row, dtype=np.int64)
        for t in range(steps):
            index[t, :sizes[t]] = offsets[t] + np.arange(sizes[t])
    rest = tuple(data.shape[1:])
    pad = torch.full((1,) + rest, padding_value, dtype=data.dtype)
    flat = torch.cat([data, pad], 0).index_select(0, torch.as_tensor(index.reshape(-1)))
    padded = flat.reshape(index.shape + rest)
    lengths = (sizes[None, :] > np.arange(batch)[:, None]).sum(1).astype(np.int64)
    return padded, Tensor._make(lengths)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """Inverse of pack_padded_sequence: (padded batch, lengths) in the original batch order."""
    max_seq_length = sequence.batch_sizes.size(0)
    if total_length is not None:
        if total_length < max_seq_length:
            raise ValueError("Expected total_length to be at least the length of the longest sequence in input, but "
                             f"got total_length={total_length} and max sequence length being {max_seq_length}")
        max_seq_length = total_length
    padded, lengths = _pad_packed(sequence.data, sequence.batch_sizes, batch_first, padding_value, max_seq_length)
    unsorted_indices = sequence.unsorted_indices
    if unsorted_indices is not None:
        batch_dim = 0 if batch_first else 1
        return padded.index_select(batch_dim, unsorted_indices), lengths[unsorted_indices]
    return padded, lengths


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack sequences of shape (L_i, *) into (max L, B, *) (or (B, max L, *)), padded with padding_value."""
    torch = _ember()
    if not isinstance(sequences, Iterable):
        raise RuntimeError(f"pad_sequence: Expected iterable for input sequences, but got arg of type: "
                           f"{type(sequences)}")
    sequences = tuple(sequences)
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    first = sequences[0]
    trailing = tuple(first.shape[1:])
    max_len = max(s.size(0) for s in sequences)
    padded = []
    for s in sequences:
        rest = tuple(s.shape[1:])
        if rest != trailing:
            _raise_size_mismatch(trailing, rest)
        s = s.to(first.dtype)
        n = max_len - s.size(0)
        if n:
            fill = torch.full((n,) + trailing, padding_value, dtype=first.dtype)
            s = torch.cat([s, fill] if padding_side == "right" else [fill, s], 0)
        padded.append(s)
    return torch.stack(padded, 0 if batch_first else 1)


def _raise_size_mismatch(expected, got):
    """torch's copy_ broadcasting message for a sequence whose trailing dims differ."""
    a = (1,) * (len(got) - len(expected)) + tuple(expected)
    b = (1,) * (len(expected) - len(got)) + tuple(got)
    for i in range(len(a) - 1, -1, -1):
        if a[i] != b[i] and b[i] != 1:
            raise RuntimeError(f"The size of tensor a ({a[i]}) must match the size of tensor b ({b[i]}) at "
                               f"non-singleton dimension {i + 1}")
    raise RuntimeError(f"pad_sequence: sequence of shape {list(got)} does not match {list(expected)}")


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The list of unpadded sequences. As torch, a time-first input is transposed in place."""
    torch = _ember()
    unpadded = []
    if not batch_first:
        padded_sequences.transpose_(0, 1)
    max_length = padded_sequences.shape[1]
    idx = torch.arange(max_length)
    for seq, length in zip(padded_sequences, lengths):
        unpadded.append(seq[idx < length])
    return unpadded


def pack_sequence(sequences, enforce_sorted=True):
    """pack_padded_sequence(pad_sequence(sequences), lengths)."""
    torch = _ember()
    lengths = torch.as_tensor([v.size(0) for v in sequences])
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The list of sequences a PackedSequence holds, in their original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
