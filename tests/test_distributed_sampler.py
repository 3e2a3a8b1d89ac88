"""ember.utils.data.DistributedSampler against torch's: index assignment, padding, drop_last, set_epoch.

Unshuffled assignments are compared with torch directly. Shuffled ones are compared with torch's sampler
fed ember's permutation for the same seed (torch.randperm replaced for the test), because ember's random
stream is not yet torch's; that still checks the seed + epoch seeding, padding and per-rank slicing, and the
invariants (a permutation, split into disjoint per-rank parts) are checked on their own.
"""
import itertools

import pytest
import torch
import torch.utils.data as tdata

import ember
import ember.utils.data as edata

CASES = [(n, replicas, drop_last) for n in (0, 1, 2, 5, 7, 10, 16, 23) for replicas in (1, 2, 3, 4, 8)
         for drop_last in (False, True)]


def per_rank(lib_data, n, replicas, **kw):
    return [list(lib_data.DistributedSampler(range(n), num_replicas=replicas, rank=r, **kw)) for r in range(replicas)]


@pytest.mark.parametrize("n,replicas,drop_last", CASES)
def test_unshuffled_assignment_matches_torch(n, replicas, drop_last):
    ours = per_rank(edata, n, replicas, shuffle=False, drop_last=drop_last)
    theirs = per_rank(tdata, n, replicas, shuffle=False, drop_last=drop_last)
    assert ours == theirs
    for r in range(replicas):
        e = edata.DistributedSampler(range(n), num_replicas=replicas, rank=r, shuffle=False, drop_last=drop_last)
        t = tdata.DistributedSampler(range(n), num_replicas=replicas, rank=r, shuffle=False, drop_last=drop_last)
        assert (len(e), e.num_samples, e.total_size) == (len(t), t.num_samples, t.total_size)


def ember_permutation_for_torch(n, generator=None, **kw):
    """Stands in for torch.randperm in torch's sampler: ember's permutation for the generator's seed."""
    g = ember.Generator()
    g.manual_seed(generator.initial_seed())
    return torch.tensor(ember.randperm(n, generator=g).tolist(), dtype=torch.int64)


@pytest.mark.parametrize("n,replicas,drop_last", [c for c in CASES if c[0] > 0])
@pytest.mark.parametrize("seed,epoch", [(0, 0), (7, 3)])
def test_shuffled_assignment_matches_torch_given_the_permutation(monkeypatch, n, replicas, drop_last, seed, epoch):
    def build(lib_data):
        samplers = [lib_data.DistributedSampler(range(n), num_replicas=replicas, rank=r, seed=seed,
                                                drop_last=drop_last) for r in range(replicas)]
        for s in samplers:
            s.set_epoch(epoch)
        return [list(s) for s in samplers]

    ours = build(edata)
    monkeypatch.setattr(torch, "randperm", ember_permutation_for_torch)
    assert ours == build(tdata)


@pytest.mark.parametrize("n,replicas", [(10, 3), (64, 4), (9, 2)])
def test_shuffled_parts_form_one_permutation_per_epoch(n, replicas):
    def parts(epoch, seed=0):
        out = []
        for r in range(replicas):
            s = edata.DistributedSampler(range(n), num_replicas=replicas, rank=r, seed=seed, drop_last=True)
            s.set_epoch(epoch)
            out.append(list(s))
        return out

    first = parts(0)
    flat = list(itertools.chain(*first))
    assert len(flat) == len(set(flat)) == (n // replicas) * replicas  # disjoint, drop_last trims the tail
    assert set(flat) <= set(range(n))
    assert first == parts(0)  # deterministic: every rank computes the same permutation
    assert first != parts(1)  # set_epoch reshuffles
    assert first != parts(0, seed=5)
    padded = [list(edata.DistributedSampler(range(n), num_replicas=replicas, rank=r)) for r in range(replicas)]
    assert set(itertools.chain(*padded)) == set(range(n))  # padding repeats, nothing is lost


def test_errors_match_torch():
    for lib_data in (edata, tdata):
        with pytest.raises(ValueError, match=r"Invalid rank 2, rank should be in the interval \[0, 1\]"):
            lib_data.DistributedSampler(range(4), num_replicas=2, rank=2)
        with pytest.raises(ValueError, match="Invalid rank -1"):
            lib_data.DistributedSampler(range(4), num_replicas=2, rank=-1)


def test_exported_where_torch_has_it():
    import ember.utils.data.distributed as module
    assert edata.DistributedSampler is module.DistributedSampler
    assert isinstance(edata.DistributedSampler(range(3), 1, 0), edata.Sampler)
    loader = edata.DataLoader(edata.TensorDataset(ember.arange(10)), batch_size=2,
                              sampler=edata.DistributedSampler(range(10), 2, 1, shuffle=False))
    assert [b[0].tolist() for b in loader] == [[1, 3], [5, 7], [9]]


@pytest.mark.parametrize("n,replicas", [(10, 3), (64, 4), (9, 2)])
def test_shuffled_parts_match_torch(n, replicas):
    """test_shuffled_parts_form_one_permutation_per_epoch against torch: every rank's indices, for each epoch, seed,
    drop_last and padding, and the lengths, are torch's."""
    def parts(data):
        out = []
        for epoch, seed, drop_last in ((0, 0, True), (1, 0, True), (0, 5, True), (0, 0, False), (3, 2, False)):
            for r in range(replicas):
                s = data.DistributedSampler(range(n), num_replicas=replicas, rank=r, seed=seed, drop_last=drop_last)
                s.set_epoch(epoch)
                out.append((list(s), len(s), s.total_size))
        return out
    assert parts(edata) == parts(tdata)


def test_distributed_sampler_in_a_loader_matches_torch():
    """test_exported_where_torch_has_it's loader on both libraries: the same batches."""
    def batches(lib, data):
        loader = data.DataLoader(data.TensorDataset(lib.arange(10)), batch_size=2,
                                 sampler=data.DistributedSampler(range(10), 2, 1, shuffle=False))
        return [b[0].tolist() for b in loader]
    assert batches(ember, edata) == batches(torch, tdata)
    assert isinstance(edata.DistributedSampler(range(3), 1, 0), edata.Sampler) == \
        isinstance(tdata.DistributedSampler(range(3), 1, 0), tdata.Sampler)
