"""The generated bad-input sweep over classes (issue 18): every torch.nn module ember has (also called on a wrong
input), the optimizers, the learning-rate schedulers, DataLoader and the samplers, and torch.save/load,
constructed (or called) with a wrong value (tests/_bad_input_sweep.py's BAD) in each parameter, on torch and on
ember. Where both construct, what they built is compared: a module's parameter and buffer shapes, an optimizer's
parameters after one step, a scheduler's learning rates over three steps, a loader's first batches.

Run `python -m tests._bad_module_sweep [-v]` for the counts (and the rows that are not a match)."""
import inspect
import io
import signal
import sys

import numpy as np
import torch

import ember
from tests._bad_input_sweep import BAD, _alarm, _words, classify, outcome, report

# a valid value for each required constructor parameter, by name
VALID = {
    "in_features": 4, "out_features": 3, "in1_features": 4, "in2_features": 4, "in_channels": 2, "out_channels": 2,
    "kernel_size": 1, "num_features": 2, "num_channels": 2, "num_groups": 1, "num_embeddings": 5,
    "embedding_dim": 4, "input_size": 4, "hidden_size": 4, "num_layers": 1, "d_model": 4, "nhead": 2,
    "embed_dim": 4, "num_heads": 2, "normalized_shape": 4, "dim": 1, "upscale_factor": 2, "downscale_factor": 2,
    "output_size": 2, "size": 2, "padding": 1, "value": 0.0, "threshold": 0.5, "norm_type": 2.0, "num_chunks": 2,
    "groups": 1, "unflattened_size": (2, 2), "num_classes": 3, "mode": "fan_in", "bias": True,
}
# constructed from other modules (or lazily shaped): not swept
MODULE_SKIP = {"Module", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict", "Container",
               "Transformer", "TransformerEncoder", "TransformerDecoder", "RNNBase",
               "LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d",
               "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyInstanceNorm1d",
               "LazyInstanceNorm2d", "LazyInstanceNorm3d", "MultiheadAttention", "TransformerDecoderLayer",
               "TransformerEncoderLayer"}
