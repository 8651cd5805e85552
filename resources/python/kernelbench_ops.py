"""Cost rules of `hone import kernelbench` (kernelbench_import.py): which torch ops forward
calls, traced with a TorchFunctionMode, and the FLOPs of each as terms over its dimensions."""
import torch
from torch.overrides import TorchFunctionMode

FREE = {"view", "reshape", "permute", "transpose", "t", "contiguous", "size", "dim", "flatten", "unflatten",
        "unsqueeze", "squeeze", "expand", "expand_as", "view_as", "reshape_as", "split", "chunk", "narrow",
        "numel", "detach", "get", "getitem", "clone", "to", "float", "half", "bfloat16", "double", "type_as",
        "shape", "dtype", "device", "len", "stride", "storage_offset", "is_contiguous", "requires_grad",
        "cat", "stack", "concat", "movedim", "swapaxes", "unbind", "select", "index_select", "gather",
        "repeat", "tile", "roll", "flip", "pad", "zeros_like", "ones_like", "empty_like", "new_zeros", "new_ones",
        "zero", "fill", "copy", "masked_fill", "tril", "triu", "diagonal", "setitem", "cpu", "cuda", "data"}
ELEMENTWISE = {"add", "sub", "mul", "div", "true_divide", "floor_divide", "neg", "abs", "relu", "relu6", "gelu",
               "sigmoid", "tanh", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "pow",
               "clamp", "clip", "clamp_min", "clamp_max", "hardtanh", "leaky_relu", "elu", "selu", "celu", "silu",
               "mish", "softplus", "softsign", "hardsigmoid", "hardswish", "sin", "cos", "tan", "erf", "erfc",
               "sign", "reciprocal", "square", "maximum", "minimum", "where", "threshold", "logsigmoid",
               "tanhshrink", "softshrink", "hardshrink", "radd", "rsub", "rmul", "rdiv", "rtruediv", "truediv",
               "iadd", "isub", "imul", "idiv", "itruediv", "floor", "ceil", "round", "trunc", "frac", "lerp",
               "addcmul", "addcdiv", "gt", "lt", "ge", "le", "eq", "ne", "logical_and", "logical_or",
               "logical_not", "bitwise_and", "bitwise_or", "mod", "remainder", "fmod", "dropout", "prelu",
               "glu", "hardsigmoid", "rrelu", "and", "or", "xor", "invert", "pos", "float_power"}
REDUCTION = {"sum": 1, "mean": 1, "max": 1, "min": 1, "amax": 1, "amin": 1, "argmax": 1, "argmin": 1, "prod": 1,
             "norm": 2, "var": 3, "std": 3, "logsumexp": 3, "cumsum": 1, "cumprod": 1, "all": 1, "any": 1,
             "max_pool1d": 1, "max_pool2d": 1, "max_pool3d": 1, "avg_pool1d": 1, "avg_pool2d": 1,
             "avg_pool3d": 1, "adaptive_avg_pool1d": 1, "adaptive_avg_pool2d": 1, "adaptive_avg_pool3d": 1,
             "adaptive_max_pool1d": 1, "adaptive_max_pool2d": 1, "adaptive_max_pool3d": 1,
             "max_pool2d_with_indices": 1, "max_pool1d_with_indices": 1, "max_pool3d_with_indices": 1,
             "softmax": 5, "log_softmax": 5, "layer_norm": 8, "group_norm": 8, "batch_norm": 8,
             "instance_norm": 8, "local_response_norm": 8, "normalize": 4, "cross_entropy": 6, "nll_loss": 1,
             "mse_loss": 3, "l1_loss": 3, "smooth_l1_loss": 4, "huber_loss": 4, "kl_div": 4,
             "binary_cross_entropy": 4, "binary_cross_entropy_with_logits": 6, "cosine_similarity": 6,
             "hinge_embedding_loss": 3, "triplet_margin_loss": 6, "margin_ranking_loss": 3}
DATA_DEPENDENT = {"nonzero", "unique", "masked_select", "argwhere", "unique_consecutive", "item", "tolist", "bool",
                  "nonzero_static", "repeat_interleave", "bincount", "histc", "multinomial"}
