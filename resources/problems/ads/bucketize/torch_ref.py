"""PyTorch version of bucketize: index of the first boundary >= x (right=False), int64."""
import torch


def run(inputs: dict, params: dict) -> list:
    return [torch.bucketize(inputs["x"], inputs["boundaries"], right=False)]
