"""torch.optim.LBFGS: https://pytorch.org/docs/stable/generated/torch.optim.LBFGS.html

Limited-memory BFGS on all parameters seen as one flat real vector, with an optional strong-Wolfe line search
(Nocedal & Wright, Algorithms 3.5 and 3.6: extend the step until a Wolfe point is bracketed, then zoom in by
safeguarded cubic interpolation).

Note [LBFGS arithmetic]: scalars derived from tensors (dot products, curvature, step lengths) stay 0-d tensors,
so float32 parameters do their scalar arithmetic in float32 as torch's do, and every expression keeps torch's
order of operations: L-BFGS amplifies last-bit differences, and the iterates are meant to be torch's.
"""
import math
from functools import partial
from types import SimpleNamespace

from .. import cat
from .._tensor import Tensor
from ..autograd.grad_mode import enable_grad
from .optimizer import Optimizer, _check_lr, _real, _value

__all__ = ["LBFGS"]

# Read from the param group at the start of each step (lr separately, as a number).
_OPTIONS = ("max_iter", "max_eval", "tolerance_grad", "tolerance_change", "line_search_fn", "history_size")

# What a step leaves in the state for the next one, in the order torch writes it.
_CARRIED = ("d", "t", "old_dirs", "old_stps", "ro", "H_diag", "prev_flat_grad", "prev_loss")


def _sqrt(x):
    return x.sqrt() if isinstance(x, Tensor) else math.sqrt(x)


def _cubic_minimizer(x1, f1, g1, x2, f2, g2, bounds=None):
    """Where the cubic with values f1, f2 and slopes g1, g2 at x1, x2 is least, clamped to bounds (by default the
    interval between the points); the middle of the bounds when the cubic has no minimum there."""
    gap = 3 * (f1 - f2) / (x1 - x2)
    d1 = g1 + g2 - gap
    d2_square = d1 ** 2 - g1 * g2
    if not x1 <= x2:  # name the points so that x1 is on the left (written so that nan goes this way too)
        x1, g1, x2, g2 = x2, g2, x1, g1
    lo, hi = (x1, x2) if bounds is None else bounds
    if not d2_square >= 0:
        return (lo + hi) / 2.0
    d2 = _sqrt(d2_square)
    back = (g2 + d2 - d1) / (g2 - g1 + 2 * d2)
    return min(max(x2 - (x2 - x1) * back, lo), hi)


def _keep_off_ends(t, t_a, t_b, was_close):
    """A zoom trial within 10% of the bracket's width from an end makes little progress: the second time in a
    row, or when t is at or beyond an end, move it to exactly 10% from the nearer end. Returns (t, close),
    close meaning t was left near an end this time."""
    right = max(t_a, t_b)
    left = min(t_a, t_b)
    margin = 0.1 * (right - left)
    if not min(right - t, t - left) < margin:
        return t, False
    if not (was_close or t >= right or t <= left):
        return t, True
    if abs(t - right) < abs(t - left):
        return right - margin, False
    return left + margin, False


class _Trial:
    """One evaluation along the search line: step t, loss f, flat gradient g and slope gtd = g.d."""
    __slots__ = ("t", "f", "g", "gtd")

    def __init__(self, t, f, g, gtd):
        self.t = t
        self.f = f
        self.g = g
        self.gtd = gtd

    def kept(self):
        """A copy that owns its gradient, for keeping in the bracket."""
        return _Trial(self.t, self.f, self.g.clone(), self.gtd)


def _ordered(bracket):
    """(index of the lower end, index of the higher end) of a bracket, by loss."""
    return (0, 1) if bracket[0].f <= bracket[-1].f else (1, 0)


