"""The traced program of bench/diagnosis/host_contention.py: a small decoder-only
transformer (plain PyTorch, CPU, one thread) whose greedy generate loop makes one model
call per step, with a KV-free forward over the last 8 tokens. Prints "step K T" (flushed;
T its monotonic clock in seconds) before each call, so that the bench can start and stop other processes at known steps.

usage: generate.py --steps S [--layers L] [--dim D]"""
import argparse
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn


class Layer(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.o = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.up = nn.Linear(dim, 4 * dim)
        self.down = nn.Linear(4 * dim, dim)

    def forward(self, x):
        b, t, d = x.shape
        hd = d // self.heads
        q, k, v = self.qkv(self.norm1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, hd).transpose(1, 2) for z in (q, k, v))
        scores = torch.matmul(q, k.transpose(-2, -1)) / (hd ** 0.5)
        causal = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
        a = torch.matmul(F.softmax(scores.masked_fill(causal, float("-inf")), dim=-1), v)
        x = x + self.o(a.transpose(1, 2).reshape(b, t, d))
        return x + self.down(F.gelu(self.up(self.norm2(x))))


class Model(nn.Module):
    def __init__(self, vocab, dim, layers, heads):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList(Layer(dim, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, ids):
        x = self.embed(ids)
        for layer in self.layers:
            x = layer(x)
        return self.head(self.norm(x))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--dim", type=int, default=64)
    a = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = Model(64, a.dim, a.layers, 4).eval()
    ids = [3, 1, 4, 1, 5, 9, 2, 6]
    with torch.no_grad():
        for k in range(a.steps):
            print("step %d %.6f" % (k, time.perf_counter()), flush=True)
            # The same sequence length every step: steps are peers of each other.
            logits = model(torch.tensor([ids[-8:]]))
            ids.append(int(logits[0, -1].argmax()) % 64)
    print("done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
