#!/usr/bin/env python3
"""Converts KernelBench-format files into Hone problems (`hone import kernelbench`).

    kernelbench_import.py --out DIR FILE_OR_DIR...

A KernelBench file defines `class Model(nn.Module)` with `forward`, `get_inputs()`,
`get_init_inputs()` and module-level size constants. Each file becomes DIR/NAME/ with
problem.toml and reference.py (the file itself plus a `run(inputs, params)` adapter, which is
also the baseline: speedups are over PyTorch eager). The file is run to observe dtypes and
shapes: the `bench` shape is the file's own constants, the `small` set scales the constants
above 8 down to odd (else multiple-of-8) sizes. The module's parameters become inputs with a
seeded init. Prints one line per file, `ok NAME: ...` or `error FILE: WHY`; exits 1 when any
file could not be converted (the others are still written).
"""
import argparse
import ast
import copy
import inspect
import os
import re
import sys
import traceback

try:
    import torch
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from kernelbench_ops import (DATA_DEPENDENT, RANDOM, Tracer, cost_model, family_of, op_cost,
                                 product_text)
except Exception as e:  # noqa: BLE001
    print(f"error: this python ({sys.executable}) cannot import torch: {e}; install python3-torch "
          "or set HONE_PYTHON", flush=True)
    sys.exit(3)

DTYPES = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16", torch.float64: "f64",
          torch.int32: "i32", torch.int64: "i64", torch.uint8: "u8"}
SIZES = {"f32": 4, "f16": 2, "bf16": 2, "f64": 8, "i32": 4, "i64": 8, "u8": 1}
# Per output dtype, like the bundled problems: |got - want| <= atol + rtol * |want|.
TOLERANCE = {"f32": (1e-4, 1e-3), "f64": (1e-10, 1e-8), "f16": (1e-2, 1e-2), "bf16": (2e-2, 1.6e-2),
             "i32": (0.0, 0.0), "i64": (0.0, 0.0), "u8": (0.0, 0.0)}
REAL_RUN_BYTES = 512 << 20   # a bench shape above this is observed on PyTorch's meta device
SMALL_RUN_ELEMENTS = 4 << 20  # a small shape holds at most this many elements in all

class Unconvertible(Exception):
    """Why a file cannot become a problem, as one line."""


def sanitize(name):
    s = re.sub(r"[^A-Za-z0-9_]", "_", name)
    if not s or s[0].isdigit():
        s = "t_" + s
    return s


def problem_name(path):
    stem = os.path.splitext(os.path.basename(path))[0].lower()
    s = re.sub(r"[^a-z0-9_]+", "_", stem).strip("_")
    return s or "kernelbench"


def int_constants(tree):
    """Module-level `NAME = <int>` (or `A = B = <int>`) assignments, in order."""
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets):
            v = node.value
            if isinstance(v, ast.Constant) and type(v.value) is int:
                for t in node.targets:
                    out[t.id] = v.value
    return out


def substituted(tree, constants):
    """The module with its size constants set to `constants`, so that values derived from them
    at module level (bias_shape = (out_channels, 1, 1)) follow. The adapter does the same."""
    tree = copy.deepcopy(tree)
    for node in tree.body:
        if isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets):
            if isinstance(node.value, ast.Constant) and type(node.value.value) is int:
                names = [t.id for t in node.targets if t.id in constants]
                if names:
                    node.value = ast.copy_location(ast.Constant(constants[names[0]]), node.value)
    return tree


class meta_factories:
    """Within: torch's factory functions make tensors on the meta device (shapes, no memory)."""

    NAMES = ("randn", "rand", "randint", "zeros", "ones", "empty", "full", "arange", "randn_like",
             "rand_like", "zeros_like", "ones_like", "empty_like", "randperm")

    def __enter__(self):
        self.saved = {n: getattr(torch, n) for n in self.NAMES if hasattr(torch, n)}
        for n, f in self.saved.items():
            def wrap(*a, _f=f, **k):
                k["device"] = "meta"
                return _f(*a, **k)
            setattr(torch, n, wrap)
        return self

    def __exit__(self, *exc):
        for n, f in self.saved.items():
            setattr(torch, n, f)


