import torch
import torch.nn as nn


class Model(nn.Module):
    """A fused sequence: Linear, scaling, sigmoid, sum over the features."""

    def __init__(self, input_size, hidden_size, scale):
        super().__init__()
        self.gemm = nn.Linear(input_size, hidden_size)
        self.scale = scale

    def forward(self, x):
        x = self.gemm(x)
        x = torch.sigmoid(x * self.scale)
        return torch.sum(x, dim=1, keepdim=True)


batch_size = 64
input_size = 256
hidden_size = 128
scale = 2


def get_inputs():
    return [torch.randn(batch_size, input_size)]


def get_init_inputs():
    return [input_size, hidden_size, scale]
