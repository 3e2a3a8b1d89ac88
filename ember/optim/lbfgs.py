"""torch.optim.LBFGS: https://pytorch.org/docs/stable/generated/torch.optim.LBFGS.html

Limited-memory BFGS on the flattened parameters, with an optional strong-Wolfe line search
(bracketing, then zoom by safeguarded cubic interpolation; Nocedal & Wright, Algorithms 3.5/3.6).
Scalars that come from tensors (dot products, curvature, step length) stay 0-d tensors, so
float32 parameters do their scalar arithmetic in float32 as torch's does.
"""
import math

from .. import cat
from .._tensor import Tensor
from ..autograd.grad_mode import enable_grad
from .optimizer import Optimizer, _check_lr, _real, _value

__all__ = ["LBFGS"]


def _sqrt(x):
    return x.sqrt() if isinstance(x, Tensor) else math.sqrt(x)


def _cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
    """Minimizer of the cubic matching value and slope at x1 and x2, clamped to bounds (default:
    the interval between them); the midpoint when the cubic has no minimizer."""
    if bounds is None:
        lo, hi = (x1, x2) if x1 <= x2 else (x2, x1)
    else:
        lo, hi = bounds
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if not d2_square >= 0:
        return (lo + hi) / 2.0
    d2 = _sqrt(d2_square)
    if x1 <= x2:
        x = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        x = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(x, lo), hi)


class _Point:
    """One trial step of the line search: step length t, loss f, flat gradient g, slope gtd = g.d."""
    __slots__ = ("t", "f", "g", "gtd")

    def __init__(self, t, f, g, gtd):
        self.t = t
        self.f = f
        self.g = g
        self.gtd = gtd


def _strong_wolfe(obj_func, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """Find t satisfying the strong Wolfe conditions along d; returns (f, g, t, function evaluations)."""
    d_norm = d.abs().max()
    start = _Point(0, f, g.clone(), gtd)
    f_new, g_new = obj_func(x, t, d)
    evals = 1
    new = _Point(t, f_new, g_new, g_new.dot(d))
    prev = start
    done = False
    ls_iter = 0
    bracket = None
    # phase 1: grow the step until an interval containing a Wolfe point is bracketed
    while ls_iter < max_ls:
        if new.f > (f + c1 * new.t * gtd) or (ls_iter > 1 and new.f >= prev.f):
            bracket = [prev, _Point(new.t, new.f, new.g.clone(), new.gtd)]
            break
        if abs(new.gtd) <= -c2 * gtd:
            bracket = [new]
            done = True
            break
        if new.gtd >= 0:
            bracket = [prev, _Point(new.t, new.f, new.g.clone(), new.gtd)]
            break
        # extrapolate: a cubic step between 1.01x and 10x the current one
        lo = new.t + 0.01 * (new.t - prev.t)
        hi = new.t * 10
        t_next = _cubic_interpolate(prev.t, prev.f, prev.gtd, new.t, new.f, new.gtd, bounds=(lo, hi))
        prev = _Point(new.t, new.f, new.g.clone(), new.gtd)
        f_new, g_new = obj_func(x, t_next, d)
        evals += 1
        new = _Point(t_next, f_new, g_new, g_new.dot(d))
        ls_iter += 1
    if ls_iter == max_ls:
        bracket = [_Point(0, f, g, None), _Point(new.t, new.f, new.g, None)]
    # phase 2: shrink the bracket (zoom) until a point satisfies the conditions
    insuf_progress = False
    low, high = (0, 1) if bracket[0].f <= bracket[-1].f else (1, 0)
    while not done and ls_iter < max_ls:
        a, b = bracket
        if abs(b.t - a.t) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(a.t, a.f, a.gtd, b.t, b.f, b.gtd)
        # keep t at least 10% of the interval away from its ends; after a step that made too
        # little progress, move it there explicitly
        t_max = max(a.t, b.t)
        t_min = min(a.t, b.t)
        margin = 0.1 * (t_max - t_min)
        if min(t_max - t, t - t_min) < margin:
            if insuf_progress or t >= t_max or t <= t_min:
                t = t_max - margin if abs(t - t_max) < abs(t - t_min) else t_min + margin
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False
        f_new, g_new = obj_func(x, t, d)
        evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
        point = _Point(t, f_new, g_new.clone(), gtd_new)
        if f_new > (f + c1 * t * gtd) or f_new >= bracket[low].f:
            bracket[high] = point
            low, high = (0, 1) if bracket[0].f <= bracket[1].f else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high].t - bracket[low].t) >= 0:
                bracket[high] = bracket[low]
            bracket[low] = point
    best = bracket[low]
    return best.f, best.g, best.t, evals


