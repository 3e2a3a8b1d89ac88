"""Every public function and method takes torch's parameter names as keywords, and refuses what
torch refuses (issue 14): checked on the real calls of the op table, and on calls built from
torch's signatures for the public ops the table does not call, each re-issued with as many
arguments as possible passed by torch's own names (tests/keyword_calls.py), on torch and ember."""
import warnings

import numpy as np
import pytest
import torch

import ember
from tests import keyword_calls as K
from tests.ops.cases import all_cases

# Deliberate differences, (namespace, name) -> why ember does not take the keyword form torch takes.
_SCALAR_SELF = ("the Scalar-first overload spells its first argument self= (torch.pow(self=2, exponent=t)); "
                "ember's one signature names it input=, as every Tensor-first overload does")
DELIBERATE = {
    ("torch", "pow"): _SCALAR_SELF,
    ("torch", "float_power"): _SCALAR_SELF,
    ("torch", "remainder"): _SCALAR_SELF,
    ("torch", "xlogy"): _SCALAR_SELF,
    ("torch", "where"): _SCALAR_SELF,
    ("torch", "searchsorted"): _SCALAR_SELF,
}

# Calls torch refuses with TypeError that ember accepts, (namespace, name) -> why (none left: x.sum(torch.float64)
# and x.scatter_(0, index, src, 'add') are refused now, tests/test_bad_input.py).
DELIBERATE_REJECTIONS = {}


class _Built:
    """The case options of a call built from torch's signature (values compared)."""
    check_values = True


@pytest.fixture(scope="module")
def recorded():
    """(case, call) for every public torch call the op table's rows make (first dtype of each row),
    then calls built from torch's signatures for the public ops the table does not call."""
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for case in all_cases():
            if case.error is None:
                out.extend((case, c) for c in K.record(case, case.dtypes[0]))
        seen = {loc for _, (loc, _, _) in out}
        for loc in K.public_ops():
            if loc not in seen:
                out.extend((_Built, (loc,) + call) for call in K.synthesized_calls(loc))
    return out


def _failures(recorded, forms, check):
    seen, failures, apis = set(), {}, set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for case, (loc, args, kwargs) in recorded:
            for form in forms(loc, args, kwargs):
                key = (loc, K.spell(loc, *form))
                if key in seen:
                    continue
                seen.add(key)
                apis.add(loc)
                problem = check(case, loc, (args, kwargs), form)
                if problem is not None:
                    failures.setdefault(loc, []).append(problem)
    return failures, apis, len(seen)


def test_keyword_forms(recorded):
    """Each call re-issued with torch's keyword names works on ember where it works on torch."""
    failures, apis, n = _failures(recorded, K.keyword_forms, K.check_form)
    assert len(apis) >= 720 and n >= 2000, f"only {n} keyword forms of {len(apis)} APIs checked"
    unexpected = {loc: f for loc, f in failures.items() if loc not in DELIBERATE}
    assert not unexpected, "\n".join(f[0] for f in unexpected.values())
    stale = [loc for loc in DELIBERATE if loc not in failures]
    assert not stale, f"DELIBERATE entries that now pass: {stale}"


def test_rejected_forms(recorded):
    """Unknown keywords and keyword-only arguments given positionally: TypeError where torch raises it."""
    failures, apis, n = _failures(recorded, K.rejected_forms,
                                  lambda case, loc, call, form: K.check_rejected(loc, *form))
    assert len(apis) >= 950, f"only {n} refused forms of {len(apis)} APIs checked"
    unexpected = {loc: f for loc, f in failures.items() if loc not in DELIBERATE_REJECTIONS}
    assert not unexpected, "\n".join(f[0] for f in unexpected.values())
    stale = [loc for loc in DELIBERATE_REJECTIONS if loc not in failures]
    assert not stale, f"DELIBERATE_REJECTIONS entries that now pass: {stale}"


@pytest.mark.parametrize("call", [
    lambda t, x: t.empty(size=(2, 3)).shape,
    lambda t, x: t.zeros(size=[2, 3], dtype=t.float64),
    lambda t, x: x.split(split_size=[2, 4], dim=0),
    lambda t, x: t.split(x, split_size_or_sections=2),
    lambda t, x: x.flip(dims=(1,)),
    lambda t, x: x.view(size=(3, 6)),
    lambda t, x: x.reshape(shape=(2, 9)),
    lambda t, x: x.permute(dims=(1, 0)),
    lambda t, x: t.swapaxes(x, axis0=0, axis1=1),
    lambda t, x: x.sum(axis=1, keepdims=True),
    lambda t, x: t.linalg.vector_norm(input=x, ord=1),
], ids=["empty-size", "zeros-size", "Tensor.split", "split", "flip-dims", "view-size", "reshape-shape", "permute-dims",
        "swapaxes", "sum-axis", "vector_norm"])
def test_issue_examples(call):
    """The examples of issue 14, and the kind of call third-party code makes."""
    a = np.arange(18.0).reshape(6, 3)
    t_out = call(torch, torch.from_numpy(a))
    e_out = call(ember, ember.from_numpy(a))
    if isinstance(t_out, torch.Size):
        assert tuple(t_out) == tuple(e_out)
        return
    t_out = t_out if isinstance(t_out, tuple) else (t_out,)
    e_out = e_out if isinstance(e_out, tuple) else (e_out,)
    assert len(t_out) == len(e_out)
    for p, q in zip(t_out, e_out):
        assert str(p.dtype) == str(q.dtype)
        np.testing.assert_array_equal(q.numpy(), p.numpy())


def test_mixed_varargs_and_keyword():
    """Sizes given both ways: TypeError on both."""
    for lib in (torch, ember):
        x = lib.ones(2, 3)
        with pytest.raises(TypeError):
            x.view(3, 2, size=(3, 2))
        with pytest.raises(TypeError):
            lib.zeros(2, size=(2,))
