"""PyTorch version of embedding_bag_sum: F.embedding_bag in sum mode. offsets holds B + 1
entries ending at L, which is include_last_offset=True."""
import torch
import torch.nn.functional as F


def run(inputs: dict, params: dict) -> list:
    out = F.embedding_bag(inputs["indices"], inputs["table"], inputs["offsets"], mode="sum",
                          include_last_offset=True)
    return [out]
