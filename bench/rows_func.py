"""torch.func rows: per-sample gradients by vmap(grad(loss)) of a small MLP.

Two rows time the same program: ember's vectorized vmap (batching rules, Note [Vectorized vmap]
in ember/func/_batched.py) and ember's per-sample loop (the fallback path, forced), each against
torch.func.vmap; their ember figures side by side are the vectorization's gain.
"""
import numpy as np

from bench.harness import row


def _per_sample_grads(vectorize):
    def build(lib, batch=64):
        rng = np.random.default_rng(0)
        sizes = [(128, 32), (128,), (10, 128), (10,)]
        params = {k: lib.from_numpy(rng.standard_normal(s, dtype=np.float32) * 0.1)
                  for k, s in zip(("w1", "b1", "w2", "b2"), sizes)}
        x = lib.from_numpy(rng.standard_normal((batch, 32), dtype=np.float32))
        y = lib.from_numpy(rng.integers(0, 10, batch))
        F = lib.nn.functional

        def loss(p, x, y):
            h = F.relu(F.linear(x.unsqueeze(0), p["w1"], p["b1"]))
            return F.cross_entropy(F.linear(h, p["w2"], p["b2"]), y.unsqueeze(0))
        if lib.__name__ == "ember" and not vectorize:
            from ember.func._vmap import _vmap
            fn = _vmap(lib.func.grad(loss), (None, 0, 0), 0, "error", None, False)
        else:
            fn = lib.func.vmap(lib.func.grad(loss), in_dims=(None, 0, 0))
        return lambda: fn(params, x, y)
    return build


row("vmap(grad) per-sample gradients, MLP 32-128-10, batch 64", "extra", "time", "ms",
    note="ember's vectorized vmap (batching rules)", smoke={"batch": 4})(_per_sample_grads(True))
row("vmap(grad) per-sample gradients, MLP 32-128-10, batch 64, ember per-sample loop", "extra", "time", "ms",
    note="the same program with ember's per-sample loop forced (the fallback path)", smoke={"batch": 4})(
    _per_sample_grads(False))
