"""A denoising UNet trained in bfloat16 mixed precision, in the style of the diffusion/UNet repos.

The usual AMP training loop: `torch.autocast(device_type, dtype=torch.bfloat16)` around the forward,
a `torch.amp.GradScaler` (scale, unscale_ before clip_grad_norm_, step, update), the encoder and
decoder blocks run through `torch.utils.checkpoint.checkpoint(..., use_reentrant=False)` while
training, skip connections concatenated across precisions, AdamW with a cosine schedule. Data:
scikit-learn's 8x8 digits scaled to [0, 1], Gaussian noise added; the loss is the MSE to the clean
image. Prints the test MSE before and after training, the scaler's final scale, and the dtypes seen.
"""
import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint
from torch.utils.data import DataLoader, TensorDataset

from _digits import load_digits, split


class Block(nn.Module):
    """conv-GroupNorm-SiLU twice: the UNet's basic block."""

    def __init__(self, cin, cout):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.GroupNorm(4, cout), nn.SiLU(),
                                 nn.Conv2d(cout, cout, 3, padding=1), nn.GroupNorm(4, cout), nn.SiLU())

    def forward(self, x):
        return self.net(x)


class UNet(nn.Module):
    def __init__(self, width=8, use_checkpoint=True):
        super().__init__()
        self.use_checkpoint = use_checkpoint
        self.down1 = Block(1, width)
        self.down2 = Block(width, 2 * width)
        self.mid = Block(2 * width, 2 * width)
        self.up = nn.ConvTranspose2d(2 * width, width, 2, stride=2)
        self.dec = Block(2 * width, width)
        self.out = nn.Conv2d(width, 1, 1)

    def _run(self, block, x):
        if self.use_checkpoint and self.training:
            return torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)
        return block(x)

    def forward(self, x):
        h1 = self._run(self.down1, x)                   # 8x8
        h2 = self._run(self.down2, F.max_pool2d(h1, 2))  # 4x4
        h2 = self._run(self.mid, h2)
        u = self.up(h2)                                  # 8x8
        self.inner_dtype = u.dtype
        u = self._run(self.dec, torch.cat([u, h1], dim=1))
        return x - self.out(u)                           # predict the noise, subtract it


def evaluate(model, loader, device):
    model.eval()
    total, n = 0.0, 0
    with torch.no_grad(), torch.autocast(device_type=device.type, dtype=torch.bfloat16):
        for noisy, clean in loader:
            out = model(noisy.to(device))
            total += F.mse_loss(out.float(), clean.to(device), reduction="sum").item()
            n += clean.numel()
    return total / n


def main():
    torch.set_num_threads(1)
    parser = argparse.ArgumentParser(description="bf16 AMP denoising UNet on 8x8 digits")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--noise", type=float, default=0.3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    device = torch.device("cpu")

    images, _ = load_digits()
    images = (images / 16.0).astype(np.float32)[:, None]
    noisy = images + args.noise * np.random.RandomState(args.seed).standard_normal(images.shape).astype(np.float32)
    train_idx, test_idx = split(len(images))
    train = TensorDataset(torch.from_numpy(noisy[train_idx]), torch.from_numpy(images[train_idx]))
    test = TensorDataset(torch.from_numpy(noisy[test_idx]), torch.from_numpy(images[test_idx]))
    train_loader = DataLoader(train, batch_size=args.batch_size, shuffle=True)
    test_loader = DataLoader(test, batch_size=256)

    model = UNet().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs * len(train_loader))
    scaler = torch.amp.GradScaler(device.type, init_scale=2.0 ** 12, growth_interval=20)

    initial = evaluate(model, test_loader, device)
    dtypes = set()  # (inner activation, loss) under autocast: (bfloat16, float32)
    for epoch in range(args.epochs):
        model.train()
        for noisy_batch, clean_batch in train_loader:
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
                out = model(noisy_batch)
                loss = F.mse_loss(out, clean_batch)
            dtypes.add((str(model.inner_dtype), str(loss.dtype)))
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
            scheduler.step()
        print(f"epoch {epoch + 1}: loss {loss.item():.4f} scale {scaler.get_scale():.0f}")
    final = evaluate(model, test_loader, device)
    grads_fp32 = all(p.grad.dtype == torch.float32 for p in model.parameters())
    bf16_inside = dtypes == {("torch.bfloat16", "torch.float32")}
    print(f"final: initial_test_mse={initial:.5f} test_mse={final:.5f} scale={scaler.get_scale():.0f} "
          f"grads_fp32={int(grads_fp32)} bf16_inside={int(bf16_inside)}")


if __name__ == "__main__":
    main()
