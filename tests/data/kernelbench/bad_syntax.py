import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x)
        return x


def get_inputs():
    return [torch.randn(16)]


def get_init_inputs():
    return []
