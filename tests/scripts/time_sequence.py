"""pytorch/examples time_sequence_prediction (generate_sine_wave.py + train.py), scaled down.

Same program: sine waves with random phase in float64, two stacked LSTMCells unrolled in a Python
loop over input.split(1, dim=1) with torch.zeros states, a Linear read-out, torch.cat / torch.stack
of the outputs, predictions fed back for `future` steps, MSELoss, LBFGS stepped with a closure,
and a test prediction under torch.no_grad().
"""
from __future__ import print_function

import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim


def generate_sine_wave(N=16, L=60, T=20, seed=2):
    """generate_sine_wave.py: N waves of length L, period 2*pi*T, random integer phase shift."""
    np.random.seed(seed)
    x = np.empty((N, L), 'int64')
    x[:] = np.array(range(L)) + np.random.randint(-4 * T, 4 * T, N).reshape(N, 1)
    data = np.sin(x / 1.0 / T).astype('float64')
    return data


class Sequence(nn.Module):
    def __init__(self, hidden=24):
        super(Sequence, self).__init__()
        self.hidden = hidden
        self.lstm1 = nn.LSTMCell(1, hidden)
        self.lstm2 = nn.LSTMCell(hidden, hidden)
        self.linear = nn.Linear(hidden, 1)

    def forward(self, input, future=0):
        outputs = []
        h_t = torch.zeros(input.size(0), self.hidden, dtype=torch.double)
        c_t = torch.zeros(input.size(0), self.hidden, dtype=torch.double)
        h_t2 = torch.zeros(input.size(0), self.hidden, dtype=torch.double)
        c_t2 = torch.zeros(input.size(0), self.hidden, dtype=torch.double)

        for input_t in input.split(1, dim=1):
            h_t, c_t = self.lstm1(input_t, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        for i in range(future):  # if we should predict the future
            h_t, c_t = self.lstm1(output, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        outputs = torch.cat(outputs, dim=1)
        return outputs


if __name__ == '__main__':
    parser = argparse.ArgumentParser()
    parser.add_argument('--steps', type=int, default=3, help='steps to run')
    parser.add_argument('--max-iter', type=int, default=6, help='LBFGS iterations per step')
    args = parser.parse_args()
    # set random seed to 0
    np.random.seed(0)
    torch.manual_seed(0)
    # load data and make training set
    data = generate_sine_wave()
    input = torch.from_numpy(data[3:, :-1])
    target = torch.from_numpy(data[3:, 1:])
    test_input = torch.from_numpy(data[:3, :-1])
    test_target = torch.from_numpy(data[:3, 1:])
    # build the model
    seq = Sequence()
    seq.double()
    criterion = nn.MSELoss()
    # use LBFGS as optimizer since we can load the whole data to train
    optimizer = optim.LBFGS(seq.parameters(), lr=0.8, max_iter=args.max_iter)

    with torch.no_grad():
        initial_test_loss = criterion(seq(test_input), test_target).item()
    # begin to train
    losses = []
    for i in range(args.steps):
        print('STEP: ', i)

        def closure():
            optimizer.zero_grad()
            out = seq(input)
            loss = criterion(out, target)
            print('loss:', loss.item())
            losses.append(loss.item())
            loss.backward()
            return loss
        optimizer.step(closure)
        # begin to predict, no need to track gradient here
        with torch.no_grad():
            future = 20
            pred = seq(test_input, future=future)
            loss = criterion(pred[:, :-future], test_target)
            print('test loss:', loss.item())
            y = pred.detach().numpy()
    assert y.shape == (3, test_input.size(1) + future) and y.dtype == np.float64
    print('final: initial_test_loss={:.6f} test_loss={:.6f} first_train_loss={:.6f} train_loss={:.6f}'.format(
        initial_test_loss, loss.item(), losses[0], losses[-1]))