OPTIMIZERS = ("SGD", "Adam", "AdamW", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam", "RMSprop", "Rprop", "ASGD")
SCHEDULERS = {  # name: required arguments besides the optimizer
    "StepLR": {"step_size": 1}, "MultiStepLR": {"milestones": [1, 2]}, "ExponentialLR": {"gamma": 0.5},
    "CosineAnnealingLR": {"T_max": 3}, "LinearLR": {}, "ConstantLR": {}, "PolynomialLR": {},
    "LambdaLR": {"lr_lambda": lambda e: 0.5 ** e}, "MultiplicativeLR": {"lr_lambda": lambda e: 0.5},
    "CyclicLR": {"base_lr": 0.01, "max_lr": 0.1}, "OneCycleLR": {"max_lr": 0.1, "total_steps": 5},
    "CosineAnnealingWarmRestarts": {"T_0": 2}, "ReduceLROnPlateau": {},
}
SAMPLERS = {  # name: required arguments
    "SequentialSampler": {"data_source": range(6)}, "RandomSampler": {"data_source": range(6)},
    "SubsetRandomSampler": {"indices": [0, 2, 4]},
    "WeightedRandomSampler": {"weights": [0.1, 0.5, 0.4], "num_samples": 4},
    "BatchSampler": {"sampler": range(6), "batch_size": 2, "drop_last": False},
}


def _init_params(cls):
    try:
        sig = inspect.signature(cls.__init__)
    except (TypeError, ValueError):
        return None
    return [p for p in list(sig.parameters.values())[1:] if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def _shapes(m):
    return sorted((k, tuple(v.shape), str(v.dtype).split(".")[-1]) for k, v in m.state_dict().items())


def _module_cases():
    out = []
    names = [n for n in dir(torch.nn) if not n.startswith("_") and n not in MODULE_SKIP
             and isinstance(getattr(torch.nn, n), type) and issubclass(getattr(torch.nn, n), torch.nn.Module)
             and hasattr(ember.nn, n)]
    for n in sorted(names):
        params = _init_params(getattr(ember.nn, n))
        if params is None:
            continue
        required = {p.name: VALID[p.name] for p in params if p.default is p.empty and p.name in VALID}
        if len(required) < sum(p.default is p.empty for p in params):
            continue  # a required parameter the table has no value for

        def build(lib, n=n, required=required, key=None, bad=None):
            kwargs = dict(required)
            if key is not None:
                kwargs[key] = bad
            return (lambda: _shapes(getattr(lib.nn, n)(**kwargs))), (), {}
        for p in params:
            for label, bad in BAD.items():
                out.append(("nn", n, p.name, label, lambda lib, b=build, k=p.name, v=bad: b(lib, key=k, bad=v)))

        def forward(lib, n=n, required=required, bad=None):
            return (lambda: getattr(lib.nn, n)(**required)(bad)), (), {}
        for label, bad in BAD.items():  # the module called on a wrong input
            out.append(("nn.forward", n, "input", label, lambda lib, f=forward, v=bad: f(lib, bad=v)))
    return out


def _weights(lib):
    return [lib.nn.Parameter(lib.tensor(np.linspace(-1, 1, 6, dtype=np.float32)))]


def _optimizer_step(lib, name, kwargs):
    params = _weights(lib)
    opt = getattr(lib.optim, name)(params, **kwargs)
    params[0].grad = lib.tensor(np.linspace(0.5, -0.5, 6, dtype=np.float32))
    opt.step()
    return params[0].detach()


def _schedule(lib, name, kwargs):
    opt = lib.optim.SGD(_weights(lib), lr=0.1, momentum=0.9)
    sched = getattr(lib.optim.lr_scheduler, name)(opt, **kwargs)
    lrs = []
    for _ in range(3):
        opt.step()
        sched.step(1.0) if name == "ReduceLROnPlateau" else sched.step()
        lrs.append(opt.param_groups[0]["lr"])
    return lrs


def _loader(lib, kwargs):
    data = lib.utils.data.TensorDataset(lib.tensor(np.arange(12, dtype=np.float32).reshape(6, 2)))
    return [b[0] for b in lib.utils.data.DataLoader(data, **kwargs)]


def _sampler(lib, name, kwargs):
    return list(getattr(lib.utils.data, name)(**kwargs))


def _save_load(lib, save_kwargs, load_kwargs):
    buf = io.BytesIO()
    lib.save({"w": lib.tensor(np.arange(4, dtype=np.float32))}, buf, **save_kwargs)
    buf.seek(0)
    return lib.load(buf, **load_kwargs)["w"]


def _class_cases():
    out = []
    for n in OPTIMIZERS:
        for p in _init_params(getattr(ember.optim, n))[1:]:
            for label, bad in BAD.items():
                out.append(("optim", n, p.name, label, lambda lib, n=n, k=p.name, v=bad:
                            ((lambda: _optimizer_step(lib, n, {k: v})), (), {})))
    for n, required in SCHEDULERS.items():
        for p in _init_params(getattr(ember.optim.lr_scheduler, n))[1:]:
            for label, bad in BAD.items():
                out.append(("lr_scheduler", n, p.name, label, lambda lib, n=n, k=p.name, v=bad, r=required:
                            ((lambda: _schedule(lib, n, {**r, k: v})), (), {})))
    for p in _init_params(ember.utils.data.DataLoader)[1:]:
        for label, bad in BAD.items():
            out.append(("data", "DataLoader", p.name, label, lambda lib, k=p.name, v=bad:
                        ((lambda: _loader(lib, {k: v})), (), {})))
    for n, required in SAMPLERS.items():
        for p in _init_params(getattr(ember.utils.data, n)):
            for label, bad in BAD.items():
                out.append(("data", n, p.name, label, lambda lib, n=n, k=p.name, v=bad, r=required:
                            ((lambda: _sampler(lib, n, {**r, k: v})), (), {})))
    for fn, names in (("save", ("pickle_protocol",)), ("load", ("map_location", "weights_only", "mmap"))):
        for k in names:
            for label, bad in BAD.items():
                out.append(("torch", fn, k, label, lambda lib, fn=fn, k=k, v=bad:
                            ((lambda: _save_load(lib, {k: v} if fn == "save" else {},
                                                 {k: v} if fn == "load" else {})), (), {})))
    return out


def cases():
    return _module_cases() + _class_cases()


def _seeded(build):
    """build, with the library's global generator seeded first (ember's streams are torch's: shuffles compare)."""
    def seeded(lib):
        fn, args, kwargs = build(lib)

        def call(*a, **k):
            lib.manual_seed(0)
            return fn(*a, **k)
        return call, args, kwargs
    return seeded


def sweep():
    """[(ns, class, param, label, category, torch's outcome, ember's outcome)]."""
    signal.signal(signal.SIGALRM, _alarm)
    for lib in (torch, ember):  # the first optimizer step imports what it needs (torch: seconds)
        _optimizer_step(lib, "SGD", {})
    rows = []
    for ns, name, param, label, build in cases():
        t = outcome(_seeded(build), torch)
        e = outcome(_seeded(build), ember)
        rows.append((ns, name, param, label, classify(name, t, e), _words(t), _words(e)))
    return rows


def main(argv):
    report(sweep(), argv)


if __name__ == "__main__":
    main(sys.argv)
