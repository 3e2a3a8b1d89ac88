"""A RealNVP normalizing flow on the two-moons toy data, in the style of the normalizing-flow repos.

Affine coupling layers with alternating binary masks; the coupling arithmetic is a
`@torch.jit.script` function; the base density is a `torch.distributions.MultivariateNormal`; the
model is trained through `torch.compile(model, backend=...)` with Adam, gradient clipping and a
StepLR schedule; its checkpoint (`_orig_mod.`-prefixed keys, as torch.compile writes them) is
saved with torch.save, the prefix stripped as nanoGPT does, and loaded into a fresh, uncompiled
flow that must give the same test NLL. Every random number (data, init, shuffling, sampling) comes
from torch's seeded generator, so runs under torch and ember print the same numbers to float
rounding. Prints the test NLL before and after training and statistics of samples from the flow.
"""
import argparse
import math
import os
from typing import Tuple

import torch
import torch.nn as nn
from torch.distributions import MultivariateNormal
from torch.utils.data import DataLoader, TensorDataset


def two_moons(n, noise=0.05):
    """Points on two interleaved half circles, scaled to roughly unit variance."""
    t = math.pi * torch.rand(n)
    upper = torch.rand(n) < 0.5
    x = torch.where(upper, torch.cos(t), 1.0 - torch.cos(t))
    y = torch.where(upper, torch.sin(t), 0.5 - torch.sin(t))
    points = torch.stack([x, y], dim=1) + noise * torch.randn(n, 2)
    return (points - torch.tensor([0.5, 0.25])) / torch.tensor([0.85, 0.5])


@torch.jit.script
def affine_coupling(x: torch.Tensor, mask: torch.Tensor, log_scale: torch.Tensor,
                    shift: torch.Tensor, reverse: bool) -> Tuple[torch.Tensor, torch.Tensor]:
    """y = mask * x + (1 - mask) * (x * exp(s) + t), or its inverse; with log|det dy/dx|."""
    free = 1.0 - mask
    log_scale = free * log_scale
    if reverse:
        y = mask * x + free * (x - shift) * torch.exp(-log_scale)
        return y, -log_scale.sum(dim=1)
    y = mask * x + free * (x * torch.exp(log_scale) + shift)
    return y, log_scale.sum(dim=1)


class Coupling(nn.Module):
    def __init__(self, mask, hidden):
        super().__init__()
        self.register_buffer("mask", mask)
        self.net = nn.Sequential(nn.Linear(2, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, 4))
        self.scale = nn.Parameter(torch.zeros(2))

    def forward(self, x, reverse: bool = False):
        log_scale, shift = self.net(x * self.mask).chunk(2, dim=1)
        return affine_coupling(x, self.mask, self.scale * torch.tanh(log_scale), shift, reverse)


class RealNVP(nn.Module):
    def __init__(self, layers=6, hidden=48):
        super().__init__()
        masks = [torch.tensor([1.0, 0.0]) if i % 2 == 0 else torch.tensor([0.0, 1.0]) for i in range(layers)]
        self.layers = nn.ModuleList(Coupling(m, hidden) for m in masks)
        self.register_buffer("loc", torch.zeros(2))
        self.register_buffer("cov", torch.eye(2))

    @property
    def base(self):
        return MultivariateNormal(self.loc, covariance_matrix=self.cov)

    def encode(self, x):
        """The base point z = f(x) and log|det df/dx|."""
        log_det = torch.zeros(x.shape[0])
        for layer in self.layers:
            x, ld = layer(x)
            log_det = log_det + ld
        return x, log_det

    def forward(self, x):
        """log p(x) by the change of variables through every coupling."""
        z, log_det = self.encode(x)
        return self.base.log_prob(z) + log_det

    @torch.no_grad()
    def sample(self, n):
        z = self.base.sample((n,))
        x = z
        for layer in reversed(self.layers):
            x, _ = layer(x, reverse=True)
        return x, z


def nll(model, x):
    with torch.no_grad():
        return -model(x).mean().item()


def main():
    torch.set_num_threads(1)
    parser = argparse.ArgumentParser(description="RealNVP on two moons")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--backend", default="eager")
    parser.add_argument("--checkpoint", default="realnvp.pt")
    args = parser.parse_args()
    torch.set_default_dtype(torch.float64)  # densities in double precision, as flow code often does
    torch.manual_seed(args.seed)

    train_x, test_x = two_moons(1536), two_moons(512)
    loader = DataLoader(TensorDataset(train_x), batch_size=args.batch_size, shuffle=True, drop_last=True)
    flow = RealNVP()
    model = torch.compile(flow, backend=args.backend)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=8, gamma=0.5)

    initial = nll(model, test_x)
    for epoch in range(args.epochs):
        model.train()
        for (batch,) in loader:
            optimizer.zero_grad()
            loss = -model(batch).mean()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), max_norm=5.0)
            optimizer.step()
        scheduler.step()
        if (epoch + 1) % 5 == 0:
            print(f"epoch {epoch + 1}: train nll {loss.item():.4f} test nll {nll(model, test_x):.4f}")
    final = nll(model, test_x)

    state = model.state_dict()
    prefixed = all(k.startswith("_orig_mod.") for k in state)
    torch.save(state, args.checkpoint)
    state = torch.load(args.checkpoint, weights_only=True)
    unwanted_prefix = "_orig_mod."
    for k in list(state):
        if k.startswith(unwanted_prefix):
            state[k[len(unwanted_prefix):]] = state.pop(k)
    restored = RealNVP()
    restored.load_state_dict(state)
    restored.eval()
    reload_gap = abs(nll(restored, test_x) - final)
    os.remove(args.checkpoint)

    samples, z = restored.sample(4096)
    with torch.no_grad():  # the coupling inverts exactly: encoding the samples gives the base draws back
        round_trip = (restored.encode(samples)[0] - z).abs().max().item()
    # moments of the samples against the data's: a flow that learned the moons reproduces them
    mean_gap = (samples.mean(0) - test_x.mean(0)).abs().max().item()
    std_gap = (samples.std(0) - test_x.std(0)).abs().max().item()
    print(f"final: initial_test_nll={initial:.9f} test_nll={final:.9f} reload_gap={reload_gap:.2e} "
          f"prefixed={int(prefixed)} sample_mean_gap={mean_gap:.5f} sample_std_gap={std_gap:.5f} "
          f"round_trip={round_trip:.1e} sample0={samples[0, 0].item():.9f}")


if __name__ == "__main__":
    main()
