import torch
import torch.nn as nn


class Model(nn.Module):
    """LogSoftmax in bfloat16."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.log_softmax(x, dim=-1)


batch_size = 16
dim = 2048


def get_inputs():
    return [torch.randn(batch_size, dim, dtype=torch.bfloat16)]


def get_init_inputs():
    return []