class Module:
    """One loaded KernelBench file; instantiate() runs it with given constants."""

    def __init__(self, path):
        self.path = path
        self.source = open(path, encoding="utf-8").read()
        try:
            self.tree = ast.parse(self.source, filename=path)
        except SyntaxError as e:
            raise Unconvertible(f"not valid Python: {e.msg} (line {e.lineno})")
        self.constants = int_constants(self.tree)
        self.ns = {"__name__": "kernelbench_module", "__file__": path}
        try:
            exec(compile(self.tree, path, "exec"), self.ns)  # noqa: S102 - the user's own file
        except Exception as e:  # noqa: BLE001
            raise Unconvertible(f"running the file failed: {type(e).__name__}: {e}")
        for need in ("Model", "get_inputs", "get_init_inputs"):
            if need not in self.ns:
                raise Unconvertible(f"no {need} defined; a KernelBench file defines class Model(nn.Module), "
                                    "get_inputs() and get_init_inputs()")
        if not (isinstance(self.ns["Model"], type) and issubclass(self.ns["Model"], torch.nn.Module)):
            raise Unconvertible("Model is not a torch.nn.Module subclass")

    def build(self, constants, meta, seed=0):
        self.ns = {"__name__": "kernelbench_module", "__file__": self.path}
        exec(compile(substituted(self.tree, constants), self.path, "exec"), self.ns)  # noqa: S102
        torch.manual_seed(seed)
        if meta:
            with meta_factories():
                init = list(self.ns["get_init_inputs"]())
                model = self.ns["Model"](*init)
                model = model.to("meta")
                inputs = list(self.ns["get_inputs"]())
        else:
            init = list(self.ns["get_init_inputs"]())
            model = self.ns["Model"](*init)
            torch.manual_seed(seed + 1)
            inputs = list(self.ns["get_inputs"]())
        return model, inputs


def forward_names(model, count):
    try:
        params = list(inspect.signature(model.forward).parameters.values())
    except (TypeError, ValueError):
        params = []
    names = []
    for i in range(count):
        if i < len(params) and params[i].kind in (params[i].POSITIONAL_ONLY, params[i].POSITIONAL_OR_KEYWORD):
            names.append(sanitize(params[i].name))
        else:
            names.append(f"x{i}")
    return names


def observe(mod, constants, meta):
    """Runs one configuration: inputs, parameters, outputs and the traced ops."""
    with torch.no_grad():
        model, inputs = mod.build(constants, meta)
        for i, t in enumerate(inputs):
            if not isinstance(t, torch.Tensor):
                raise Unconvertible(f"get_inputs() item {i} is a {type(t).__name__}, not a tensor; "
                                    "only tensor inputs are supported")
        tracer = Tracer()
        with tracer:
            out = model(*inputs)
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    for i, o in enumerate(outs):
        if not isinstance(o, torch.Tensor):
            raise Unconvertible(f"forward returns a {type(o).__name__} as output {i}; only tensors are supported")
    return model, inputs, outs, tracer.ops


def check_dtype(t, what):
    if t.dtype not in DTYPES:
        raise Unconvertible(f"unsupported dtype {t.dtype} ({what}); Hone supports "
                            + ", ".join(str(d).replace("torch.", "") for d in DTYPES))
    return DTYPES[t.dtype]


def bytes_of(model, inputs):
    n = sum(t.numel() * t.element_size() for t in inputs)
    n += sum(p.numel() * p.element_size() for p in model.parameters())
    return n


