"""A real PyTorch program for the torch hooks: a tiny decoder-only transformer and its
greedy generate loop. Run under `teller run --python-hooks torch`; torch_hooks_test.py
derives the expected ranges from the arguments it passes and from the ops each forward
calls, counted by hand in the comments.

usage: torch_generate.py --layers L --steps S [--threads N]
  S generated tokens, one model call each (no KV cache: the whole sequence every step);
  N > 0: the same loop then runs once on each of N threads.
"""
import argparse
import sys
import threading

import torch
import torch.nn.functional as F
from torch import nn

VOCAB = 32
DIM = 16
HEADS = 2
PROMPT = [3, 1, 4, 1, 5]


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.q = nn.Linear(DIM, DIM)
        self.k = nn.Linear(DIM, DIM)
        self.v = nn.Linear(DIM, DIM)
        self.o = nn.Linear(DIM, DIM)

    def forward(self, x):
        # 4 F.linear (q, k, v, o) from the Linear modules.
        b, t, _ = x.shape
        hd = DIM // HEADS
        q = self.q(x).view(b, t, HEADS, hd).transpose(1, 2)
        k = self.k(x).view(b, t, HEADS, hd).transpose(1, 2)
        v = self.v(x).view(b, t, HEADS, hd).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-2, -1)) / (hd ** 0.5)
        causal = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
        scores = scores.masked_fill(causal, float("-inf"))
        out = torch.matmul(F.softmax(scores, dim=-1), v)
        return self.o(out.transpose(1, 2).reshape(b, t, DIM))


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(DIM, 4 * DIM)
        self.down = nn.Linear(4 * DIM, DIM)

    def forward(self, x):
        # 2 F.linear (up, down) and one F.gelu.
        return self.down(F.gelu(self.up(x)))


class TinyDecoderLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1 = nn.LayerNorm(DIM)
        self.attn = Attention()
        self.norm2 = nn.LayerNorm(DIM)
        self.mlp = Mlp()

    def forward(self, x):
        # 2 F.layer_norm (norm1, norm2).
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class TinyForCausalLM(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.layers = nn.ModuleList([TinyDecoderLayer() for _ in range(layers)])
        self.norm = nn.LayerNorm(DIM)
        self.lm_head = nn.Linear(DIM, VOCAB, bias=False)

    def forward(self, ids):
        # 1 F.embedding; after the layers 1 F.layer_norm and 1 F.linear (lm_head).
        x = self.embed(ids)
        for layer in self.layers:
            x = layer(x)
        return self.lm_head(self.norm(x))


def generate(model, prompt, steps):
    ids = torch.tensor([prompt])
    with torch.no_grad():
        for _ in range(steps):
            logits = model(ids)
            nxt = torch.argmax(logits[:, -1, :], dim=-1, keepdim=True)
            ids = torch.cat([ids, nxt], dim=1)
    return ids[0].tolist()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, required=True)
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--threads", type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = TinyForCausalLM(args.layers).eval()
    print("torch %s" % torch.__version__)
    out = generate(model, PROMPT, args.steps)
    print("generated %s" % out)
    if args.threads:
        results = []
        workers = [threading.Thread(target=lambda: results.append(generate(model, PROMPT, args.steps)))
                   for _ in range(args.threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        print("threads agree: %s" % all(r == out for r in results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
