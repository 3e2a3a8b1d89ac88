"""pytorch/examples super_resolution (model.py + main.py): sub-pixel CNN upscaling digits 4x4 -> 8x8.

Same program: Conv2d/ReLU layers ending in nn.PixelShuffle(upscale_factor), weights initialised
with init.orthogonal_(..., init.calculate_gain('relu')), MSELoss, Adam, PSNR = 10 log10(1 / mse)
over a test DataLoader, checkpointing the whole model with torch.save. Low-resolution inputs are
2x2 average pools of the 8x8 digits (instead of PIL's bicubic resize of BSDS300 crops).
"""
from __future__ import print_function

import argparse
from math import log10

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.init as init
import torch.optim as optim
from torch.utils.data import DataLoader, Dataset

from _digits import load_digits, split


class Net(nn.Module):
    def __init__(self, upscale_factor):
        super(Net, self).__init__()

        self.relu = nn.ReLU()
        self.conv1 = nn.Conv2d(1, 32, (5, 5), (1, 1), (2, 2))
        self.conv2 = nn.Conv2d(32, 32, (3, 3), (1, 1), (1, 1))
        self.conv3 = nn.Conv2d(32, 16, (3, 3), (1, 1), (1, 1))
        self.conv4 = nn.Conv2d(16, upscale_factor ** 2, (3, 3), (1, 1), (1, 1))
        self.pixel_shuffle = nn.PixelShuffle(upscale_factor)

        self._initialize_weights()

    def forward(self, x):
        x = self.relu(self.conv1(x))
        x = self.relu(self.conv2(x))
        x = self.relu(self.conv3(x))
        x = self.pixel_shuffle(self.conv4(x))
        return x

    def _initialize_weights(self):
        init.orthogonal_(self.conv1.weight, init.calculate_gain('relu'))
        init.orthogonal_(self.conv2.weight, init.calculate_gain('relu'))
        init.orthogonal_(self.conv3.weight, init.calculate_gain('relu'))
        init.orthogonal_(self.conv4.weight)


class DatasetFromDigits(Dataset):
    """(low-resolution input, high-resolution target) pairs, both 1xHxW float tensors in [0, 1]."""

    def __init__(self, train, upscale_factor):
        super(DatasetFromDigits, self).__init__()
        images, target = load_digits()
        train_index, test_index = split(len(target))
        index = train_index if train else test_index
        self.targets = torch.from_numpy(images[index].astype(np.float32) / 16.0).unsqueeze(1)
        self.inputs = F.avg_pool2d(self.targets, upscale_factor)

    def __getitem__(self, index):
        return self.inputs[index], self.targets[index]

    def __len__(self):
        return len(self.targets)


# Training settings
parser = argparse.ArgumentParser(description='PyTorch Super Res Example')
parser.add_argument('--upscale_factor', type=int, default=2, help="super resolution upscale factor")
parser.add_argument('--batchSize', type=int, default=64, help='training batch size')
parser.add_argument('--testBatchSize', type=int, default=100, help='testing batch size')
parser.add_argument('--nEpochs', type=int, default=3, help='number of epochs to train for')
parser.add_argument('--lr', type=float, default=0.003, help='Learning Rate. Default=0.003')
parser.add_argument('--accel', action='store_true', help='Enables accelerator')
parser.add_argument('--seed', type=int, default=123, help='random seed to use. Default=123')
parser.add_argument('--checkpoint', default=None, help='where to save the trained model')
opt = parser.parse_args()

print(opt)

if opt.accel and torch.accelerator.is_available():
    device = torch.accelerator.current_accelerator()
else:
    device = torch.device("cpu")

torch.manual_seed(opt.seed)

print('===> Loading datasets')
train_set = DatasetFromDigits(True, opt.upscale_factor)
test_set = DatasetFromDigits(False, opt.upscale_factor)
training_data_loader = DataLoader(dataset=train_set, batch_size=opt.batchSize, shuffle=True)
testing_data_loader = DataLoader(dataset=test_set, batch_size=opt.testBatchSize, shuffle=False)

print('===> Building model')
model = Net(upscale_factor=opt.upscale_factor).to(device)
criterion = nn.MSELoss()

optimizer = optim.Adam(model.parameters(), lr=opt.lr)


def train(epoch):
    epoch_loss = 0
    for iteration, batch in enumerate(training_data_loader, 1):
        input, target = batch[0].to(device), batch[1].to(device)

        optimizer.zero_grad()
        loss = criterion(model(input), target)
        epoch_loss += loss.item()
        loss.backward()
        optimizer.step()

    print("===> Epoch {} Complete: Avg. Loss: {:.4f}".format(epoch, epoch_loss / len(training_data_loader)))


def test(upsample=None):
    avg_psnr = 0
    with torch.no_grad():
        for batch in testing_data_loader:
            input, target = batch[0].to(device), batch[1].to(device)

            prediction = model(input) if upsample is None else upsample(input)
            mse = criterion(prediction, target)
            psnr = 10 * log10(1 / mse.item())
            avg_psnr += psnr
    avg_psnr /= len(testing_data_loader)
    print("===> Avg. PSNR: {:.4f} dB".format(avg_psnr))
    return avg_psnr


def checkpoint(path):
    torch.save(model, path)
    print("Checkpoint saved to {}".format(path))


baseline_psnr = test(lambda x: F.interpolate(x, scale_factor=opt.upscale_factor, mode='nearest'))
for epoch in range(1, opt.nEpochs + 1):
    train(epoch)
    psnr = test()
if opt.checkpoint is not None:
    checkpoint(opt.checkpoint)
    model = torch.load(opt.checkpoint, weights_only=False)
    assert test() == psnr
print('final: psnr={:.4f} nearest_upsampling_psnr={:.4f}'.format(psnr, baseline_psnr))
