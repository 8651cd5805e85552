"""Runs a problem's PyTorch reference (reference.py) for hone-worker, inside its sandbox.

    python3 hone_torch_runner.py REFERENCE.py

REFERENCE.py defines run(inputs: dict, params: dict) -> list of output tensors (one tensor is
taken as a list of one). The worker writes one JSON request per line on stdin:

    {"inputs": [{"name", "dtype", "shape", "file"}], "outputs": [...], "params": {...}}

Inputs are raw little-endian files; the outputs are written to their files the same way.
Every request gets one JSON line on the protocol channel: {"ok": true, "ns": N} (N: the
nanoseconds run() took) or {"ok": false, "error": WHY}. The first line says whether torch and
the module loaded: {"ok": true, "torch": VERSION}. Whatever the module prints goes to stderr.
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
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            inputs = {e["name"]: read_tensor(e) for e in req["inputs"]}
            t0 = time.perf_counter_ns()
            outs = mod.run(inputs, req.get("params", {}))
            if isinstance(outs, torch.Tensor):
                outs = [outs]
            outs = list(outs)
            ns = time.perf_counter_ns() - t0
            if len(outs) != len(req["outputs"]):
                raise ValueError(f"run() returned {len(outs)} outputs; problem.toml lists {len(req['outputs'])}")
            for entry, t in zip(req["outputs"], outs):
                write_tensor(entry, t)
            reply({"ok": True, "ns": ns})
        except Exception as e:  # noqa: BLE001 - the reference's failure, reported to the worker
            reply({"ok": False, "error": f"{type(e).__name__}: {e}: {last_lines(traceback.format_exc())}"})


main()
