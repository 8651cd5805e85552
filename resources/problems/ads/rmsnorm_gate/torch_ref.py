"""rmsnorm_gate in PyTorch: RMSNorm in fp32, times the weight and silu(gate), back to bf16."""
import torch
import torch.nn.functional as F


def run(inputs: dict, params: dict) -> list:
    x, w, g = inputs["x"], inputs["w"], inputs["g"]  # bf16 [M, N], [N], [M, N]
    eps = float(params["eps"])
    y = F.rms_norm(x.float(), (x.shape[-1],), weight=w.float(), eps=eps) * F.silu(g.float())
    return [y.to(torch.bfloat16)]
