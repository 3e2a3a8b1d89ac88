"""A whole LSTM or GRU sequence in one op: one layer in one direction, padded or packed.

Note [Sequence ops]: the layer's inputs are projected for every step up front (xg = x W_ih^T + b, see
Note [RNN time loop] in rnn.py; an LSTM's b is added in the op's loop instead, Note [LSTM bias in the loop]); the
op runs the time loop in NumPy, one GEMM (h W_hh^T) and the gate passes per step, keeping each step's activated
gates and states, and its backward runs the recursion back in NumPy, each step's factors that do not depend on
the incoming gradient computed for all steps up front, then W_hh's gradient from one GEMM over all steps. With
ember[jit] each loop, either way, is one compiled call, its GEMMs through NumPy's cblas (Note [Compiled LSTM
sequence] in ember/_backend/lstm_jit.py). Under create_graph the backward is rebuilt from ember ops (the forward
recomputed differentiably, then the same recursion through rnn.py's gate formulas).

A sequence is a list of steps (Steps): padded, every step has the whole batch; packed (a PackedSequence's
data and batch_sizes), step t has the first batch_sizes[t] rows, the batch shrinking as sequences end
(growing, processed in reverse). The state arrays keep all rows at every step: rows outside a step are
carried over unchanged (an ended sequence's last state is its final state; in reverse, a sequence not
started yet still holds its initial state), and their gate gradients stay zero.

LSTM (gate order i, f, g, o): c' = f c + i g, h' = o tanh(c'). GRU (order r, z, n), with
hg = h W_hh^T + b_hh: n = tanh(xg_n + r hg_n), h' = n + z (h - n) (torch's placement of b_hn).
"""
import numpy as np

from .. import _dtype as D
from .._backend import jit
from .._tensor import Tensor
from ..autograd import grad_mode
from ._registry import Op
from .joining import cat
from .pointwise import _sigmoid_kernel

_state = grad_mode._state


class Steps:
    """The steps of a sequence in processing order: (t, rows, offset) for each, t the time step, rows its
    batch rows (the first ones) and offset where they start in the flat (sum of rows, ...) layout."""

    def __init__(self, sizes, reverse):
        offsets = np.cumsum([0] + list(sizes[:-1])).tolist()
        order = range(len(sizes) - 1, -1, -1) if reverse else range(len(sizes))
        self.steps = [(t, sizes[t], offsets[t]) for t in order]
        self.reverse = reverse
        self.batch = max(sizes)
        self.total = int(sum(sizes))
        self.packed = min(sizes) < self.batch
        self.table = np.array([(rows, offset) for _, rows, offset in self.steps], np.int64).reshape(-1, 2)

    def __len__(self):
        return len(self.steps)

    def flat(self, a):
        """A padded (T, B, ...) array or a packed (N, ...) one as (rows, ...)."""
        return a.reshape((self.total,) + a.shape[a.ndim - 1:]) if a.ndim == 3 else a

    def gather(self, per_step, shape_of):
        """Rows [:rows] of per_step[k] (processing order) in a new array laid out as the input was:
        (T, B, ...) or (N, ...) as shape_of."""
        if not self.packed:  # every step whole: one copy (in time order; never a view of per_step)
            return np.array(per_step[::-1] if self.reverse else per_step).reshape(shape_of)
        out = np.empty((self.total,) + per_step.shape[2:], dtype=per_step.dtype)
        for k, (t, rows, offset) in enumerate(self.steps):
            out[offset:offset + rows] = per_step[k, :rows]
        return out.reshape(shape_of)

    def scratch_gather(self, per_step, shape_of):
        """gather() of an array nobody else holds (a backward's scratch, handed on as an internal gradient): per_step
        itself, reshaped, where its steps are already whole and in time order (saves a copy per layer)."""
        if self.packed or self.reverse:
            return self.gather(per_step, shape_of)
        return per_step.reshape(shape_of)

    def empty(self, shape, dtype):
        """Per-step buffers: zeros when packed, so that rows outside a step read as zeros."""
        return np.zeros(shape, dtype) if self.packed else np.empty(shape, dtype)


