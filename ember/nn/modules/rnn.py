"""RNN, LSTM, GRU and their single-step cells. See https://pytorch.org/docs/stable/nn.html#recurrent-layers

Parameters are named and laid out as torch's (weight_ih_l0, weight_hh_l0_reverse, bias_ih_l0,
weight_hr_l0 ...; gate order i,f,g,o for LSTM and r,z,n for GRU), so a torch state_dict loads
as it is. The time loop is ember.lstm / gru / rnn_tanh / rnn_relu (ember/_ops/rnn.py).

Note [Recurrent state as a tuple]: RNN and GRU carry one state tensor h, LSTM a pair (h, c).
The shared forward works on a tuple of state tensors and converts at the edges with
_split_state / _join_state, so defaulting, unbatching and dimension checks are written once.
The user-facing hooks (check_forward_args, permute_hidden) always see the user's form.
"""
import math
import numbers
import warnings

from ..._ops import rnn as _rnn
from ..._ops.creation import empty, zeros
from ..._tensor import Tensor
from .. import init
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

# gate blocks stacked in each weight's rows; the kernel in ember._ops.rnn is named mode.lower()
_GATE_BLOCKS = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}

# extra_repr shows an option only when it differs from this default
_REPR_DEFAULTS = (("proj_size", 0), ("num_layers", 1), ("bias", True), ("batch_first", False), ("dropout", 0),
                  ("bidirectional", False))

_LSTM_ONLY_PROJ = "proj_size argument is only supported for LSTM, not RNN or GRU"


def _reorder_batch(state, order):
    """Pick the batch entries (dim 1) of one state tensor in `order`."""
    return state.index_select(1, order)


def _init_uniform_by_hidden(module):
    """Draw every parameter from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), in registration order."""
    hidden = module.hidden_size
    bound = 1.0 / math.sqrt(hidden) if hidden > 0 else 0
    for param in module.parameters():
        init.uniform_(param, -bound, bound)


def _pick(key, pairs):
    """The value paired with `key` (compared with ==, so any object may be asked), else None."""
    for candidate, value in pairs:
        if key == candidate:
            return value
    return None


def _differs_from_default(value, default):
    """Flags compare by identity (torch prints bidirectional=1), numbers by value."""
    if isinstance(default, bool):
        return value is not default
    return value != default


def _require_type(name, value, kind):
    if not isinstance(value, kind):
        raise TypeError(f"{name} should be of type {kind.__name__}, got: {type(value).__name__}")


def _require_positive(name, value):
    if value <= 0:
        raise ValueError(f"{name} must be greater than zero")


def _validate_rnn_args(input_size, hidden_size, num_layers, bias, batch_first, dropout, proj_size):
    """RNNBase's argument checks; the order decides which error a doubly bad call raises, as in torch."""
    if isinstance(dropout, bool) or not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1:
        raise ValueError("dropout should be a number in range [0, 1] representing the probability of an element "
                         "being zeroed")
    if dropout > 0 and num_layers == 1:
        # stacklevel 4: this helper, RNNBase.__init__, LSTM/GRU/RNN.__init__, the caller
        warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout expects "
                      f"num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                      stacklevel=4)
    _require_type("bias", bias, bool)
    _require_type("batch_first", batch_first, bool)
    for name, size in (("input_size", input_size), ("hidden_size", hidden_size)):
        _require_type(name, size, int)
        _require_positive(name, size)
    _require_positive("num_layers", num_layers)
    if proj_size < 0:
        raise ValueError("proj_size should be a positive integer or zero to disable projections")
    if proj_size >= hidden_size:
        raise ValueError("proj_size has to be smaller than hidden_size")


def _state_dim_error(states, want):
    """torch's error for an initial state whose dims do not match a batched (3) / unbatched (2) input."""
    kind = "batched 3-D" if want == 3 else "unbatched 2-D"
    if len(states) == 1:
        found = f"hx should also be {want}-D but got {states[0].dim()}-D tensor"
    else:
        dims = ", ".join(f"{s.dim()}-D" for s in states)
        found = f"hx and cx should also be {want}-D but got ({dims}) tensors"
    return RuntimeError(f"For {kind} input, {found}")


