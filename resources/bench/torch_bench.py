#!/usr/bin/env python3
"""Times a problem's PyTorch implementation (eager and torch.compile) on the exact inputs
hone-worker dumped, after checking it against the reference outputs.

    torch_bench.py --manifest DIR/manifest.json --module PROBLEM/torch_ref.py [--samples 30]

The module defines run(inputs: dict, params: dict) -> list of output tensors. Timing follows
Hone's rules for candidates: warm-up, the L2 rewritten before every sample, CUDA events on the
stream followed by a device-wide synchronize, the median of >= 20 samples. Prints one JSON object on stdout.
"""
import argparse
import importlib.util
import json
import os
import sys
import time

DTYPES = {"f32": ("float32", 4), "f64": ("float64", 8), "i32": ("int32", 4), "i64": ("int64", 8),
          "u8": ("uint8", 1), "bf16": ("bfloat16", 2), "f16": ("float16", 2)}


def load_tensor(torch, base, entry):
    name, size = DTYPES[entry["dtype"]]
    raw = open(os.path.join(base, entry["file"]), "rb").read()
    numel = 1
    for d in entry["shape"]:
        numel *= int(d)
    if len(raw) != numel * size:
        raise SystemExit(f"{entry['file']}: {len(raw)} bytes, expected {numel * size}")
    if name in ("bfloat16", "float16"):
        t = torch.frombuffer(bytearray(raw), dtype=torch.int16).view(getattr(torch, name)) if raw else \
            torch.empty(0, dtype=getattr(torch, name))
    else:
        t = torch.frombuffer(bytearray(raw), dtype=getattr(torch, name)) if raw else \
            torch.empty(0, dtype=getattr(torch, name))
    return t.reshape([int(d) for d in entry["shape"]])


def check(torch, got, want, tolerance):
    """Hone's rule: |got - want| <= atol + rtol * |want| for every element, no NaN."""
    worst = 0.0
    for g, w in zip(got, want):
        if tuple(g.shape) != tuple(w.shape):
            return False, f"shape {tuple(g.shape)} != {tuple(w.shape)}"
        key = {torch.float32: "f32", torch.bfloat16: "bf16", torch.float16: "f16", torch.float64: "f64",
               torch.int64: "i64", torch.int32: "i32", torch.uint8: "u8"}[w.dtype]
        if g.dtype != w.dtype:
            return False, f"dtype {g.dtype} != {w.dtype}"
        tol = tolerance.get(key, {"atol": 0.0, "rtol": 0.0})
        gd = g.double()
        wd = w.to(g.device).double()
        if torch.isnan(gd).any():
            return False, "NaN in output"
        err = (gd - wd).abs()
        bound = tol["atol"] + tol["rtol"] * wd.abs()
        bad = int((err > bound).sum().item())
        if err.numel():
            worst = max(worst, float(err.max().item()))
        if bad:
            return False, f"{bad} elements outside tolerance (max abs err {worst:.3g})"
    return True, f"max abs err {worst:.3g}"


def time_fn(torch, fn, samples, warmup, flush):
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    ms = []
    for i in range(samples):
        flush.fill_(i + 1)
        torch.cuda.synchronize()
        start.record()
        fn()
        stop.record()
        torch.cuda.synchronize()  # device-wide, as for candidates
        ms.append(start.elapsed_time(stop))
    ms.sort()
    return {"median_ns": ms[len(ms) // 2] * 1e6, "p10_ns": ms[len(ms) // 10] * 1e6,
            "p90_ns": ms[(len(ms) * 9) // 10] * 1e6, "samples": len(ms)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--manifest", required=True)
    ap.add_argument("--module", required=True)
    ap.add_argument("--samples", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--no-compile", action="store_true")
    args = ap.parse_args()
    out = {"torch": None}
    try:
        import torch
    except Exception as e:  # noqa: BLE001 - any import failure means "no PyTorch here"
        print(json.dumps({"error": f"cannot import torch: {e}"}))
        return 0
    out["torch"] = torch.__version__
    if not torch.cuda.is_available():
        print(json.dumps({"error": "torch sees no CUDA device", "torch": torch.__version__}))
        return 0
    manifest = json.load(open(args.manifest))
    base = os.path.dirname(os.path.abspath(args.manifest))
    spec = importlib.util.spec_from_file_location("torch_ref", args.module)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    dev = torch.device("cuda")
    inputs = {e["name"]: load_tensor(torch, base, e).to(dev) for e in manifest["inputs"]}
    want = [load_tensor(torch, base, e) for e in manifest["outputs"]]
    params = dict(manifest.get("params", {}))
    params.update({k: float(v) for k, v in manifest.get("symbols", {}).items()})
    tolerance = manifest.get("tolerance", {})
    props = torch.cuda.get_device_properties(dev)
    flush = torch.empty(max(2 * getattr(props, "L2_cache_size", 50 << 20), 64 << 20) // 4,
                        dtype=torch.int32, device=dev)
    out.update({"device": props.name, "problem": manifest["problem"], "shape": manifest["shape"]})

    def variant(label, fn):
        entry = {}
        try:
            t0 = time.time()
            got = fn()
            torch.cuda.synchronize()
            entry["first_call_s"] = time.time() - t0
            got = list(got) if isinstance(got, (list, tuple)) else [got]
            ok, why = check(torch, got, want, tolerance)
            entry.update({"ok": ok, "check": why})
            if ok:
                entry.update(time_fn(torch, fn, args.samples, args.warmup, flush))
        except Exception as e:  # noqa: BLE001 - reported, not raised: one variant failing is data
            entry.update({"ok": False, "error": f"{type(e).__name__}: {e}"[:500]})
        out[label] = entry

    with torch.no_grad():
        variant("eager", lambda: mod.run(inputs, params))
        if not args.no_compile:
            compiled = torch.compile(mod.run)
            variant("compile", lambda: compiled(inputs, params))
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
