"""Traced program for the torch spec: a two-layer "model" and three collectives."""
import sys

import torch
import torch.distributed as dist
from torch.nn import Module


class Tensor(object):
    dtype = "fake.float16"

    def __init__(self, n):
        self.n = n

    def numel(self):
        return self.n


class LlamaDecoderLayer(Module):
    def forward(self, x):
        return x + 1


class LlamaForCausalLM(Module):
    def __init__(self):
        self.layers = [LlamaDecoderLayer(), LlamaDecoderLayer()]

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        dist.all_reduce(Tensor(4096))
        return x


def main():
    model = LlamaForCausalLM()
    print("model says %d" % model(0))
    dist.broadcast(Tensor(8), src=0)
    dist.barrier()
    print("all_reduce hooked: %s" % bool(getattr(dist.all_reduce, "__teller_hook__", None)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
