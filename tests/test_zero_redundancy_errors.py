"""ZeroRedundancyOptimizer's argument errors against torch's, in one process without a process group (its
training behaviour is compared in the DDP harness, tests/_ddp_worker.py): the same exception types and
messages, including the one for a missing process group."""
import pytest
import torch
from torch.distributed.optim import ZeroRedundancyOptimizer as TorchZeRO

import ember
from ember.distributed.optim import ZeroRedundancyOptimizer as EmberZeRO

CASES = {
    "empty": lambda lib: [],
    "tensor": lambda lib: lib.ones(2, requires_grad=True),
    "not_iterable": lambda lib: 3,
    "mixed": lambda lib: [lib.ones(2, requires_grad=True), {"params": [lib.ones(2, requires_grad=True)]}],
    "no_params_key": lambda lib: [{"lr": 0.1}],
    "mixed_dtypes": lambda lib: [lib.ones(2, requires_grad=True), lib.ones(2, dtype=lib.float64, requires_grad=True)],
    "no_process_group": lambda lib: [lib.ones(2, requires_grad=True)],
}


@pytest.mark.parametrize("case", list(CASES))
def test_argument_errors_match_torch(case):
    outcomes = []
    for lib, zero in ((torch, TorchZeRO), (ember, EmberZeRO)):
        with pytest.raises(Exception) as caught:
            zero(CASES[case](lib), lib.optim.SGD, lr=0.1)
        outcomes.append((type(caught.value).__name__, str(caught.value).replace("ember", "torch")))
    assert outcomes[0] == outcomes[1]
