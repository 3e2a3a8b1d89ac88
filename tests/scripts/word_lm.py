"""A word-level language model, written for PyTorch in the style of pytorch/examples'
word_language_model: an Embedding, then an LSTM/GRU/RNN or a TransformerEncoder, then a Linear
decoder; truncated backpropagation through time with detached hidden states, gradient clipping,
plain SGD with learning-rate annealing, perplexity reports and a saved state_dict.

The data directory holds train.txt, valid.txt and test.txt (whitespace-tokenized text, one
sentence or paragraph per line).

    python word_lm.py --data DIR --model LSTM --epochs 6
    python word_lm.py --data DIR --model Transformer --lr 5
"""
import argparse
import math
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


# ---- data ---------------------------------------------------------------------------------------

class Dictionary:
    def __init__(self):
        self.word2idx = {}
        self.idx2word = []

    def add_word(self, word):
        if word not in self.word2idx:
            self.word2idx[word] = len(self.idx2word)
            self.idx2word.append(word)
        return self.word2idx[word]

    def __len__(self):
        return len(self.idx2word)


class Corpus:
    def __init__(self, path):
        self.dictionary = Dictionary()
        self.train = self.tokenize(os.path.join(path, "train.txt"))
        self.valid = self.tokenize(os.path.join(path, "valid.txt"))
        self.test = self.tokenize(os.path.join(path, "test.txt"))

    def tokenize(self, path):
        """One id per word, with an <eos> token closing every line."""
        ids = []
        with open(path, encoding="utf8") as f:
            for line in f:
                for word in line.split() + ["<eos>"]:
                    ids.append(self.dictionary.add_word(word))
        return torch.tensor(ids, dtype=torch.int64)


def batchify(data, bsz, device):
    """Cut the token stream into bsz columns: (steps, bsz), dropping the remainder."""
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous().to(device)


def get_batch(source, i, bptt):
    seq_len = min(bptt, len(source) - 1 - i)
    data = source[i:i + seq_len]
    target = source[i + 1:i + 1 + seq_len].reshape(-1)
    return data, target


# ---- models -------------------------------------------------------------------------------------

class RNNModel(nn.Module):
    """Encoder, recurrent module, decoder."""

    def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.5, tie_weights=False):
        super().__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        if rnn_type in ("LSTM", "GRU"):
            self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
        else:
            nonlinearity = {"RNN_TANH": "tanh", "RNN_RELU": "relu"}[rnn_type]
            self.rnn = nn.RNN(ninp, nhid, nlayers, nonlinearity=nonlinearity, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        if tie_weights:
            if nhid != ninp:
                raise ValueError("When using the tied flag, nhid must be equal to emsize")
            self.decoder.weight = self.encoder.weight
        self.init_weights()
        self.rnn_type = rnn_type
        self.nhid = nhid
        self.nlayers = nlayers

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output).view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        if self.rnn_type == "LSTM":
            return (weight.new_zeros(self.nlayers, bsz, self.nhid), weight.new_zeros(self.nlayers, bsz, self.nhid))
        return weight.new_zeros(self.nlayers, bsz, self.nhid)


class PositionalEncoding(nn.Module):
    """Adds fixed sine/cosine position signals to the embeddings."""

    def __init__(self, d_model, dropout=0.1, max_len=5000):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0).transpose(0, 1))

    def forward(self, x):
        x = x + self.pe[:x.size(0), :]
        return self.dropout(x)


class TransformerModel(nn.Module):
    """Encoder, positional encoding, causal TransformerEncoder, decoder."""

    def __init__(self, ntoken, ninp, nhead, nhid, nlayers, dropout=0.5):
        super().__init__()
        self.model_type = "Transformer"
        self.src_mask = None
        self.pos_encoder = PositionalEncoding(ninp, dropout)
        layer = nn.TransformerEncoderLayer(ninp, nhead, nhid, dropout)
        self.transformer_encoder = nn.TransformerEncoder(layer, nlayers, enable_nested_tensor=False)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.ninp = ninp
        self.decoder = nn.Linear(ninp, ntoken)
        self.init_weights()

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, src, has_mask=True):
        if has_mask:
            if self.src_mask is None or self.src_mask.size(0) != len(src):
                self.src_mask = nn.Transformer.generate_square_subsequent_mask(len(src)).to(src.device)
        else:
            self.src_mask = None
        src = self.encoder(src) * math.sqrt(self.ninp)
        src = self.pos_encoder(src)
        output = self.transformer_encoder(src, self.src_mask)
        output = self.decoder(output)
        return F.log_softmax(output, dim=-1)


def repackage_hidden(h):
    """Detach hidden states from their history (truncated BPTT)."""
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


# ---- training -------------------------------------------------------------------------------------

