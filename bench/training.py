"""One training step (forward + loss + backward + optimizer step) of each model in models.py.

`BUILDERS[name](lib) -> (step, items)`: builds the model with `lib`, loads the shared initial
weights, makes the batch from NumPy, and returns the step and the items it processes (images,
target tokens or samples) for a throughput figure.
"""
import numpy as np

from bench import models

BATCH = 32


def _sgd(lib, model):
    return lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)


def _step(model, opt, loss_of):
    def step():
        opt.zero_grad()
        loss = loss_of(model)
        loss.backward()
        opt.step()
    return step


def _image_classifier(make, size, classes):
    def build(lib, batch=BATCH):
        model = models.share_weights(lib, make(lib, num_classes=classes), make.__name__)
        model.train()
        x_np, y_np = models.np_images(batch, size, classes)
        x = lib.from_numpy(x_np)
        y = lib.from_numpy(y_np)
        loss_fn = lib.nn.CrossEntropyLoss()
        return _step(model, _sgd(lib, model), lambda m: loss_fn(m(x), y)), batch
    build.__name__ = make.__name__
    return build


alexnet = _image_classifier(models.alexnet, 64, 100)
vgg = _image_classifier(models.vgg, 32, 10)
resnet = _image_classifier(models.resnet, 32, 10)
mobilenet_v2 = _image_classifier(models.mobilenet_v2, 32, 10)


def gnmt(lib, batch=BATCH, src_len=16, tgt_len=16, vocab=2000):
    """Items are target tokens (batch x tgt_len)."""
    model = models.share_weights(lib, models.gnmt(lib, vocab=vocab), "gnmt")
    model.train()
    rng = np.random.default_rng(1)
    src = lib.from_numpy(rng.integers(0, vocab, (batch, src_len)))
    tgt = rng.integers(0, vocab, (batch, tgt_len + 1))
    tgt_in = lib.from_numpy(tgt[:, :-1].copy())
    tgt_out = lib.from_numpy(tgt[:, 1:].reshape(-1).copy())
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = lib.nn.CrossEntropyLoss()

    def loss_of(m):
        logits = m(src, tgt_in)
        return loss_fn(logits.reshape(-1, vocab), tgt_out)
    return _step(model, opt, loss_of), batch * tgt_len


def ncf(lib, batch=1024):
    """Items are (user, item) samples; labels are implicit feedback (1 positive : 4 negatives)."""
    model = models.share_weights(lib, models.ncf(lib), "ncf")
    model.train()
    rng = np.random.default_rng(2)
    user = lib.from_numpy(rng.integers(0, 6040, batch))
    item = lib.from_numpy(rng.integers(0, 3706, batch))
    label = lib.from_numpy((rng.random(batch) < 0.2).astype(np.float32))
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = lib.nn.BCEWithLogitsLoss()
    return _step(model, opt, lambda m: loss_fn(m(user, item), label)), batch


def mlp(lib, batch=128):
    """The MNIST MLP 784-512-512-10, one SGD (momentum) step; items are samples."""
    model = models.share_weights(lib, models.mlp(lib), "mlp")
    rng = np.random.default_rng(3)
    x = lib.from_numpy(rng.standard_normal((batch, 784), dtype=np.float32))
    y = lib.from_numpy(rng.integers(0, 10, batch))
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = lib.nn.CrossEntropyLoss()
    return _step(model, opt, lambda m: loss_fn(m(x), y)), batch


def deep_mlp(lib, batch=1024, width=512, depth=16, checkpoint=False):
    """16 blocks Linear-LayerNorm-GELU at width 512, mean-square loss, one SGD step; items are samples.
    checkpoint=True runs each block through torch.utils.checkpoint (non-reentrant): backward
    recomputes a block instead of keeping its activations."""
    nn = lib.nn
    model = nn.Sequential(*[nn.Sequential(nn.Linear(width, width), nn.LayerNorm(width), nn.GELU())
                            for _ in range(depth)])
    rng = np.random.default_rng(5)
    with lib.no_grad():
        for p in model.parameters():
            if p.dim() == 2:
                p.copy_(lib.from_numpy((rng.standard_normal(tuple(p.shape)) / np.sqrt(width)).astype(np.float32)))
    x = lib.from_numpy(rng.standard_normal((batch, width), dtype=np.float32))
    run = lib.utils.checkpoint.checkpoint

    def loss_of(m):
        h = x
        for block in m:
            h = run(block, h, use_reentrant=False) if checkpoint else block(h)
        return (h * h).mean()
    return _step(model, lib.optim.SGD(model.parameters(), lr=0.01), loss_of), batch


def deep_mlp_checkpoint(lib, batch=1024):
    return deep_mlp(lib, batch, checkpoint=True)


BUILDERS = {"alexnet": alexnet, "vgg": vgg, "resnet": resnet, "mobilenet_v2": mobilenet_v2,
            "gnmt": gnmt, "ncf": ncf, "mlp": mlp, "deep_mlp": deep_mlp, "deep_mlp_checkpoint": deep_mlp_checkpoint}