class RNNBase(Module):
    """The parameters, checks and the one forward shared by RNN, LSTM and GRU."""
    __constants__ = ["mode", "input_size", "hidden_size", "num_layers", "bias", "batch_first", "dropout",
                     "bidirectional", "proj_size"]
    # the ValueError for an input that is neither 2-D nor 3-D; each subclass words it as torch does
    _input_dim_message = "RNN: Expected input to be 2D or 3D, got {}D tensor instead"

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        _validate_rnn_args(input_size, hidden_size, num_layers, bias, batch_first, dropout, proj_size)
        if mode not in _GATE_BLOCKS:
            raise ValueError("Unrecognized RNN mode: " + mode)
        self._register_layer_weights(device, dtype)
        self._init_flat_weights()
        self.reset_parameters()

    def _register_layer_weights(self, device, dtype):
        """One group of parameters per (layer, direction), in torch's names and order."""
        rows = _GATE_BLOCKS[self.mode] * self.hidden_size
        out_width = self.proj_size or self.hidden_size
        suffixes = ("", "_reverse")[:self._num_directions()]
        flat, groups = [], []
        for layer in range(self.num_layers):
            in_width = out_width * len(suffixes) if layer else self.input_size
            shapes = {"weight_ih": (rows, in_width), "weight_hh": (rows, out_width)}
            if self.bias:
                shapes.update(bias_ih=(rows,), bias_hh=(rows,))
            if self.proj_size:
                shapes["weight_hr"] = (self.proj_size, self.hidden_size)
            for suffix in suffixes:
                group = [f"{stem}_l{layer}{suffix}" for stem in shapes]
                for name, shape in zip(group, shapes.values()):
                    setattr(self, name, Parameter(empty(shape, device=device, dtype=dtype)))
                flat += group
                groups.append(group)
        self._flat_weights_names = flat
        self._all_weights = groups

    def _num_directions(self):
        return 2 if self.bidirectional else 1

    def _init_flat_weights(self):
        """Rebuild the _flat_weights list from the current attributes (None for a missing one)."""
        self._flat_weights = [getattr(self, name, None) for name in self._flat_weights_names]

    def __setattr__(self, attr, value):
        names = self.__dict__.get("_flat_weights_names")
        if names is not None and attr in names:
            # reassigning a weight (rnn.weight_hh_l0 = ...) updates its slot in _flat_weights too
            self._flat_weights[names.index(attr)] = value
        super().__setattr__(attr, value)

    def flatten_parameters(self):
        """A no-op: torch compacts the weights into one cuDNN buffer; ember has none."""

    def _apply(self, fn, recurse=True):
        result = super()._apply(fn, recurse)
        self._init_flat_weights()  # .to() / .double() replace the parameters
        return result

    def reset_parameters(self):
        """Every parameter ~ U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
        _init_uniform_by_hidden(self)

    @property
    def all_weights(self):
        return [[getattr(self, name) for name in group] for group in self._all_weights]

    def _current_weights(self):
        """The weights as attributes now (functional_call may have swapped them since _flat_weights)."""
        return [getattr(self, name) for name in self._flat_weights_names]

    # ---- checks (torch's messages) ------------------------------------------------------
    def check_input(self, input, batch_sizes):
        expected_dtype = getattr(self, self._flat_weights_names[0]).dtype
        if input.dtype != expected_dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype ({expected_dtype}). "
                             f"Convert input: input.to({expected_dtype}), or convert model: model.to({input.dtype})")
        want_dims = 3 if batch_sizes is None else 2
        if input.dim() != want_dims:
            raise RuntimeError(f"input must have {want_dims} dimensions, got {input.dim()}")
        features = input.size(-1)
        if features != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {features}")

    def _state_shape(self, input, batch_sizes, width):
        """(layers * directions, batch, width): the shape an initial state must have for `input`."""
        if batch_sizes is None:
            batch = input.size(0 if self.batch_first else 1)
        else:
            batch = int(batch_sizes[0])
        return (self.num_layers * self._num_directions(), batch, width)

    def get_expected_hidden_size(self, input, batch_sizes):
        return self._state_shape(input, batch_sizes, self.proj_size or self.hidden_size)

    def check_hidden_size(self, hx, expected_hidden_size, msg="Expected hidden size {}, got {}"):
        got = tuple(hx.size())
        if got != expected_hidden_size:
            raise RuntimeError(msg.format(expected_hidden_size, list(got)))

    def check_forward_args(self, input, hidden, batch_sizes):
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx, permutation):
        return hx if permutation is None else _reorder_batch(hx, permutation)

    def extra_repr(self):
        shown = [f"{self.input_size}, {self.hidden_size}"]
        for name, default in _REPR_DEFAULTS:
            value = getattr(self, name)
            if _differs_from_default(value, default):
                shown.append(f"{name}={value}")
        return ", ".join(shown)

    # ---- forward (Note [Recurrent state as a tuple]) ------------------------------------
    def _split_state(self, hx):
        return (hx,)

    def _join_state(self, states):
        return states[0]

    def _state_widths(self):
        """Feature size of each state tensor, in _split_state's order."""
        return (self.hidden_size,)

    def _zero_state(self, input, batch):
        layers = self.num_layers * self._num_directions()
        return self._join_state([zeros(layers, batch, width, dtype=input.dtype) for width in self._state_widths()])

    def _run_kernel(self, input, batch_sizes, hx):
        """(output, final state) from the fused time loop; a packed input is passed with its batch_sizes."""
        kernel = getattr(_rnn, self.mode.lower())
        options = (self.bias, self.num_layers, self.dropout, self.training, self.bidirectional)
        if batch_sizes is None:
            result = kernel(input, hx, self._current_weights(), *options, self.batch_first)
        else:
            result = kernel(input, batch_sizes, hx, self._current_weights(), *options)
        return result[0], self._join_state(result[1:])

    def _forward_sequence(self, input, hx):
        """forward of RNN, GRU and LSTM: a PackedSequence, a batch (3-D) or one sequence (2-D)."""
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        if input.dim() not in (2, 3):
            raise ValueError(self._input_dim_message.format(input.dim()))
        batch_dim = 0 if self.batch_first else 1
        batched = input.dim() == 3
        if not batched:
            input = input.unsqueeze(batch_dim)
        if hx is None:
            hx = self._zero_state(input, input.size(batch_dim))
        else:
            hx = self._state_with_batch_dim(hx, batched)
        self.check_forward_args(input, hx, None)
        output, final = self._run_kernel(input, None, hx)
        if batched:
            return output, final
        squeezed = [state.squeeze(1) for state in self._split_state(final)]
        return output.squeeze(batch_dim), self._join_state(squeezed)

    def _state_with_batch_dim(self, hx, batched):
        """Check a user state against the input's batchedness; give an unbatched one its batch dim."""
        states = self._split_state(hx)
        want = 3 if batched else 2
        if any(state.dim() != want for state in states):
            raise _state_dim_error(states, want)
        if batched:
            return self._join_state(states)
        return self._join_state([state.unsqueeze(1) for state in states])

    def _forward_packed(self, packed, hx):
        """Run on the packed data; hx and the final state are in the caller's batch order."""
        data, batch_sizes, sorted_indices, unsorted_indices = packed
        if hx is None:
            hx = self._zero_state(data, int(batch_sizes[0]))
        else:
            hx = self.permute_hidden(hx, sorted_indices)
        self.check_forward_args(data, hx, batch_sizes)
        output, final = self._run_kernel(data, batch_sizes, hx)
        repacked = PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices)
        return repacked, self.permute_hidden(final, unsorted_indices)


