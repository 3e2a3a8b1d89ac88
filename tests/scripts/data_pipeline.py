"""The training loop of pytorch/examples mnist_hogwild/train.py, in one process, over a custom Dataset.

A map-style Dataset of two interleaved spirals whose samples are dicts, random_split with a seeded
torch.Generator, a custom Sampler, DataLoader(num_workers=0) with the default collate (dicts of
tensors), nn.Sequential with BatchNorm1d, CrossEntropyLoss, SGD with momentum + StepLR,
clip_grad_norm_, and a resumable checkpoint: {'epoch', 'model_state_dict', 'optimizer_state_dict',
'scheduler_state_dict'} written with torch.save, read back with torch.load into fresh objects.
"""
import argparse
import math
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.utils.data import DataLoader, Dataset, random_split
from torch.utils.data.sampler import Sampler


class Spirals(Dataset):
    """Two spirals, one per class; each sample is {'point': float tensor [2], 'label': int}."""

    def __init__(self, n_per_class=300, noise=0.15, generator=None):
        t = torch.rand(2 * n_per_class, generator=generator) * 3 * math.pi + 0.5
        label = torch.arange(2 * n_per_class) % 2
        angle = t + label * math.pi
        self.points = torch.stack([t * torch.cos(angle), t * torch.sin(angle)], dim=1) / 5
        self.points += noise * torch.randn(self.points.shape, generator=generator) / 5
        self.labels = label.tolist()

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, index):
        return {'point': self.points[index], 'label': self.labels[index]}


class ChunkShuffleSampler(Sampler):
    """Shuffles chunks of consecutive indices (a custom Sampler with __iter__ and __len__)."""

    def __init__(self, data_source, chunk=8):
        self.data_source = data_source
        self.chunk = chunk

    def __iter__(self):
        n = len(self.data_source)
        starts = torch.randperm((n + self.chunk - 1) // self.chunk) * self.chunk
        for start in starts.tolist():
            yield from range(start, min(start + self.chunk, n))

    def __len__(self):
        return len(self.data_source)


def make_model():
    return nn.Sequential(
        nn.Linear(2, 64), nn.BatchNorm1d(64), nn.ReLU(),
        nn.Linear(64, 64), nn.BatchNorm1d(64), nn.ReLU(),
        nn.Linear(64, 2),
    )


def train_epoch(epoch, args, model, device, data_loader, optimizer):
    model.train()
    pid = os.getpid()
    for batch_idx, batch in enumerate(data_loader):
        data, target = batch['point'].to(device), batch['label'].to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.cross_entropy(output, target)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            print('{}\tTrain Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}'.format(
                pid, epoch, batch_idx * len(data), len(data_loader.dataset),
                100. * batch_idx / len(data_loader), loss.item()))


def test_epoch(model, device, data_loader):
    model.eval()
    test_loss = 0
    correct = 0
    criterion = nn.CrossEntropyLoss(reduction='sum')
    with torch.no_grad():
        for batch in data_loader:
            data, target = batch['point'].to(device), batch['label'].to(device)
            output = model(data)
            test_loss += criterion(output, target).item()  # sum up batch loss
            pred = output.max(1)[1]  # get the index of the max log-probability
            correct += pred.eq(target).sum().item()

    test_loss /= len(data_loader.dataset)
    print('\nTest set: Average loss: {:.4f}, Accuracy: {}/{} ({:.0f}%)\n'.format(
        test_loss, correct, len(data_loader.dataset),
        100. * correct / len(data_loader.dataset)))
    return test_loss, correct / len(data_loader.dataset)


def main():
    parser = argparse.ArgumentParser(description='PyTorch custom Dataset / DataLoader example')
    parser.add_argument('--batch-size', type=int, default=32, metavar='N',
                        help='input batch size for training (default: 32)')
    parser.add_argument('--epochs', type=int, default=12, metavar='N',
                        help='number of epochs to train (default: 12)')
    parser.add_argument('--resume-after', type=int, default=6, metavar='N',
                        help='checkpoint after this epoch and continue from the file (default: 6)')
    parser.add_argument('--lr', type=float, default=0.1, metavar='LR',
                        help='learning rate (default: 0.1)')
    parser.add_argument('--momentum', type=float, default=0.9, metavar='M',
                        help='SGD momentum (default: 0.9)')
    parser.add_argument('--clip', type=float, default=5.0, help='gradient norm clip (default: 5.0)')
    parser.add_argument('--seed', type=int, default=1, metavar='S',
                        help='random seed (default: 1)')
    parser.add_argument('--log-interval', type=int, default=10, metavar='N',
                        help='how many batches to wait before logging training status')
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    device = torch.device('cpu')

    dataset = Spirals(generator=torch.Generator().manual_seed(0))
    train_set, test_set = random_split(dataset, [0.8, 0.2], generator=torch.Generator().manual_seed(42))
    assert len(train_set) == 480 and len(test_set) == 120
    assert not set(train_set.indices) & set(test_set.indices)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, sampler=ChunkShuffleSampler(train_set),
                              num_workers=0, drop_last=True)
    test_loader = DataLoader(test_set, batch_size=64, shuffle=False, num_workers=0)
    first = next(iter(test_loader))
    assert first['point'].shape == (64, 2) and first['label'].dtype == torch.int64

    model = make_model().to(device)
    optimizer = optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum, weight_decay=1e-4)
    scheduler = optim.lr_scheduler.StepLR(optimizer, step_size=4, gamma=0.5)
    initial_loss, _ = test_epoch(model, device, test_loader)

    checkpoint_path = os.path.join(tempfile.mkdtemp(), 'checkpoint.pt')
    epoch = 1
    while epoch <= args.epochs:
        train_epoch(epoch, args, model, device, train_loader, optimizer)
        test_loss, accuracy = test_epoch(model, device, test_loader)
        scheduler.step()
        if epoch == args.resume_after:
            lr = scheduler.get_last_lr()[0]
            torch.save({'epoch': epoch,
                        'model_state_dict': model.state_dict(),
                        'optimizer_state_dict': optimizer.state_dict(),
                        'scheduler_state_dict': scheduler.state_dict()}, checkpoint_path)
            # start over from the file, as a restarted job would
            checkpoint = torch.load(checkpoint_path)
            model = make_model().to(device)
            model.load_state_dict(checkpoint['model_state_dict'])
            optimizer = optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum, weight_decay=1e-4)
            optimizer.load_state_dict(checkpoint['optimizer_state_dict'])
            scheduler = optim.lr_scheduler.StepLR(optimizer, step_size=4, gamma=0.5)
            scheduler.load_state_dict(checkpoint['scheduler_state_dict'])
            epoch = checkpoint['epoch']
            assert test_epoch(model, device, test_loader) == (test_loss, accuracy)
            assert optimizer.param_groups[0]['lr'] == scheduler.get_last_lr()[0] == lr
        epoch += 1
    print('final: initial_test_loss={:.4f} test_loss={:.4f} test_accuracy={:.4f} lr={:.4f}'.format(
        initial_loss, test_loss, accuracy, scheduler.get_last_lr()[0]))


if __name__ == '__main__':
    main()
