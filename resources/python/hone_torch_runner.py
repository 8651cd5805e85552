"""Runs a problem's PyTorch reference (reference.py) for hone-worker, inside its sandbox.

    python3 hone_torch_runner.py REFERENCE.py

REFERENCE.py defines run(inputs: dict, params: dict) -> list of output tensors (one tensor is
taken as a list of one). The worker writes one JSON request per line on stdin:

    {"inputs": [{"name", "dtype", "shape", "file"}], "outputs": [...], "params": {...}}

Inputs are raw little-endian files; the outputs are written to their files the same way.
Every request gets one JSON line on the protocol channel: {"ok": true, "ns": N} (N: the
nanoseconds run() took) or {"ok": false, "error": WHY}. The first line says whether torch and
the module loaded: {"ok": true, "torch": VERSION}. Whatever the module prints goes to stderr.

A PyTorch baseline on a CUDA target is timed here, on the GPU, the way the worker times
candidates (docs/BENCH.md, "How PyTorch and candidates are timed"). Two more requests:

    {"op": "stage", "set": K, "inputs": [...], "outputs": [...], "params": {...}}
        copies the inputs to the GPU and keeps them as input set K, runs run() once (its outputs
        are written back as above), warms up, and measures the host side of one call to size
        the delay: {"ok": true, "device", "host_launch_ns", "delay_ns"}
    {"op": "time", "set": K, "samples": N}
        N samples of run() on set K, each: the L2 flushed (twice its size rewritten), a
        torch.cuda._sleep of max(2 x host launch, 50 us) queued, the start event, run(), the
        stop event, a device-wide synchronize: {"ok": true, "ns": [...], "covered": C} (C: the
        samples whose whole launch was queued before the start event passed)
"""
import importlib.util
import json
import os
import sys
import time
import traceback

PROTO = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)  # the module's prints must not reach the protocol channel


def reply(obj):
    PROTO.write(json.dumps(obj) + "\n")
    PROTO.flush()


def last_lines(text, n=6):
    return " | ".join(line.strip() for line in text.strip().splitlines()[-n:])


try:
    import numpy as np
    import torch
except Exception as e:  # noqa: BLE001 - any import failure is the host's
    reply({"ok": False, "error": f"cannot import torch and numpy: {e}"})
    sys.exit(0)

DTYPES = {"f32": (torch.float32, np.float32), "f64": (torch.float64, np.float64),
          "f16": (torch.float16, np.int16), "bf16": (torch.bfloat16, np.int16),
          "i32": (torch.int32, np.int32), "i64": (torch.int64, np.int64), "u8": (torch.uint8, np.uint8)}


def read_tensor(entry):
    tdt, ndt = DTYPES[entry["dtype"]]
    shape = [int(d) for d in entry["shape"]]
    arr = np.fromfile(entry["file"], dtype=ndt)
    t = torch.from_numpy(arr)
    if tdt in (torch.float16, torch.bfloat16):
        t = t.view(tdt)
    return t.reshape(shape)


def write_tensor(entry, t):
    tdt, _ = DTYPES[entry["dtype"]]
    want = tuple(int(d) for d in entry["shape"])
    if not isinstance(t, torch.Tensor):
        raise ValueError(f"output '{entry['name']}' is a {type(t).__name__}, not a tensor")
    if tuple(t.shape) != want:
        raise ValueError(f"output '{entry['name']}' has shape {tuple(t.shape)}; problem.toml says {want}")
    if t.dtype != tdt:
        raise ValueError(f"output '{entry['name']}' is {t.dtype}; problem.toml says {entry['dtype']}")
    t = t.detach().to("cpu").contiguous()
    if tdt in (torch.float16, torch.bfloat16):
        t = t.view(torch.int16)
    t.numpy().tofile(entry["file"])


def as_outputs(outs, entries):
    if isinstance(outs, torch.Tensor):
        outs = [outs]
    outs = list(outs)
    if len(outs) != len(entries):
        raise ValueError(f"run() returned {len(outs)} outputs; problem.toml lists {len(entries)}")
    return outs


