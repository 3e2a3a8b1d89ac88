"""Three seeded training programs whose every random number comes from torch's generator:
parameter init, a shuffling DataLoader, dropout. Each prints its loss after every step, so a run
under torch and a run under ember can be compared step by step (tests/test_random_programs.py).

    python seeded_training.py [--dtypes float64,float32] [--programs mlp,cnn,lstm]

Output lines: `loss <dtype> <program> <step> <float.hex of the loss>`, and after each dtype
`state <dtype> <hex of torch.get_rng_state()>`.
"""
import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

from _digits import load_digits


def digits(dtype):
    images, target = load_digits()
    x = torch.from_numpy(images[:512] / 16.0).to(dtype)
    return x, torch.from_numpy(target[:512])


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 48)
        self.drop = nn.Dropout(0.2)
        self.fc2 = nn.Linear(48, 10)

    def forward(self, x):
        return self.fc2(self.drop(F.relu(self.fc1(x.flatten(1)))))


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 6, 3, padding=1)
        self.drop2d = nn.Dropout2d(0.25)
        self.fc = nn.Linear(6 * 4 * 4, 10)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv(x.unsqueeze(1))), 2)
        return self.fc(self.drop(self.drop2d(x).flatten(1)))


def train_classifier(name, model, dtype, steps, lr):
    x, y = digits(dtype)
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    step = 0
    while step < steps:
        for xb, yb in loader:
            opt.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
            print("loss", DTYPE[0], name, step, loss.item().hex())
            step += 1
            if step == steps:
                break


SENTENCES = ["the cat sat on the mat", "a dog ran in the park", "the bird sang at dawn",
             "my cat saw a bird", "the dog and the cat slept"]


class CharLM(nn.Module):
    def __init__(self, vocab):
        super().__init__()
        self.embed = nn.Embedding(vocab, 12)
        self.lstm = nn.LSTM(12, 24, num_layers=2, dropout=0.3, batch_first=True)
        self.drop = nn.Dropout(0.3)
        self.head = nn.Linear(24, vocab)

    def forward(self, x):
        out, _ = self.lstm(self.drop(self.embed(x)))
        return self.head(self.drop(out))


def train_lstm(dtype, steps):
    order = np.random.RandomState(0).randint(0, len(SENTENCES), 60)
    text = ". ".join(SENTENCES[i] for i in order)
    chars = sorted(set(text))
    codes = torch.tensor([chars.index(c) for c in text])
    seq = 16
    n = (len(codes) - 1) // seq
    inputs = codes[:n * seq].view(n, seq)
    targets = codes[1:n * seq + 1].view(n, seq)
    model = CharLM(len(chars)).to(dtype)
    loader = DataLoader(TensorDataset(inputs, targets), batch_size=8, shuffle=True, drop_last=True)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    step = 0
    while step < steps:
        for xb, yb in loader:
            opt.zero_grad()
            logits = model(xb)
            loss = F.cross_entropy(logits.reshape(-1, len(chars)), yb.reshape(-1))
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            print("loss", DTYPE[0], "lstm", step, loss.item().hex())
            step += 1
            if step == steps:
                break


DTYPE = ["float64"]  # the dtype being run, for the output lines


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dtypes", default="float64,float32")
    parser.add_argument("--programs", default="mlp,cnn,lstm")
    args = parser.parse_args()
    for name in args.dtypes.split(","):
        DTYPE[0] = name
        dtype = getattr(torch, name)
        torch.set_default_dtype(dtype)
        for program in args.programs.split(","):
            torch.manual_seed(0)
            if program == "mlp":
                train_classifier("mlp", MLP(), dtype, 20, 0.1)
            elif program == "cnn":
                train_classifier("cnn", CNN(), dtype, 20, 0.05)
            else:
                train_lstm(dtype, 12)
        print("state", name, bytes(torch.get_rng_state().numpy()).hex())


if __name__ == "__main__":
    main()
