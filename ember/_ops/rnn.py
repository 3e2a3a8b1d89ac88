"""Recurrent cells and layers: torch.lstm_cell / gru_cell / rnn_tanh_cell / rnn_relu_cell and the
multi-layer runners torch.lstm / gru / rnn_tanh / rnn_relu that nn.LSTM, nn.GRU and nn.RNN call.

Note [RNN time loop]: a layer projects the input of every time step in one GEMM up front
(x @ W_ih^T + b for the whole sequence), splits the result into steps with one op, then runs
one GEMM per step (h @ W_hh^T) and one fused gate op (_LSTMGates / _GRUGates): the forward
computes the gate activations and the new state together, and its backward returns the gate
gradients. Outputs are collected and stacked once. A packed sequence is the same loop over
steps whose batch shrinks (forward) or grows (reverse direction). An LSTM layer without projection,
or a GRU layer, in float32 or float64 runs its whole time loop, padded or packed, as one op instead
(Note [Sequence ops] in rnn_sequence.py): NumPy kernels forward and backward, no op per step.

The fused ops return their activated gates as an extra, non-differentiable "workspace" output
and save it as an output slot, so a double backward can route a gradient back into it: the
backward is a NumPy kernel when no graph is being built (the common case) and the same formula
in ember ops under create_graph=True.
"""
import numpy as np

from .. import _dtype as D
from .._tensor import Tensor
from ..autograd import grad_mode
from ._registry import Op, install
from .joining import cat, stack
from .pointwise import _sigmoid_kernel
from .rnn_sequence import _no_materialize, gru_sequence, lstm_cell as _lstm_cell, lstm_sequence
from .splitting import split_with_sizes, unbind

_state = grad_mode._state
_F = None  # ember.nn.functional, bound on first use (it imports the op modules)


def _functional():
    global _F
    if _F is None:
        from ..nn import functional
        _F = functional
    return _F


def _linear(x, w, b=None):
    return _functional().linear(x, w, b)


# ---- one step's products x @ W^T (+ b) -------------------------------------------------

class _StepLinear(Op):
    """x @ w^T (+ b) inside a time loop. w_t is w's transpose as an array: for the recurrent weight a
    C-contiguous copy made once per layer (NumPy's matmul against a transposed view is several times
    slower on small matrices). The backward is two NumPy products, or the same products in ember
    ops under create_graph: F.linear's backward would dispatch several ember ops per step."""
    _name = "AddmmBackward0"

    @staticmethod
    def forward(ctx, x, w, b, w_t):
        ctx.save_for_backward(x, w)
        out = np.matmul(x, w_t)
        if b is not None:
            out += b
        return out

    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        need = ctx.needs_input_grad
        if _state.enabled:
            gx = grad.matmul(w) if need[0] else None
            gw = grad.t().matmul(x) if need[1] else None
            gb = grad.sum(0) if need[2] else None
            return gx, gw, gb
        g = grad._data
        gx = Tensor._make(np.matmul(g, w._data)) if need[0] else None
        gw = Tensor._make(np.matmul(g.T, x._data)) if need[1] else None
        gb = Tensor._make(g.sum(0)) if need[2] else None
        return gx, gw, gb


_BLAS_DTYPES = (D.float32, D.float64)


def _transposed(w):
    """w^T as a C-contiguous array (made once per layer and direction)."""
    return np.ascontiguousarray(w._data.T)


def _step_linear(x, w, b=None, w_t=None):
    """x @ w^T + b as one _StepLinear op (2-D float32/float64 operands of one dtype; anything else goes to
    F.linear, which accumulates half precision in float32 and checks and reports like torch)."""
    if type(x) is not Tensor or x._dtype not in _BLAS_DTYPES or x._dtype is not w._dtype or x._data.ndim != 2 or \
            w._data.ndim != 2 or x._data.shape[1] != w._data.shape[1] or (b is not None and b._dtype is not w._dtype):
        return _linear(x, w, b)
    return _StepLinear.apply(x, w, b, w_t=w._data.T if w_t is None else w_t)


