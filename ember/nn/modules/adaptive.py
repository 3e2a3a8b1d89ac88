"""AdaptiveLogSoftmaxWithLoss: the efficient softmax of Grave et al. for large output spaces. The most frequent
classes (below cutoffs[0]) and one entry per tail cluster share a head linear layer; a target in cluster i adds
the log-probability of its class within the cluster, from a two-layer projection narrowed by div_value ** (i+1).
See https://pytorch.org/docs/stable/generated/torch.nn.AdaptiveLogSoftmaxWithLoss.html"""
from collections import namedtuple

from ..._ops.joining import cat
from .. import functional as F
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """forward(input, target) -> (output, loss): output the log-probability of each target (N,), loss its negated
    mean; log_prob(input) every class's log-probability (N, n_classes); predict(input) the most likely class."""

    def __init__(self, in_features, n_classes, cutoffs, div_value=4.0, head_bias=False, device=None, dtype=None):
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted in an increasing "
                             "order, where each value is between 1 and n_classes-1")
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, device=device, dtype=dtype)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            width = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hidden, bias=False, device=device, dtype=dtype),
                                        Linear(hidden, width, bias=False, device=device, dtype=dtype)))

    def reset_parameters(self):
        self.head.reset_parameters()
        for into_hidden, into_cluster in self.tail:
            into_hidden.reset_parameters()
            into_cluster.reset_parameters()

    def forward(self, input_, target_):
        if target_.dim() == 1:
            if input_.size(0) != target_.size(0):
                raise RuntimeError("Input and target should have the same size in the batch dimension.")
            if input_.dim() != 2:
                raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with size "
                                   f"{input_.size()}")
        elif target_.dim() == 0:
            if input_.dim() != 1:
                raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with size "
                                   f"{input_.size()}")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        batched = target_.dim() > 0
        input = input_ if batched else input_.unsqueeze(0)
        target = target_ if batched else target_.unsqueeze(0)
        output = input.new_zeros(target.size(0))
        # the head's column each row reads: its own class in the shortlist, else its cluster's entry
        head_column = target.clone()
        covered = 0
        for i in range(self.n_clusters + 1):
            low = 0 if i == 0 else self.cutoffs[i - 1]
            high = self.cutoffs[i]
            mask = (target >= low) & (target < high)
            rows = mask.nonzero().squeeze(1)
            if rows.numel() == 0:
                continue
            covered += rows.numel()
            if i == 0:
                continue
            head_column.index_fill_(0, rows, self.shortlist_size + i - 1)
            cluster = F.log_softmax(self.tail[i - 1](input.index_select(0, rows)), dim=1)
            within = cluster.gather(1, (target[mask] - low).unsqueeze(1)).squeeze(1)
            output = output.index_copy(0, rows, within)
        if covered != target.size(0):
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                               f"[{target.min().item()}, {target.max().item()}] were found. ")
        head = F.log_softmax(self.head(input), dim=1)
        output = output + head.gather(1, head_column.unsqueeze(1)).squeeze(1)
        loss = (-output).mean()
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    def _full_log_prob(self, input, head_output):
        """Every class's log-probability: the head's for the shortlist, cluster + cluster entry for the tails."""
        head = F.log_softmax(head_output, dim=1)
        parts = [head[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster = F.log_softmax(self.tail[i](input), dim=1)
            parts.append(cluster + head[:, self.shortlist_size + i].unsqueeze(1))
        return cat(parts, dim=1)

    def log_prob(self, input):
        """log-probabilities of all n_classes for each row of input (N, in_features)."""
        return self._full_log_prob(input, self.head(input))

    def predict(self, input):
        """The most likely class of each row of input (N, in_features): the head's argmax where it is in the
        shortlist, else the argmax of the full log-probabilities (computed only for those rows)."""
        head_output = self.head(input)
        out = head_output.argmax(dim=1)
        tail = out >= self.shortlist_size
        if not tail.any():
            return out
        if tail.all():
            return self._full_log_prob(input, head_output).argmax(dim=1)
        out[tail] = self._full_log_prob(input[tail], head_output[tail]).argmax(dim=1)
        return out
