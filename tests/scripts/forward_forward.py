"""pytorch/examples mnist_forward_forward/main.py on scikit-learn's 8x8 digits.

Same program: Hinton's forward-forward algorithm. Each Layer (an nn.Linear subclass with its own
Adam) is trained alone with a layer-local loss, log(1 + exp(...)) of the goodness h.pow(2).mean(1)
of positive data (label overlaid on the first pixels) and negative data (labels shuffled with
torch.randperm); prediction picks the label with the largest total goodness. Full-batch training,
as in the example (one DataLoader batch holds the whole set).
"""
import argparse
import time

import numpy as np
import torch
import torch.nn as nn
from torch.optim import Adam
from torch.utils.data import DataLoader, TensorDataset

from _digits import load_digits, split


def overlay_y_on_x(x, y, classes=10):
    x_ = x.clone()
    x_[:, :classes] *= 0.0
    x_[range(x.shape[0]), y] = x.max()
    return x_


class Net(torch.nn.Module):
    def __init__(self, dims):

        super().__init__()
        self.layers = []
        for d in range(len(dims) - 1):
            self.layers = self.layers + [Layer(dims[d], dims[d + 1]).to(device)]

    def predict(self, x):
        goodness_per_label = []
        for label in range(10):
            h = overlay_y_on_x(x, label)
            goodness = []
            for layer in self.layers:
                h = layer(h)
                goodness = goodness + [h.pow(2).mean(1)]
            goodness_per_label += [sum(goodness).unsqueeze(1)]
        goodness_per_label = torch.cat(goodness_per_label, 1)
        return goodness_per_label.argmax(1)

    def train(self, x_pos, x_neg):
        h_pos, h_neg = x_pos, x_neg
        for i, layer in enumerate(self.layers):
            print("training layer: ", i)
            h_pos, h_neg = layer.train(h_pos, h_neg)


class Layer(nn.Linear):
    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__(in_features, out_features, bias, device, dtype)
        self.relu = torch.nn.ReLU()
        self.opt = Adam(self.parameters(), lr=args.lr)
        self.threshold = args.threshold
        self.num_epochs = args.epochs

    def forward(self, x):
        x_direction = x / (x.norm(2, 1, keepdim=True) + 1e-4)
        return self.relu(torch.mm(x_direction, self.weight.T) + self.bias.unsqueeze(0))

    def train(self, x_pos, x_neg):
        for i in range(self.num_epochs):
            g_pos = self.forward(x_pos).pow(2).mean(1)
            g_neg = self.forward(x_neg).pow(2).mean(1)
            # The following loss pushes pos (neg) samples to
            # values larger (smaller) than the self.threshold.
            loss = torch.log(
                1
                + torch.exp(
                    torch.cat([-g_pos + self.threshold, g_neg - self.threshold])
                )
            ).mean()
            self.opt.zero_grad()
            # this backward just compute the derivative and hence
            # is not considered backpropagation.
            loss.backward()
            self.opt.step()
            if i % args.log_interval == 0:
                print("Loss: ", loss.item())
        return self.forward(x_pos).detach(), self.forward(x_neg).detach()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=100, metavar="N",
                        help="number of epochs to train each layer (default: 100)")
    parser.add_argument("--hidden", type=int, default=64, help="width of the two layers (default: 64)")
    parser.add_argument("--lr", type=float, default=0.1, metavar="LR",
                        help="learning rate (default: 0.1)")
    parser.add_argument("--no_accel", action="store_true", default=False,
                        help="disables accelerator")
    parser.add_argument("--seed", type=int, default=1, metavar="S", help="random seed (default: 1)")
    parser.add_argument("--threshold", type=float, default=2, help="loss threshold (default: 2)")
    parser.add_argument("--log-interval", type=int, default=50,
                        help="how many batches to wait before logging training status")
    args = parser.parse_args()
    use_accel = not args.no_accel and torch.accelerator.is_available()
    torch.manual_seed(args.seed)
    if use_accel:
        device = torch.accelerator.current_accelerator()
    else:
        device = torch.device("cpu")

    images, target = load_digits()
    train_index, test_index = split(len(target))
    pixels = torch.from_numpy((images.reshape(-1, 64).astype(np.float32) / 16.0 - 0.3) / 0.4)
    labels = torch.from_numpy(target)
    train_loader = DataLoader(TensorDataset(pixels[train_index], labels[train_index]),
                              batch_size=len(train_index), shuffle=True)
    test_loader = DataLoader(TensorDataset(pixels[test_index], labels[test_index]),
                             batch_size=len(test_index), shuffle=False)

    net = Net([64, args.hidden, args.hidden])
    x, y = next(iter(train_loader))
    x, y = x.to(device), y.to(device)
    x_pos = overlay_y_on_x(x, y)
    rnd = torch.randperm(x.size(0))
    x_neg = overlay_y_on_x(x, y[rnd])
    start = time.time()
    net.train(x_pos, x_neg)
    print("train time:", time.time() - start)

    train_accuracy = net.predict(x).eq(y).float().mean().item()
    print("train error:", 1.0 - train_accuracy)

    x_te, y_te = next(iter(test_loader))
    x_te, y_te = x_te.to(device), y_te.to(device)

    test_accuracy = net.predict(x_te).eq(y_te).float().mean().item()
    print("test error:", 1.0 - test_accuracy)
    print("final: train_accuracy={:.4f} test_accuracy={:.4f}".format(train_accuracy, test_accuracy))