RANDOM = {"rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "bernoulli", "normal",
          "multinomial", "randperm", "uniform", "exponential", "geometric", "cauchy", "log_normal",
          "random", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout", "rrelu"}


def op_name(func):
    name = getattr(func, "__name__", None) or str(func)
    if name == "__get__":  # a property of a tensor (x.shape)
        return "get"
    return name.strip("_").rstrip("_") or name


def numel(shape):
    n = 1
    for d in shape:
        n *= int(d)
    return n


class Tracer(TorchFunctionMode):
    """Records every torch call forward makes at the top level: its name and the shapes around it."""

    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = op_name(func)
        if name == "get":
            return out
        tensors = [a for a in list(args) + list(kwargs.values()) if isinstance(a, torch.Tensor)]
        for a in args:
            if isinstance(a, (list, tuple)):
                tensors += [t for t in a if isinstance(t, torch.Tensor)]
        outs = out if isinstance(out, (list, tuple)) else [out]
        outs = [o for o in outs if isinstance(o, torch.Tensor)]
        self.ops.append({"name": name, "in": [tuple(t.shape) for t in tensors],
                         "out": [tuple(o.shape) for o in outs], "args": args, "kwargs": kwargs,
                         "dtype": outs[0].dtype if outs else None})
        return out


def op_cost(op):
    """FLOPs of one traced op as (coefficient, [dims]), a list of such terms, or None when unknown."""
    name = op["name"]
    ins, outs = op["in"], op["out"]
    if name in FREE or name in RANDOM - {"rrelu"}:
        return []
    out = outs[0] if outs else None
    if name in ("matmul", "mm", "bmm", "linear", "addmm", "baddbmm", "addbmm", "addmv", "mv"):
        if out is None or not ins:
            return None
        a = ins[1] if name in ("addmm", "baddbmm", "addbmm", "addmv") and len(ins) > 2 else ins[0]
        k = a[-1] if len(a) else 1
        terms = [(2, list(out) + [k])]
        if name == "linear" and len(ins) > 2:
            terms.append((1, list(out)))
        if name in ("addmm", "baddbmm", "addbmm", "addmv"):
            terms.append((1, list(out)))
        return terms
    if name in ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"):
        if out is None or len(ins) < 2:
            return None
        x, w = ins[0], ins[1]
        if name.startswith("conv_transpose"):
            terms = [(2, list(x) + list(w[1:]))]
        else:
            terms = [(2, list(out) + list(w[1:]))]
        if len(ins) > 2:
            terms.append((1, list(out)))
        return terms
    if name in ELEMENTWISE:
        return [(1, list(out))] if out is not None else []
    if name in REDUCTION:
        biggest = max(ins, key=numel) if ins else out
        return [(REDUCTION[name], list(biggest))] if biggest is not None else []
    return None


def product_text(coeff, dims):
    parts = [str(coeff)] if coeff != 1 or not dims else []
    parts += [str(d) for d in dims]
    return " * ".join(parts)


def cost_model(table, traces):
    """flops expression over the symbols, or None when some op has no rule (or the traces differ)."""
    names = [[op["name"] for op in t] for t in traces]
    if any(n != names[0] for n in names):
        return None, "forward calls different ops for different sizes"
    terms = {}
    for i, op in enumerate(traces[0]):
        per_config = [op_cost(t[i]) for t in traces]
        if any(c is None for c in per_config):
            return None, f"no cost rule for {op['name']}"
        for j, (coeff, _) in enumerate(per_config[0]):
            dims_by_config = [c[j][1] for c in per_config]
            if len({len(d) for d in dims_by_config}) != 1:
                return None, f"{op['name']} changes rank with the sizes"
            named, const = [], coeff
            for d in range(len(dims_by_config[0])):
                sym = table.dim([dc[d] for dc in dims_by_config])
                if isinstance(sym, int):
                    const *= sym
                else:
                    named.append(sym)
            key = tuple(sorted(named))
            terms[key] = terms.get(key, 0) + const
    if not terms:
        return "0", None
    text = " + ".join(product_text(c, list(k)) for k, c in sorted(terms.items(), key=lambda kv: (-len(kv[0]), kv[0])) if c)
    return text or "0", None


def family_of(ops):
    kinds = set()
    for op in ops:
        n = op["name"]
        if n in ("matmul", "mm", "bmm", "linear", "addmm", "baddbmm", "einsum"):
            kinds.add("gemm")
        elif n.startswith("conv"):
            kinds.add("conv")
        elif n in ("softmax", "log_softmax"):
            kinds.add("softmax")
        elif n.endswith("_norm") or n == "normalize":
            kinds.add("norm")
        elif n in REDUCTION:
            kinds.add("reduction")
        elif n in ELEMENTWISE:
            kinds.add("elementwise")
    for k in ("conv", "gemm", "softmax", "norm", "reduction"):
        if k in kinds:
            return k + ("_epilogue" if k in ("gemm", "conv") and "elementwise" in kinds else "")
    return "elementwise" if kinds else "other"
