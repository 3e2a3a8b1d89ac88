"""A character-level language model trained on real English text available offline: the docstrings of
a fixed list of Python standard-library modules, collected at run time with `inspect`.

An LSTM by default (Embedding -> LSTM -> Linear), or a causal Transformer encoder with
`--model transformer`. Batches come from ember.utils.data; training uses Adam, clip_grad_norm_ and
a tqdm progress bar, prints train/validation perplexity per epoch, and samples a few lines of text
at the end. The defaults are small so a run takes about a minute on 2 cores.

    python examples/char_lm.py
    python examples/char_lm.py --model transformer --epochs 3
    python examples/char_lm.py --max-chars 1000000 --hidden 256 --layers 2 --epochs 10
"""
import argparse
import importlib
import inspect
import math
import os
import string
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The time loop multiplies small matrices (batch x hidden): one BLAS thread per process is several times
# faster than a thread pool contending for 2 shared cores. Set before NumPy loads; override from the shell.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from tqdm import tqdm  # noqa: E402

import ember as torch  # noqa: E402
import ember.nn as nn  # noqa: E402
import ember.nn.functional as F  # noqa: E402
from ember.utils.data import DataLoader, Dataset  # noqa: E402

MODULES = ["argparse", "collections", "contextlib", "csv", "dataclasses", "datetime", "decimal", "difflib", "enum",
           "fractions", "functools", "heapq", "inspect", "itertools", "json", "logging", "os", "pathlib", "pickle",
           "random", "re", "shutil", "statistics", "string", "subprocess", "tempfile", "textwrap", "threading",
           "typing", "unittest", "urllib.parse", "zipfile"]
ALPHABET = string.ascii_letters + string.digits + string.punctuation + " \n"


# ---- data ------------------------------------------------------------------------------------------

def stdlib_docstrings(max_chars):
    """Docstrings of the modules in MODULES and their public classes, functions and methods, in a fixed order."""
    docs = []
    seen = set()
    for name in MODULES:
        module = importlib.import_module(name)
        objects = [module]
        for attr in sorted(vars(module)):
            obj = getattr(module, attr)
            if attr.startswith("_") or not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            objects.append(obj)
            if inspect.isclass(obj):
                methods = sorted(vars(obj).items())
                objects.extend(v for k, v in methods if not k.startswith("_") and inspect.isfunction(v))
        for obj in objects:
            doc = inspect.getdoc(obj)
            if doc and doc not in seen:
                seen.add(doc)
                docs.append(doc)
    text = "\n\n".join(docs)
    text = "".join(c if c in ALPHABET else " " for c in text)
    return text[:max_chars]


class CharChunks(Dataset):
    """Non-overlapping windows of seq_len + 1 characters: (input, target shifted by one)."""

    def __init__(self, ids, seq_len):
        self.ids = ids
        self.seq_len = seq_len

    def __len__(self):
        return (len(self.ids) - 1) // self.seq_len

    def __getitem__(self, i):
        start = i * self.seq_len
        chunk = self.ids[start:start + self.seq_len + 1]
        return torch.from_numpy(chunk[:-1]), torch.from_numpy(chunk[1:])


# ---- models ----------------------------------------------------------------------------------------

class LSTMModel(nn.Module):
    def __init__(self, vocab, emb, hidden, layers, dropout):
        super().__init__()
        self.embed = nn.Embedding(vocab, emb)
        self.rnn = nn.LSTM(emb, hidden, layers, batch_first=True, dropout=dropout if layers > 1 else 0.0)
        self.drop = nn.Dropout(dropout)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, x, state=None):
        out, state = self.rnn(self.embed(x), state)
        return self.head(self.drop(out)), state


class TransformerModel(nn.Module):
    def __init__(self, vocab, d_model, heads, layers, dropout, max_len):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        layer = nn.TransformerEncoderLayer(d_model, heads, 4 * d_model, dropout, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, norm=nn.LayerNorm(d_model), enable_nested_tensor=False)
        self.head = nn.Linear(d_model, vocab)

    def forward(self, x, state=None):
        steps = x.size(1)
        h = self.embed(x) + self.pos(torch.arange(steps))
        mask = nn.Transformer.generate_square_subsequent_mask(steps)
        return self.head(self.encoder(h, mask=mask, is_causal=True)), None


