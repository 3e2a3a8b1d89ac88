"""pytorch/examples distributed/minGPT-ddp (model.py, char_dataset.py, trainer.py), one process, tiny.

Same program: a GPT of Blocks (LayerNorm, nn.MultiheadAttention(batch_first=True) with a causal
mask from torch.tril registered as a buffer, a GELU MLP), an Embedding stem with a positional
nn.Parameter, GPT-2 init through .apply() and p.data.normal_, AdamW over decay / no-decay parameter
groups built from named_modules()/named_parameters(), F.cross_entropy(ignore_index=-1),
torch.set_grad_enabled(train), clip_grad_norm_, random_split of a character Dataset, a snapshot
dict saved with torch.save, and generation with torch.topk / torch.multinomial / torch.cat.

The text is synthetic (sentences drawn from a small grammar) instead of a downloaded corpus. The
example passes the 0/1 tril matrix as a float attn_mask, which torch adds to the scores (so it
masks nothing); here the mask is boolean (True = may not attend), which is causal.
"""
import argparse
import math
import os
import random
import tempfile
from dataclasses import dataclass

import torch
import torch.nn as nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, Dataset, random_split


@dataclass
class GPTConfig:
    n_layer: int = 2
    n_head: int = 2
    n_embd: int = 32
    vocab_size: int = 32
    block_size: int = 16
    embd_pdrop: float = 0.1
    resid_pdrop: float = 0.1
    attn_pdrop: float = 0.1


@dataclass
class OptimizerConfig:
    learning_rate: float = 3e-3
    weight_decay: float = 0.1


class MultiheadAttentionLayer(nn.Module):
    """A multi-head masked self-attention layer with a projection at the end."""

    def __init__(self, config, device="cpu", dtype=torch.float32):
        super().__init__()
        assert config.n_embd % config.n_head == 0
        self.resid_drop = nn.Dropout(config.resid_pdrop)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, device=device, dtype=dtype)
        self.register_buffer("mask", torch.tril(torch.ones(config.block_size, config.block_size))
                             .view(1, 1, config.block_size, config.block_size))
        self.attn = torch.nn.MultiheadAttention(
            embed_dim=config.n_embd,
            num_heads=config.n_head,
            dropout=config.attn_pdrop,
            batch_first=True,
            device=device,
            dtype=dtype
        )

    def forward(self, x):
        _, seq_size, _ = x.size()
        causal = self.mask[0, 0, :seq_size, :seq_size] == 0  # True where attending is not allowed
        y = self.attn(x, x, x, attn_mask=causal)[0]
        y = self.resid_drop(self.c_proj(y))
        return y


class Block(nn.Module):
    """ an unassuming Transformer block """

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.ln1 = nn.LayerNorm(config.n_embd)
        self.ln2 = nn.LayerNorm(config.n_embd)
        self.attn = MultiheadAttentionLayer(config)
        self.mlp = nn.Sequential(
            nn.Linear(config.n_embd, 4 * config.n_embd),
            nn.GELU(),
            nn.Linear(4 * config.n_embd, config.n_embd),
            nn.Dropout(config.resid_pdrop),
        )

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        x = x + self.mlp(self.ln2(x))
        return x


class EmbeddingStem(nn.Module):
    def __init__(self, config: GPTConfig, device="cpu", dtype=torch.float32):
        super().__init__()
        self.tok_emb = nn.Embedding(config.vocab_size, config.n_embd, device=device, dtype=dtype)
        self.pos_emb = nn.Parameter(torch.zeros(1, config.block_size, config.n_embd, device=device, dtype=dtype))
        self.drop = nn.Dropout(config.embd_pdrop)
        self.block_size = config.block_size

    def reset_parameters(self):
        self.tok_emb.reset_parameters()

    def forward(self, idx):
        b, t = idx.size()
        assert t <= self.block_size, f"Cannot forward sequence of length {t}, block size is only {self.block_size}"

        token_embeddings = self.tok_emb(idx)  # each index maps to a (learnable) embedding vector
        position_embeddings = self.pos_emb[:, :t, :]  # each position maps to a (learnable) position vector
        return self.drop(token_embeddings + position_embeddings)


