"""torch's view geometry as small pure functions on (shape, element strides, offset):
computeStride for view/reshape, inferExpandGeometry, unsqueeze's stride, basic-index and
diagonal geometry, preserve_format's strides. The view ops (shape.py) build NumPy views
from these with B.restride, so stride()/storage_offset()/is_contiguous() match torch."""
import numpy as np

from .._tensor import _element_strides as strides_of  # noqa: F401  (element strides as Tensor.stride())


def contiguous_strides(shape):
    """Row-major strides, treating size-0 dims as size 1 (torch's rule)."""
    strides = [1] * len(shape)
    acc = 1
    for i in range(len(shape) - 1, -1, -1):
        strides[i] = acc
        acc *= max(shape[i], 1)
    return tuple(strides)


def view_strides(old_shape, old_strides, new_shape):
    """Strides of a view of (old_shape, old_strides) as new_shape, or None when no view exists
    (torch's computeStride: old dims split into contiguous chunks that new dims must tile)."""
    if not old_shape:
        return (1,) * len(new_shape)
    numel = 1
    for s in old_shape:
        numel *= s
    if numel == 0:
        return tuple(old_strides) if tuple(old_shape) == tuple(new_shape) else contiguous_strides(new_shape)
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base = old_strides[-1]
    tensor_numel = 1
    view_numel = 1
    for d in range(len(old_shape) - 1, -1, -1):
        tensor_numel *= old_shape[d]
        if d == 0 or (old_shape[d - 1] != 1 and old_strides[d - 1] != tensor_numel * chunk_base):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_strides[view_d] = view_numel * chunk_base
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if d > 0:
                chunk_base = old_strides[d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return tuple(new_strides)


def expand_geometry(shape, strides, sizes):
    """(sizes, strides) of expand (torch's inferExpandGeometry), or raise torch's error."""
    nd = len(sizes)
    pad = nd - len(shape)
    out_shape = [0] * nd
    out_strides = [0] * nd
    for i in range(nd - 1, -1, -1):
        d = i - pad
        size = shape[d] if d >= 0 else 1
        if d >= 0:
            stride = strides[d]
        else:
            stride = out_shape[i + 1] * out_strides[i + 1] if i + 1 < nd else 1
        target = sizes[i]
        if target == -1:
            if d < 0:
                raise RuntimeError(f"The expanded size of the tensor (-1) isn't allowed in a leading, "
                                   f"non-existing dimension {i}")
            target = size
        if target < 0:
            raise RuntimeError(f"The expanded size of the tensor ({target}) isn't allowed in a leading, "
                               f"non-existing dimension {i}")
        if size != target:
            if size != 1:
                raise RuntimeError(f"The expanded size of the tensor ({target}) must match the existing size "
                                   f"({size}) at non-singleton dimension {i}.  Target sizes: {list(sizes)}.  "
                                   f"Tensor sizes: {list(shape)}")
            size = target
            stride = 0
        out_shape[i] = size
        out_strides[i] = stride
    return tuple(out_shape), tuple(out_strides)


def is_contiguous(shape, strides):
    """torch's flag: row-major strides on every dim of size != 1, or no elements at all."""
    if 0 in shape:
        return True
    expected = 1
    for n, st in zip(reversed(shape), reversed(strides)):
        if n != 1:
            if st != expected:
                return False
            expected *= n
    return True


def is_non_overlapping_and_dense(shape, strides):
    if is_contiguous(shape, strides):
        return True
    if len(shape) == 1:
        return shape[0] < 2 or strides[0] == 1
    order = sorted(range(len(shape)), key=lambda d: (shape[d] < 2, strides[d]))
    expected = 1
    for d in order:
        if shape[d] < 2:
            return True
        if strides[d] != expected:
            return False
        expected *= shape[d]
    return True


def dense_strides_like(shape, strides):
    """Strides torch's preserve_format gives a copy: the input's own if it is non-overlapping
    and dense, else dense strides in the input's stride order (infer_dense_strides)."""
    if is_non_overlapping_and_dense(shape, strides):
        return tuple(strides)
    return _dense_in_order(shape, [strides])


def iter_strides(shape, operands):
    """Strides torch's TensorIterator gives the result of an elementwise op of shape `shape` on
    operands [(shape, element strides)]: contiguous, channels-last or their common dense strides
    when all agree and are of that shape, else dense in the stride order of the first operand that
    orders a pair of dims (broadcast dims order nothing)."""
    n = len(shape)
    if all(tuple(s) == tuple(shape) for s, _ in operands):
        if all(is_contiguous(s, st) for s, st in operands):
            return contiguous_strides(shape)
        first = tuple(operands[0][1])
        if all(is_non_overlapping_and_dense(s, st) and tuple(st) == first for s, st in operands):
            return first
    wide = []
    for s, st in operands:  # each operand's strides broadcast to shape: 0 where it is broadcast
        pad = n - len(s)
        wide.append([0 if i < pad or (s[i - pad] == 1 and shape[i] != 1) else st[i - pad] for i in range(n)])
    return _dense_in_order(shape, wide)


def _dense_in_order(shape, operand_strides):
    """Dense strides in the dims' order by torch's reorder_dimensions over the operands' strides."""
    n = len(shape)
    perm = list(range(n - 1, -1, -1))  # perm[0] is the innermost dim

    def should_swap(a, b):
        for strides in operand_strides:
            sa, sb = strides[a], strides[b]
            if sa == 0 or sb == 0:
                continue
            if sa != sb:
                return -1 if sa < sb else 1
            if shape[a] > shape[b]:
                return 1
        return 0

    for i in range(1, n):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = should_swap(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    out = [0] * n
    acc = 1
    for d in perm:
        out[d] = acc
        acc *= max(shape[d], 1)
    return tuple(out)


def key_geometry(shape, strides, key):
    """(shape, strides, offset) of basic indexing with a normalized key (ints in range, slices
    with positive steps, None, Ellipsis), by torch's rules (slices clamp, None unsqueezes)."""
    shape = list(shape)
    strides = list(strides)
    offset = 0
    consumed = sum(1 for k in key if k is not None and k is not Ellipsis)
    dim = 0
    for k in key:
        if k is Ellipsis:
            dim += len(shape) - dim - (consumed - _consumed_before(key, k))
        elif k is None:
            stride = shape[dim] * strides[dim] if dim < len(shape) else 1
            shape.insert(dim, 1)
            strides.insert(dim, stride)
            dim += 1
        elif isinstance(k, slice):
            start, stop, step = k.indices(shape[dim])
            length = max(0, (stop - start + step - 1) // step)
            offset += start * strides[dim]
            shape[dim] = length
            strides[dim] *= step
            dim += 1
        else:
            offset += (k + shape[dim] if k < 0 else k) * strides[dim]
            del shape[dim]
            del strides[dim]
    return tuple(shape), tuple(strides), offset


def _consumed_before(key, ellipsis):
    n = 0
    for k in key:
        if k is ellipsis:
            return n
        if k is not None:
            n += 1
    return n


def diagonal_geometry(shape, strides, offset, dim1, dim2):
    """(shape, strides, element offset) of torch's diagonal view; the diagonal is the last dim."""
    n1, n2 = shape[dim1], shape[dim2]
    if offset >= 0:
        length = max(0, min(n1, n2 - offset))
        start = offset * strides[dim2]
    else:
        length = max(0, min(n1 + offset, n2))
        start = -offset * strides[dim1]
    if length == 0:
        start = 0
    keep = [i for i in range(len(shape)) if i not in (dim1, dim2)]
    new_shape = tuple(shape[i] for i in keep) + (length,)
    new_strides = tuple(strides[i] for i in keep) + (strides[dim1] + strides[dim2],)
    return new_shape, new_strides, start


def storage_index(shape, strides, offset):
    """Storage positions of every element of a (shape, strides, offset) geometry, as an int array."""
    idx = np.full((), offset, dtype=np.int64)
    for i, (n, s) in enumerate(zip(shape, strides)):
        r = np.arange(n, dtype=np.int64) * s
        idx = idx[..., None] + r if i else idx + r
    return idx.reshape(shape)
