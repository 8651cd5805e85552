"""dot_interaction in PyTorch: the strict lower triangle of X[b] @ X[b]^T, row by row."""
import torch


def run(inputs: dict, params: dict) -> list:
    X = inputs["X"]  # [B, F, D] float32
    F = X.shape[1]
    Z = torch.bmm(X, X.transpose(1, 2))  # [B, F, F]
    li, lj = torch.tril_indices(F, F, offset=-1, device=X.device)  # (1,0), (2,0), (2,1), ...
    return [Z[:, li, lj].contiguous()]  # [B, F*(F-1)/2]