# ---- fused LSTM gates -----------------------------------------------------------------

class _LSTMGates(Op):
    """(h, c, workspace) = lstm gates of the pre-activations xg + hg, gate order i, f, g, o:
    c = f * c_prev + i * g, h = o * tanh(c). The workspace holds the activated gates."""
    _name = "ThnnFusedLstmCellBackward0"
    nondiff = (2,)

    @staticmethod
    def forward(ctx, xg, hg, c):
        gates = np.add(xg, hg)  # a fresh buffer, activated in place
        c_new = np.empty_like(c)
        h = np.empty_like(c)
        _lstm_cell(gates, c, c_new, h, h)
        ctx.save_for_backward(gates, c, c_new)
        return h, c_new, gates

    def backward(ctx, gh, gc, gw):
        gates, c, c_new = ctx.saved_tensors
        if _state.enabled:
            dgates, dc = _lstm_gates_backward_graph(gates, c, c_new, gh, gc, gw)
        else:
            dgates, dc = _lstm_gates_backward_kernel(gates._data, c._data, c_new._data, gh, gc, gw)
        return dgates, dgates, dc


def _lstm_gates_backward_kernel(gates, c, c_new, gh, gc, gw):
    """The gate gradients on arrays (grads are Tensors or None); returns Tensors."""
    n = c.shape[-1]
    i = gates[:, :n]
    f = gates[:, n:2 * n]
    g = gates[:, 2 * n:3 * n]
    o = gates[:, 3 * n:]
    tc = np.tanh(c_new)
    dgates = np.zeros_like(gates)
    dc = np.zeros_like(c) if gc is None else gc._data.copy()
    if gh is not None:
        gh = gh._data
        dc += gh * o * (1 - tc * tc)
        dgates[:, 3 * n:] = gh * tc * o * (1 - o)
    dgates[:, :n] = dc * g * i * (1 - i)
    dgates[:, n:2 * n] = dc * c * f * (1 - f)
    dgates[:, 2 * n:3 * n] = dc * i * (1 - g * g)
    if gw is not None:
        dgates += gw._data * _lstm_gate_slopes(gates, n)
    dc *= f
    return Tensor._make(dgates), Tensor._make(dc)


def _lstm_gate_slopes(gates, n):
    """Derivative of each activated gate w.r.t. its pre-activation: s(1-s) or 1-t^2."""
    slopes = gates * (1 - gates)
    g = gates[:, 2 * n:3 * n]
    slopes[:, 2 * n:3 * n] = 1 - g * g
    return slopes


def _lstm_gates_backward_graph(gates, c, c_new, gh, gc, gw):
    """The same formula in ember ops, differentiable again (create_graph=True)."""
    i, f, g, o = gates.chunk(4, 1)
    tc = c_new.tanh()
    dc = gc
    if gh is not None:
        dc_h = gh * o * (1 - tc * tc)
        dc = dc_h if dc is None else dc + dc_h
        do = gh * tc * o * (1 - o)
    else:
        do = o * 0
    if dc is None:
        dc = c * 0
    dgates = cat([dc * g * i * (1 - i), dc * c * f * (1 - f), dc * i * (1 - g * g), do], 1)
    if gw is not None:
        dgates = dgates + gw * cat([i * (1 - i), f * (1 - f), 1 - g * g, o * (1 - o)], 1)
    return dgates, dc * f


def _lstm_step(xg, hg, c):
    h, c, _ = _LSTMGates.apply(xg, hg, c)
    _no_materialize(h)
    return h, c


# ---- fused GRU gates ------------------------------------------------------------------