def _start(ctx, xg, h0, w_hh, sizes, reverse):
    """A forward's common start: its Steps (kept on ctx), the inputs as (rows, width), W_hh^T (a transposed
    view: BLAS reads it as it is, where a contiguous copy of a 512x128 float32 W_hh cost ~100 us, more than
    the sequence's 16 GEMMs lose to it) and the state per step hs (count + 1, B, H), in processing order,
    hs[0] = h0."""
    steps = Steps([xg.shape[1]] * xg.shape[0] if sizes is None else sizes, reverse)
    ctx.steps = steps
    hs = np.empty((len(steps) + 1, steps.batch, h0.shape[-1]), dtype=xg.dtype)
    hs[0] = h0
    return steps, steps.flat(xg), w_hh.T, hs


# ---- LSTM ---------------------------------------------------------------------------------

def lstm_cell(gates, c, c_new, tanh_c, h):
    """One LSTM step on arrays: activates the pre-activations gates (B, 4H; order i, f, g, o) in place
    and writes c_new = f * c + i * g, tanh_c = tanh(c_new) and h = o * tanh_c (tanh_c may be h)."""
    n = c.shape[-1]
    g = gates[:, 2 * n:3 * n]
    # Note [LSTM tanh gate]: one sigmoid over the whole (contiguous) block, g's columns doubled first
    # (exact), then tanh(g) = 2 sigmoid(2g) - 1 from them: NumPy's float32 tanh costs ~1.7x its exp
    # (2.8 vs 1.6 ns an element here), and the block's exp over g's columns is paid anyway (32x256
    # gates: ~5% less time per step). Absolute error <= 2e-7 in float32 (3e-16 in float64; tiny g
    # lose their relative accuracy, not their absolute one), +-inf and NaN as tanh.
    g *= 2
    _sigmoid_kernel(gates, out=gates)
    g *= 2
    g -= 1
    np.multiply(gates[:, n:2 * n], c, out=c_new)
    c_new += gates[:, :n] * gates[:, 2 * n:3 * n]
    np.tanh(c_new, out=tanh_c)
    np.multiply(gates[:, 3 * n:], tanh_c, out=h)


def _step_kernels(dtype, forward):
    """ember/_backend/lstm_jit.py's steps, with ember[jit] installed and the switch on (Note [JIT kernels]); else
    None (the NumPy steps). The forward steps take float32 (their exp is float32; 32x512 LSTM gates: 68 -> 36
    us a step), the backward steps float32 and float64."""
    takes = dtype == np.float32 or (not forward and dtype in jit.DTYPES)
    return jit.load("lstm_jit") if takes else None


# The LSTM's and GRU's time loops run as one compiled call each (Note [Compiled LSTM sequence],
# ember/_backend/lstm_jit.py) where they can; WHOLE_LOOP = False keeps the loops here, a compiled step per call (the
# tests compare the two).
WHOLE_LOOP = True


def _whole_loop(kernels, w):
    """Whether a sequence's loop runs as one compiled call: the compiled steps run and so does their GEMM."""
    return WHOLE_LOOP and kernels is not None and kernels.sequence_runs(w)


def _lstm_numpy_step(gates, xg, c, c_new, tanh_c, h):
    """One LSTM step in NumPy from the GEMM's gates (B, 4H): xg added, then lstm_cell (lstm_jit.cell's reference)."""
    gates += xg
    lstm_cell(gates, c, c_new, tanh_c, h)


# Note [LSTM bias in the loop]: an LSTM's input projection (rnn.py, _Layer.project_inputs) added b_ih + b_hh to
# every step's xg, one more pass over the (T, B, 4H) projections after its GEMM, and summed that bias's gradient
# over them in its backward. When the sequence runs as one op (_Layer.loop_bias), the projection leaves the bias
# out and the op takes it: the compiled loop adds it where it reads xg (lstm_jit._cell: (xg + bias) rounded first,
# as the projection rounded it), the NumPy loops add it to xg up front, and the backward sums the gradient of the
# gathered gate gradients as the projection's backward did: the same bits forward and in every first-order
# gradient (tests/test_lstm_jit.py). LSTM(128, 128) on (32, 16, 128) float32, forward + backward, 2 threads,
# alternating in one process, medians of 40 rounds (2026-11-30): 8.52 -> 8.13 ms (29 of 40 rounds) and 8.25 ->
# 8.11 (24 of 40).