class LBFGS(Optimizer):
    """L-BFGS; step(closure) runs up to max_iter iterations. One parameter group only; closure required."""

    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7, tolerance_change=1e-9,
                 history_size=100, line_search_fn=None):
        _check_lr(lr)
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval, tolerance_grad=tolerance_grad,
                        tolerance_change=tolerance_change, history_size=history_size, line_search_fn=line_search_fn)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]
        self._numel_cache = None

    def _numel(self):
        if self._numel_cache is None:
            self._numel_cache = sum(2 * p.numel() if p.is_complex() else p.numel() for p in self._params)
        return self._numel_cache

    def _gather_flat_grad(self):
        views = []
        for p in self._params:
            g = p.grad
            if g is None:
                view = p.new_zeros(p.numel())
            else:
                view = g.reshape(-1)
            (view,) = _real(view)
            views.append(view.reshape(-1))
        return cat(views, 0)

    def _add_grad(self, step_size, update):
        """params += step_size * update (update is flat)."""
        alpha = float(step_size)
        offset = 0
        for p in self._params:
            (p,) = _real(p)
            n = p.numel()
            p.add_(update[offset:offset + n].view_as(p), alpha=alpha)
            offset += n
        assert offset == self._numel()

    def _clone_param(self):
        return [p.clone() for p in self._params]

    def _set_param(self, params_data):
        for p, data in zip(self._params, params_data):
            p.copy_(data)

    def _directional_evaluate(self, closure, x, t, d):
        """Loss and flat gradient at x + t*d; the parameters are restored to x afterwards."""
        self._add_grad(t, d)
        loss = float(closure())
        flat_grad = self._gather_flat_grad()
        self._set_param(x)
        return loss, flat_grad

    @staticmethod
    def _two_loop(flat_grad, old_dirs, old_stps, ro, H_diag, al):
        """The L-BFGS direction -H*g from the stored curvature pairs (s, y) and the scaling H_diag."""
        n = len(old_dirs)
        q = flat_grad.neg()
        for i in range(n - 1, -1, -1):
            al[i] = old_stps[i].dot(q) * ro[i]
            q.add_(old_dirs[i], alpha=float(-al[i]))
        r = q * H_diag
        for i in range(n):
            be_i = old_dirs[i].dot(r) * ro[i]
            r.add_(old_stps[i], alpha=float(al[i] - be_i))
        return r

    def step(self, closure):
        group = self.param_groups[0]
        lr = _value(group["lr"])
        max_iter = group["max_iter"]
        max_eval = group["max_eval"]
        tolerance_grad = group["tolerance_grad"]
        tolerance_change = group["tolerance_change"]
        line_search_fn = group["line_search_fn"]
        history_size = group["history_size"]
        closure = enable_grad()(closure)

        # all state lives under the first parameter
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        orig_loss = closure()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if flat_grad.abs().max() <= tolerance_grad:
            return orig_loss

        d = state.get("d")
        t = state.get("t")
        old_dirs = state.get("old_dirs")
        old_stps = state.get("old_stps")
        ro = state.get("ro")
        H_diag = state.get("H_diag")
        prev_flat_grad = state.get("prev_flat_grad")
        prev_loss = state.get("prev_loss")
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = flat_grad.neg()
                old_dirs = []
                old_stps = []
                ro = []
                H_diag = 1
            else:
                # update the curvature pairs, skipping pairs that are not positive definite enough
                y = flat_grad.sub(prev_flat_grad)
                s = d.mul(t)
                ys = y.dot(s)
                if ys > 1e-10:
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    H_diag = ys / y.dot(y)
                if "al" not in state:
                    state["al"] = [None] * history_size
                d = self._two_loop(flat_grad, old_dirs, old_stps, ro, H_diag, state["al"])
            if prev_flat_grad is None:
                prev_flat_grad = flat_grad.clone()
            else:
                prev_flat_grad.copy_(flat_grad)
            prev_loss = loss

            # the first step is scaled so that it moves the parameters at most lr in the 1-norm
            if state["n_iter"] == 1:
                t = min(1.0, flat_grad.abs().sum().reciprocal()) * lr
            else:
                t = lr
            gtd = flat_grad.dot(d)
            if gtd > -tolerance_change:
                break  # not a descent direction

            evals = 0
            if line_search_fn is not None:
                if line_search_fn != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                x_init = self._clone_param()

                def obj_func(x, t, d):
                    return self._directional_evaluate(closure, x, t, d)
                loss, flat_grad, t, evals = _strong_wolfe(obj_func, x_init, t, d, loss, flat_grad, gtd,
                                                          max_ls=max_eval - current_evals)
                self._add_grad(t, d)
                opt_cond = flat_grad.abs().max() <= tolerance_grad
            else:
                self._add_grad(t, d)
                if n_iter != max_iter:
                    loss = float(closure())
                    flat_grad = self._gather_flat_grad()
                    opt_cond = flat_grad.abs().max() <= tolerance_grad
                    evals = 1
            current_evals += evals
            state["func_evals"] += evals

            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if d.mul(t).abs().max() <= tolerance_change:
                break
            if abs(loss - prev_loss) < tolerance_change:
                break

        state["d"] = d
        state["t"] = t
        state["old_dirs"] = old_dirs
        state["old_stps"] = old_stps
        state["ro"] = ro
        state["H_diag"] = H_diag
        state["prev_flat_grad"] = prev_flat_grad
        state["prev_loss"] = prev_loss
        return orig_loss
