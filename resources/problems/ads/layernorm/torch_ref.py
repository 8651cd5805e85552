"""layernorm (bf16) in PyTorch: torch's layer_norm on bf16 tensors (fp32 statistics inside)."""
import torch.nn.functional as F


def run(inputs: dict, params: dict) -> list:
    x, gamma, beta = inputs["x"], inputs["gamma"], inputs["beta"]  # bf16 [M, N], [N], [N]
    eps = float(params["eps"])
    return [F.layer_norm(x, (x.shape[-1],), weight=gamma, bias=beta, eps=eps)]