def evaluate(model, data_source, ntokens, args, eval_batch_size):
    model.eval()
    total_loss = 0.0
    criterion = nn.NLLLoss()
    if args.model != "Transformer":
        hidden = model.init_hidden(eval_batch_size)
    with torch.no_grad():
        for i in range(0, data_source.size(0) - 1, args.bptt):
            data, targets = get_batch(data_source, i, args.bptt)
            if args.model == "Transformer":
                output = model(data).view(-1, ntokens)
            else:
                output, hidden = model(data, hidden)
                hidden = repackage_hidden(hidden)
            total_loss += len(data) * criterion(output, targets).item()
    return total_loss / (len(data_source) - 1)


def train_epoch(model, train_data, ntokens, args, lr, epoch):
    model.train()
    criterion = nn.NLLLoss()
    total_loss = 0.0
    start_time = time.time()
    if args.model != "Transformer":
        hidden = model.init_hidden(args.batch_size)
    for batch, i in enumerate(range(0, train_data.size(0) - 1, args.bptt)):
        data, targets = get_batch(train_data, i, args.bptt)
        model.zero_grad()
        if args.model == "Transformer":
            output = model(data).view(-1, ntokens)
        else:
            hidden = repackage_hidden(hidden)
            output, hidden = model(data, hidden)
        loss = criterion(output, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)
        total_loss += loss.item()
        if batch % args.log_interval == 0 and batch > 0:
            cur_loss = total_loss / args.log_interval
            elapsed = time.time() - start_time
            print(f"| epoch {epoch:3d} | {batch:5d}/{len(train_data) // args.bptt:5d} batches | lr {lr:02.2f} | "
                  f"ms/batch {elapsed * 1000 / args.log_interval:5.2f} | loss {cur_loss:5.2f} | "
                  f"ppl {math.exp(cur_loss):8.2f}", flush=True)
            total_loss = 0.0
            start_time = time.time()
        if args.dry_run:
            break


def main():
    parser = argparse.ArgumentParser(description="Word-level language model (RNN/LSTM/GRU/Transformer)")
    parser.add_argument("--data", type=str, required=True, help="directory with train.txt, valid.txt, test.txt")
    parser.add_argument("--model", type=str, default="LSTM", help="RNN_TANH, RNN_RELU, LSTM, GRU, Transformer")
    parser.add_argument("--emsize", type=int, default=200)
    parser.add_argument("--nhid", type=int, default=200)
    parser.add_argument("--nlayers", type=int, default=2)
    parser.add_argument("--lr", type=float, default=20)
    parser.add_argument("--clip", type=float, default=0.25)
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--batch_size", type=int, default=20)
    parser.add_argument("--bptt", type=int, default=35)
    parser.add_argument("--dropout", type=float, default=0.2)
    parser.add_argument("--tied", action="store_true")
    parser.add_argument("--seed", type=int, default=1111)
    parser.add_argument("--log-interval", type=int, default=200)
    parser.add_argument("--save", type=str, default="model.pt")
    parser.add_argument("--nhead", type=int, default=2)
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    device = torch.device("cpu")
    corpus = Corpus(args.data)
    eval_batch_size = 10
    train_data = batchify(corpus.train, args.batch_size, device)
    val_data = batchify(corpus.valid, eval_batch_size, device)
    test_data = batchify(corpus.test, eval_batch_size, device)
    ntokens = len(corpus.dictionary)
    if args.model == "Transformer":
        model = TransformerModel(ntokens, args.emsize, args.nhead, args.nhid, args.nlayers, args.dropout).to(device)
    else:
        model = RNNModel(args.model, ntokens, args.emsize, args.nhid, args.nlayers, args.dropout, args.tied).to(device)
    print(f"vocabulary {ntokens} words, {train_data.numel()} training tokens, model {args.model}")

    lr = args.lr
    best_val_loss = None
    for epoch in range(1, args.epochs + 1):
        epoch_start_time = time.time()
        train_epoch(model, train_data, ntokens, args, lr, epoch)
        val_loss = evaluate(model, val_data, ntokens, args, eval_batch_size)
        print("-" * 89)
        elapsed = time.time() - epoch_start_time
        print(f"| end of epoch {epoch:3d} | time: {elapsed:5.2f}s | valid loss {val_loss:5.2f} | "
              f"valid ppl {math.exp(val_loss):8.2f}", flush=True)
        print("-" * 89)
        if not best_val_loss or val_loss < best_val_loss:
            torch.save(model.state_dict(), args.save)
            best_val_loss = val_loss
        else:
            lr /= 4.0

    model.load_state_dict(torch.load(args.save))
    if args.model in ["RNN_TANH", "RNN_RELU", "LSTM", "GRU"]:
        model.rnn.flatten_parameters()
    test_loss = evaluate(model, test_data, ntokens, args, eval_batch_size)
    print("=" * 89)
    print(f"| End of training | test loss {test_loss:5.2f} | test ppl {math.exp(test_loss):8.2f}")
    print("=" * 89)


if __name__ == "__main__":
    main()