class GPT(nn.Module):
    """ GPT Language Model """

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.block_size = config.block_size
        # input embedding stem
        self.emb_stem = EmbeddingStem(config)
        # transformer
        self.blocks = nn.Sequential(*[Block(config) for _ in range(config.n_layer)])
        # decoder head
        self.ln_f = nn.LayerNorm(config.n_embd)
        self.head = nn.Linear(config.n_embd, config.vocab_size, bias=False)

        # init all weights, and apply a special scaled init to the residual projections, per GPT-2 paper
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():
            if pn.endswith('c_proj.weight'):
                p.data.normal_(mean=0.0, std=0.02/math.sqrt(2 * config.n_layer))

        # report number of parameters (note we don't count the decoder parameters in lm_head)
        n_params = sum(p.numel() for p in self.blocks.parameters())
        print("number of parameters: %.2fM" % (n_params/1e6,))

    def _init_weights(self, module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            module.weight.data.normal_(mean=0.0, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                module.bias.data.zero_()
        elif isinstance(module, nn.LayerNorm):
            module.bias.data.zero_()
            module.weight.data.fill_(1.0)

    def forward(self, idx, targets=None):
        x = self.emb_stem(idx)
        x = self.blocks(x)
        x = self.ln_f(x)
        logits = self.head(x)

        # if we are given some desired targets also calculate the loss
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)

        return logits, loss

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, do_sample=False, top_k=None):
        for _ in range(max_new_tokens):
            # if the sequence context is growing too long we must crop it at block_size
            idx_cond = idx if idx.size(1) <= self.block_size else idx[:, -self.block_size:]
            # forward the model to get the logits for the index in the sequence
            logits, _ = self(idx_cond)
            # pluck the logits at the final step and scale by desired temperature
            logits = logits[:, -1, :] / temperature
            # optionally crop the logits to only the top k options
            if top_k is not None:
                v, _ = torch.topk(logits, top_k)
                logits[logits < v[:, [-1]]] = -float('Inf')
            # apply softmax to convert logits to (normalized) probabilities
            probs = F.softmax(logits, dim=-1)
            # either sample from the distribution or take the most likely element
            if do_sample:
                idx_next = torch.multinomial(probs, num_samples=1)
            else:
                _, idx_next = torch.topk(probs, k=1, dim=-1)
            # append sampled index to the running sequence and continue
            idx = torch.cat((idx, idx_next), dim=1)

        return idx


def create_optimizer(model: torch.nn.Module, opt_config: OptimizerConfig):
    """AdamW with weight decay on Linear / attention projection weights only."""
    decay = set()
    no_decay = set()
    whitelist_weight_modules = (torch.nn.Linear, )
    blacklist_weight_modules = (torch.nn.LayerNorm, torch.nn.Embedding)
    for mn, m in model.named_modules():
        for pn, p in m.named_parameters():
            fpn = '%s.%s' % (mn, pn) if mn else pn  # full param name
            if pn.endswith('bias'):
                # all biases will not be decayed
                no_decay.add(fpn)
            elif pn.endswith('weight') and isinstance(m, whitelist_weight_modules):
                # weights of whitelist modules will be weight decayed
                decay.add(fpn)
            elif pn.endswith('in_proj_weight'):
                # MHA projection layer
                decay.add(fpn)
            elif pn.endswith('weight') and isinstance(m, blacklist_weight_modules):
                # weights of blacklist modules will NOT be weight decayed
                no_decay.add(fpn)
            elif pn.endswith('pos_emb'):
                # positional embedding shouldn't be decayed
                no_decay.add(fpn)

    # validate that we considered every parameter
    param_dict = {pn: p for pn, p in model.named_parameters()}
    inter_params = decay & no_decay
    union_params = decay | no_decay
    assert len(inter_params) == 0, "parameters %s made it into both decay/no_decay sets!" % (str(inter_params), )
    assert len(param_dict.keys() - union_params) == 0, \
        "parameters %s were not separated into either decay/no_decay set!" % (str(param_dict.keys() - union_params), )

    # create the pytorch optimizer object
    optim_groups = [
        {"params": [param_dict[pn] for pn in sorted(list(decay))], "weight_decay": opt_config.weight_decay},
        {"params": [param_dict[pn] for pn in sorted(list(no_decay))], "weight_decay": 0.0},
    ]
    optimizer = torch.optim.AdamW(optim_groups, lr=opt_config.learning_rate, betas=(0.9, 0.95))
    return optimizer


