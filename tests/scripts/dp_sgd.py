"""Differentially private SGD with torch.func, on scikit-learn's 8x8 digits.

In the style of the torch.func tutorials (per-sample gradients, model ensembling) and Opacus's
functorch mode: per-sample gradients from vmap(grad(loss)) over functional_call, each sample's
gradient clipped to a norm bound, Gaussian noise added to the sum, a plain SGD step on the
parameter dict. Checks along the way: the per-sample gradients sum to the batch gradient of
autograd; an ensemble of training snapshots evaluated with stack_module_state + vmap matches the
snapshots run one by one; the Hessian of the loss in the last bias (torch.func.hessian) equals
jacrev(jacrev) and is symmetric.
"""
import argparse
import copy
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, grad, hessian, jacrev, stack_module_state, vmap

from _digits import load_digits, split


class MLP(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.fc1 = nn.Linear(64, hidden)
        self.fc2 = nn.Linear(hidden, 10)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def accuracy(model, x, y):
    with torch.no_grad():
        logits = model(x)
        return (logits.argmax(1) == y).float().mean().item(), F.cross_entropy(logits, y).item()


def main():
    parser = argparse.ArgumentParser(description="DP-SGD with per-sample gradients (torch.func)")
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=2.0)
    parser.add_argument("--max-grad-norm", type=float, default=1.0)
    parser.add_argument("--noise-multiplier", type=float, default=0.3)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    start = time.time()

    images, target = load_digits()
    data = torch.tensor(images.reshape(-1, 64) / 16.0, dtype=torch.float32)
    labels = torch.tensor(target)
    train_idx, test_idx = split(len(labels))
    x_train, y_train = data[train_idx], labels[train_idx]
    x_test, y_test = data[test_idx], labels[test_idx]

    model = MLP()
    initial_acc, initial_loss = accuracy(model, x_test, y_test)
    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}

    def compute_loss(params, buffers, sample, target):
        batch = sample.unsqueeze(0)
        targets = target.unsqueeze(0)
        predictions = functional_call(model, (params, buffers), (batch,))
        return F.cross_entropy(predictions, targets)

    per_sample_grads = vmap(grad(compute_loss), in_dims=(None, None, 0, 0))
    generator = torch.Generator().manual_seed(args.seed)
    snapshots = []
    clipped = 0
    grad_sum_error = 0.0
    for step in range(args.steps):
        idx = torch.randint(0, len(y_train), (args.batch_size,), generator=generator)
        xb, yb = x_train[idx], y_train[idx]
        grads = per_sample_grads(params, buffers, xb, yb)
        if step == 0:  # the per-sample gradients add up to the batch gradient
            p = {k: v.clone().requires_grad_() for k, v in params.items()}
            loss = F.cross_entropy(functional_call(model, p, (xb,)), yb, reduction="sum")
            batch_grads = torch.autograd.grad(loss, list(p.values()))
            grad_sum_error = max((grads[k].sum(0) - g).abs().max().item() for k, g in zip(p, batch_grads))
        norms = torch.stack([g.flatten(1).norm(dim=1) for g in grads.values()], dim=1).norm(dim=1)
        factor = (args.max_grad_norm / (norms + 1e-6)).clamp(max=1.0)
        clipped += int((factor < 1.0).sum())
        with torch.no_grad():
            for k, g in grads.items():
                summed = torch.einsum("b,b...->...", factor, g)
                noise = torch.randn(summed.shape, generator=generator) * args.noise_multiplier * args.max_grad_norm
                params[k] = params[k] - args.lr * (summed + noise) / args.batch_size
        if step % 20 == 19:
            snapshot = copy.deepcopy(model)
            snapshot.load_state_dict(params)
            snapshots.append(snapshot)
            print(f"step {step + 1}: clipped so far {clipped}")

    model.load_state_dict(params)
    test_acc, test_loss = accuracy(model, x_test, y_test)

    # ensembling (torch.func tutorial): the snapshots as one vmapped functional model
    ens_params, ens_buffers = stack_module_state(snapshots)
    base = copy.deepcopy(snapshots[0])

    def fmodel(params, buffers, x):
        return functional_call(base, (params, buffers), (x,))
    with torch.no_grad():
        stacked = vmap(fmodel, in_dims=(0, 0, None))(ens_params, ens_buffers, x_test)
        one_by_one = torch.stack([m(x_test) for m in snapshots])
    ensemble_error = (stacked - one_by_one).abs().max().item()
    ensemble_acc = (stacked.softmax(-1).mean(0).argmax(1) == y_test).float().mean().item()

    # curvature of one sample's loss in the last bias
    def bias_loss(bias):
        p = dict(params, **{"fc2.bias": bias})
        return compute_loss(p, buffers, x_test[0], y_test[0])
    h_fwd = hessian(bias_loss)(params["fc2.bias"])
    h_rev = jacrev(jacrev(bias_loss))(params["fc2.bias"])
    hessian_gap = max((h_fwd - h_rev).abs().max().item(), (h_fwd - h_fwd.t()).abs().max().item())

    print(f"test accuracy {initial_acc:.3f} -> {test_acc:.3f}, ensemble {ensemble_acc:.3f}, "
          f"{time.time() - start:.1f}s")
    print(f"final: test_accuracy={test_acc:.4f} initial_test_accuracy={initial_acc:.4f} test_loss={test_loss:.4f} "
          f"initial_test_loss={initial_loss:.4f} ensemble_accuracy={ensemble_acc:.4f} "
          f"grad_sum_error={grad_sum_error:.3e} ensemble_error={ensemble_error:.3e} hessian_gap={hessian_gap:.3e} "
          f"clipped_fraction={clipped / (args.steps * args.batch_size):.4f}")


if __name__ == "__main__":
    main()
