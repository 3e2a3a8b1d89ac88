"""Train a small CNN on scikit-learn's bundled 8x8 handwritten digits, with ember as torch.

    python examples/train_digits.py                     # ~98% test accuracy in a few seconds
    python examples/train_digits.py --epochs 3 --checkpoint /tmp/digits.pt

Plain PyTorch code: `import ember as torch` is the only change. 1,797 images, split 80/20 with a
fixed seed; Conv2d/BatchNorm2d/ReLU/MaxPool2d/Dropout/Linear; AdamW with a OneCycleLR schedule
stepped per batch; a tqdm bar per epoch; the checkpoint is written with torch.save (PyTorch's own
zip format: real torch can load it), read back and checked to give the same test accuracy.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from tqdm import tqdm  # noqa: E402

import ember as torch  # noqa: E402
import ember.nn as nn  # noqa: E402
import ember.nn.functional as F  # noqa: E402
from ember.utils.data import DataLoader, TensorDataset, random_split  # noqa: E402


class DigitsNet(nn.Module):
    """8x8 -> (conv-bn-relu) x2 -> pool 4x4 -> conv-bn-relu -> pool 2x2 -> dropout -> linear x2."""

    def __init__(self, num_classes=10, dropout=0.25):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(16),
            nn.ReLU(inplace=True),
            nn.Conv2d(16, 32, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(32),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(32, 64, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(64),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
        )
        self.classifier = nn.Sequential(
            nn.Flatten(),
            nn.Dropout(dropout),
            nn.Linear(64 * 2 * 2, 128),
            nn.ReLU(inplace=True),
            nn.Dropout(dropout),
            nn.Linear(128, num_classes),
        )

    def forward(self, x):
        return self.classifier(self.features(x))


def load_data(seed=0, test_fraction=0.2):
    """(train, test) TensorDatasets of (1x8x8 float image, label), standardized with train stats."""
    digits = load_digits()
    images = torch.from_numpy(digits.images.astype(np.float32)).unsqueeze(1) / 16.0
    labels = torch.from_numpy(digits.target.astype(np.int64))
    n_test = int(round(test_fraction * len(labels)))
    train_idx, test_idx = random_split(range(len(labels)), [len(labels) - n_test, n_test],
                                       generator=torch.Generator().manual_seed(seed))
    train_idx = torch.tensor(list(train_idx))
    test_idx = torch.tensor(list(test_idx))
    mean = images[train_idx].mean()
    std = images[train_idx].std()
    images = (images - mean) / std
    return (TensorDataset(images[train_idx], labels[train_idx]),
            TensorDataset(images[test_idx], labels[test_idx]))


def train_one_epoch(model, loader, optimizer, scheduler, epoch, progress=True):
    model.train()
    total_loss = 0.0
    seen = 0
    bar = tqdm(loader, desc=f"epoch {epoch:2d}", leave=False, disable=not progress)
    for images, labels in bar:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(images), labels, label_smoothing=0.05)
        loss.backward()
        optimizer.step()
        scheduler.step()
        total_loss += loss.item() * len(labels)
        seen += len(labels)
        bar.set_postfix(loss=f"{total_loss / seen:.4f}", lr=f"{scheduler.get_last_lr()[0]:.2e}")
    return total_loss / seen


@torch.no_grad()
def evaluate(model, loader):
    """(mean cross-entropy, accuracy) over the loader."""
    model.eval()
    total_loss = 0.0
    correct = 0
    for images, labels in loader:
        logits = model(images)
        total_loss += F.cross_entropy(logits, labels, reduction="sum").item()
        correct += (logits.argmax(dim=1) == labels).sum().item()
    n = len(loader.dataset)
    return total_loss / n, correct / n


def main(argv=None):
    parser = argparse.ArgumentParser(description="Train a small CNN on scikit-learn's 8x8 digits with ember")
    parser.add_argument("--epochs", type=int, default=8, help="epochs to train (default: 8)")
    parser.add_argument("--batch-size", type=int, default=64, help="training batch size (default: 64)")
    parser.add_argument("--lr", type=float, default=0.01, help="peak learning rate of OneCycleLR (default: 0.01)")
    parser.add_argument("--weight-decay", type=float, default=1e-4, help="AdamW weight decay (default: 1e-4)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the split and of the model (default: 0)")
    parser.add_argument("--checkpoint", default="digits_cnn.pt", help="where to save the trained model")
    parser.add_argument("--no-progress", action="store_true", help="no tqdm progress bars")
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")
    train_set, test_set = load_data(args.seed)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True, drop_last=True)
    test_loader = DataLoader(test_set, batch_size=512)
    print(f"device {device}; {len(train_set)} training and {len(test_set)} test images")

    model = DigitsNet().to(device)
    print(f"{sum(p.numel() for p in model.parameters()):,} parameters")
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=args.lr, epochs=args.epochs,
                                                    steps_per_epoch=len(train_loader))

    start = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        train_loss = train_one_epoch(model, train_loader, optimizer, scheduler, epoch, not args.no_progress)
        test_loss, accuracy = evaluate(model, test_loader)
        print(f"epoch {epoch:2d}  train loss {train_loss:.4f}  test loss {test_loss:.4f}  "
              f"test accuracy {accuracy:.2%}")
    elapsed = time.perf_counter() - start
    print(f"trained {args.epochs} epochs in {elapsed:.1f} s")

    torch.save({"model": model.state_dict(), "epochs": args.epochs, "test_accuracy": accuracy,
                "seed": args.seed}, args.checkpoint)
    checkpoint = torch.load(args.checkpoint)
    reloaded = DigitsNet().to(device)
    reloaded.load_state_dict(checkpoint["model"])
    _, reloaded_accuracy = evaluate(reloaded, test_loader)
    if reloaded_accuracy != accuracy:
        raise RuntimeError(f"reloaded checkpoint scores {reloaded_accuracy:.2%}, not {accuracy:.2%}")
    print(f"saved {args.checkpoint}; reloaded it: test accuracy {reloaded_accuracy:.2%}")
    print(f"test accuracy: {accuracy:.4f}")
    return accuracy


if __name__ == "__main__":
    main()