class _WolfeSearch:
    """The strong-Wolfe line search along d from the trial `origin` at t = 0, allowed `budget` evaluations beyond
    the first one."""

    def __init__(self, evaluate, x, d, origin, c1, c2, budget):
        self.evaluate = evaluate
        self.x = x
        self.d = d
        self.origin = origin
        self.c1 = c1
        self.c2 = c2
        self.budget = budget
        self.used = 0  # evaluations counted against the budget
        self.evals = 0  # all evaluations

    def probe(self, t):
        loss, grad = self.evaluate(self.x, t, self.d)
        self.evals += 1
        return _Trial(t, loss, grad, grad.dot(self.d))

    def decrease_too_small(self, trial):
        """The Armijo (sufficient decrease) condition fails at trial."""
        start = self.origin
        return trial.f > (start.f + self.c1 * trial.t * start.gtd)

    def slope_flat_enough(self, trial):
        """The strong curvature condition holds at trial."""
        return abs(trial.gtd) <= -self.c2 * self.origin.gtd

    def bracket(self, t):
        """Phase 1: lengthen the step until [previous, current] must hold a Wolfe point, or the current one is.
        Returns (bracket, whether its single trial already satisfies both conditions)."""
        prev = self.origin
        current = self.probe(t)
        while self.used < self.budget:
            if self.decrease_too_small(current) or (self.used > 1 and current.f >= prev.f):
                return [prev, current.kept()], False
            if self.slope_flat_enough(current):
                return [current], True
            if current.gtd >= 0:
                return [prev, current.kept()], False
            # still descending: extrapolate to between 1.01 and 10 times the current step
            lo = current.t + 0.01 * (current.t - prev.t)
            hi = current.t * 10
            t = _cubic_minimizer(prev.t, prev.f, prev.gtd, current.t, current.f, current.gtd, bounds=(lo, hi))
            prev = current.kept()
            current = self.probe(t)
            self.used += 1
        if self.used != self.budget:  # a negative budget: no bracket at all
            return None, False
        start = self.origin
        return [_Trial(0, start.f, start.g, None), _Trial(current.t, current.f, current.g, None)], False

    def zoom(self, bracket, done, tolerance_change):
        """Phase 2: shrink the bracket by cubic interpolation until a trial satisfies both conditions, the bracket
        is too short to matter, or the budget is spent. Returns the lowest trial."""
        d_norm = self.d.abs().max()
        low, high = _ordered(bracket)
        close = False
        while not done and self.used < self.budget:
            a, b = bracket
            if abs(b.t - a.t) * d_norm < tolerance_change:
                break
            t = _cubic_minimizer(a.t, a.f, a.gtd, b.t, b.f, b.gtd)
            t, close = _keep_off_ends(t, a.t, b.t, close)
            trial = self.probe(t).kept()
            self.used += 1
            if self.decrease_too_small(trial) or trial.f >= bracket[low].f:
                bracket[high] = trial
                low, high = _ordered(bracket)
                continue
            if self.slope_flat_enough(trial):
                done = True
            elif trial.gtd * (bracket[high].t - bracket[low].t) >= 0:
                bracket[high] = bracket[low]  # the old low end becomes the high end
            bracket[low] = trial
        return bracket[low]


