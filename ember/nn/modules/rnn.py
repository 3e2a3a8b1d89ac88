"""RNN, LSTM, GRU and their single-step cells. See https://pytorch.org/docs/stable/nn.html#recurrent-layers

Parameters are named and laid out as torch's (weight_ih_l0, weight_hh_l0_reverse, bias_ih_l0,
weight_hr_l0 ...; gate order i,f,g,o for LSTM and r,z,n for GRU), so a torch state_dict loads
as it is. The time loop is ember.lstm / gru / rnn_tanh / rnn_relu (ember/_ops/rnn.py).
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

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _apply_permutation(tensor, permutation, dim=1):
    return tensor.index_select(dim, permutation)


class RNNBase(Module):
    """The parameters, checks and packed/unbatched handling shared by RNN, LSTM and GRU."""
    __constants__ = ["mode", "input_size", "hidden_size", "num_layers", "bias", "batch_first", "dropout",
                     "bidirectional", "proj_size"]

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
        num_directions = 2 if bidirectional else 1
        _check_sizes(mode, input_size, hidden_size, num_layers, bias, batch_first, dropout, proj_size)
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        gate_size = _GATES[mode] * hidden_size
        self._flat_weights_names = []
        self._all_weights = []
        real_hidden_size = proj_size if proj_size > 0 else hidden_size
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input_size = input_size if layer == 0 else real_hidden_size * num_directions
                suffix = "_reverse" if direction == 1 else ""
                shapes = [("weight_ih", (gate_size, layer_input_size)), ("weight_hh", (gate_size, real_hidden_size))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size > 0:
                    shapes += [("weight_hr", (proj_size, hidden_size))]
                names = []
                for stem, shape in shapes:
                    name = f"{stem}_l{layer}{suffix}"
                    setattr(self, name, Parameter(empty(shape, device=device, dtype=dtype)))
                    names.append(name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self._init_flat_weights()
        self.reset_parameters()

    def _init_flat_weights(self):
        self._flat_weights = [getattr(self, name) if hasattr(self, name) else None
                              for name in self._flat_weights_names]

    def __setattr__(self, attr, value):
        if "_flat_weights_names" in self.__dict__ and attr in self._flat_weights_names:
            self._flat_weights[self._flat_weights_names.index(attr)] = value
        super().__setattr__(attr, value)

    def flatten_parameters(self):
        """A no-op: torch compacts the weights into one cuDNN buffer; ember has none."""

    def _apply(self, fn, recurse=True):
        ret = super()._apply(fn, recurse)
        self._init_flat_weights()
        return ret

    def reset_parameters(self):
        """Every parameter ~ U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    @property
    def all_weights(self):
        return [[getattr(self, weight) for weight in weights] for weights in self._all_weights]

    def _weights(self):
        return [getattr(self, name) for name in self._flat_weights_names]

    # ---- checks (torch's messages) ------------------------------------------------------
    def check_input(self, input, batch_sizes):
        weight_dtype = getattr(self, self._flat_weights_names[0]).dtype
        if input.dtype != weight_dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype ({weight_dtype}). "
                             f"Convert input: input.to({weight_dtype}), or convert model: model.to({input.dtype})")
        expected_input_dim = 2 if batch_sizes is not None else 3
        if input.dim() != expected_input_dim:
            raise RuntimeError(f"input must have {expected_input_dim} dimensions, got {input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {input.size(-1)}")

    def get_expected_hidden_size(self, input, batch_sizes):
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        num_directions = 2 if self.bidirectional else 1
        size = self.proj_size if self.proj_size > 0 else self.hidden_size
        return (self.num_layers * num_directions, mini_batch, size)

    def check_hidden_size(self, hx, expected_hidden_size, msg="Expected hidden size {}, got {}"):
        if tuple(hx.size()) != expected_hidden_size:
            raise RuntimeError(msg.format(expected_hidden_size, list(hx.size())))

    def check_forward_args(self, input, hidden, batch_sizes):
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx, permutation):
        if permutation is None:
            return hx
        return _apply_permutation(hx, permutation)

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    # ---- forward ------------------------------------------------------------------------
    def _zeros_state(self, input, batch, size):
        num_directions = 2 if self.bidirectional else 1
        return zeros(self.num_layers * num_directions, batch, size, dtype=input.dtype)

    def _prepare(self, input, hx):
        """(input, hx, batch_sizes, sorted_indices, unsorted_indices, unbatched batch dim or None)
        for a single-tensor state (RNN, GRU)."""
        name = {"GRU": "GRU", "LSTM": "LSTM"}.get(self.mode, "RNN")
        if isinstance(input, PackedSequence):
            input, batch_sizes, sorted_indices, unsorted_indices = input
            if hx is None:
                hx = self._zeros_state(input, int(batch_sizes[0]), self.hidden_size)
            else:
                hx = self.permute_hidden(hx, sorted_indices)
            self.check_forward_args(input, hx, batch_sizes)
            return input, hx, batch_sizes, sorted_indices, unsorted_indices, None
        if input.dim() not in (2, 3):
            what = "tensor instead" if name == "RNN" else "instead"
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D {what}")
        batch_dim = 0 if self.batch_first else 1
        unbatched = None
        if input.dim() == 2:
            unbatched = batch_dim
            input = input.unsqueeze(batch_dim)
            if hx is not None:
                if hx.dim() != 2:
                    raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got {hx.dim()}-D tensor")
                hx = hx.unsqueeze(1)
        elif hx is not None and hx.dim() != 3:
            raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got {hx.dim()}-D tensor")
        if hx is None:
            hx = self._zeros_state(input, input.size(batch_dim), self.hidden_size)
        self.check_forward_args(input, hx, None)
        return input, hx, None, None, None, unbatched

    def _single_state_forward(self, fn, input, hx):
        orig_input = input
        input, hx, batch_sizes, sorted_indices, unsorted_indices, unbatched = self._prepare(input, hx)
        weights = self._weights()
        if batch_sizes is None:
            output, hidden = fn(input, hx, weights, self.bias, self.num_layers, self.dropout, self.training,
                                self.bidirectional, self.batch_first)
        else:
            output, hidden = fn(input, batch_sizes, hx, weights, self.bias, self.num_layers, self.dropout,
                                self.training, self.bidirectional)
        if isinstance(orig_input, PackedSequence):
            return PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices), \
                self.permute_hidden(hidden, unsorted_indices)
        if unbatched is not None:
            output = output.squeeze(unbatched)
            hidden = hidden.squeeze(1)
        return output, self.permute_hidden(hidden, unsorted_indices)


