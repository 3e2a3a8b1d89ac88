"""pytorch/examples mnist_hogwild (main.py + train.py) on scikit-learn's 8x8 digits.

Same program: torch.multiprocessing with the 'spawn' start method, model.share_memory(), one
mp.Process per rank running SGD on the shared parameters (Hogwild: no locks), each with its own
DataLoader and torch.manual_seed(seed + rank); the parent joins them and tests the shared model,
which it never trained itself.
"""
from __future__ import print_function

import argparse
import os

import numpy as np
import torch
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.utils.data import TensorDataset

from _digits import load_digits, split

# Training settings
parser = argparse.ArgumentParser(description='PyTorch digits hogwild Example')
parser.add_argument('--batch-size', type=int, default=32, metavar='N',
                    help='input batch size for training (default: 32)')
parser.add_argument('--test-batch-size', type=int, default=1000, metavar='N',
                    help='input batch size for testing (default: 1000)')
parser.add_argument('--epochs', type=int, default=3, metavar='N',
                    help='number of epochs to train (default: 3)')
parser.add_argument('--lr', type=float, default=0.05, metavar='LR',
                    help='learning rate (default: 0.05)')
parser.add_argument('--momentum', type=float, default=0.5, metavar='M',
                    help='SGD momentum (default: 0.5)')
parser.add_argument('--seed', type=int, default=1, metavar='S',
                    help='random seed (default: 1)')
parser.add_argument('--log-interval', type=int, default=20, metavar='N',
                    help='how many batches to wait before logging training status')
parser.add_argument('--num-processes', type=int, default=2, metavar='N',
                    help='how many training processes to use (default: 2)')
parser.add_argument('--start-method', default='spawn', choices=['spawn', 'fork', 'forkserver'],
                    help="multiprocessing start method (default: 'spawn', as the example)")


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.fc1 = nn.Linear(64, 64)
        self.dropout = nn.Dropout(0.2)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = self.dropout(x)
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


def train(rank, args, model, device, dataset, dataloader_kwargs):
    torch.manual_seed(args.seed + rank)

    train_loader = torch.utils.data.DataLoader(dataset, **dataloader_kwargs)

    optimizer = optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    for epoch in range(1, args.epochs + 1):
        train_epoch(epoch, args, model, device, train_loader, optimizer)


def train_epoch(epoch, args, model, device, data_loader, optimizer):
    model.train()
    pid = os.getpid()
    for batch_idx, (data, target) in enumerate(data_loader):
        optimizer.zero_grad()
        output = model(data.to(device))
        loss = F.nll_loss(output, target.to(device))
        loss.backward()
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            print('{}\tTrain Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}'.format(
                pid, epoch, batch_idx * len(data), len(data_loader.dataset),
                100. * batch_idx / len(data_loader), loss.item()), flush=True)


def test(args, model, device, dataset, dataloader_kwargs):
    torch.manual_seed(args.seed)
    test_loader = torch.utils.data.DataLoader(dataset, **dataloader_kwargs)
    model.eval()
    test_loss = 0
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            output = model(data.to(device))
            test_loss += F.nll_loss(output, target.to(device), reduction='sum').item()  # sum up batch loss
            pred = output.max(1)[1]  # get the index of the max log-probability
            correct += pred.eq(target.to(device)).sum().item()

    test_loss /= len(test_loader.dataset)
    print('\nTest set: Average loss: {:.4f}, Accuracy: {}/{} ({:.0f}%)\n'.format(
        test_loss, correct, len(test_loader.dataset),
        100. * correct / len(test_loader.dataset)))
    return test_loss, correct / len(test_loader.dataset)


if __name__ == '__main__':
    args = parser.parse_args()

    device = torch.device("cpu")
    images, target = load_digits()
    train_index, test_index = split(len(target))
    pixels = torch.from_numpy(((images.astype(np.float32) / 16.0 - 0.3) / 0.4)).unsqueeze(1)
    labels = torch.from_numpy(target)
    dataset1 = TensorDataset(pixels[train_index], labels[train_index])
    dataset2 = TensorDataset(pixels[test_index], labels[test_index])
    kwargs = {'batch_size': args.batch_size,
              'shuffle': True}

    torch.manual_seed(args.seed)
    mp.set_start_method(args.start_method, force=True)

    model = Net().to(device)
    model.share_memory()  # gradients are allocated lazily, so they are not shared here
    assert all(p.is_shared() for p in model.parameters())
    initial_loss, initial_accuracy = test(args, model, device, dataset2, kwargs)

    processes = []
    for rank in range(args.num_processes):
        p = mp.Process(target=train, args=(rank, args, model, device, dataset1, kwargs))
        # We first train the model across `num_processes` processes
        p.start()
        processes.append(p)
    for p in processes:
        p.join()
        assert p.exitcode == 0, 'training process {} exited with {}'.format(p.pid, p.exitcode)

    # Once training is complete, we can test the model
    test_loss, accuracy = test(args, model, device, dataset2, kwargs)
    print('final: initial_test_loss={:.4f} test_loss={:.4f} initial_test_accuracy={:.4f} '
          'test_accuracy={:.4f}'.format(initial_loss, test_loss, initial_accuracy, accuracy))
