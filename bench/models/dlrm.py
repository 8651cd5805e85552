#!/usr/bin/env python3
"""An ads ranking model in the DLRM style, timed as PyTorch runs it and with Hone's operators.

    python3 bench/models/dlrm.py [--device cuda] [--batch 16384] [--tables 26] [--rows 1000000]
        [--dim 128] [--pooling 30] [--hone PKGS] [--iters 20] [--json OUT] [--small]

The model (weights and inputs drawn from --seed):
  dense   [B, 16] float32 -> bucketize against 1024 sorted boundaries -> per-feature ids ->
          feature_hash into 1,000,003 buckets -> a hashed embedding table, bags of 16 (sum)
  bottom  MLP on the dense features, bf16: 16 -> 512 -> 256 -> 128, bias + ReLU
  sparse  --tables tables of --rows x --dim float32, jagged offsets: bag lengths uniform in
          [0, 2 x pooling] (about 1 in 2*pooling+1 bags empty), indices uniform; embedding bag sums
  interaction  [bottom + hashed, 26 pooled] -> [B, 27, 128] -> pairwise dots (i > j): [B, 351]
  top     [B, 480] (128 + 351 + one zero column) bf16 -> 1024 (bias + ReLU) -> layernorm ->
          1024 (bias + ReLU), gated RMS norm with a linear gate -> 512 (bias + ReLU) -> 1 -> sigmoid

Variants: eager, torch.compile (default), torch.compile(mode="max-autotune-no-cudagraphs"), each
also replayed from a CUDA graph; and each of those with Hone's operators in place of the PyTorch
ones (`--hone PKGS`: a folder of packages written by `hone export --torch` or `hone export-torch`,
one subfolder per problem; the model uses every op it finds there and PyTorch for the rest).
Every variant's output is checked against eager PyTorch before it is timed.

Times are GPU time: the L2 is flushed and a device-side delay queued before the start event, so
the host launch overlaps work already on the stream (the way Hone times kernels); median of
--iters samples. Samples per second = batch / median. The per-operator breakdown comes from the
PyTorch profiler (CUDA time per op name) for eager PyTorch and eager Hone.
"""
import argparse
import glob
import importlib.util
import json
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

PROBLEMS = ["bucketize", "feature_hash", "embedding_bag_sum", "dot_interaction", "layernorm_bf16",
            "linear_bias_relu", "rmsnorm_gate"]


class TorchOps:
    """The PyTorch version of every operator (what torch.compile sees without Hone)."""
    name = "pytorch"

    def bucketize(self, x, boundaries):
        return torch.bucketize(x, boundaries, right=False)

    def feature_hash(self, ids, num_buckets, salt):
        m1 = 0xFF51AFD7ED558CCD - (1 << 64)
        m2 = 0xC4CEB9FE1A85EC53 - (1 << 64)
        low31, low32 = (1 << 31) - 1, (1 << 32) - 1
        h = ids ^ salt
        h = (h ^ ((h >> 33) & low31)) * m1
        h = (h ^ ((h >> 33) & low31)) * m2
        h = h ^ ((h >> 33) & low31)
        hi, lo = (h >> 32) & low32, h & low32
        return ((hi % num_buckets) * ((1 << 32) % num_buckets) + lo) % num_buckets

    def embedding_bag_sum(self, table, indices, offsets):
        return F.embedding_bag(indices, table, offsets, mode="sum", include_last_offset=True)

    def dot_interaction(self, X):
        f = X.shape[1]
        Z = torch.bmm(X, X.transpose(1, 2))
        li, lj = torch.tril_indices(f, f, offset=-1, device=X.device)
        return Z[:, li, lj]

    def layernorm(self, x, gamma, beta, eps):
        return F.layer_norm(x, (x.shape[-1],), weight=gamma, bias=beta, eps=eps)

    def linear_bias_relu(self, x, W, bias):
        return F.relu(F.linear(x, W, bias))

    def rmsnorm_gate(self, x, w, g, eps):
        xf = x.float()
        y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w.float() * F.silu(g.float())
        return y.to(x.dtype)


