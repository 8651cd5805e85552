"""PyTorch version of jagged_to_padded: a vectorised gather of the first MAXL rows of every
sequence, with padding_value where a sequence has no row."""
import torch


def run(inputs: dict, params: dict) -> list:
    values = inputs["values"]      # [T, D]
    offsets = inputs["offsets"]    # [B + 1]
    maxl = int(params["MAXL"])
    pad = float(params["padding_value"])
    starts = offsets[:-1]
    lengths = offsets[1:] - starts
    pos = torch.arange(maxl, device=values.device, dtype=offsets.dtype)
    mask = pos.unsqueeze(0) < lengths.unsqueeze(1)                      # [B, MAXL]
    rows = torch.where(mask, starts.unsqueeze(1) + pos.unsqueeze(0), 0)  # row 0 where padded
    out = values[rows]                                                   # [B, MAXL, D]
    out = torch.where(mask.unsqueeze(-1), out, pad)
    return [out]