def scaled(constants, variant):
    """A small configuration: constants above 8 scaled down (`variant` picks how)."""
    out = {}
    for k, c in constants.items():
        if c <= 8:
            out[k] = c
            continue
        divisor, odd, floor = variant
        v = max(floor, c // divisor)
        if odd:
            v |= 1
        else:
            v = max(8, (v + 7) // 8 * 8)
        out[k] = min(v, c) if c >= floor else c
    return out


SMALL_VARIANTS = [  # (divisor, odd sizes, smallest) for small[0], then small[1]; then fallbacks
    [(64, True, 3), (16, True, 5), (256, True, 3), (64, False, 8), (16, False, 8)],
    [(16, True, 5), (8, True, 9), (32, False, 8), (16, False, 8), (8, False, 8), (4, False, 8)],
]


def init_of(t):
    """A seeded init for an input or parameter, from the values the file drew."""
    dt = DTYPES[t.dtype]
    if dt in ("i32", "i64", "u8"):
        if t.numel() == 0:
            return {"dist": "randint", "low": 0, "high": 2}
        lo, hi = int(t.min()), int(t.max())
        return {"dist": "randint", "low": lo, "high": max(hi + 1, lo + 2)}
    x = t.detach().double()
    if x.numel() == 0:
        return {"dist": "normal", "mean": 0.0, "std": 1.0}
    lo, hi = float(x.min()), float(x.max())
    if hi - lo < 1e-12:  # a constant parameter (LayerNorm's ones and zeros): vary it around its value
        return {"dist": "uniform", "low": round(lo - 0.5, 6), "high": round(lo + 0.5, 6)}
    mean, std = float(x.mean()), float(x.std()) if x.numel() > 1 else 1.0
    # Uniform draws (torch.rand, nn.Linear's default init) have a kurtosis of 1.8, normal ones 3.
    kurtosis = float(((x - mean) ** 4).mean()) / max(std ** 4, 1e-300)
    if x.numel() >= 64 and kurtosis < 2.3:
        return {"dist": "uniform", "low": sig(lo), "high": sig(hi)}
    return {"dist": "normal", "mean": sig(mean) if abs(mean) > 0.05 * std else 0.0, "std": sig(std)}


def sig(v, digits=3):
    if v == 0:
        return 0.0
    return float(f"{v:.{digits}g}")


def toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int,)):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    return '"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"'


class SymbolTable:
    """Names dimensions by the vector of their values over all configurations: a module constant
    with the same values keeps its name, a dimension that never changes stays a number, others
    become D0, D1, ..."""

    def __init__(self, constants_per_config, scaled_names):
        self.configs = constants_per_config
        self.by_vector = {}
        self.order = []
        for name in scaled_names:
            vec = tuple(c[name] for c in constants_per_config)
            if vec not in self.by_vector:
                self.by_vector[vec] = name
            self.order.append((name, vec))

    def dim(self, vec):
        vec = tuple(int(v) for v in vec)
        if len(set(vec)) == 1:
            return vec[0]
        if vec not in self.by_vector:
            name = f"D{sum(1 for n, _ in self.order if re.fullmatch(r'D[0-9]+', n))}"
            self.by_vector[vec] = name
            self.order.append((name, vec))
        return self.by_vector[vec]

    def binding(self, i):
        return {name: vec[i] for name, vec in self.order}


def shape_dims(table, shapes):
    """shapes: one tuple per configuration for the same tensor -> list of dims (names or ints)."""
    ranks = {len(s) for s in shapes}
    if len(ranks) != 1:
        raise Unconvertible("a tensor's rank changes with the sizes; data-dependent shapes are not supported")
    return [table.dim([s[d] for s in shapes]) for d in range(len(shapes[0]))]


ADAPTER = '''

# --- Hone adapter (written by `hone import kernelbench`) ------------------------------------
# run(inputs, params) is the entry point of a PyTorch reference (docs/FORMATS.md): the model is
# built once per size from get_init_inputs(), its parameters are replaced by the problem's
# inputs of the same name, and forward() runs on the inputs in order.
_HONE_FORWARD_INPUTS = {forward_inputs!r}
_HONE_PARAMETERS = {parameters!r}
_HONE_CONSTANTS = {constants!r}
_hone_models = {{}}


def _hone_module(sizes):
    """This file run again with its size constants set to `sizes` (values derived from them at
    module level follow)."""
    import ast
    tree = ast.parse(open(__file__, encoding="utf-8").read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets):
            if isinstance(node.value, ast.Constant) and type(node.value.value) is int:
                names = [t.id for t in node.targets if t.id in sizes]
                if names:
                    node.value = ast.copy_location(ast.Constant(sizes[names[0]]), node.value)
    ns = {{"__name__": "hone_kernelbench", "__file__": __file__}}
    exec(compile(tree, __file__, "exec"), ns)
    return ns


def run(inputs, params):
    import torch as _torch
    # float32 means float32 on a GPU too (cuDNN would otherwise convolve in TF32).
    _torch.backends.cudnn.allow_tf32 = False
    _torch.backends.cuda.matmul.allow_tf32 = False
    sizes = {{name: int(params[name]) for name in _HONE_CONSTANTS if name in params}}
    device = inputs[_HONE_FORWARD_INPUTS[0]].device if _HONE_FORWARD_INPUTS else _torch.device("cpu")
    key = (tuple(sorted(sizes.items())), str(device))
    model = _hone_models.get(key)
    if model is None:
        ns = _hone_module(sizes)
        _torch.manual_seed(0)
        model = ns["Model"](*ns["get_init_inputs"]()).to(device)
        _hone_models[key] = model
    lookup = dict(model.named_parameters())
    for name, path in _HONE_PARAMETERS.items():
        lookup[path].data = inputs[name]
    with _torch.no_grad():
        out = model(*[inputs[name] for name in _HONE_FORWARD_INPUTS])
    return list(out) if isinstance(out, (list, tuple)) else [out]
'''