class _GRUGates(Op):
    """(h, workspace) for pre-activations xg = x W_ih^T + b_ih and hg = h W_hh^T + b_hh, gate
    order r, z, n: n = tanh(xg_n + r * hg_n), h' = (1 - z) * n + z * h (torch's b_hn placement).
    The workspace holds r, z, n and hg_n."""
    _name = "ThnnFusedGruCellBackward0"
    nondiff = (1,)

    @staticmethod
    def forward(ctx, xg, hg, h):
        n = h.shape[-1]
        ws = np.empty(xg.shape[:-1] + (4 * n,), dtype=xg.dtype)
        ws[:, :2 * n] = _sigmoid_kernel(xg[:, :2 * n] + hg[:, :2 * n])
        r = ws[:, :n]
        z = ws[:, n:2 * n]
        hn = hg[:, 2 * n:]
        ws[:, 3 * n:] = hn
        new = ws[:, 2 * n:3 * n]
        np.multiply(r, hn, out=new)
        new += xg[:, 2 * n:]
        np.tanh(new, out=new)
        h_new = h - new
        h_new *= z
        h_new += new
        ctx.save_for_backward(ws, h)
        return h_new, ws

    def backward(ctx, gh, gw):
        ws, h = ctx.saved_tensors
        if _state.enabled:
            return _gru_gates_backward_graph(ws, h, gh, gw)
        return _gru_gates_backward_kernel(ws._data, h._data, gh, gw)


def _gru_gates_backward_kernel(ws, h, gh, gw):
    n = h.shape[-1]
    r = ws[:, :n]
    z = ws[:, n:2 * n]
    new = ws[:, 2 * n:3 * n]
    hn = ws[:, 3 * n:]
    gh = np.zeros_like(h) if gh is None else gh._data
    dn = gh * (1 - z)
    dz = gh * (h - new)
    dr = None
    dhn_extra = None
    if gw is not None:
        gw = gw._data
        dr = gw[:, :n]
        dz += gw[:, n:2 * n]
        dn += gw[:, 2 * n:3 * n]
        dhn_extra = gw[:, 3 * n:]
    dn *= 1 - new * new
    dr = dn * hn if dr is None else dr + dn * hn
    dxg = np.empty(h.shape[:-1] + (3 * n,), dtype=h.dtype)
    dxg[:, :n] = dr * r * (1 - r)
    dxg[:, n:2 * n] = dz * z * (1 - z)
    dxg[:, 2 * n:] = dn
    dhg = dxg.copy()
    dhg[:, 2 * n:] *= r
    if dhn_extra is not None:
        dhg[:, 2 * n:] += dhn_extra
    return Tensor._make(dxg), Tensor._make(dhg), Tensor._make(gh * z)


def _gru_gates_backward_graph(ws, h, gh, gw):
    r, z, new, hn = ws.chunk(4, 1)
    if gh is None:
        gh = h * 0
    dn = gh * (1 - z)
    dz = gh * (h - new)
    dr = None
    dhn = None
    if gw is not None:
        gr, gz, gn, dhn = gw.chunk(4, 1)
        dr = gr
        dz = dz + gz
        dn = dn + gn
    dn = dn * (1 - new * new)
    dr = dn * hn if dr is None else dr + dn * hn
    dr = dr * r * (1 - r)
    dz = dz * z * (1 - z)
    dhg_n = dn * r if dhn is None else dn * r + dhn
    return cat([dr, dz, dn], 1), cat([dr, dz, dhg_n], 1), gh * z


def _gru_step(xg, hg, h):
    h, _ = _GRUGates.apply(xg, hg, h)
    _no_materialize(h)
    return h


# ---- single cells (torch.lstm_cell, ...) ----------------------------------------------

