"""pytorch/examples regression/main.py: fit a degree-4 polynomial with one Linear layer.

Same program: features [x, x^2, x^3, x^4] from torch.randn, F.smooth_l1_loss, manual SGD through
param.data / param.grad, stop when the loss drops below 1e-3 (with a batch cap so it always ends).
"""
from __future__ import print_function

import argparse
from itertools import count

import torch
import torch.nn.functional as F

parser = argparse.ArgumentParser(description='PyTorch polynomial regression example')
parser.add_argument('--seed', type=int, default=1, help='random seed (default: 1)')
parser.add_argument('--lr', type=float, default=0.1, help='learning rate (default: 0.1)')
parser.add_argument('--max-batches', type=int, default=3000, help='give up after this many batches')
args = parser.parse_args()

torch.manual_seed(args.seed)

POLY_DEGREE = 4
W_target = torch.randn(POLY_DEGREE, 1) * 5
b_target = torch.randn(1) * 5


def make_features(x):
    """Builds features i.e. a matrix with columns [x, x^2, x^3, x^4]."""
    x = x.unsqueeze(1)
    return torch.cat([x ** i for i in range(1, POLY_DEGREE+1)], 1)


def f(x):
    """Approximated function."""
    return x.mm(W_target) + b_target.item()


def poly_desc(W, b):
    """Creates a string description of a polynomial."""
    result = 'y = '
    for i, w in enumerate(W):
        result += '{:+.2f} x^{} '.format(w, i + 1)
    result += '{:+.2f}'.format(b[0])
    return result


def get_batch(batch_size=32):
    """Builds a batch i.e. (x, f(x)) pair."""
    random = torch.randn(batch_size)
    x = make_features(random)
    y = f(x)
    return x, y


# Define model
fc = torch.nn.Linear(W_target.size(0), 1)
first_loss = None

for batch_idx in count(1):
    # Get data
    batch_x, batch_y = get_batch()

    # Forward pass
    output = F.smooth_l1_loss(fc(batch_x), batch_y)
    loss = output.item()
    if first_loss is None:
        first_loss = loss

    # Backward pass
    output.backward()

    # Apply gradients, then reset them
    for param in fc.parameters():
        param.data.add_(-args.lr * param.grad)
        param.grad.zero_()

    # Stop criterion
    if loss < 1e-3 or batch_idx >= args.max_batches:
        break

print('Loss: {:.6f} after {} batches'.format(loss, batch_idx))
print('==> Learned function:\t' + poly_desc(fc.weight.view(-1), fc.bias))
print('==> Actual function:\t' + poly_desc(W_target.view(-1), b_target))
weight_error = (fc.weight.data.view(-1) - W_target.view(-1)).abs().max().item()
bias_error = (fc.bias.data - b_target).abs().item()
print('final: loss={:.6f} first_loss={:.6f} batches={} weight_error={:.4f} bias_error={:.4f}'.format(
    loss, first_loss, batch_idx, weight_error, bias_error))
