import torch
import torch.nn as nn


class Model(nn.Module):
    """Max over the last dimension."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.max(x, dim=self.dim)[0]


batch_size = 32
features = 1024
dim = -1


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [dim]