class HoneOps(TorchOps):
    """torch.ops.hone.* where a package was loaded, PyTorch otherwise."""
    name = "hone"

    def __init__(self, loaded):
        self.loaded = loaded  # problem name -> op
        h = torch.ops.hone
        if "bucketize" in loaded:
            self.bucketize = lambda x, b: h.bucketize(x, b)
        if "feature_hash" in loaded:
            self.feature_hash = lambda ids, nb, salt: h.feature_hash(ids, float(nb), float(salt))
        if "embedding_bag_sum" in loaded:
            self.embedding_bag_sum = lambda t, i, o: h.embedding_bag_sum(t, i, o)
        if "dot_interaction" in loaded:
            self.dot_interaction = lambda X: h.dot_interaction(X)
        if "layernorm_bf16" in loaded:
            self.layernorm = lambda x, g, b, eps: h.layernorm_bf16(x, g, b, eps)
        if "linear_bias_relu" in loaded:
            self.linear_bias_relu = lambda x, W, b: h.linear_bias_relu(x, W, b)
        if "rmsnorm_gate" in loaded:
            self.rmsnorm_gate = lambda x, w, g, eps: h.rmsnorm_gate(x, w, g, eps)


def load_hone(folder):
    loaded = {}
    for pkg in sorted(glob.glob(os.path.join(folder, "*", "hone_*.py"))):
        d = os.path.dirname(pkg)
        spec = importlib.util.spec_from_file_location(os.path.basename(pkg)[:-3], pkg)
        mod = importlib.util.module_from_spec(spec)
        sys.path.insert(0, d)
        spec.loader.exec_module(mod)
        problem = json.load(open(os.path.join(d, "problem.json")))["name"]
        if os.environ.get("HONE_TORCH_BUILD_ROOT"):  # each package's build in its own folder there
            os.environ["HONE_TORCH_BUILD"] = os.path.join(os.environ["HONE_TORCH_BUILD_ROOT"], problem)
        loaded[problem] = mod.load()
    return loaded


class Model(torch.nn.Module):
    def __init__(self, a, device):
        super().__init__()
        dev = torch.device(device)
        g = torch.Generator(device=dev).manual_seed(a.seed)  # drawn where they live: 13 GB of tables
        self.ops = TorchOps()
        self.nb, self.salt = 1000003, 6004799503160661

        def param(*shape, dtype=torch.float32, scale=None):
            fan_in = shape[-1] if len(shape) > 1 else 1
            s = scale if scale is not None else (1.0 / fan_in) ** 0.5
            t = torch.rand(*shape, generator=g, device=dev).mul_(2).sub_(1).mul_(s)
            return torch.nn.Parameter(t.to(dtype), requires_grad=False)

        bf = torch.bfloat16
        self.boundaries = torch.sort(torch.randn(1024, generator=g, device=dev) * 1.5).values
        self.hashed = param(self.nb, a.dim, scale=0.05)
        self.tables = torch.nn.ParameterList([param(a.rows, a.dim, scale=0.05) for _ in range(a.tables)])
        self.bottom = torch.nn.ParameterList([param(512, 16, dtype=bf), param(512, dtype=bf, scale=0.1),
                                              param(256, 512, dtype=bf), param(256, dtype=bf, scale=0.1),
                                              param(a.dim, 256, dtype=bf), param(a.dim, dtype=bf, scale=0.1)])
        f = a.tables + 1
        self.pairs = f * (f - 1) // 2
        width = a.dim + self.pairs
        self.pad = (-width) % 8  # K a multiple of 8 for bf16 GEMMs
        k = width + self.pad
        self.top1 = torch.nn.ParameterList([param(1024, k, dtype=bf), param(1024, dtype=bf, scale=0.1)])
        self.ln = torch.nn.ParameterList([param(1024, dtype=bf, scale=0.2).add_(1.0), param(1024, dtype=bf, scale=0.1)])
        self.top2 = torch.nn.ParameterList([param(1024, 1024, dtype=bf), param(1024, dtype=bf, scale=0.1)])
        self.gate = torch.nn.ParameterList([param(1024, 1024, dtype=bf), param(1024, dtype=bf, scale=0.1)])
        self.rms_w = param(1024, dtype=bf, scale=0.2).add_(1.0)
        self.top3 = torch.nn.ParameterList([param(512, 1024, dtype=bf), param(512, dtype=bf, scale=0.1)])
        self.out = torch.nn.ParameterList([param(1, 512, dtype=bf), param(1, dtype=bf, scale=0.1)])

    def forward(self, dense, indices, offsets):
        o = self.ops
        b = dense.shape[0]
        nd = dense.shape[1]
        # dense features: bucketize, distinct ids per feature, hash, a bag of nd per sample
        ids = o.bucketize(dense.reshape(-1), self.boundaries)
        ids = ids + torch.arange(nd, device=dense.device, dtype=torch.int64).repeat(b) * 1025
        hashed_ids = o.feature_hash(ids, self.nb, self.salt)
        dense_offsets = torch.arange(0, b * nd + 1, nd, device=dense.device, dtype=torch.int64)
        hashed = o.embedding_bag_sum(self.hashed, hashed_ids, dense_offsets)
        x = dense.to(torch.bfloat16)
        for i in range(0, 6, 2):
            x = o.linear_bias_relu(x, self.bottom[i], self.bottom[i + 1])
        bottom = x.float() + hashed
        pooled = [o.embedding_bag_sum(t, indices[i], offsets[i]) for i, t in enumerate(self.tables)]
        X = torch.stack([bottom] + pooled, dim=1)
        inter = o.dot_interaction(X)
        z = torch.cat([bottom, inter], dim=1)
        if self.pad:
            z = F.pad(z, (0, self.pad))
        z = z.to(torch.bfloat16)
        h = o.linear_bias_relu(z, self.top1[0], self.top1[1])
        h = o.layernorm(h, self.ln[0], self.ln[1], 1e-5)
        h2 = o.linear_bias_relu(h, self.top2[0], self.top2[1])
        gate = F.linear(h, self.gate[0], self.gate[1])
        h3 = o.rmsnorm_gate(h2, self.rms_w, gate, 1e-6)
        h4 = o.linear_bias_relu(h3, self.top3[0], self.top3[1])
        return torch.sigmoid(F.linear(h4, self.out[0], self.out[1]).float())