class LSTMSequence(Op):
    """(out, h_n, c_n) of one LSTM layer direction over a padded sequence: xg (T, B, 4H), out (T, B, H)."""
    _name = "MkldnnRnnLayerBackward0"
    saves_output = True

    @staticmethod
    def forward(ctx, xg, h0, c0, w_hh, bias, reverse, sizes=None):
        steps, x, w_t, hs = _start(ctx, xg, h0, w_hh, sizes, reverse)
        count, batch, width = len(steps), steps.batch, xg.shape[-1]
        n = width // 4
        gates = steps.empty((count, batch, width), xg.dtype)
        cs = np.empty((count + 1, batch, n), dtype=xg.dtype)
        tcs = steps.empty((count, batch, n), xg.dtype)
        cs[0] = c0
        kernels = _step_kernels(xg.dtype, forward=True)
        if _whole_loop(kernels, w_hh):
            kernels.forward_sequence(w_hh, x, gates, hs, cs, tcs, steps.table, bias)
        else:
            if bias is not None:
                x = x + bias  # as the compiled loop rounds it (Note [LSTM bias in the loop])
            step = _lstm_numpy_step if kernels is None else kernels.cell
            for k, (t, rows, offset) in enumerate(steps.steps):
                a = gates[k, :rows]
                np.matmul(hs[k, :rows], w_t, out=a)
                step(a, x[offset:offset + rows], cs[k, :rows], cs[k + 1, :rows], tcs[k, :rows], hs[k + 1, :rows])
                if rows < batch:
                    hs[k + 1, rows:] = hs[k, rows:]
                    cs[k + 1, rows:] = cs[k, rows:]
        ctx.workspace = (gates, hs, cs, tcs)
        # a copy, not hs[1:] (torch's output starts its own storage); saved as torch's oneDNN layer saves it
        # (padded, float32): writing into it before backward raises
        out = steps.gather(hs[1:], xg.shape[:-1] + (n,))
        ctx.save_for_backward(xg, h0, c0, w_hh, bias, *((out,) if ctx.saves_output else ()))
        return out, hs[count].copy(), cs[count].copy()

    def backward(ctx, g_out, g_h, g_c):
        xg, h0, c0, w_hh, bias = ctx.saved_tensors[:5]
        steps = ctx.steps
        if _state.enabled:
            x = xg if bias is None else xg + bias
            gxg, dh, dc, gw = _lstm_backward_graph(steps, x, h0, c0, w_hh, g_out, g_h, g_c)
            return gxg, dh, dc, gw, None if bias is None else gxg.reshape(-1, gxg.shape[-1]).sum(0)
        gates, hs, cs, tcs = ctx.workspace
        need = ctx.needs_input_grad
        count, batch, width = gates.shape
        n = width // 4
        w = w_hh._data
        dh = np.zeros((batch, n), dtype=gates.dtype) if g_h is None else g_h._data.copy()
        dc = np.zeros((batch, n), dtype=gates.dtype) if g_c is None else g_c._data.copy()
        go = None if g_out is None else steps.flat(g_out._data)
        dgates = steps.empty(gates.shape, gates.dtype)
        kernels = _step_kernels(gates.dtype, forward=False)
        _lstm_steps_back(steps, gates, cs, tcs, dgates, dh, dc, go, w, kernels)
        gxg = steps.scratch_gather(dgates, xg._data.shape) if need[0] or need[4] else None
        gw = gb = None
        if need[3]:
            gw = Tensor._make(np.matmul(dgates.reshape(-1, width).T, hs[:count].reshape(-1, n)))
        if need[4]:  # summed as the projection's own bias gradient was (functional._linear_backward_kernel)
            gb = Tensor._make(np.add.reduce(gxg.reshape(-1, width), axis=0, dtype=gxg.dtype))
        gxg = Tensor._make(gxg) if need[0] else None
        return gxg, Tensor._make(dh) if need[1] else None, Tensor._make(dc) if need[2] else None, gw, gb


