"""gradcheck / gradgradcheck: compare backward's Jacobian with central finite differences.

Slow mode builds both Jacobians in full: numerically, one pair of evaluations
f(x + eps e_j), f(x - eps e_j) per input element; analytically, one backward per
output element. Fast mode compares only a random projection v^T J u of each.
Complex tensors are checked as pairs of real ones (as torch does): a complex input
element is two coordinates (perturbed by eps and by eps * 1j), a complex output element
two rows (backward with grad_output 1 and 1j); under torch's convention the gradient
re + i im is exactly the row of J^T for (re, im).
See https://pytorch.org/docs/stable/generated/torch.autograd.gradcheck.html
"""
import warnings

import numpy as np

from . import grad_mode
from .engine import grad as _grad

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Raised by gradcheck() and gradgradcheck() when a check fails."""


def _tensor_cls():
    from .._tensor import Tensor
    return Tensor


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _is_float(t):
    return isinstance(t, _tensor_cls()) and t._dtype.category >= 2


def _outputs(func, inputs):
    return _as_tuple(func(*inputs))


# ---- numerical Jacobian ----------------------------------------------------------------

def _as_real(a):
    """An array as flat float64 coordinates: a complex one as interleaved (re, im) pairs."""
    if a.dtype.kind == "c":
        return np.stack([a.real, a.imag], -1).astype(np.float64).ravel()
    return np.array(a, dtype=np.float64).ravel()


def _directions(arr):
    """The unit perturbations of one element: 1, and 1j as well for a complex array."""
    return (1, 1j) if arr.dtype.kind == "c" else (1,)


def _evaluate(func, inputs, out_index):
    """func's differentiable outputs as flat float64 arrays (no graph kept)."""
    outs = _outputs(func, inputs)
    return [_as_real(outs[k]._data) for k in out_index]


def _numerical_jacobians(func, inputs, diff_index, out_index, eps):
    """jac[i][k]: (real coordinates of input i, real coordinates of output k), by central differences."""
    base = _evaluate(func, inputs, out_index)
    jac = []
    for i in diff_index:
        arr = inputs[i]._data  # perturbed in place, bypassing the version counter (as torch's x.data)
        dirs = _directions(arr)
        rows = [np.zeros((arr.size * len(dirs), b.size)) for b in base]
        j = 0
        for idx in np.ndindex(arr.shape):
            for d in dirs:
                orig = arr[idx].copy()
                arr[idx] = orig + eps * d
                plus = _evaluate(func, inputs, out_index)
                arr[idx] = orig - eps * d
                minus = _evaluate(func, inputs, out_index)
                arr[idx] = orig
                for k in range(len(base)):
                    rows[k][j] = (plus[k] - minus[k]) / (2 * eps)
                j += 1
        jac.append(rows)
    return jac


# ---- analytical Jacobian -------------------------------------------------------------------

def _analytical_jacobians(outs, diff_inputs, out_index):
    """jac[i][k]: (numel of input i, numel of output k), one backward per output element."""
    Tensor = _tensor_cls()
    jac = [[np.zeros((x._data.size * len(_directions(x._data)), outs[k]._data.size * len(_directions(outs[k]._data))))
            for k in out_index] for x in diff_inputs]
    for c, k in enumerate(out_index):
        out = outs[k]
        if not out._requires_grad:
            continue
        dirs = _directions(out._data)
        for e in range(out._data.size):
            for m, d in enumerate(dirs):
                onehot = np.zeros(out._data.size, dtype=out._data.dtype)
                onehot[e] = d
                go = Tensor._make(onehot.reshape(out._data.shape), out._dtype)
                grads = _grad((out,), diff_inputs, (go,), retain_graph=True, allow_unused=True)
                for i, g in enumerate(grads):
                    if g is not None:
                        jac[i][c][:, e * len(dirs) + m] = _as_real(g._data)
    return jac


# ---- the checks -----------------------------------------------------------------------------

def _fail(raise_exception, message):
    if raise_exception:
        raise GradcheckError(message)
    return False


def _show(matrix):
    return repr(_tensor_cls()._make(np.asarray(matrix)))


def _check_inputs(inputs):
    diff_index = []
    for i, t in enumerate(inputs):
        if not (_is_float(t) and t._requires_grad):
            continue
        if t._dtype.name not in ("float64", "complex128"):
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating point or complex. "
                          "This check will likely fail if all the inputs are not of double precision floating point "
                          "or complex. ", UserWarning, stacklevel=3)
        for n, s in zip(t._data.shape, t._data.strides):
            if s == 0 and n > 1:
                raise RuntimeError(f"The {i}th input has a dimension with stride 0. gradcheck only supports inputs "
                                   "that are non-overlapping to be able to compute the numerical gradients "
                                   "correctly. You should call .contiguous on the input before passing it to "
                                   "gradcheck.")
        diff_index.append(i)
    if not diff_index:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of them have "
                         "requires_grad=True.")
    return diff_index


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, nondet_tol=0.0,
              check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
              check_batched_forward_grad=False, check_forward_ad=False, check_backward_ad=True, fast_mode=False,
              masked=None):
    """True if backward's Jacobian of func at inputs matches finite differences.

    check_undefined_grad, batched and forward-AD checks are accepted and not run
    (ember has no forward AD and no vmap)."""
    inputs = _as_tuple(inputs)
    diff_index = _check_inputs(inputs)
    diff_inputs = tuple(inputs[i] for i in diff_index)
    outs = _outputs(func, inputs)
    out_index = [k for k, o in enumerate(outs) if _is_float(o)]
    if not check_backward_ad:
        return True
    if fast_mode:
        return _fast_check(func, inputs, diff_index, outs, out_index, eps, atol, rtol, raise_exception)
    numerical = _numerical_jacobians(func, inputs, diff_index, out_index, eps)
    for c, k in enumerate(out_index):
        if not outs[k]._requires_grad:
            for i in range(len(diff_index)):
                if np.abs(numerical[i][c]).max(initial=0.0) > atol:
                    return _fail(raise_exception, "Numerical gradient for function expected to be zero")
    analytical = _analytical_jacobians(outs, diff_inputs, out_index)
    for c, k in enumerate(out_index):
        for i in range(len(diff_index)):
            a = analytical[i][c]
            n = numerical[i][c]
            if not np.allclose(a, n, rtol=rtol, atol=atol):
                return _fail(raise_exception, f"Jacobian mismatch for output {c} with respect to input {diff_index[i]},"
                                              f"\nnumerical:{_show(n)}\nanalytical:{_show(a)}\n")
    again = _analytical_jacobians(_outputs(func, inputs), diff_inputs, out_index)
    for i in range(len(diff_index)):
        for c in range(len(out_index)):
            if np.abs(again[i][c] - analytical[i][c]).max(initial=0.0) > nondet_tol:
                return _fail(raise_exception, "Backward is not reentrant, i.e., running backward with same input and "
                                              "grad_output multiple times gives different values, although analytical "
                                              "gradient matches numerical gradient.The tolerance for nondeterminism "
                                              f"was {nondet_tol}.")
    return _check_linear_in_grad_output(func, inputs, diff_inputs, raise_exception)


