"""Householder reflectors: geqrf (LAPACK's compact QR through NumPy), linalg.householder_product and
ormqr. The last two are composites applying one reflector H_i = I - tau_i v_i v_i^H at a time, so
their gradients (and second derivatives) come from ember ops."""
import numpy as np

from .. import _dtype as D
from .. import return_types
from ._registry import Op, install
from .linalg_common import check_float


class Geqrf(Op):
    """LAPACK geqrf via numpy.linalg.qr(mode='raw') (which returns the factor transposed)."""
    _name = "GeqrfBackward0"

    @staticmethod
    def forward(ctx, x):
        h, tau = np.linalg.qr(x, mode="raw")
        return np.ascontiguousarray(np.swapaxes(h, -1, -2)).astype(x.dtype), tau.astype(x.dtype)

    def backward(ctx, *grads):
        raise NotImplementedError("the derivative for 'geqrf' is not implemented.")


def _check_input(input, name):
    if input.dim() < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")


def geqrf(input, *, out=None):
    """The QR factorization in LAPACK's compact form (R above the diagonal, reflectors below, tau).
    See https://pytorch.org/docs/stable/generated/torch.geqrf.html"""
    _check_input(input, "torch.geqrf")
    if input._dtype.category < D.FLOAT:
        raise NotImplementedError(f"\"geqrf_cpu\" not implemented for '{D.SCALAR_NAMES[input._dtype]}'")
    check_float(input, "torch.geqrf")
    a, tau = Geqrf.apply(input)
    r = return_types.geqrf((a, tau))
    if out is not None:
        for o, v in zip(out, r):
            o.resize_(v.shape).copy_(v)
        return return_types.geqrf(tuple(out))
    return r


def _reflector(input, i):
    """v_i = (0, ..., 0, 1, input[..., i+1:, i]) as a column (..., m, 1)."""
    from .joining import cat
    m = input.shape[-2]
    col = input[..., i + 1:, i]
    lead = col.new_zeros(tuple(col.shape[:-1]) + (i,))
    one = col.new_ones(tuple(col.shape[:-1]) + (1,))
    return cat([lead, one, col], -1).unsqueeze(-1) if m > i else one.unsqueeze(-1)


def _apply_left(c, v, t):
    """(I - t v v^H) c, t of shape (...,)."""
    return c - (t[..., None, None] * v) @ (v.mH @ c)


def _apply_right(c, v, t):
    """c (I - t v v^H)."""
    return c - ((c @ v) * t[..., None, None]) @ v.mH


def _check_tau(input, tau, name):
    if input._dtype is not tau._dtype:
        raise RuntimeError(f"{name}: tau dtype {D.SCALAR_NAMES[tau._dtype]} does not match input dtype "
                           f"{D.SCALAR_NAMES[input._dtype]}")
    if input.dim() - tau.dim() != 1:
        raise RuntimeError(f"{name}: input.dim() - tau.dim() must be equal to 1 but got {input.dim() - tau.dim()}")
    if tuple(input.shape[:-2]) != tuple(tau.shape[:-1]):
        raise RuntimeError(f"{name}: Expected batch dimensions of tau to be equal to input.shape[:-2], but got "
                           f"{list(tau.shape[:-1])}")


def householder_product(input, tau, *, out=None):
    """The first n columns of H_1 ... H_k from the reflectors below A's diagonal.
    See https://pytorch.org/docs/stable/generated/torch.linalg.householder_product.html"""
    name = "torch.linalg.householder_product"
    _check_input(input, name)
    if input.shape[-2] < input.shape[-1]:
        raise RuntimeError(f"{name}: input.shape[-2] must be greater than or equal to input.shape[-1]")
    if tau.dim() >= 1 and input.shape[-1] < tau.shape[-1]:
        raise RuntimeError(f"{name}: input.shape[-1] must be greater than or equal to tau.shape[-1]")
    _check_tau(input, tau, name)
    check_float(input, name)
    m, n = input.shape[-2], input.shape[-1]
    from .creation import eye
    q = eye(m, n, dtype=input.dtype).expand(*input.shape[:-2], m, n)
    if tau.dim() and tau.shape[-1] == 0:  # no reflectors: the identity, still a function of input
        from .pointwise import where
        q = where(q.new_ones(q.shape, dtype=D.bool), q, input)
    for i in reversed(range(tau.shape[-1])):
        q = _apply_left(q, _reflector(input, i), tau[..., i])
    if out is not None:
        return out.resize_(q.shape).copy_(q)
    return q


def ormqr(input, input2, input3, left=True, transpose=False, *, out=None):
    """other multiplied by Q (or Q^H if transpose) from the left or right, Q = H_1 ... H_k from geqrf.
    See https://pytorch.org/docs/stable/generated/torch.ormqr.html"""
    name = "torch.ormqr"
    tau, other = input2, input3  # torch's names for the reflectors' scales and the matrix they multiply
    _check_input(input, name)
    if other.dim() < 2:
        raise RuntimeError(f"{name}: other must have at least 2 dimensions.")
    side = -2 if left else -1
    if other.shape[side] != input.shape[-2]:
        raise RuntimeError(f"{name}: other.shape[{side}] must be equal to input.shape[-2]")
    if tau.dim() >= 1 and tau.shape[-1] != min(other.shape[side], input.shape[-1]):
        raise RuntimeError(f"{name}: tau.shape[-1] must be equal to min(other.shape[{side}], input.shape[-1])")
    _check_tau(input, tau, name)
    if other._dtype is not input._dtype:
        raise RuntimeError(f"{name}: Expected input and other to have the same dtype, but input has dtype"
                           f"{D.SCALAR_NAMES[input._dtype]} and other has dtype {D.SCALAR_NAMES[other._dtype]}")
    check_float(input, name)
    k = tau.shape[-1]
    # Q c = H_1 (... (H_k c)); Q^H c = H_k^H (... (H_1^H c)); c Q = ((c H_1) ...) H_k; c Q^H = c H_k^H ... H_1^H
    first_to_last = left == transpose
    order = range(k) if first_to_last else reversed(range(k))
    c = other
    for i in order:
        t = tau[..., i].conj() if transpose else tau[..., i]
        v = _reflector(input, i)
        c = _apply_left(c, v, t) if left else _apply_right(c, v, t)
    if out is not None:
        return out.resize_(c.shape).copy_(c)
    return c


install(geqrf, "geqrf")
install(ormqr, "ormqr")
def orgqr(input, input2):
    """torch.orgqr: linalg.householder_product under LAPACK's name (torch calls tau `input2` here)."""
    return householder_product(input, input2)


install(orgqr, "orgqr", out=True)