def _lstm_steps_back(steps, gates, cs, tcs, dgates, dh, dc, go, w, kernels=None):
    """The LSTM backward recursion: dgates per step, dh and dc carried back in place. With kernels
    (ember/_backend/lstm_jit.py) a step is one compiled pass and its GEMM; in NumPy (the reference, the same
    bits) every factor that does not depend on the incoming gradient is computed for all steps at once, so a
    step is seven NumPy calls: dc += dh * o(1 - tanh(c)^2); d_o = dh * tanh(c) o(1 - o);
    (d_i, d_f, d_g) = dc * (g i(1 - i), c_prev f(1 - f), i(1 - g^2)); dc *= f; dh = d @ w_hh."""
    if _whole_loop(kernels, w):
        kernels.backward_sequence(w, gates, cs, tcs, dgates, dh, dc, go, steps.table)
        return
    if kernels is not None:
        for k in range(len(steps) - 1, -1, -1):
            t, rows, offset = steps.steps[k]
            h = dh[:rows]
            kernels.back_step(h, dc[:rows], None if go is None else go[offset:offset + rows], gates[k, :rows],
                              tcs[k, :rows], cs[k, :rows], dgates[k, :rows])
            np.matmul(dgates[k, :rows], w, out=h)
        return
    count, batch, width = gates.shape
    n = width // 4
    i, f, g, o = (gates[..., k * n:(k + 1) * n] for k in range(4))
    q = 1 - tcs * tcs
    q *= o
    r = 1 - o
    r *= o
    r *= tcs
    coef = np.empty((count, batch, 3, n), dtype=gates.dtype)
    np.multiply(i, 1 - i, out=coef[:, :, 0])
    coef[:, :, 0] *= g
    np.multiply(f, 1 - f, out=coef[:, :, 1])
    coef[:, :, 1] *= cs[:count]
    np.multiply(g, g, out=coef[:, :, 2])
    np.subtract(1, coef[:, :, 2], out=coef[:, :, 2])
    coef[:, :, 2] *= i
    per_gate = dgates.reshape(count, batch, 4, n)  # a view: [k, :, :3] are (d_i, d_f, d_g) of step k
    tmp = np.empty((batch, n), dtype=gates.dtype)
    for k in range(count - 1, -1, -1):
        t, rows, offset = steps.steps[k]
        h, c = dh[:rows], dc[:rows]
        if go is not None:
            h += go[offset:offset + rows]
        np.multiply(h, q[k, :rows], out=tmp[:rows])
        c += tmp[:rows]
        np.multiply(h, r[k, :rows], out=per_gate[k, :rows, 3])
        np.multiply(c[:, None, :], coef[k, :rows], out=per_gate[k, :rows, :3])
        c *= f[k, :rows]
        np.matmul(dgates[k, :rows], w, out=h)


class LSTMStackedSequence(LSTMSequence):
    """LSTMSequence in a dtype torch's oneDNN layer does not take on CPU (float64; float16 and bfloat16 on
    CPUs without bfloat16 instructions): torch stacks the steps and saves no output."""
    _name = "StackBackward0"
    saves_output = False


class LSTMPackedSequence(LSTMSequence):
    """LSTMSequence over a packed sequence: xg (N, 4H) with its batch sizes, out (N, H)."""
    _name = "CatBackward0"  # torch's packed LSTM concatenates its per-step outputs
    saves_output = False