def _check_sizes(mode, input_size, hidden_size, num_layers, bias, batch_first, dropout, proj_size):
    """torch's argument checks for RNNBase, in its order."""
    if not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 or isinstance(dropout, bool):
        raise ValueError("dropout should be a number in range [0, 1] representing the probability of an element "
                         "being zeroed")
    if dropout > 0 and num_layers == 1:
        warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout expects "
                      f"num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                      stacklevel=4)
    if not isinstance(bias, bool):
        raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
    if not isinstance(batch_first, bool):
        raise TypeError(f"batch_first should be of type bool, got: {type(batch_first).__name__}")
    if not isinstance(input_size, int):
        raise TypeError(f"input_size should be of type int, got: {type(input_size).__name__}")
    if input_size <= 0:
        raise ValueError("input_size must be greater than zero")
    if not isinstance(hidden_size, int):
        raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
    if hidden_size <= 0:
        raise ValueError("hidden_size must be greater than zero")
    if num_layers <= 0:
        raise ValueError("num_layers must be greater than zero")
    if proj_size < 0:
        raise ValueError("proj_size should be a positive integer or zero to disable projections")
    if proj_size >= hidden_size:
        raise ValueError("proj_size has to be smaller than hidden_size")


class RNN(RNNBase):
    """Elman RNN: h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh) (or relu)."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(mode, *args, **kwargs)

    def forward(self, input, hx=None):
        fn = _rnn.rnn_tanh if self.mode == "RNN_TANH" else _rnn.rnn_relu
        return self._single_state_forward(fn, input, hx)


class GRU(RNNBase):
    """Gated recurrent unit; gate order r, z, n with b_hn inside r * (...), as torch."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input, hx=None):
        return self._single_state_forward(_rnn.gru, input, hx)


