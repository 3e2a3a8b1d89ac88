"""The orthogonal polynomials of torch.special (Chebyshev T/U/V/W and their shifted forms, Hermite H and
He, Laguerre L, Legendre P) at integer degree n, computed as torch's kernels compute them: n truncated
to an integer, 0 for n < 0, closed values at the ends of the interval, a trigonometric form for large n
inside it, else the three-term recurrence from p0 = 1 and p1, in the input's precision. The recurrence
runs over all elements at once up to the largest degree, an element keeping its value once its own
degree is reached."""
import numpy as np


def _recurrence(x, n, p1, step):
    """p_n(x) elementwise for degrees n >= 0, p_0 = 1, p_1 = p1, p_{j+1} = step(j, p_j, p_{j-1})."""
    one = np.ones_like(x)
    p, q = one, p1
    top = int(n.max()) if n.size else 0
    for j in range(1, top):
        r = step(j, q, p)
        more = n > j  # elements whose degree is above j take p_{j+1}
        p = np.where(more, q, p)
        q = np.where(more, r, q)
    return np.where(n == 0, one, q)


def _prepare(x, n):
    x, n = np.broadcast_arrays(x, n)
    return x, np.trunc(n).astype(np.int64) if n.dtype.kind == "f" else n.astype(np.int64)


def _finish(out, n, x, cases):
    """out with the closed cases [(mask, value)] applied (later ones win) and 0 for n < 0."""
    for mask, value in cases:
        out = np.where(mask, value, out)
    return np.where(n < 0, np.zeros((), x.dtype), out).astype(x.dtype, copy=False)


def _ct(x):
    return x.dtype.type


def _odd(n):
    return n % 2 == 1


def _chebyshev(x, n, kind, shifted):
    """Chebyshev polynomials of the first to fourth kind (T, U, V, W), in x or (shifted) in 2x - 1."""
    x, n = _prepare(x, n)
    c = _ct(x)
    y = x + x - c(1) if shifted else x
    p1 = {"t": y, "u": y + y, "v": y + y - c(1), "w": y + y + c(1)}[kind]
    with np.errstate(all="ignore"):
        out = _recurrence(y, n, p1, lambda j, q, p: (y + y) * q - p)
        nf = n.astype(x.dtype)
        theta = np.arccos(np.clip(y, -1, 1))
        inside = np.abs(y) < c(1)
        # the ends of the interval: x = +-1 (or 1 and 0 for the shifted ones)
        hi = (x == c(1)) if shifted else (y == c(1))
        lo = (x == c(0)) if shifted else (y == c(-1))
        sign = np.where(_odd(n), c(-1), c(1))
        if kind == "t":
            big = inside & (n > 6)
            trig = np.cos(nf * theta)
            ends = [(hi, c(1)), (lo, sign)]
        elif kind == "u":
            big = inside & (n > (6 if shifted else 8))
            s = np.sin(theta)
            trig = np.where(s != 0, np.sin((nf + c(1)) * theta) / np.where(s != 0, s, c(1)),
                            (nf + c(1)) * np.cos((nf + c(1)) * theta) / y)
            ends = [(hi, nf + c(1)), (lo, sign * (nf + c(1)))]
        elif kind == "v":
            big = inside & (n > (6 if shifted else 8))
            h = np.cos(theta / c(2))
            trig = np.where(np.sin(theta / c(2)) != c(1), np.cos((nf + c(0.5)) * theta) / np.where(h != 0, h, c(1)),
                            sign * (nf + nf + c(1)))
            ends = [(hi, c(1)), (lo, sign * (nf + nf + c(1)))]
        else:
            big = inside & (n > (4 if shifted else 8))
            h = np.sin(theta / c(2))
            fallback = np.where(y > 0, nf + nf + c(1), sign)
            trig = np.where(np.cos(theta / c(2)) != c(1), np.sin((nf + c(0.5)) * theta) / np.where(h != 0, h, c(1)),
                            fallback)
            ends = [(hi, nf + nf + c(1)), (lo, sign)]
        return _finish(np.where(big, trig, out), n, x, ends)


def chebyshev_t(x, n):
    return _chebyshev(x, n, "t", False)


def chebyshev_u(x, n):
    return _chebyshev(x, n, "u", False)


def chebyshev_v(x, n):
    return _chebyshev(x, n, "v", False)


def chebyshev_w(x, n):
    return _chebyshev(x, n, "w", False)


def shifted_chebyshev_t(x, n):
    return _chebyshev(x, n, "t", True)


def shifted_chebyshev_u(x, n):
    return _chebyshev(x, n, "u", True)


def shifted_chebyshev_v(x, n):
    return _chebyshev(x, n, "v", True)


def shifted_chebyshev_w(x, n):
    return _chebyshev(x, n, "w", True)


def hermite_h(x, n):
    """The physicists' Hermite polynomials: H_{j+1} = 2x H_j - 2j H_{j-1}."""
    x, n = _prepare(x, n)
    c = _ct(x)
    with np.errstate(all="ignore"):
        out = _recurrence(x, n, x + x, lambda j, q, p: (x + x) * q - c(j + j) * p)
    return _finish(out, n, x, [])


def hermite_he(x, n):
    """The probabilists' Hermite polynomials: He_{j+1} = x He_j - j He_{j-1}."""
    x, n = _prepare(x, n)
    c = _ct(x)
    with np.errstate(all="ignore"):
        out = _recurrence(x, n, x, lambda j, q, p: x * q - c(j) * p)
    return _finish(out, n, x, [])


def laguerre_l(x, n):
    """L_{j+1} = ((2j + 1 - x) L_j - j L_{j-1}) / (j + 1); 1 at x = 0."""
    x, n = _prepare(x, n)
    c = _ct(x)
    with np.errstate(all="ignore"):
        out = _recurrence(x, n, c(1) - x, lambda j, q, p: ((c(j + j) + (c(1) - x)) * q - c(j) * p) / c(j + 1))
    return _finish(out, n, x, [(x == c(0), c(1))])


def legendre_p(x, n):
    """P_{j+1} = ((2j + 1) x P_j - j P_{j-1}) / (j + 1); +-1 at x = +-1."""
    x, n = _prepare(x, n)
    c = _ct(x)
    with np.errstate(all="ignore"):
        out = _recurrence(x, n, x, lambda j, q, p: (c(j + j + 1) * x * q - c(j) * p) / c(j + 1))
    sign = np.where(_odd(n), c(-1), c(1))
    return _finish(out, n, x, [(x == c(1), c(1)), (x == c(-1), sign)])