def _lstm_backward_graph(steps, xg, h0, c0, w_hh, g_out, g_h, g_c):
    """LSTMSequence's gradients in ember ops, differentiable again: the forward recomputed from the inputs
    so that the gates and states carry their own history, then the recursion back."""
    from .rnn import _lstm_gates_backward_graph
    x = xg.reshape(steps.total, xg.shape[-1])
    h, c = h0, c0
    trace = []
    for t, rows, offset in steps.steps:
        h_prev, c_prev = h[:rows], c[:rows]
        i, f, g, o = (x[offset:offset + rows] + h_prev.matmul(w_hh.t())).chunk(4, 1)
        gates = cat([i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()], 1)
        i, f, g, o = gates.chunk(4, 1)
        c_new = f * c_prev + i * g
        trace.append((gates, c_prev, c_new, h_prev))
        h, c = _rejoin(o * c_new.tanh(), h), _rejoin(c_new, c)
    g_flat = None if g_out is None else g_out.reshape(steps.total, g_out.shape[-1])
    dh = h0 * 0 if g_h is None else g_h
    dc = c0 * 0 if g_c is None else g_c
    dxg, gw = [None] * len(steps), None
    for k in range(len(steps) - 1, -1, -1):
        t, rows, offset = steps.steps[k]
        gates, c_prev, c_new, h_prev = trace[k]
        d_h = dh[:rows] if g_flat is None else dh[:rows] + g_flat[offset:offset + rows]
        d, d_c = _lstm_gates_backward_graph(gates, c_prev, c_new, d_h, dc[:rows], None)
        dxg[t] = d
        dh, dc = _rejoin(d.matmul(w_hh), dh), _rejoin(d_c, dc)
        step_gw = d.t().matmul(h_prev)
        gw = step_gw if gw is None else gw + step_gw
    return cat(dxg, 0).reshape(xg.shape), dh, dc, gw


def _rejoin(head, full):
    """head over the first rows of full, full's other rows after (a step's rows rejoin the batch)."""
    rows = head.shape[0]
    return head if rows == full.shape[0] else cat([head, full[rows:]], 0)


# ---- GRU ----------------------------------------------------------------------------------

def _gru_numpy_step(hg, xs, w, h_prev, h):
    """One GRU step in NumPy (lstm_jit.gru_cell's reference) from hg = h_prev W_hh^T + b_hh and the inputs' xs
    (B, 3H): w (B, 4H) = (r, z, n, hg_n), h = (h_prev - n) z + n."""
    n = h.shape[-1]
    rz = w[:, :2 * n]
    np.add(xs[:, :2 * n], hg[:, :2 * n], out=rz)
    _sigmoid_kernel(rz, out=rz)
    w[:, 3 * n:] = hg[:, 2 * n:]
    new = w[:, 2 * n:3 * n]
    np.multiply(w[:, :n], hg[:, 2 * n:], out=new)
    new += xs[:, 2 * n:]
    np.tanh(new, out=new)
    np.subtract(h_prev, new, out=h)
    h *= w[:, n:2 * n]
    h += new