def _check_cell(input, hx, w_ih, name):
    """torch's checks of a cell's input and hidden sizes (check_rnn_cell_forward_input/hidden)."""
    shape = input._data.shape
    if len(shape) != 2:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-max(len(shape), 1)}, "
                         f"{max(len(shape), 1) - 1}], but got 1)")
    batch, features = shape
    if features != w_ih._data.shape[1]:
        raise RuntimeError(f"input has inconsistent input_size: got {features} expected {w_ih._data.shape[1]}")
    expected = w_ih._data.shape[0] // _CHUNKS[name]
    for k, h in enumerate(hx):
        shape = h._data.shape
        if batch != shape[0]:
            raise RuntimeError(f"Input batch size {batch} doesn't match hidden{k} batch size {shape[0]}")
        if shape[1] != expected:
            raise RuntimeError(f"hidden{k} has inconsistent hidden_size: got {shape[1]}, expected {expected}")


_CHUNKS = {"lstm": 4, "gru": 3, "rnn": 1}


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """torch.lstm_cell: (h', c') for one step; gate order i, f, g, o."""
    hx = tuple(hx)
    _check_cell(input, hx, w_ih, "lstm")
    return _lstm_step(_step_linear(input, w_ih, b_ih), _step_linear(hx[0], w_hh, b_hh), hx[1])


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """torch.gru_cell: h' for one step; gate order r, z, n."""
    _check_cell(input, (hx,), w_ih, "gru")
    return _gru_step(_step_linear(input, w_ih, b_ih), _step_linear(hx, w_hh, b_hh), hx)


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """torch.rnn_tanh_cell: tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)."""
    _check_cell(input, (hx,), w_ih, "rnn")
    return (_step_linear(input, w_ih, b_ih) + _step_linear(hx, w_hh, b_hh)).tanh()


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """torch.rnn_relu_cell: relu(x W_ih^T + b_ih + h W_hh^T + b_hh)."""
    _check_cell(input, (hx,), w_ih, "rnn")
    return (_step_linear(input, w_ih, b_ih) + _step_linear(hx, w_hh, b_hh)).relu()


# ---- one layer in one direction -------------------------------------------------------

class _Layer:
    """The weights of one layer in one direction and how a step uses them (see Note [RNN time loop])."""

    def __init__(self, mode, weights, has_biases, has_proj):
        self.mode = mode
        self.w_ih = weights[0]
        self.w_hh = weights[1]
        self.b_ih = weights[2] if has_biases else None
        self.b_hh = weights[3] if has_biases else None
        self.w_hr = weights[-1] if has_proj else None
        self._w_hh_t = None  # made on the first step (a whole-sequence LSTM never needs it)
        self._w_hr_t = None

    @property
    def w_hh_t(self):
        if self._w_hh_t is None:
            self._w_hh_t = _transposed(self.w_hh)
        return self._w_hh_t

    @property
    def w_hr_t(self):
        if self._w_hr_t is None and self.w_hr is not None:
            self._w_hr_t = _transposed(self.w_hr)
        return self._w_hr_t

    def project_inputs(self, x):
        """x @ W_ih^T + bias for all steps at once; GRU keeps b_hh per step (b_hn sits inside r * (...))."""
        bias = self.b_ih
        if bias is not None and self.mode != "GRU":
            bias = bias + self.b_hh
        return _linear(x, self.w_ih, bias)

    def loop_bias(self, x, h0, c0):
        """b_ih + b_hh, for a whole-sequence LSTM to add in its time loop (Note [LSTM bias in the loop]); None
        where the projection keeps it."""
        if self.mode != "LSTM" or self.b_ih is None or not self.whole_sequence(x, h0, c0):
            return None
        if not all(t._dtype is x._dtype for t in (self.w_ih, self.b_ih, self.b_hh)):
            return None
        return self.b_ih + self.b_hh

    def whole_sequence(self, xg, h0, c0):
        """Whether the sequence runs as one op (rnn_sequence.py): an LSTM without projection or a GRU,
        float32 or float64 throughout."""
        if self.mode == "GRU":
            state = (h0, self.w_hh) if self.b_hh is None else (h0, self.w_hh, self.b_hh)
        elif self.mode == "LSTM" and self.w_hr is None:
            state = (h0, c0, self.w_hh)
        else:
            return False
        return xg._dtype in _BLAS_DTYPES and all(t._dtype is xg._dtype for t in state)

    def step(self, xg, h, c):
        mode = self.mode
        if mode == "LSTM":
            h, c = _lstm_step(xg, _step_linear(h, self.w_hh, None, self.w_hh_t), c)
            if self.w_hr is not None:
                h = _step_linear(h, self.w_hr, None, self.w_hr_t)
            return h, c
        if mode == "GRU":
            return _gru_step(xg, _step_linear(h, self.w_hh, self.b_hh, self.w_hh_t), h), None
        pre = xg + _step_linear(h, self.w_hh, None, self.w_hh_t)
        return (pre.tanh() if mode == "RNN_TANH" else pre.relu()), None


