import torch
import torch.nn as nn


class Model(nn.Module):
    """Complex input: a dtype Hone does not have."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x * 2


N = 1024


def get_inputs():
    return [torch.randn(N, dtype=torch.complex64)]


def get_init_inputs():
    return []
