import torch
import torch.nn as nn


class Model(nn.Module):
    """Dropout in training mode: random inside forward."""

    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(p=0.5)

    def forward(self, x):
        return self.drop(x) * 2


batch_size = 16
dim = 1024


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
