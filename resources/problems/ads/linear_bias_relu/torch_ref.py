"""linear_bias_relu in PyTorch: relu(x @ W^T + bias) in bf16 (cuBLAS, fp32 accumulation)."""
import torch.nn.functional as F


def run(inputs: dict, params: dict) -> list:
    x, W, bias = inputs["x"], inputs["W"], inputs["bias"]  # bf16 [M, K], [N, K], [N]
    return [F.relu(F.linear(x, W, bias))]
