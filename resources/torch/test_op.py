"""Checks torch.ops.hone.<op> of this package against the problem's PyTorch reference
(torch_ref.py) on random inputs of every shape of the problem's sets: eager, inside
torch.compile (fullgraph, so a graph break fails), and replayed from a CUDA graph on a GPU.

    python3 -m pytest -q test_op.py          # every shape
    HONE_TEST_SHAPES=small python3 -m pytest -q test_op.py

Written by `hone export --torch`; it reads problem.json next to it.
"""
import importlib.util
import json
import os
import sys

import pytest
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
PROBLEM = json.load(open(os.path.join(HERE, "problem.json")))
DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "f64": torch.float64,
          "i32": torch.int32, "i64": torch.int64, "u8": torch.uint8}
WHICH = os.environ.get("HONE_TEST_SHAPES", "all")
SHAPES = (PROBLEM["check"] if WHICH in ("all", "small") else []) + \
         (PROBLEM["bench"] if WHICH in ("all", "bench") else [])
DEVICE = PROBLEM["device"]

if DEVICE == "cuda" and not torch.cuda.is_available():
    pytest.skip("this package runs on CUDA and torch sees no CUDA device", allow_module_level=True)

loader = importlib.import_module("hone_" + PROBLEM["op"])
OP = loader.load()


def reference():
    path = os.path.join(HERE, "torch_ref.py")
    if not os.path.exists(path):
        pytest.skip("the problem has no torch_ref.py to compare with")
    spec = importlib.util.spec_from_file_location("torch_ref", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def make_input(entry, gen):
    """Random values as hone-worker draws them: the same distributions, not the same numbers."""
    dtype = DTYPES[entry["dtype"]]
    shape = [int(d) for d in entry["shape"]]
    init = entry.get("init", {"dist": "normal"})
    dist = init.get("dist", "normal")
    n = 1
    for d in shape:
        n *= d
    if dist == "normal":
        t = torch.randn(n, generator=gen, dtype=torch.float64) * float(init.get("std", 1.0)) + float(init.get("mean", 0.0))
    elif dist == "uniform":
        lo, hi = float(init.get("low", 0.0)), float(init.get("high", 1.0))
        t = torch.rand(n, generator=gen, dtype=torch.float64) * (hi - lo) + lo
    elif dist == "randint":
        t = torch.randint(int(init.get("low", 0)), int(init["high"]), (n,), generator=gen, dtype=torch.int64)
    elif dist == "offsets":
        total = int(init["total"])
        cuts = torch.randint(0, total + 1, (max(n - 2, 0),), generator=gen, dtype=torch.int64).sort().values
        t = torch.cat([torch.zeros(1, dtype=torch.int64), cuts, torch.full((1,), total, dtype=torch.int64)])[:n]
    else:
        raise ValueError(f"unknown init dist {dist!r}")
    if init.get("sorted"):
        t = t.sort().values
    return t.to(dtype).reshape(shape).to(DEVICE)


def arguments(shape, inputs):
    """The op's positional arguments: inputs, symbols the op cannot infer, params."""
    args = []
    for name in PROBLEM["arguments"]:
        if name in inputs:
            args.append(inputs[name])
        elif name in shape["symbols"]:
            args.append(int(shape["symbols"][name]))
        else:
            args.append(PROBLEM["params"][name])
    return args


def case(shape, seed=1):
    gen = torch.Generator().manual_seed(seed)
    inputs = {e["name"]: make_input(e, gen) for e in shape["inputs"]}
    params = dict(PROBLEM["params"])
    params.update({k: float(v) for k, v in shape["symbols"].items()})
    want = reference().run(inputs, params)
    return inputs, want


def as_list(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def check(got, want):
    """Hone's rule: |got - want| <= atol + rtol * |want| per element, no NaN, same shapes."""
    got = as_list(got)
    assert len(got) == len(want)
    for g, w, spec in zip(got, want, PROBLEM["check"][0]["outputs"]):
        assert tuple(g.shape) == tuple(w.shape), f"{spec['name']}: shape {tuple(g.shape)} != {tuple(w.shape)}"
        assert g.dtype == w.dtype, f"{spec['name']}: dtype {g.dtype} != {w.dtype}"
        tol = PROBLEM["tolerance"].get(spec["dtype"], {"atol": 0.0, "rtol": 0.0})
        gd, wd = g.double().cpu(), w.double().cpu()
        assert not torch.isnan(gd).any(), f"{spec['name']}: NaN"
        bad = (gd - wd).abs() > tol["atol"] + tol["rtol"] * wd.abs()
        assert not bad.any(), f"{spec['name']}: {int(bad.sum())} of {bad.numel()} elements outside tolerance"


IDS = [s["label"] for s in SHAPES]


@pytest.mark.parametrize("shape", SHAPES, ids=IDS)
def test_eager(shape):
    inputs, want = case(shape)
    with torch.inference_mode():
        check(OP(*arguments(shape, inputs)), want)


@pytest.mark.parametrize("shape", SHAPES, ids=IDS)
def test_compiled(shape):
    if not hasattr(torch, "compile"):
        pytest.skip(f"torch.compile needs PyTorch 2; this is {torch.__version__}")
    inputs, want = case(shape, seed=2)
    fn = torch.compile(lambda *a: OP(*a), fullgraph=True)  # a graph break is an error
    with torch.inference_mode():
        check(fn(*arguments(shape, inputs)), want)


@pytest.mark.parametrize("shape", SHAPES, ids=IDS)
def test_cuda_graph(shape):
    if DEVICE != "cuda":
        pytest.skip("CUDA graphs need a CUDA build of the op")
    inputs, want = case(shape, seed=3)
    args = arguments(shape, inputs)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.inference_mode(), torch.cuda.stream(stream):
        for _ in range(2):
            OP(*args)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.inference_mode(), torch.cuda.graph(graph):
        out = OP(*args)
    graph.replay()
    torch.cuda.synchronize()
    check(out, want)


def test_not_contiguous():
    """A non-contiguous input is made contiguous by the op: the result does not change."""
    shape = PROBLEM["check"][-1]
    inputs, want = case(shape, seed=4)
    name, t = next(((n, t) for n, t in inputs.items() if t.dim() >= 2), (None, None))
    if name is None:
        pytest.skip("no input of rank 2 or more")
    inputs[name] = t.transpose(0, 1).contiguous().transpose(0, 1)  # same values, other strides
    with torch.inference_mode():
        check(OP(*arguments(shape, inputs)), want)


def test_clear_errors():
    """Wrong dtype and wrong rank are refused with a message that names the input."""
    shape = PROBLEM["check"][-1]
    inputs, _ = case(shape)
    first = PROBLEM["input_names"][0]
    wrong = dict(inputs)
    wrong[first] = inputs[first].to(torch.float64 if inputs[first].dtype != torch.float64 else torch.float32)
    with pytest.raises(RuntimeError, match=f"{first} must be"):
        OP(*arguments(shape, wrong))
    wrong = dict(inputs)
    wrong[first] = inputs[first].unsqueeze(0)
    with pytest.raises(RuntimeError, match=f"{first} must have rank"):
        OP(*arguments(shape, wrong))