class GRUSequence(Op):
    """(out, h_n) of one GRU layer direction over a padded sequence: xg (T, B, 3H), out (T, B, H)."""
    _name = "StackBackward0"  # torch's CPU GRU stacks its per-step outputs

    @staticmethod
    def forward(ctx, xg, h0, w_hh, b_hh, reverse, sizes=None):
        steps, x, w_t, hs = _start(ctx, xg, h0, w_hh, sizes, reverse)
        count, batch, width = len(steps), steps.batch, xg.shape[-1]
        n = width // 3
        ws = steps.empty((count, batch, 4 * n), xg.dtype)  # per step: r, z, n, hg_n
        hg_all = np.empty((batch, width), dtype=xg.dtype)
        kernels = _step_kernels(xg.dtype, forward=True)
        if _whole_loop(kernels, w_hh):
            kernels.gru_forward_sequence(w_hh, b_hh, x, ws, hs, hg_all, steps.table)
        else:
            step = _gru_numpy_step if kernels is None else kernels.gru_cell
            for k, (t, rows, offset) in enumerate(steps.steps):
                hg = hg_all[:rows]
                np.matmul(hs[k, :rows], w_t, out=hg)
                if b_hh is not None:
                    hg += b_hh
                step(hg, x[offset:offset + rows], ws[k, :rows], hs[k, :rows], hs[k + 1, :rows])
                if rows < batch:
                    hs[k + 1, rows:] = hs[k, rows:]
        ctx.workspace = (ws, hs)
        ctx.save_for_backward(xg, h0, w_hh, b_hh)
        return steps.gather(hs[1:], xg.shape[:-1] + (n,)), hs[count].copy()

    def backward(ctx, g_out, g_h):
        xg, h0, w_hh, b_hh = ctx.saved_tensors
        steps = ctx.steps
        if _state.enabled:
            return _gru_backward_graph(steps, xg, h0, w_hh, b_hh, g_out, g_h)
        ws, hs = ctx.workspace
        need = ctx.needs_input_grad
        count, batch, _ = ws.shape
        n = hs.shape[-1]
        dt = ws.dtype
        dxg = steps.empty((count, batch, 3, n), dt)
        dhg = steps.empty((count, batch, 3, n), dt)
        dh = np.zeros((batch, n), dtype=dt) if g_h is None else g_h._data.copy()
        go = None if g_out is None else steps.flat(g_out._data)
        kernels = _step_kernels(dt, forward=False)
        _gru_steps_back(steps, ws, hs, dxg, dhg, dh, go, w_hh._data, kernels)
        gxg = None
        if need[0]:
            gxg = Tensor._make(steps.scratch_gather(dxg.reshape(count, batch, 3 * n), xg._data.shape))
        flat = dhg.reshape(-1, 3 * n)
        gw = Tensor._make(np.matmul(flat.T, hs[:count].reshape(-1, n))) if need[2] else None
        gb = Tensor._make(flat.sum(0)) if need[3] else None
        return gxg, Tensor._make(dh) if need[1] else None, gw, gb


def _gru_steps_back(steps, ws, hs, dxg, dhg, dh, go, w, kernels=None):
    """The GRU backward recursion: dxg and dhg (count, B, 3, H) per step, dh carried back in place. With kernels
    (ember/_backend/lstm_jit.py) a step is one compiled pass, its GEMM and an add; in NumPy (the reference, the
    same bits) the factors come for all steps at once (below)."""
    count, batch, _ = ws.shape
    n = hs.shape[-1]
    dt = ws.dtype
    tmp = np.empty((batch, n), dtype=dt)
    if _whole_loop(kernels, w):
        kernels.gru_backward_sequence(w, ws, hs, dxg.reshape(count, batch, 3 * n), dhg.reshape(count, batch, 3 * n),
                                      dh, go, tmp, steps.table)
        return
    if kernels is not None:
        for k in range(count - 1, -1, -1):
            t, rows, offset = steps.steps[k]
            h = dh[:rows]
            kernels.gru_back_step(h, None if go is None else go[offset:offset + rows], ws[k, :rows], hs[k, :rows],
                                  dxg[k, :rows].reshape(rows, 3 * n), dhg[k, :rows].reshape(rows, 3 * n))
            np.matmul(dhg[k, :rows].reshape(rows, 3 * n), w, out=tmp[:rows])
            h += tmp[:rows]
        return
    r, z, new, hn = (ws[..., k * n:(k + 1) * n] for k in range(4))
    # the factors of dh in each gate's gradient, for all steps at once, so that a step is six NumPy
    # calls: with a = (1 - z)(1 - n^2), d(xg) = dh * (a hn r(1 - r), (h_prev - n) z(1 - z), a) and
    # d(hg) the same with a * r in the n gate; dh_prev = dh * z + d(hg) @ W_hh
    a = 1 - new * new
    a *= 1 - z
    coef = np.empty((count, batch, 4, n), dtype=dt)  # r, z, n gates of d(xg), then the n gate of d(hg)
    np.multiply(a, hn, out=coef[:, :, 0])
    coef[:, :, 0] *= r
    coef[:, :, 0] *= 1 - r
    np.subtract(hs[:count], new, out=coef[:, :, 1])
    coef[:, :, 1] *= z
    coef[:, :, 1] *= 1 - z
    coef[:, :, 2] = a
    np.multiply(a, r, out=coef[:, :, 3])
    for k in range(count - 1, -1, -1):
        t, rows, offset = steps.steps[k]
        h = dh[:rows]
        if go is not None:
            h += go[offset:offset + rows]
        np.multiply(h[:, None, :], coef[k, :rows, :3], out=dxg[k, :rows])
        dhg[k, :rows, :2] = dxg[k, :rows, :2]
        np.multiply(h, coef[k, :rows, 3], out=dhg[k, :rows, 2])
        h *= z[k, :rows]
        np.matmul(dhg[k, :rows].reshape(rows, 3 * n), w, out=tmp[:rows])
        h += tmp[:rows]