def convert(path, out_root):
    mod = Module(path)
    name = problem_name(path)
    bench_constants = dict(mod.constants)
    scaled_names = [k for k, v in mod.constants.items() if v > 8]

    # The bench configuration: run for real when it fits, else on the meta device (shapes only).
    try:
        model_m, inputs_m = mod.build(bench_constants, meta=True)
        bench_bytes = bytes_of(model_m, inputs_m)
    except Unconvertible:
        raise
    except Exception:  # noqa: BLE001 - factories the meta device lacks: measure for real
        bench_bytes = 0
    bench_meta = bench_bytes > REAL_RUN_BYTES
    try:
        bench = observe(mod, bench_constants, meta=bench_meta)
    except Unconvertible:
        raise
    except Exception as e:  # noqa: BLE001
        where = "on the meta device (the bench shape needs %.1f GiB)" % (bench_bytes / 2**30) if bench_meta else ""
        raise Unconvertible(f"forward fails on the file's own sizes {where}: {type(e).__name__}: {e}".replace("  ", " "))

    # Checks that need values: on the first configuration that runs for real.
    smalls = []
    failures = []
    for variants in SMALL_VARIANTS:
        for variant in variants:
            consts = scaled(bench_constants, variant)
            if consts in [c for c, _ in smalls] or (consts == bench_constants and scaled_names):
                continue
            try:
                obs = observe(mod, consts, meta=False)
            except Unconvertible:
                raise
            except Exception as e:  # noqa: BLE001
                failures.append(f"{type(e).__name__}: {e}")
                continue
            elements = sum(t.numel() for t in obs[1]) + sum(p.numel() for p in obs[0].parameters())
            if elements > SMALL_RUN_ELEMENTS:
                continue
            smalls.append((consts, obs))
            break
    if not smalls:
        if bench_meta or sum(t.numel() for t in bench[1]) > SMALL_RUN_ELEMENTS:
            raise Unconvertible("no smaller size of the file runs (scaled constants above 8: "
                                + ", ".join(scaled_names) + "): " + (failures[-1] if failures else "too large"))
        smalls.append((bench_constants, bench))

    model, inputs, outs, ops = smalls[0][1]
    for op in ops:
        if op["name"] in DATA_DEPENDENT:
            raise Unconvertible(f"forward calls {op['name']}, whose result depends on the values "
                                "(data-dependent shapes or control flow)")
        if op["name"] in RANDOM:
            raise Unconvertible(f"forward calls {op['name']}: randomness inside forward cannot be checked")
    # Randomness the tracer cannot name (dropout in training mode, a generator): two runs differ.
    consts0 = smalls[0][0]
    with torch.no_grad():
        torch.manual_seed(1234)
        a = model(*inputs)
        torch.manual_seed(4321)
        b = model(*inputs)
    a = list(a) if isinstance(a, (list, tuple)) else [a]
    b = list(b) if isinstance(b, (list, tuple)) else [b]
    for x, y in zip(a, b):
        if not torch.equal(x, y) and not (x.is_floating_point() and torch.isnan(x).any()):
            raise Unconvertible("forward is not deterministic (randomness inside forward, e.g. dropout); "
                                "two runs on the same inputs differ")
    # Data-dependent output shapes: other values, same sizes.
    _, inputs2 = mod.build(consts0, meta=False, seed=99)
    with torch.no_grad():
        c = model(*inputs2)
    c = list(c) if isinstance(c, (list, tuple)) else [c]
    if [tuple(t.shape) for t in c] != [tuple(t.shape) for t in outs]:
        raise Unconvertible("the output shape depends on the input values (data-dependent shapes)")

    buffers = [n for n, _ in model.named_buffers()
               if not re.search(r"(running_mean|running_var|num_batches_tracked)$", n)]
    if buffers:
        raise Unconvertible("the module has buffers (" + ", ".join(buffers) + "); only parameters can "
                            "become inputs")

    configs = [(bench_constants, bench)] + smalls
    table = SymbolTable([c for c, _ in configs], scaled_names)
    fwd_names = forward_names(model, len(inputs))
    param_list = list(model.named_parameters())
    names_used = set(fwd_names)
    param_names = {}
    for pname, _ in param_list:
        n = sanitize(pname)
        while n in names_used:
            n += "_p"
        names_used.add(n)
        param_names[n] = pname

    def tensors_of(obs):
        m, ins, os_, _ = obs
        params = dict(m.named_parameters())
        return ([("input", n, t) for n, t in zip(fwd_names, ins)]
                + [("parameter", n, params[p]) for n, p in param_names.items()]), os_

    per_config = [tensors_of(obs) for _, obs in configs]
    # Values are observed on the largest configuration that ran for real.
    observed = per_config[0] if not bench_meta else per_config[-1]
    input_specs = []
    for idx, (kind, n, t) in enumerate(per_config[1][0]):
        dt = check_dtype(t, f"{kind} '{n}'")
        dims = shape_dims(table, [pc[0][idx][2].shape for pc in per_config])
        input_specs.append({"name": n, "dtype": dt, "shape": dims, "init": init_of(observed[0][idx][2]),
                            "kind": kind})
    output_names = []
    output_specs = []
    for i, o in enumerate(per_config[1][1]):
        dt = check_dtype(o, f"output {i}")
        n = "out" if len(per_config[1][1]) == 1 else f"out{i}"
        while n in names_used:
            n += "_o"
        names_used.add(n)
        output_names.append(n)
        dims = shape_dims(table, [pc[1][i].shape for pc in per_config])
        output_specs.append({"name": n, "dtype": dt, "shape": dims})

    # Tolerances: per output dtype, tightened until an all-zeros or constant output fails on
    # every small shape (the harness itself rejects a reference whose output is constant).
    tolerance = {}
    for i, spec in enumerate(output_specs):
        atol, rtol = TOLERANCE[spec["dtype"]]
        for consts, obs in smalls:
            o = obs[2][i].detach().double()
            if o.numel() == 0:
                continue
            if spec["dtype"] in ("f32", "f16", "bf16", "f64"):
                spread = float(o.max() - o.min())
                peak = float(o.abs().max())
                if spread == 0:
                    raise Unconvertible(f"output {i} is constant ({float(o.flatten()[0]):g}) on the sizes "
                                        f"{consts}; a constant kernel would pass")
                # all-zeros fails: some |want| > atol + rtol |want|; a constant c fails: the spread
                # exceeds twice the widest band.
                while atol > 0 and not (peak * (1 - rtol) > 2 * atol and spread > 2 * (atol + rtol * peak)):
                    atol /= 10
                    if atol < 1e-12:
                        raise Unconvertible(f"output {i} varies too little ({spread:.3g}) for the "
                                            f"{spec['dtype']} tolerance rtol={rtol}")
        prev = tolerance.get(spec["dtype"])
        tolerance[spec["dtype"]] = (min(prev[0], atol), rtol) if prev else (atol, rtol)

    flops, why_unknown = cost_model(table, [obs[3] for _, obs in configs])
    bytes_terms = []
    for spec in input_specs + output_specs:
        bytes_terms.append(product_text(SIZES[spec["dtype"]], spec["shape"]) if spec["shape"]
                           else str(SIZES[spec["dtype"]]))
    half = any(s["dtype"] in ("f16", "bf16") for s in input_specs)
    tensor_core = half and any(op["name"] in ("matmul", "mm", "bmm", "linear", "addmm", "baddbmm")
                               or op["name"].startswith("conv") for op in ops)

    out_dir = os.path.join(out_root, name)
    os.makedirs(out_dir, exist_ok=True)
    kinds = sorted({op["name"] for op in ops if op_cost(op) not in ([], None)})
    lines = [
        f"# Imported by `hone import kernelbench` from {os.path.basename(path)}; reference.py is the file",
        "# itself and the baseline (speedups are over PyTorch eager). Parameters of the module are inputs.",
        f"name = {toml_value(name)}",
        f"family = {toml_value(family_of(ops))}",
        "description = " + toml_value(f"KernelBench {os.path.basename(path)}: Model({', '.join(fwd_names)}) with "
                                      f"{', '.join(kinds) if kinds else 'no arithmetic'}."),
        'baseline = "reference.py"',
        "",
    ]
    for spec in input_specs:
        lines += ["[[inputs]]", f"name = {toml_value(spec['name'])}" + ("   # a parameter of the module ("
                  + param_names[spec['name']] + ")" if spec["kind"] == "parameter" else ""),
                  f"dtype = {toml_value(spec['dtype'])}",
                  "shape = [" + ", ".join(toml_value(d) for d in spec["shape"]) + "]",
                  "init = { " + ", ".join(f"{k} = {toml_value(v)}" for k, v in spec["init"].items()) + " }", ""]
    for spec in output_specs:
        lines += ["[[outputs]]", f"name = {toml_value(spec['name'])}", f"dtype = {toml_value(spec['dtype'])}",
                  "shape = [" + ", ".join(toml_value(d) for d in spec["shape"]) + "]", ""]

    def binding(i):
        b = table.binding(i)
        return "{ " + ", ".join(f"{k} = {v}" for k, v in b.items()) + " }" if b else "{ }"

    lines += ["[shapes]", "small = [ " + ", ".join(binding(i) for i in range(1, len(configs))) + " ]",
              "bench = [ " + binding(0) + " ]", ""]
    lines += ["[cost]"]
    if flops is None:
        lines += [f'flops = "unknown"   # {why_unknown}']
    else:
        lines += [f"flops = {toml_value(flops)}"]
    lines += [f"bytes = {toml_value(' + '.join(bytes_terms))}"]
    if tensor_core:
        lines += ['compute = "tensor"']
    lines += ["", "# Per output dtype; tightened where needed so that an all-zeros or constant output fails.",
              "[tolerance]"]
    for dt, (atol, rtol) in sorted(tolerance.items()):
        lines += [f"{dt} = {{ atol = {atol!r}, rtol = {rtol!r} }}"]
    lines += ["", "[libraries]", "allowed = []", ""]
    with open(os.path.join(out_dir, "problem.toml"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    constants_used = [n for n, _ in table.order if n in mod.constants]
    with open(os.path.join(out_dir, "reference.py"), "w", encoding="utf-8") as f:
        f.write(f"# KernelBench file {os.path.basename(path)}, imported by `hone import kernelbench`.\n")
        f.write(mod.source.rstrip("\n") + "\n")
        f.write(ADAPTER.format(forward_inputs=fwd_names, parameters=param_names, constants=constants_used))
    summary = (f"{len(input_specs)} inputs ({len(param_names)} parameters), {len(output_specs)} outputs, "
               f"{len(configs) - 1} small shapes, flops " + (flops if flops is not None else f"unknown ({why_unknown})"))
    return name, out_dir, summary


def files_of(target):
    if os.path.isdir(target):
        return sorted(os.path.join(target, f) for f in os.listdir(target)
                      if f.endswith(".py") and not f.startswith((".", "_")))
    return [target]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("paths", nargs="+")
    args = ap.parse_args()
    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    bad = 0
    for target in args.paths:
        if not os.path.exists(target):
            print(f"error {target}: no such file or folder", flush=True)
            bad += 1
            continue
        for path in files_of(target):
            try:
                name, out_dir, summary = convert(path, args.out)
                print(f"ok {name}: {out_dir} ({summary})", flush=True)
            except Unconvertible as e:
                print(f"error {path}: {e}", flush=True)
                bad += 1
            except Exception as e:  # noqa: BLE001 - one file's surprise must not stop the others
                last = traceback.format_exc().strip().splitlines()[-1]
                print(f"error {path}: conversion failed: {type(e).__name__}: {e} ({last})", flush=True)
                bad += 1
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