def _check_linear_in_grad_output(func, inputs, diff_inputs, raise_exception):
    """Backward with zero grad_outputs must give zero gradients of the inputs' size and dtype."""
    Tensor = _tensor_cls()
    outs = [o for o in _outputs(func, inputs) if _is_float(o) and o._requires_grad]
    if not outs:
        return True
    zeros = [Tensor._make(np.zeros(o._data.shape, dtype=o._data.dtype), o._dtype) for o in outs]
    grads = _grad(outs, diff_inputs, zeros, allow_unused=True)
    for g, x in zip(grads, diff_inputs):
        if g is None:
            continue
        if g._dtype is not x._dtype:
            return _fail(raise_exception, "grad is incorrect type")
        if g._data.shape != x._data.shape:
            return _fail(raise_exception, "grad is incorrect size")
        if np.any(g._data != 0):
            return _fail(raise_exception, "backward not multiplied by grad_output")
    return True


def _fast_check(func, inputs, diff_index, outs, out_index, eps, atol, rtol, raise_exception):
    """v^T J u for random u (per input) and v (per output): a directional finite
    difference against one backward per output."""
    Tensor = _tensor_cls()
    rng = np.random.default_rng(0)
    us = [_random_like(rng, inputs[i]._data) for i in diff_index]
    diff_inputs = tuple(inputs[i] for i in diff_index)
    for c, k in enumerate(out_index):
        out = outs[k]
        v = _random_like(rng, out._data)
        for pos, i in enumerate(diff_index):
            arr = inputs[i]._data
            orig = arr.copy()
            arr += eps * us[pos].astype(arr.dtype)
            plus = _evaluate(func, inputs, [k])[0]
            arr[...] = orig - eps * us[pos].astype(arr.dtype)
            minus = _evaluate(func, inputs, [k])[0]
            arr[...] = orig
            numerical = float(_as_real(v) @ ((plus - minus) / (2 * eps)))
            analytical = 0.0
            if out._requires_grad:
                go = Tensor._make(v.astype(out._data.dtype), out._dtype)
                g = _grad((out,), diff_inputs, (go,), retain_graph=True, allow_unused=True)[pos]
                if g is not None:
                    analytical = float(_as_real(g._data) @ _as_real(us[pos]))
            if not np.isclose(analytical, numerical, rtol=rtol, atol=atol):
                return _fail(raise_exception, f"Jacobian mismatch for output {c} with respect to input {i},\n"
                                              f"numerical:{numerical}\nanalytical:{analytical}\n\n"
                                              "The above quantities relating the numerical and analytical jacobians "
                                              "are computed in fast mode (a random projection v^T J u).")
    return True


def _random_like(rng, arr):
    """Uniform(-1, 1) values of arr's shape, complex (both parts random) for a complex arr."""
    u = rng.uniform(-1, 1, arr.shape)
    if arr.dtype.kind == "c":
        u = u + 1j * rng.uniform(-1, 1, arr.shape)
    return u


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0, check_undefined_grad=True,
                  check_grad_dtypes=False, check_batched_grad=False, check_fwd_over_rev=False, check_rev_over_rev=True,
                  fast_mode=False, masked=False):
    """gradcheck of the map (inputs, grad_outputs) -> grad(func(inputs), inputs, grad_outputs):
    second derivatives, through backward formulas run with create_graph=True."""
    Tensor = _tensor_cls()
    inputs = _as_tuple(inputs)
    diff_index = _check_inputs(inputs)
    outs = _outputs(func, inputs)
    out_index = [k for k, o in enumerate(outs) if _is_float(o) and o._requires_grad]
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = []
        for k in out_index:
            v = np.asarray(_random_like(rng, outs[k]._data)).astype(outs[k]._data.dtype)
            g = Tensor._make(v, outs[k]._dtype)
            g._requires_grad = True
            grad_outputs.append(g)
    grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)

    def first_derivative(*args):
        xs = args[:n_in]
        gos = args[n_in:]
        with grad_mode.enable_grad():
            ys = _outputs(func, xs)
            ys = tuple(ys[k] for k in out_index)
            diff = tuple(xs[i] for i in diff_index)
            grads = _grad(ys, diff, gos, create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    if not check_rev_over_rev:
        return True
    return gradcheck(first_derivative, inputs + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, nondet_tol=nondet_tol, fast_mode=fast_mode)