class RNN(RNNBase):
    """Elman RNN: h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh) (or relu)."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError(_LSTM_ONLY_PROJ)
        # nonlinearity is the 4th positional argument here but not a parameter of RNNBase
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        mode = _pick(self.nonlinearity, (("tanh", "RNN_TANH"), ("relu", "RNN_RELU")))
        if mode is None:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(mode, *args, **kwargs)

    def forward(self, input, hx=None):
        return self._forward_sequence(input, hx)


class GRU(RNNBase):
    """Gated recurrent unit; gate order r, z, n with b_hn inside r * (...), as torch."""
    _input_dim_message = "GRU: Expected input to be 2D or 3D, got {}D instead"

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError(_LSTM_ONLY_PROJ)
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input, hx=None):
        return self._forward_sequence(input, hx)


class LSTM(RNNBase):
    """Long short-term memory; gate order i, f, g, o; proj_size > 0 projects h by weight_hr."""
    _input_dim_message = "LSTM: Expected input to be 2D or 3D, got {}D instead"

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input, batch_sizes):
        return self._state_shape(input, batch_sizes, self.hidden_size)

    def check_forward_args(self, input, hidden, batch_sizes):
        self.check_input(input, batch_sizes)
        for k, expected in enumerate((self.get_expected_hidden_size(input, batch_sizes),
                                      self.get_expected_cell_size(input, batch_sizes))):
            self.check_hidden_size(hidden[k], expected, f"Expected hidden[{k}] size {{}}, got {{}}")

    def permute_hidden(self, hx, permutation):
        if permutation is None:
            return hx
        return tuple(_reorder_batch(state, permutation) for state in (hx[0], hx[1]))

    def _split_state(self, hx):
        h, c = hx
        return h, c

    def _join_state(self, states):
        return tuple(states)

    def _state_widths(self):
        return (self.proj_size or self.hidden_size, self.hidden_size)

    def forward(self, input, hx=None):
        return self._forward_sequence(input, hx)


# ---- cells --------------------------------------------------------------------------------

def _check_cell_dims(label, what, tensor):
    if tensor.dim() not in (1, 2):
        raise ValueError(f"{label}: Expected {what} to be 1D or 2D, got {tensor.dim()}D instead")


class RNNCellBase(Module):
    """weight_ih (chunks*hidden, input), weight_hh (chunks*hidden, hidden), bias_ih, bias_hh."""
    __constants__ = ["input_size", "hidden_size", "bias"]

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        rows = num_chunks * hidden_size
        self.weight_ih = Parameter(empty((rows, input_size), device=device, dtype=dtype))
        self.weight_hh = Parameter(empty((rows, hidden_size), device=device, dtype=dtype))
        for name in ("bias_ih", "bias_hh"):
            # registered as None without bias, so the attributes exist either way
            self.register_parameter(name, Parameter(empty(rows, device=device, dtype=dtype)) if bias else None)
        self.reset_parameters()

    def extra_repr(self):
        # bias and nonlinearity are read from __dict__: a subclass may not define them
        fields = self.__dict__
        shown = f"{self.input_size}, {self.hidden_size}"
        if "bias" in fields and fields["bias"] is not True:
            shown += f", bias={fields['bias']}"
        if "nonlinearity" in fields and fields["nonlinearity"] != "tanh":
            shown += f", nonlinearity={fields['nonlinearity']}"
        return shown

    def reset_parameters(self):
        """Every parameter ~ U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
        _init_uniform_by_hidden(self)

    def _step(self, kernel, input, hx, paired=False):
        """Run `kernel` for one step; a 1-D input (and state) is a batch of one, squeezed on return.
        `paired` marks LSTMCell's (h, c) state."""
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
        if hx is None:
            blank = zeros(input.size(0), self.hidden_size, dtype=input.dtype)
            hx = (blank, blank) if paired else blank
        elif not batched:
            hx = (hx[0].unsqueeze(0), hx[1].unsqueeze(0)) if paired else hx.unsqueeze(0)
        result = kernel(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        if batched:
            return result
        return (result[0].squeeze(0), result[1].squeeze(0)) if paired else result.squeeze(0)


class RNNCell(RNNCellBase):
    """One Elman step: h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (or relu)."""
    __constants__ = ["input_size", "hidden_size", "bias", "nonlinearity"]

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        _check_cell_dims("RNNCell", "input", input)
        if isinstance(hx, Tensor):
            _check_cell_dims("RNNCell", "hidden", hx)
        kernel = _pick(self.nonlinearity, (("tanh", _rnn.rnn_tanh_cell), ("relu", _rnn.rnn_relu_cell)))
        if kernel is None:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        return self._step(kernel, input, hx)


class LSTMCell(RNNCellBase):
    """One LSTM step: (h', c') from (h, c); gate order i, f, g, o."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        _check_cell_dims("LSTMCell", "input", input)
        for k, state in enumerate(() if hx is None else hx):
            _check_cell_dims("LSTMCell", f"hx[{k}]", state)
        return self._step(_rnn.lstm_cell, input, hx, paired=True)


class GRUCell(RNNCellBase):
    """One GRU step: h' from h; gate order r, z, n."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        _check_cell_dims("GRUCell", "input", input)
        if isinstance(hx, Tensor):
            _check_cell_dims("GRUCell", "hidden", hx)
        return self._step(_rnn.gru_cell, input, hx)