def make_inputs(a, device):
    g = torch.Generator().manual_seed(a.seed + 1)
    dense = (torch.randn(a.batch, 16, generator=g) * 1.5).to(device)
    indices, offsets = [], []
    for _ in range(a.tables):
        lengths = torch.randint(0, 2 * a.pooling + 1, (a.batch,), generator=g)
        off = torch.zeros(a.batch + 1, dtype=torch.int64)
        off[1:] = torch.cumsum(lengths, 0)
        indices.append(torch.randint(0, a.rows, (int(off[-1]),), generator=g).to(device))
        offsets.append(off.to(device))
    return dense, indices, offsets


def gpu_time(fn, iters, flush):
    """Median GPU time (ms): flush and a device-side delay queued before the start event."""
    ms = []
    for _ in range(iters):
        flush.zero_()
        torch.cuda._sleep(200000)  # ~0.1 ms of device time: the host launch hides behind it
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        ms.append(start.elapsed_time(end))
    return statistics.median(ms)


def cpu_time(fn, iters):
    ms = []
    for _ in range(iters):
        t = time.perf_counter()
        fn()
        ms.append((time.perf_counter() - t) * 1e3)
    return statistics.median(ms)


def breakdown(fn, device, top=12):
    from torch.profiler import ProfilerActivity, profile
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with profile(activities=acts) as prof:
        fn()
        if device == "cuda":
            torch.cuda.synchronize()
    rows = []
    for e in prof.key_averages():
        t = getattr(e, "self_device_time_total", None)
        if t is None:
            t = getattr(e, "self_cuda_time_total", 0)
        if device != "cuda":
            t = e.self_cpu_time_total
        if t > 0:
            rows.append({"op": e.key, "us": t, "calls": e.count})
    rows.sort(key=lambda r: -r["us"])
    return rows[:top]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--batch", type=int, default=16384)
    ap.add_argument("--tables", type=int, default=26)
    ap.add_argument("--rows", type=int, default=1000000)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--pooling", type=int, default=30)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--hone", help="folder of Hone PyTorch packages, one per problem")
    ap.add_argument("--variants", default="eager,compile,max-autotune",
                    help="comma list of eager, compile, max-autotune")
    ap.add_argument("--no-graphs", action="store_true", help="skip the CUDA-graph variants")
    ap.add_argument("--small", action="store_true", help="a CI-sized model: batch 256, 4 tables of 5000 rows")
    ap.add_argument("--json", help="write the results here")
    a = ap.parse_args()
    if a.small:
        a.batch, a.tables, a.rows, a.pooling, a.iters = 256, 4, 5000, 8, min(a.iters, 5)
    dev = a.device
    torch.manual_seed(a.seed)
    model = Model(a, dev).eval()
    inputs = make_inputs(a, dev)
    result = {"device": torch.cuda.get_device_name() if dev == "cuda" else "cpu", "torch": torch.__version__,
              "config": {k: getattr(a, k) for k in ("batch", "tables", "rows", "dim", "pooling", "seed", "iters")},
              "variants": [], "timing": "GPU time: L2 flush + device-side delay before the start event, median"
              if dev == "cuda" else "wall clock, median"}
    opsets = [TorchOps()]
    if a.hone:
        loaded = load_hone(a.hone)
        result["hone_ops"] = sorted(loaded)
        opsets.append(HoneOps(loaded))
    with torch.inference_mode():
        model.ops = TorchOps()
        want = model(*inputs)
    # How much the output varies across samples: a check tolerance must be well below it.
    result["output"] = {"mean": want.float().mean().item(), "std": want.float().std().item(),
                        "min": want.float().min().item(), "max": want.float().max().item()}
    print(json.dumps({"eager output": result["output"]}), flush=True)
    flush = torch.empty(64 << 20, dtype=torch.int8, device=dev) if dev == "cuda" else None
    modes = [m for m in a.variants.split(",") if m]
    for ops in opsets:
        for mode in modes:
            model.ops = ops
            label = ops.name + " " + mode
            entry = {"variant": label}
            try:
                if mode == "eager":
                    fn = model
                elif not hasattr(torch, "compile"):
                    raise RuntimeError(f"torch.compile needs PyTorch 2 (this is {torch.__version__})")
                else:
                    torch._dynamo.reset()
                    fn = torch.compile(model, mode=None if mode == "compile" else "max-autotune-no-cudagraphs")
                with torch.inference_mode():
                    got = fn(*inputs)
                    err = (got.float() - want.float()).abs().max().item()
                    entry["max_abs_err"] = err
                    tol = min(2e-2, 0.1 * result["output"]["std"])  # well inside the outputs' spread
                    entry["tolerance"] = tol
                    if not err <= tol:
                        raise RuntimeError(f"output differs from eager PyTorch by {err:.3g} (tolerance {tol:.3g})")
                    call = lambda: fn(*inputs)  # noqa: E731
                    for _ in range(3):
                        call()
                    ms = gpu_time(call, a.iters, flush) if dev == "cuda" else cpu_time(call, a.iters)
                    entry.update({"ms": ms, "samples_per_s": a.batch / ms * 1e3})
                    if dev == "cuda" and not a.no_graphs:
                        graph = torch.cuda.CUDAGraph()
                        s = torch.cuda.Stream()
                        s.wait_stream(torch.cuda.current_stream())
                        with torch.cuda.stream(s):
                            call()
                        torch.cuda.current_stream().wait_stream(s)
                        with torch.cuda.graph(graph):
                            out = call()
                        graph.replay()
                        torch.cuda.synchronize()
                        gerr = (out.float() - want.float()).abs().max().item()
                        if not gerr <= tol:
                            raise RuntimeError(f"CUDA-graph output differs from eager PyTorch by {gerr:.3g}")
                        gms = gpu_time(graph.replay, a.iters, flush)
                        entry["graph"] = {"ms": gms, "samples_per_s": a.batch / gms * 1e3}
                    if mode == "eager":
                        entry["breakdown"] = breakdown(call, dev)
            except Exception as e:  # noqa: BLE001 - report and go on with the other variants
                entry["error"] = str(e).splitlines()[0][:300]
            result["variants"].append(entry)
            print(json.dumps({k: v for k, v in entry.items() if k != "breakdown"}), flush=True)

    def best(prefix):
        xs = []
        for v in result["variants"]:
            if v["variant"].startswith(prefix) and "samples_per_s" in v:
                xs.append((v["samples_per_s"], v["variant"]))
                if "graph" in v:
                    xs.append((v["graph"]["samples_per_s"], v["variant"] + " + CUDA graph"))
        return max(xs) if xs else None

    bt, bh = best("pytorch"), best("hone")
    result["best_pytorch"], result["best_hone"] = bt, bh
    if bt and bh:
        result["speedup"] = bh[0] / bt[0]
    print(json.dumps({"best_pytorch": bt, "best_hone": bh, "speedup": result.get("speedup")}))
    if a.json:
        json.dump(result, open(a.json, "w"), indent=2)
    return 0 if all("error" not in v for v in result["variants"] if v["variant"].endswith("eager")) else 1


if __name__ == "__main__":
    sys.exit(main())
