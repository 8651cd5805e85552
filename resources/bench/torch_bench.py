#!/usr/bin/env python3
"""Times a problem's PyTorch implementation (eager, torch.compile, and torch.compile with
mode="max-autotune-no-cudagraphs") on the exact inputs hone-worker dumped, after checking each
against the reference outputs.

    torch_bench.py --manifest DIR/manifest.json [--manifest DIR2/manifest.json ...]
                   --module PROBLEM/torch_ref.py [--samples 30]
                   [--skip-max-autotune] [--no-compile] [--no-graph]
With several manifests (one per bench shape of a shape set) every shape is checked and timed
the same way, each compiled afresh (as a deployment with static shapes would), and the output
adds "shapes": one object per manifest, in order, each shaped like the single-manifest output;
the top-level figures are the first manifest's.

The module defines run(inputs: dict, params: dict) -> list of output tensors. Each variant gets
three figures, each the median of the samples with the L2 rewritten before every sample:

- GPU time (median_ns), the way Hone times candidates: the L2 flush and a device-side delay
  (torch.cuda._sleep, sized to twice the variant's host launch time, at least 50 us) are queued
  before the start event with no synchronize in between, so Python, torch.compile's guards and
  the launches run while the GPU is still busy; CUDA events around the call, then a
  synchronize. `covered` is the fraction of samples whose start event had not yet passed when
  the call returned (the whole launch was hidden).
- host-inclusive time (host_median_ns): synchronize, then the wall clock around the call and a
  synchronize, as a caller that waits for every result sees it.
- CUDA-graph replay (graph.median_ns): the call captured in a torch.cuda.CUDAGraph after
  warm-up, its replay timed like the GPU time; a capture that fails is reported, not raised.

"fastest" names the variant with the lowest GPU time. Prints one JSON object on stdout.
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


def stats(ms):
    ms = sorted(ms)
    return {"median_ns": ms[len(ms) // 2] * 1e6, "p10_ns": ms[len(ms) // 10] * 1e6,
            "p90_ns": ms[(len(ms) * 9) // 10] * 1e6, "samples": len(ms)}


def sleep_cycles_per_ns(torch):
    """Clock cycles of torch.cuda._sleep per nanosecond on this GPU, measured with events."""
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(1000)
    rates = []
    for _ in range(3):
        torch.cuda.synchronize()
        start.record()
        torch.cuda._sleep(2_000_000)
        stop.record()
        torch.cuda.synchronize()
        rates.append(2_000_000 / (start.elapsed_time(stop) * 1e6))
    return sorted(rates)[1]


def gpu_time(torch, call, samples, flush, delay_cycles):
    """Events around `call` with the flush and the delay queued ahead and no synchronize between
    them and the start event: the host side of `call` overlaps GPU work already queued."""
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    ms = []
    covered = 0
    torch.cuda.synchronize()
    for i in range(samples):
        flush.fill_(i + 1)
        torch.cuda._sleep(delay_cycles)
        start.record()
        call()
        if not start.query():
            covered += 1
        stop.record()
        torch.cuda.synchronize()  # device-wide, as for candidates
        ms.append(start.elapsed_time(stop))
    out = stats(ms)
    out["covered"] = covered / samples
    return out


def host_time(torch, call, samples, flush):
    """Wall clock around the call and a synchronize, the GPU idle and the L2 rewritten before."""
    ms = []
    for i in range(samples):
        flush.fill_(i + 1)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        call()
        torch.cuda.synchronize()
        ms.append((time.perf_counter() - t0) * 1e3)
    return stats(ms)


def time_fn(torch, fn, samples, warmup, flush, cycles_per_ns):
    for _ in range(warmup):
        fn()
    # The host side of one call (the GPU idle, nothing waited for), to size the delay.
    launch = []
    for _ in range(5):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        launch.append(time.perf_counter() - t0)
    torch.cuda.synchronize()
    launch_ns = sorted(launch)[2] * 1e9
    delay_ns = min(max(2 * launch_ns, 50e3), 5e6)
    out = gpu_time(torch, fn, samples, flush, int(delay_ns * cycles_per_ns))
    out.update({"host_launch_ns": launch_ns, "delay_ns": delay_ns})
    host = host_time(torch, fn, samples, flush)
    out.update({"host_median_ns": host["median_ns"], "host_p10_ns": host["p10_ns"], "host_p90_ns": host["p90_ns"]})
    return out


def graph_time(torch, fn, samples, flush, cycles_per_ns, want, tolerance):
    """The call captured once in a CUDA graph (after warm-up on a side stream, as PyTorch asks),
    checked, then its replays timed as GPU time."""
    try:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                fn()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static = fn()
        graph.replay()
        torch.cuda.synchronize()
        got = list(static) if isinstance(static, (list, tuple)) else [static]
        ok, why = check(torch, got, want, tolerance)
        if not ok:
            return {"ok": False, "check": why}
        out = gpu_time(torch, graph.replay, samples, flush, int(50e3 * cycles_per_ns))
        out.update({"ok": True, "check": why})
        del graph
        return out
    except Exception as e:  # noqa: BLE001 - a call that cannot be captured is data
        try:
            torch.cuda.synchronize()
        except Exception:  # noqa: BLE001
            pass
        return {"ok": False, "error": f"{type(e).__name__}: {e}"[:500]}


def bench_manifest(torch, mod, path, args, dev, flush, cycles_per_ns):
    """Checks and times every variant on one dumped shape; returns its part of the output."""
    manifest = json.load(open(path))
    base = os.path.dirname(os.path.abspath(path))
    inputs = {e["name"]: load_tensor(torch, base, e).to(dev) for e in manifest["inputs"]}
    want = [load_tensor(torch, base, e) for e in manifest["outputs"]]
    params = dict(manifest.get("params", {}))
    params.update({k: float(v) for k, v in manifest.get("symbols", {}).items()})
    tolerance = manifest.get("tolerance", {})
    out = {"problem": manifest["problem"], "shape": manifest["shape"], "symbols": manifest.get("symbols", {})}
    out["timing"] = ("GPU time: L2 flush and torch.cuda._sleep (>= 50 us, 2x the host launch) queued before the "
                     "start event, no synchronize in between; host: synchronize, wall clock around call + "
                     "synchronize; graph: CUDAGraph replay timed as GPU time")

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
                entry.update(time_fn(torch, fn, args.samples, args.warmup, flush, cycles_per_ns))
                if not args.no_graph:
                    entry["graph"] = graph_time(torch, fn, args.samples, flush, cycles_per_ns, want, tolerance)
        except Exception as e:  # noqa: BLE001 - reported, not raised: one variant failing is data
            entry.update({"ok": False, "error": f"{type(e).__name__}: {e}"[:500]})
        out[label] = entry
        print(f"{manifest['shape']} {label}: " + json.dumps({k: v for k, v in entry.items() if k != "graph"}),
              file=sys.stderr)

    with torch.no_grad():
        variant("eager", lambda: mod.run(inputs, params))
        if not args.no_compile:
            modes = [("compile", None)]
            if not args.skip_max_autotune:
                modes.append(("max_autotune", "max-autotune-no-cudagraphs"))
            for label, mode in modes:
                torch._dynamo.reset()  # each mode and shape compiles afresh, not from another's cache
                compiled = torch.compile(mod.run) if mode is None else torch.compile(mod.run, mode=mode)
                variant(label, lambda c=compiled: c(inputs, params))
    timed = [(out[k]["median_ns"], k) for k in ("eager", "compile", "max_autotune")
             if k in out and out[k].get("ok") and "median_ns" in out[k]]
    if timed:
        out["fastest"] = min(timed)[1]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--manifest", required=True, action="append",
                    help="a dumped shape's manifest.json; repeat for every shape of a set")
    ap.add_argument("--module", required=True)
    ap.add_argument("--samples", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--no-compile", action="store_true", help="eager only")
    ap.add_argument("--skip-max-autotune", action="store_true",
                    help="skip torch.compile(mode='max-autotune-no-cudagraphs'), slow to compile")
    ap.add_argument("--no-graph", action="store_true", help="skip the CUDA-graph replay timing")
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
    spec = importlib.util.spec_from_file_location("torch_ref", args.module)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(dev)
    flush = torch.empty(max(2 * getattr(props, "L2_cache_size", 50 << 20), 64 << 20) // 4,
                        dtype=torch.int32, device=dev)
    cycles_per_ns = sleep_cycles_per_ns(torch)
    shapes = []
    for path in args.manifest:
        shapes.append(bench_manifest(torch, mod, path, args, dev, flush, cycles_per_ns))
        shapes[-1]["device"] = props.name
        torch.cuda.empty_cache()  # the next shape's inputs may be as large
    out.update(shapes[0])
    out["torch"] = torch.__version__
    if len(shapes) > 1:
        out["shapes"] = shapes
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