def _strong_wolfe(obj_func, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """A step t along d satisfying the strong Wolfe conditions, torch's signature: obj_func(x, t, d) gives the
    loss and flat gradient at x + t*d. Returns (loss, flat gradient, t, function evaluations)."""
    search = _WolfeSearch(obj_func, x, d, _Trial(0, f, g.clone(), gtd), c1, c2, max_ls)
    bracket, done = search.bracket(t)
    best = search.zoom(bracket, done, tolerance_change)
    return best.f, best.g, best.t, search.evals


def _two_loop(flat_grad, old_dirs, old_stps, ro, H_diag, al):
    """The L-BFGS direction -H g from the stored pairs (old_dirs holds the y's, old_stps the s's, ro 1/(y.s))
    and the initial scaling H_diag; al is the state's scratch list of per-pair coefficients."""
    q = flat_grad.neg()
    for i in reversed(range(len(old_dirs))):
        al[i] = old_stps[i].dot(q) * ro[i]
        q.add_(old_dirs[i], alpha=float(-al[i]))
    r = q * H_diag
    for i, (y, s) in enumerate(zip(old_dirs, old_stps)):
        beta = y.dot(r) * ro[i]
        r.add_(s, alpha=float(al[i] - beta))
    return r


def _stalled(d, t, loss, prev_loss, tolerance):
    """Too little progress: no coordinate moved, or the loss did not change, by more than tolerance."""
    return d.mul(t).abs().max() <= tolerance or abs(loss - prev_loss) < tolerance


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
        self._flat_size = None

    # ---- the parameters and gradients as one flat real vector ----

    def _flat_length(self):
        if self._flat_size is None:  # a complex parameter counts twice: re and im
            self._flat_size = sum(p.numel() * 2 if p.is_complex() else p.numel() for p in self._params)
        return self._flat_size

    def _flat_grad(self):
        """Every gradient flattened and concatenated (zeros for a parameter without one)."""
        pieces = []
        for p in self._params:
            grad = p.new_zeros(p.numel()) if p.grad is None else p.grad.reshape(-1)
            (grad,) = _real(grad)
            pieces.append(grad.reshape(-1))
        return cat(pieces, 0)

    def _move(self, step, direction):
        """Parameters += step * direction (a flat vector)."""
        alpha = float(step)
        start = 0
        for p in self._params:
            (p,) = _real(p)
            stop = start + p.numel()
            p.add_(direction[start:stop].view_as(p), alpha=alpha)
            start = stop
        assert start == self._flat_length()

    def _loss_and_grad_at(self, closure, x, t, d):
        """Loss and flat gradient at x + t*d (x: copies of the parameters, which are restored to it after)."""
        self._move(t, d)
        loss = float(closure())
        grad = self._flat_grad()
        for p, saved in zip(self._params, x):
            p.copy_(saved)
        return loss, grad

    # ---- the step ----

    def step(self, closure):
        options = SimpleNamespace(lr=_value(self.param_groups[0]["lr"]),
                                  **{key: self.param_groups[0][key] for key in _OPTIONS})
        closure = enable_grad()(closure)
        state = self.state[self._params[0]]  # the state is global; torch files it under the first parameter
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        orig_loss = closure()
        loss = float(orig_loss)
        state["func_evals"] += 1
        flat_grad = self._flat_grad()
        if flat_grad.abs().max() <= options.tolerance_grad:
            return orig_loss
        carried = {key: state.get(key) for key in _CARRIED}
        self._iterate(closure, options, state, carried, loss, flat_grad)
        state.update(carried)
        return orig_loss

    def _iterate(self, closure, options, state, mem, loss, flat_grad):
        """The iterations of one step; mem holds the _CARRIED values, updated in place."""
        evals = 1  # closure calls in this step so far
        n_iter = 0
        while n_iter < options.max_iter:
            n_iter += 1
            state["n_iter"] += 1
            first = state["n_iter"] == 1
            if first:
                mem.update(d=flat_grad.neg(), old_dirs=[], old_stps=[], ro=[], H_diag=1)
            else:
                self._new_direction(state, mem, flat_grad, options.history_size)
            if mem["prev_flat_grad"] is None:
                mem["prev_flat_grad"] = flat_grad.clone()
            else:
                mem["prev_flat_grad"].copy_(flat_grad)
            mem["prev_loss"] = loss
            # the very first step is scaled to move the parameters by at most lr in the 1-norm
            mem["t"] = min(1.0, flat_grad.abs().sum().reciprocal()) * options.lr if first else options.lr
            d = mem["d"]
            gtd = flat_grad.dot(d)
            if gtd > -options.tolerance_change:
                break  # not a descent direction
            converged = False
            spent = 0
            if options.line_search_fn is not None:
                if options.line_search_fn != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                x = [p.clone() for p in self._params]
                evaluate = partial(self._loss_and_grad_at, closure)
                loss, flat_grad, mem["t"], spent = _strong_wolfe(evaluate, x, mem["t"], d, loss, flat_grad, gtd,
                                                                 max_ls=options.max_eval - evals)
                self._move(mem["t"], d)
                converged = flat_grad.abs().max() <= options.tolerance_grad
            else:
                self._move(mem["t"], d)
                if n_iter != options.max_iter:  # the last iteration's loss would go unused: skip it, as torch does
                    loss = float(closure())
                    flat_grad = self._flat_grad()
                    converged = flat_grad.abs().max() <= options.tolerance_grad
                    spent = 1
            evals += spent
            state["func_evals"] += spent
            if n_iter == options.max_iter or evals >= options.max_eval or converged:
                break
            if _stalled(d, mem["t"], loss, mem["prev_loss"], options.tolerance_change):
                break

    def _new_direction(self, state, mem, flat_grad, history_size):
        """Store the latest curvature pair if y.s is safely positive, then d = -H g by the two-loop recursion."""
        y = flat_grad.sub(mem["prev_flat_grad"])
        s = mem["d"].mul(mem["t"])
        ys = y.dot(s)
        if ys > 1e-10:
            pairs = (mem["old_dirs"], mem["old_stps"], mem["ro"])
            if len(mem["old_dirs"]) == history_size:  # full: forget the oldest pair
                for kept in pairs:
                    kept.pop(0)
            for kept, value in zip(pairs, (y, s, 1.0 / ys)):
                kept.append(value)
            mem["H_diag"] = ys / y.dot(y)
        if "al" not in state:
            state["al"] = [None] * history_size
        mem["d"] = _two_loop(flat_grad, mem["old_dirs"], mem["old_stps"], mem["ro"], mem["H_diag"], state["al"])