class LSTM(RNNBase):
    """Long short-term memory; gate order i, f, g, o; proj_size > 0 projects h by weight_hr."""

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input, batch_sizes):
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        num_directions = 2 if self.bidirectional else 1
        return (self.num_layers * num_directions, mini_batch, self.hidden_size)

    def check_forward_args(self, input, hidden, batch_sizes):
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def permute_hidden(self, hx, permutation):
        if permutation is None:
            return hx
        return _apply_permutation(hx[0], permutation), _apply_permutation(hx[1], permutation)

    def forward(self, input, hx=None):
        orig_input = input
        real_hidden_size = self.proj_size if self.proj_size > 0 else self.hidden_size
        unbatched = None
        if isinstance(orig_input, PackedSequence):
            input, batch_sizes, sorted_indices, unsorted_indices = input
            batch = int(batch_sizes[0])
            if hx is None:
                hx = (self._zeros_state(input, batch, real_hidden_size),
                      self._zeros_state(input, batch, self.hidden_size))
            else:
                hx = self.permute_hidden(hx, sorted_indices)
            self.check_forward_args(input, hx, batch_sizes)
        else:
            if input.dim() not in (2, 3):
                raise ValueError(f"LSTM: Expected input to be 2D or 3D, got {input.dim()}D instead")
            batch_sizes = sorted_indices = unsorted_indices = None
            batch_dim = 0 if self.batch_first else 1
            if input.dim() == 2:
                unbatched = batch_dim
                input = input.unsqueeze(batch_dim)
            batch = input.size(batch_dim)
            if hx is None:
                hx = (self._zeros_state(input, batch, real_hidden_size),
                      self._zeros_state(input, batch, self.hidden_size))
            else:
                hx = _lstm_state_dims(hx, unbatched is None)
            self.check_forward_args(input, hx, None)
        weights = self._weights()
        if batch_sizes is None:
            output, h_n, c_n = _rnn.lstm(input, hx, weights, self.bias, self.num_layers, self.dropout,
                                         self.training, self.bidirectional, self.batch_first)
        else:
            output, h_n, c_n = _rnn.lstm(input, batch_sizes, hx, weights, self.bias, self.num_layers,
                                         self.dropout, self.training, self.bidirectional)
        if isinstance(orig_input, PackedSequence):
            return PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices), \
                self.permute_hidden((h_n, c_n), unsorted_indices)
        if unbatched is not None:
            output = output.squeeze(unbatched)
            h_n = h_n.squeeze(1)
            c_n = c_n.squeeze(1)
        return output, (h_n, c_n)


def _lstm_state_dims(hx, batched):
    """Check (h_0, c_0) have 3 (batched) or 2 (unbatched) dims; add the batch dim when unbatched."""
    h, c = hx
    if batched:
        if h.dim() != 3 or c.dim() != 3:
            raise RuntimeError(f"For batched 3-D input, hx and cx should also be 3-D but got ({h.dim()}-D, "
                               f"{c.dim()}-D) tensors")
        return h, c
    if h.dim() != 2 or c.dim() != 2:
        raise RuntimeError(f"For unbatched 2-D input, hx and cx should also be 2-D but got ({h.dim()}-D, "
                           f"{c.dim()}-D) tensors")
    return h.unsqueeze(1), c.unsqueeze(1)


# ---- cells --------------------------------------------------------------------------------

class RNNCellBase(Module):
    """weight_ih (chunks*hidden, input), weight_hh (chunks*hidden, hidden), bias_ih, bias_hh."""
    __constants__ = ["input_size", "hidden_size", "bias"]

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(empty((num_chunks * hidden_size, input_size), device=device, dtype=dtype))
        self.weight_hh = Parameter(empty((num_chunks * hidden_size, hidden_size), device=device, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(empty(num_chunks * hidden_size, device=device, dtype=dtype))
            self.bias_hh = Parameter(empty(num_chunks * hidden_size, device=device, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def reset_parameters(self):
        """Every parameter ~ U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _batch(self, input, hx, name, hidden_word="hidden"):
        """input as 2-D (and whether it was 1-D); checks torch's dims."""
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if hx is not None and isinstance(hx, Tensor) and hx.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected {hidden_word} to be 1D or 2D, got {hx.dim()}D instead")
        is_batched = input.dim() == 2
        return (input if is_batched else input.unsqueeze(0)), is_batched

    def _zeros(self, input):
        return zeros(input.size(0), self.hidden_size, dtype=input.dtype)


class RNNCell(RNNCellBase):
    """One Elman step: h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (or relu)."""
    __constants__ = ["input_size", "hidden_size", "bias", "nonlinearity"]

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        input, is_batched = self._batch(input, hx, "RNNCell")
        if hx is None:
            hx = self._zeros(input)
        elif not is_batched:
            hx = hx.unsqueeze(0)
        if self.nonlinearity == "tanh":
            ret = _rnn.rnn_tanh_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        elif self.nonlinearity == "relu":
            ret = _rnn.rnn_relu_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        else:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        return ret if is_batched else ret.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step: (h', c') from (h, c); gate order i, f, g, o."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        if input.dim() not in (1, 2):
            raise ValueError(f"LSTMCell: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if hx is not None:
            for idx, value in enumerate(hx):
                if value.dim() not in (1, 2):
                    raise ValueError(f"LSTMCell: Expected hx[{idx}] to be 1D or 2D, got {value.dim()}D instead")
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
        if hx is None:
            z = self._zeros(input)
            hx = (z, z)
        elif not is_batched:
            hx = (hx[0].unsqueeze(0), hx[1].unsqueeze(0))
        h, c = _rnn.lstm_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        if not is_batched:
            return h.squeeze(0), c.squeeze(0)
        return h, c


class GRUCell(RNNCellBase):
    """One GRU step: h' from h; gate order r, z, n."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        input, is_batched = self._batch(input, hx, "GRUCell")
        if hx is None:
            hx = self._zeros(input)
        elif not is_batched:
            hx = hx.unsqueeze(0)
        ret = _rnn.gru_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return ret if is_batched else ret.squeeze(0)