def _run_direction(layer, x, h0, c0, batch_sizes, reverse):
    """Run one layer over x (T, B, in) or packed data (N, in) with batch_sizes; returns
    (outputs stacked like x, final h, final c)."""
    bias = layer.loop_bias(x, h0, c0)
    if bias is not None:
        xg = _linear(x, layer.w_ih, None)
        if xg._dtype is x._dtype:  # (under autocast the projection may change dtype: then it adds the bias itself)
            return lstm_sequence(xg, h0, c0, layer.w_hh, reverse, batch_sizes, bias)
    xg = layer.project_inputs(x)
    if layer.whole_sequence(xg, h0, c0):
        if layer.mode == "GRU":
            return gru_sequence(xg, h0, layer.w_hh, layer.b_hh, reverse, batch_sizes)
        return lstm_sequence(xg, h0, c0, layer.w_hh, reverse, batch_sizes)
    if batch_sizes is None:
        steps = unbind(xg, 0)
    else:
        steps = split_with_sizes(xg, batch_sizes, 0)
    n = len(steps)
    outs = [None] * n
    order = range(n - 1, -1, -1) if reverse else range(n)
    if batch_sizes is None:
        h, c = h0, c0
        for t in order:
            h, c = layer.step(steps[t], h, c)
            outs[t] = h
        return stack(outs, 0), h, c
    if reverse:
        return _run_packed_reverse(layer, steps, h0, c0, batch_sizes, outs)
    return _run_packed_forward(layer, steps, h0, c0, batch_sizes, outs)


def _run_packed_forward(layer, steps, h0, c0, batch_sizes, outs):
    """The batch shrinks as sequences end; an ended sequence's last state is its final state."""
    h, c = h0, c0
    ended_h = []
    ended_c = []
    for t, bs in enumerate(batch_sizes):
        cur = h.shape[0]
        if bs < cur:
            h, h_end = split_with_sizes(h, [bs, cur - bs], 0)
            ended_h.append(h_end)
            if c is not None:
                c, c_end = split_with_sizes(c, [bs, cur - bs], 0)
                ended_c.append(c_end)
        h, c = layer.step(steps[t], h, c)
        outs[t] = h
    h_n = cat([h] + ended_h[::-1], 0) if ended_h else h
    c_n = None
    if c is not None:
        c_n = cat([c] + ended_c[::-1], 0) if ended_c else c
    return cat(outs, 0), h_n, c_n


def _run_packed_reverse(layer, steps, h0, c0, batch_sizes, outs):
    """From the last step back: sequences join (with their initial state) as the batch grows."""
    n = len(batch_sizes)
    last = batch_sizes[-1]
    h = h0[:last] if last < h0.shape[0] else h0
    c = None if c0 is None else (c0[:last] if last < c0.shape[0] else c0)
    for t in range(n - 1, -1, -1):
        bs = batch_sizes[t]
        cur = h.shape[0]
        if bs > cur:
            h = cat([h, h0[cur:bs]], 0)
            if c is not None:
                c = cat([c, c0[cur:bs]], 0)
        h, c = layer.step(steps[t], h, c)
        outs[t] = h
    return cat(outs, 0), h, c