class CharDataset(Dataset):
    """char_dataset.py: every block_size+1 window of the text, as (input ids, next-char ids)."""

    def __init__(self, data, block_size):
        chars = sorted(list(set(data)))
        data_size, vocab_size = len(data), len(chars)
        print('Data has %d characters, %d unique.' % (data_size, vocab_size))

        self.stoi = {ch: i for i, ch in enumerate(chars)}
        self.itos = {i: ch for i, ch in enumerate(chars)}
        self.block_size = block_size
        self.vocab_size = vocab_size
        self.data = data

    def __len__(self):
        return len(self.data) - self.block_size

    def __getitem__(self, idx):
        # grab a chunk of (block_size + 1) characters from the data
        chunk = self.data[idx:idx + self.block_size + 1]
        # encode every character to an integer
        dix = [self.stoi[s] for s in chunk]
        x = torch.tensor(dix[:-1], dtype=torch.long)
        y = torch.tensor(dix[1:], dtype=torch.long)
        return x, y


def make_text(sentences=120, seed=0):
    """Sentences from a tiny grammar: '<the|a> <cat|dog|bird> <sat|ran|sang> <here|there>. '"""
    rng = random.Random(seed)
    words = [["the", "a"], ["cat", "dog", "bird"], ["sat", "ran", "sang"], ["here", "there"]]
    return "".join(" ".join(rng.choice(w) for w in words) + ". " for _ in range(sentences))


def run_batch(model, optimizer, source, targets, train, grad_norm_clip=1.0):
    with torch.set_grad_enabled(train):
        _, loss = model(source, targets)
    if train:
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), grad_norm_clip)
        optimizer.step()
    return loss.item()


def run_epoch(model, optimizer, loader, train):
    model.train(train)
    losses = [run_batch(model, optimizer, source, targets, train) for source, targets in loader]
    return sum(losses) / len(losses)


def main():
    parser = argparse.ArgumentParser(description='minGPT on a synthetic character corpus')
    parser.add_argument('--max-epochs', type=int, default=3)
    parser.add_argument('--batch-size', type=int, default=64)
    parser.add_argument('--seed', type=int, default=0)
    args = parser.parse_args()
    torch.manual_seed(args.seed)

    dataset = CharDataset(make_text(), GPTConfig.block_size)
    train_len = int(len(dataset) * 0.9)
    train_set, test_set = random_split(dataset, [train_len, len(dataset) - train_len])
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True, pin_memory=False)
    test_loader = DataLoader(test_set, batch_size=args.batch_size, shuffle=False)

    model = GPT(GPTConfig(vocab_size=dataset.vocab_size))
    optimizer = create_optimizer(model, OptimizerConfig())
    initial_test_loss = run_epoch(model, optimizer, test_loader, train=False)

    snapshot_path = os.path.join(tempfile.mkdtemp(), 'snapshot.pt')
    for epoch in range(args.max_epochs):
        train_loss = run_epoch(model, optimizer, train_loader, train=True)
        test_loss = run_epoch(model, optimizer, test_loader, train=False)
        print(f"Epoch {epoch} | Train Loss {train_loss:.5f} | Test Loss {test_loss:.5f}")
        torch.save({"MODEL_STATE": model.state_dict(), "OPTIMIZER_STATE": optimizer.state_dict(),
                    "FINISHED_EPOCHS": epoch + 1}, snapshot_path)

    snapshot = torch.load(snapshot_path)
    assert snapshot["FINISHED_EPOCHS"] == args.max_epochs
    model.load_state_dict(snapshot["MODEL_STATE"])
    model.eval()
    prompt = torch.tensor([[dataset.stoi[c] for c in "the cat "]], dtype=torch.long)
    greedy = model.generate(prompt, max_new_tokens=12)
    sampled = model.generate(prompt, max_new_tokens=12, do_sample=True, top_k=3)
    greedy_text = ''.join(dataset.itos[int(i)] for i in greedy[0])
    sampled_text = ''.join(dataset.itos[int(i)] for i in sampled[0])
    print(repr(greedy_text), repr(sampled_text))
    # the grammar: after 'the cat ' comes one of the verbs
    grammatical = any(greedy_text.startswith('the cat ' + verb) for verb in ('sat', 'ran', 'sang'))
    print('final: initial_test_loss={:.4f} test_loss={:.4f} train_loss={:.4f} grammatical={:d}'.format(
        initial_test_loss, test_loss, train_loss, grammatical))


if __name__ == '__main__':
    main()