class Gpu:
    """The staged input sets, the L2 flush buffer and the delay's clock rate, made on first use."""

    def __init__(self):
        if not torch.cuda.is_available():
            raise RuntimeError("PyTorch sees no CUDA device here (inside the reference's sandbox); "
                               "is the NVIDIA driver's /dev/nvidia* present and torch built with CUDA?")
        self.device = torch.device("cuda", int(os.environ.get("HONE_CUDA_DEVICE", "0") or 0))
        torch.cuda.set_device(self.device)
        props = torch.cuda.get_device_properties(self.device)
        self.name = props.name
        # As the worker's flush: at least twice the L2, rewritten before every sample.
        self.flush = torch.empty(max(2 * getattr(props, "L2_cache_size", 50 << 20), 64 << 20) // 4,
                                 dtype=torch.int32, device=self.device)
        self.cycles_per_ns = self.sleep_rate()
        self.sets = {}

    @staticmethod
    def sleep_rate():
        """Clock cycles of torch.cuda._sleep per nanosecond, measured with events."""
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

    def stage(self, mod, req):
        inputs = {e["name"]: read_tensor(e).to(self.device) for e in req["inputs"]}
        params = req.get("params", {})

        def call():
            return mod.run(inputs, params)

        outs = as_outputs(call(), req["outputs"])
        for entry, t in zip(req["outputs"], outs):
            write_tensor(entry, t)
        for _ in range(3):
            call()
        # The host side of one call (the GPU idle, nothing waited for) sizes the delay.
        launch = []
        for _ in range(5):
            torch.cuda.synchronize()
            t0 = time.perf_counter_ns()
            call()
            launch.append(time.perf_counter_ns() - t0)
        torch.cuda.synchronize()
        launch_ns = sorted(launch)[2]
        delay_ns = min(max(2 * launch_ns, 50e3), 5e6)
        self.sets[int(req["set"])] = (call, int(delay_ns * self.cycles_per_ns))
        return {"ok": True, "device": self.name, "host_launch_ns": launch_ns, "delay_ns": delay_ns}

    def time(self, req):
        call, cycles = self.sets[int(req["set"])]
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        ns = []
        covered = 0
        torch.cuda.synchronize()
        for i in range(int(req["samples"])):
            self.flush.fill_(i + 1)
            torch.cuda._sleep(cycles)
            start.record()
            call()
            if not start.query():
                covered += 1
            stop.record()
            torch.cuda.synchronize()  # device-wide, as for candidates
            ns.append(start.elapsed_time(stop) * 1e6)
        return {"ok": True, "ns": ns, "covered": covered}


def main():
    path = sys.argv[1]
    try:
        spec = importlib.util.spec_from_file_location("hone_reference", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        if not callable(getattr(mod, "run", None)):
            raise ValueError("reference.py defines no run(inputs, params) function")
    except Exception as e:  # noqa: BLE001
        reply({"ok": False, "error": f"reference.py does not load: {e}: {last_lines(traceback.format_exc())}"})
        return
    torch.set_grad_enabled(False)
    reply({"ok": True, "torch": torch.__version__})
    gpu = None
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            op = req.get("op", "run")
            if op in ("stage", "time"):
                if gpu is None:
                    gpu = Gpu()
                reply(gpu.stage(mod, req) if op == "stage" else gpu.time(req))
                continue
            inputs = {e["name"]: read_tensor(e) for e in req["inputs"]}
            t0 = time.perf_counter_ns()
            outs = as_outputs(mod.run(inputs, req.get("params", {})), req["outputs"])
            ns = time.perf_counter_ns() - t0
            for entry, t in zip(req["outputs"], outs):
                write_tensor(entry, t)
            reply({"ok": True, "ns": ns})
        except Exception as e:  # noqa: BLE001 - the reference's failure, reported to the worker
            reply({"ok": False, "error": f"{type(e).__name__}: {e}: {last_lines(traceback.format_exc())}"})


main()