# ---- multi-layer runners (torch.lstm, torch.gru, torch.rnn_tanh, torch.rnn_relu) -----------

def _run(mode, input, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional,
         batch_first):
    """The shared body of torch.lstm/gru/rnn_*: returns (output, h_n, c_n or None)."""
    params = list(params)
    dirs = 2 if bidirectional else 1
    per_layer = len(params) // (num_layers * dirs)
    has_proj = mode == "LSTM" and per_layer == (5 if has_biases else 3)
    if mode == "LSTM":
        h0s = unbind(hx[0], 0)
        c0s = unbind(hx[1], 0)
    else:
        h0s = unbind(hx, 0)
        c0s = [None] * len(h0s)
    if batch_sizes is None:
        if input.shape[0 if not batch_first else 1] == 0:
            raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
        x = input.transpose(0, 1) if batch_first else input
        sizes = None
    else:
        x = input
        sizes = [int(s) for s in batch_sizes.tolist()]
    hs = []
    cs = []
    for layer_index in range(num_layers):
        outs = []
        for d in range(dirs):
            k = layer_index * dirs + d
            layer = _Layer(mode, params[k * per_layer:(k + 1) * per_layer], has_biases, has_proj)
            out, h, c = _run_direction(layer, x, h0s[k], c0s[k], sizes, reverse=d == 1)
            outs.append(out)
            hs.append(h)
            cs.append(c)
        x = outs[0] if dirs == 1 else cat(outs, -1)
        if dropout > 0 and train and layer_index < num_layers - 1:
            x = _functional().dropout(x, dropout, True)
    if batch_sizes is None and batch_first:  # torch's LSTM layer transposes its result, its GRU/RNN in place
        x = x.transpose(0, 1) if mode == "LSTM" else x.transpose_(0, 1)
    h_n = stack(hs, 0)
    c_n = stack(cs, 0) if mode == "LSTM" else None
    return x, h_n, c_n


def _dispatch(mode, args):
    """torch's two overloads: (input, hx, params, has_biases, num_layers, dropout, train,
    bidirectional, batch_first) and (data, batch_sizes, hx, params, has_biases, num_layers,
    dropout, train, bidirectional)."""
    packed = isinstance(args[1], Tensor) if mode == "LSTM" else isinstance(args[2], Tensor)
    if packed:
        data, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional = args
        return _run(mode, data, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional,
                    False)
    input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first = args
    return _run(mode, input, None, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)


def lstm(*args):
    """torch.lstm: (output, h_n, c_n); see Note [RNN time loop]."""
    return _dispatch("LSTM", args)


def gru(*args):
    """torch.gru: (output, h_n)."""
    return _dispatch("GRU", args)[:2]


def rnn_tanh(*args):
    """torch.rnn_tanh: (output, h_n)."""
    return _dispatch("RNN_TANH", args)[:2]


def rnn_relu(*args):
    """torch.rnn_relu: (output, h_n)."""
    return _dispatch("RNN_RELU", args)[:2]


for _fn in (lstm_cell, gru_cell, rnn_tanh_cell, rnn_relu_cell, lstm, gru, rnn_tanh, rnn_relu):
    install(_fn, _fn.__name__, method=False)
del _fn

from ..amp._dispatch import wrap as _autocast_wrap  # noqa: E402

# nn.RNN and nn.RNNCell call these through this module: their autocast policy applies there too
rnn_tanh, rnn_relu = _autocast_wrap(rnn_tanh, "rnn_tanh"), _autocast_wrap(rnn_relu, "rnn_relu")
rnn_tanh_cell = _autocast_wrap(rnn_tanh_cell, "rnn_tanh_cell")
rnn_relu_cell = _autocast_wrap(rnn_relu_cell, "rnn_relu_cell")