class GRUPackedSequence(GRUSequence):
    """GRUSequence over a packed sequence: xg (N, 3H) with its batch sizes, out (N, H)."""
    _name = "CatBackward0"  # torch's packed GRU concatenates its per-step outputs


def _gru_backward_graph(steps, xg, h0, w_hh, b_hh, g_out, g_h):
    """GRUSequence's gradients in ember ops, differentiable again (as _lstm_backward_graph)."""
    from .rnn import _gru_gates_backward_graph
    x = xg.reshape(steps.total, xg.shape[-1])
    h = h0
    trace = []
    for t, rows, offset in steps.steps:
        h_prev = h[:rows]
        hg = h_prev.matmul(w_hh.t())
        if b_hh is not None:
            hg = hg + b_hh
        xr, xz, xn = x[offset:offset + rows].chunk(3, 1)
        hr, hz, hn = hg.chunk(3, 1)
        r = (xr + hr).sigmoid()
        z = (xz + hz).sigmoid()
        new = (xn + r * hn).tanh()
        trace.append((cat([r, z, new, hn], 1), h_prev))
        h = _rejoin(new + z * (h_prev - new), h)
    g_flat = None if g_out is None else g_out.reshape(steps.total, g_out.shape[-1])
    dh = h0 * 0 if g_h is None else g_h
    dxg, gw, gb = [None] * len(steps), None, None
    for k in range(len(steps) - 1, -1, -1):
        t, rows, offset = steps.steps[k]
        ws, h_prev = trace[k]
        d_h = dh[:rows] if g_flat is None else dh[:rows] + g_flat[offset:offset + rows]
        dx, dhg, direct = _gru_gates_backward_graph(ws, h_prev, d_h, None)
        dxg[t] = dx
        dh = _rejoin(direct + dhg.matmul(w_hh), dh)
        step_gw, step_gb = dhg.t().matmul(h_prev), dhg.sum(0)
        gw = step_gw if gw is None else gw + step_gw
        gb = step_gb if gb is None else gb + step_gb
    return cat(dxg, 0).reshape(xg.shape), dh, gw, None if b_hh is None else gb


# ---- entry points -------------------------------------------------------------------------

def _no_materialize(out):
    """Outputs of out's op that get no gradient reach backward as None, not zeros (torch's
    ctx.set_materialize_grads(False)): the fused ops (these and rnn.py's gate ops) skip their terms instead."""
    fn = out._grad_fn
    if fn is not None:
        fn.materialize_grads = False


def lstm_sequence(xg, h0, c0, w_hh, reverse, sizes=None, bias=None):
    """(out, h_n, c_n): one LSTM layer direction; sizes: the batch sizes of a packed xg (N, 4H); bias (4H,): added
    to xg in the time loop (Note [LSTM bias in the loop]), None when xg holds it."""
    if sizes is not None:
        op = LSTMPackedSequence
    else:
        op = LSTMSequence if xg.dtype is D.float32 else LSTMStackedSequence
    out, h, c = op.apply(xg, h0, c0, w_hh, bias, reverse=reverse, sizes=sizes)
    _no_materialize(out)
    return out, h, c


def gru_sequence(xg, h0, w_hh, b_hh, reverse, sizes=None):
    """(out, h_n, None): one GRU layer direction; sizes: the batch sizes of a packed xg (N, 3H)."""
    op = GRUSequence if sizes is None else GRUPackedSequence
    out, h = op.apply(xg, h0, w_hh, b_hh, reverse=reverse, sizes=sizes)
    _no_materialize(out)
    return out, h, None