# ---- training --------------------------------------------------------------------------------------

def run_epoch(model, loader, vocab, optimizer=None, clip=1.0, desc=""):
    """Mean cross-entropy over the loader; trains when an optimizer is given."""
    training = optimizer is not None
    model.train(training)
    total, count = 0.0, 0
    bar = tqdm(loader, desc=desc, leave=False, disable=not training, mininterval=1.0)
    for x, y in bar:
        with torch.set_grad_enabled(training):
            logits, _ = model(x)
            loss = F.cross_entropy(logits.reshape(-1, vocab), y.reshape(-1))
        if training:
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), clip)
            optimizer.step()
            bar.set_postfix(loss=f"{loss.item():.3f}")
        total += loss.item() * y.numel()
        count += y.numel()
    return total / count


def sample(model, stoi, itos, prompt, length, temperature, context):
    """Continue `prompt` one character at a time (the LSTM carries its state; the transformer re-reads
    the last `context` characters)."""
    model.eval()
    out = list(prompt)
    ids = [stoi[c] for c in prompt]
    state = None
    with torch.no_grad():
        x = torch.tensor([ids])
        for _ in range(length):
            if isinstance(model, TransformerModel):
                logits, _ = model(torch.tensor([ids[-context:]]))
            else:
                logits, state = model(x, state)
            probs = F.softmax(logits[0, -1] / temperature, dim=-1)
            nxt = int(torch.multinomial(probs, 1))
            ids.append(nxt)
            out.append(itos[nxt])
            x = torch.tensor([[nxt]])
    return "".join(out)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", choices=["lstm", "transformer"], default="lstm")
    p.add_argument("--max-chars", type=int, default=300_000, help="corpus size (characters)")
    p.add_argument("--seq-len", type=int, default=64)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--emb", type=int, default=48, help="embedding size (LSTM)")
    p.add_argument("--hidden", type=int, default=128, help="LSTM hidden size / transformer d_model")
    p.add_argument("--layers", type=int, default=1)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--clip", type=float, default=1.0)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--samples", type=int, default=3, help="lines of text to sample at the end")
    p.add_argument("--sample-len", type=int, default=120)
    p.add_argument("--temperature", type=float, default=0.8)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)

    torch.manual_seed(args.seed)
    text = stdlib_docstrings(args.max_chars)
    itos = sorted(set(text))
    stoi = {c: i for i, c in enumerate(itos)}
    ids = np.array([stoi[c] for c in text], dtype=np.int64)
    cut = int(len(ids) * 0.9)
    train_loader = DataLoader(CharChunks(ids[:cut], args.seq_len), batch_size=args.batch_size, shuffle=True)
    val_loader = DataLoader(CharChunks(ids[cut:], args.seq_len), batch_size=args.batch_size)
    vocab = len(itos)
    print(f"corpus: {len(text):,} characters of docstrings from {len(MODULES)} stdlib modules, vocabulary {vocab}, "
          f"{len(train_loader)} training batches per epoch")

    if args.model == "lstm":
        model = LSTMModel(vocab, args.emb, args.hidden, args.layers, args.dropout)
    else:
        model = TransformerModel(vocab, args.hidden, args.heads, args.layers, args.dropout, args.seq_len)
    print(f"model: {args.model}, {sum(p.numel() for p in model.parameters()):,} parameters")
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)

    for epoch in range(1, args.epochs + 1):
        start = time.time()
        train_loss = run_epoch(model, train_loader, vocab, optimizer, args.clip, desc=f"epoch {epoch}")
        val_loss = run_epoch(model, val_loader, vocab)
        print(f"epoch {epoch}: train ppl {math.exp(train_loss):7.2f} | val ppl {math.exp(val_loss):7.2f} | "
              f"{time.time() - start:5.1f}s", flush=True)

    print("samples:")
    for prompt in ["Return ", "The ", "If "][:args.samples]:
        line = sample(model, stoi, itos, prompt, args.sample_len, args.temperature, args.seq_len)
        print("  " + line.replace("\n", " ").strip())


if __name__ == "__main__":
    main()
