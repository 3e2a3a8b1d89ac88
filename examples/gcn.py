"""A two-layer graph convolutional network (Kipf & Welling, 2017) on a synthetic citation-style
graph: a stochastic block model whose communities are the node classes, with noisy features.

The normalized adjacency D^-1/2 (A + I) D^-1/2 is a sparse COO tensor; each layer is
`torch.sparse.mm(adj, X @ W)`. Only a fraction of the nodes carry training labels; accuracy is
reported on the rest. Runs in a few seconds:

    python examples/gcn.py
    python examples/gcn.py --nodes-per-class 300 --classes 5 --torch   # the same script on PyTorch
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402


def stochastic_block_model(rng, classes, per_class, p_in, p_out, features):
    """(edge index 2 x E with self loops, symmetric-normalized weights, features, labels)."""
    labels = np.repeat(np.arange(classes), per_class)
    n = labels.size
    p = np.where(labels[:, None] == labels[None, :], p_in, p_out)
    upper = np.triu(rng.random((n, n)) < p, 1)
    adj = upper | upper.T | np.eye(n, dtype=bool)
    deg = adj.sum(1)
    rows, cols = np.nonzero(adj)
    weights = 1.0 / np.sqrt(deg[rows] * deg[cols])
    centers = rng.standard_normal((classes, features))
    x = centers[labels] * 0.4 + rng.standard_normal((n, features))
    return np.stack([rows, cols]), weights.astype(np.float32), x.astype(np.float32), labels


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--classes", type=int, default=4)
    parser.add_argument("--nodes-per-class", type=int, default=150)
    parser.add_argument("--features", type=int, default=16)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--label-rate", type=float, default=0.1)
    parser.add_argument("--torch", action="store_true", help="run on PyTorch instead of ember")
    args = parser.parse_args()
    if args.torch:
        import torch
    else:
        import ember as torch

    rng = np.random.default_rng(0)
    edges, weights, x, y = stochastic_block_model(rng, args.classes, args.nodes_per_class, 0.05, 0.005,
                                                  args.features)
    n = y.size
    train = rng.random(n) < args.label_rate
    torch.manual_seed(0)
    adj = torch.sparse_coo_tensor(torch.tensor(edges), torch.tensor(weights), (n, n)).coalesce()
    feats, labels = torch.tensor(x), torch.tensor(y)
    train_mask, test_mask = torch.tensor(train), torch.tensor(~train)
    print(f"graph: {n} nodes, {adj._nnz()} adjacency entries, {int(train.sum())} labelled nodes")

    class GCN(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin1 = torch.nn.Linear(args.features, args.hidden)
            self.lin2 = torch.nn.Linear(args.hidden, args.classes)
            self.dropout = torch.nn.Dropout(0.5)

        def forward(self, a, h):
            h = torch.relu(torch.sparse.mm(a, self.lin1(self.dropout(h))))
            return torch.sparse.mm(a, self.lin2(self.dropout(h)))

    model = GCN()
    opt = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    start = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        model.train()
        opt.zero_grad()
        out = model(adj, feats)
        loss = torch.nn.functional.cross_entropy(out[train_mask], labels[train_mask])
        loss.backward()
        opt.step()
        if epoch % 20 == 0 or epoch == 1:
            model.eval()
            with torch.no_grad():
                pred = model(adj, feats).argmax(1)
            acc = (pred == labels)[test_mask].float().mean().item()
            print(f"epoch {epoch:3d}  loss {loss.item():.4f}  test accuracy {acc:.3f}")
    print(f"{time.perf_counter() - start:.2f} s for {args.epochs} epochs (chance is {1 / args.classes:.3f})")


if __name__ == "__main__":
    main()
