"""torch.distributed's backend names without a process group, against torch: Backend's parsing and
get_default_backend_for_device (values and error types)."""
import pytest
import torch
import torch.distributed as tdist

import ember
import ember.distributed as edist


def _outcome(fn, *args):
    try:
        return repr(fn(*args))
    except Exception as e:  # the type is what must match
        return type(e).__name__


@pytest.mark.parametrize("device", ["cpu", "cuda", "cuda:1", "xpu", "mps", "meta", "mtia", "no_such_device", None,
                                    ("cpu",), ("cuda", 1)])
def test_default_backend_for_device_matches_torch(device):
    if isinstance(device, tuple):  # a device object
        t, e = _outcome(tdist.get_default_backend_for_device, torch.device(*device)), \
            _outcome(edist.get_default_backend_for_device, ember.device(*device))
    else:
        t, e = _outcome(tdist.get_default_backend_for_device, device), \
            _outcome(edist.get_default_backend_for_device, device)
    assert e == t


def test_default_map_and_backend_names_match_torch():
    # torch's map also gains entries when some of its modules are imported (FSDP's adds 'hpu': 'fake')
    assert edist.Backend.default_device_backend_map.items() <= tdist.Backend.default_device_backend_map.items()
    for name in ("gloo", "GLOO", "mpi", "nccl", "cpu:gloo,cuda:nccl", "bogus", 3):
        assert _outcome(edist.Backend, name) == _outcome(tdist.Backend, name), name
        if isinstance(name, str) and name != "mpi":  # torch's CPU build has no MPI; ember runs on it
            assert edist.is_backend_available(name) == tdist.is_backend_available(name), name
