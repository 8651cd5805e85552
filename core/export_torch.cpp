// The PyTorch extension package of `hone export --torch`: an op torch.ops.hone.<problem> whose
// schema comes from problem.toml, calling one or several kernel configurations (a per-shape
// portfolio) on the current stream, with a Meta implementation for torch.compile.
#include "core/export_torch.h"

#include "core/export_bundle.h"
#include "hone_prompt_resources.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

namespace hone::core {
namespace {

namespace fs = std::filesystem;

const char* atenType(DType t)
{
    switch (t) {
    case HONE_F32: return "at::kFloat";
    case HONE_F16: return "at::kHalf";
    case HONE_BF16: return "at::kBFloat16";
    case HONE_F64: return "at::kDouble";
    case HONE_I32: return "at::kInt";
    case HONE_I64: return "at::kLong";
    case HONE_U8: return "at::kByte";
    }
    return "at::kFloat";
}

const char* torchTypeName(DType t)
{
    switch (t) {
    case HONE_F32: return "float32";
    case HONE_F16: return "float16";
    case HONE_BF16: return "bfloat16";
    case HONE_F64: return "float64";
    case HONE_I32: return "int32";
    case HONE_I64: return "int64";
    case HONE_U8: return "uint8";
    }
    return "float32";
}

std::string identifier(const std::string& text)
{
    std::string out;
    for (char ch : text)
        out += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
    if (out.empty() || std::isdigit(static_cast<unsigned char>(out.front())))
        out = "p_" + out;
    return out;
}

std::string number(double v)
{
    std::ostringstream s;
    s.precision(17);
    s << v;
    std::string text = s.str();
    if (text.find_first_of(".eE") == std::string::npos && text.find("inf") == std::string::npos)
        text += ".0";
    return text;
}

std::string knobText(const nlohmann::json& v)
{
    return v.is_string() ? v.get<std::string>() : v.dump();
}

/// Every shape entry of the problem, small and bench.
std::vector<ShapeBinding> allEntries(const ProblemSpec& spec)
{
    std::vector<ShapeBinding> all = spec.smallShapes;
    all.insert(all.end(), spec.benchShapes.begin(), spec.benchShapes.end());
    return all;
}

/// A relation S = f(A) that every entry holding both symbols satisfies, as C++ text; empty if none.
std::string findRelation(const std::string& s, const std::vector<std::string>& bound, const std::vector<ShapeBinding>& entries)
{
    struct Rule {
        std::function<bool(int64_t a, int64_t s, int64_t& c)> fits; // c: a constant the rule learns
        std::function<std::string(const std::string& a, int64_t c)> text;
    };
    const std::vector<Rule> rules = {
        { [](int64_t a, int64_t v, int64_t& c) { c = v - a; return true; },
            [](const std::string& a, int64_t c) {
                return c == 0 ? a : c > 0 ? a + " + " + std::to_string(c) : a + " - " + std::to_string(-c);
            } },
        { [](int64_t a, int64_t v, int64_t&) { return v == a * (a - 1) / 2; },
            [](const std::string& a, int64_t) { return a + " * (" + a + " - 1) / 2"; } },
        { [](int64_t a, int64_t v, int64_t&) { return v == a * (a + 1) / 2; },
            [](const std::string& a, int64_t) { return a + " * (" + a + " + 1) / 2"; } },
    };
    for (const std::string& a : bound)
        for (const Rule& rule : rules) {
            bool first = true, ok = true;
            int64_t constant = 0;
            int seen = 0;
            for (const ShapeBinding& e : entries) {
                const auto ia = e.find(a), is = e.find(s);
                if (ia == e.end() || is == e.end())
                    continue;
                int64_t c = 0;
                if (!rule.fits(ia->second, is->second, c) || (!first && c != constant)) {
                    ok = false;
                    break;
                }
                constant = c;
                first = false;
                ++seen;
            }
            // Two entries at least, so that a single shape does not make a relation up.
            if (ok && seen >= 2)
                return rule.text(a, constant);
        }
    return {};
}

struct Writer {
    fs::path dir;
    TorchPackage* package;
    void operator()(const std::string& rel, const std::string& text) const
    {
        const fs::path path = dir / rel;
        std::error_code ec;
        fs::create_directories(path.parent_path(), ec);
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out << text;
        out.close();
        if (!out)
            throw ExportError("cannot write " + path.string() + " (is the folder writable and the disk not full?)");
        package->files.push_back(rel);
    }
};

} // namespace

TorchSignature torchSignature(const ProblemSpec& spec)
{
    TorchSignature sig;
    sig.opName = identifier(spec.name);
    std::vector<std::string> bound;
    auto isBound = [&](const std::string& s) { return std::find(bound.begin(), bound.end(), s) != bound.end(); };
    for (const TensorSpec& t : spec.inputs)
        for (size_t d = 0; d < t.shape.size(); ++d)
            if (!t.shape[d].symbol.empty() && !isBound(t.shape[d].symbol)) {
                sig.symbols.push_back({ t.shape[d].symbol, TorchSymbol::From::InputDim, t.name, d, {} });
                bound.push_back(t.shape[d].symbol);
            }
    // The other symbols the kernel reads: every symbol of every shape entry, outputs' first.
    std::vector<std::string> rest;
    auto addRest = [&](const std::string& s) {
        if (!s.empty() && !isBound(s) && std::find(rest.begin(), rest.end(), s) == rest.end())
            rest.push_back(s);
    };
    for (const TensorSpec& t : spec.outputs)
        for (const Dim& d : t.shape)
            addRest(d.symbol);
    const std::vector<ShapeBinding> entries = allEntries(spec);
    for (const ShapeBinding& e : entries)
        for (const auto& [s, v] : e)
            addRest(s);
    for (const std::string& s : rest) {
        const std::string relation = findRelation(s, bound, entries);
        if (!relation.empty())
            sig.symbols.push_back({ s, TorchSymbol::From::Relation, {}, 0, relation });
        else
            sig.symbols.push_back({ s, TorchSymbol::From::Argument, {}, 0, {} });
        bound.push_back(s);
    }

    std::string args;
    auto add = [&](const std::string& text) { args += (args.empty() ? "" : ", ") + text; };
    for (const TensorSpec& t : spec.inputs) {
        add("Tensor " + identifier(t.name));
        sig.argumentOrder.push_back(t.name);
    }
    for (const TorchSymbol& s : sig.symbols)
        if (s.from == TorchSymbol::From::Argument) {
            add("int " + identifier(s.name));
            sig.argumentOrder.push_back(s.name);
        }
    for (const auto& [name, v] : spec.params) {
        // Every param is a double in the ABI, so `float` (a double in a schema) for all of them.
        add("float " + identifier(name) + "=" + number(v));
        sig.argumentOrder.push_back(name);
    }
    std::string returns;
    if (spec.outputs.size() == 1) {
        returns = "Tensor";
    } else {
        returns = "(";
        for (size_t i = 0; i < spec.outputs.size(); ++i)
            returns += std::string(i ? ", " : "") + "Tensor";
        returns += ")";
    }
    sig.schema = sig.opName + "(" + args + ") -> " + returns;
    return sig;
}

namespace {

std::vector<std::string> symbolNames(const TorchSignature& sig)
{
    std::vector<std::string> out;
    for (const TorchSymbol& s : sig.symbols)
        out.push_back(s.name);
    return out;
}

} // namespace

std::string dispatchSource(const std::vector<std::string>& symbols, const std::vector<TorchKernel>& kernels)
{
    std::ostringstream o;
    for (size_t i = 0; i < kernels.size(); ++i)
        o << "extern \"C\" int hone_run_k" << i << "(const hone_args* args);\n";
    o << "\nnamespace {\n\nstruct Config {\n    int (*run)(const hone_args*);\n    const char* label;\n};\n"
      << "const Config kConfigs[] = {\n";
    for (size_t i = 0; i < kernels.size(); ++i)
        o << "    { hone_run_k" << i << ", " << cString(kernels[i].label) << " },\n";
    o << "};\nconstexpr int kNumConfigs = " << kernels.size() << ";\n";
    // The dispatch table: the shapes each configuration was chosen for.
    const size_t nsym = symbols.size();
    o << "constexpr int kNumSymbols = " << nsym << ";\n";
    o << "const char* const kSymbolNames[] = {";
    for (const auto& name : symbols)
        o << " " << cString(name) << ",";
    o << " nullptr };\n";
    o << "struct Entry {\n    int64_t symbols[kNumSymbols > 0 ? kNumSymbols : 1];\n    int config;\n};\n"
      << "const Entry kTable[] = {\n";
    size_t entries = 0;
    for (size_t k = 0; k < kernels.size(); ++k)
        for (const ShapeBinding& shape : kernels[k].shapes) {
            o << "    { {";
            for (size_t i = 0; i < nsym; ++i) {
                const auto it = shape.find(symbols[i]);
                o << (i ? ", " : " ") << (it == shape.end() ? -1 : it->second);
            }
            o << " }, " << k << " },\n";
            ++entries;
        }
    if (entries == 0)
        o << "    { { 0 }, 0 },\n";
    o << "};\nconstexpr int kTableSize = " << entries << ";\n\n";
    o << R"cpp(/// The configurations in the order to try them for these symbols: the one chosen for the
/// nearest shape of the table first (distance in log space, so that an unseen shape goes to the
/// configuration of the shape most like it), then the others.
std::vector<int> order(const int64_t* symbols)
{
    std::vector<double> best(kNumConfigs, INFINITY);
    for (int e = 0; e < kTableSize; ++e) {
        double d = 0;
        for (int s = 0; s < kNumSymbols; ++s)
            if (kTable[e].symbols[s] >= 0)
                d += std::fabs(std::log1p(double(symbols[s])) - std::log1p(double(kTable[e].symbols[s])));
        best[kTable[e].config] = std::fmin(best[kTable[e].config], d);
    }
    std::vector<int> out;
    for (int c = 0; c < kNumConfigs; ++c)
        out.push_back(c);
    std::stable_sort(out.begin(), out.end(), [&](int a, int b) { return best[a] < best[b]; });
    return out;
}

)cpp";
    return o.str();
}

namespace {

/// The C++ body that binds every symbol (`Sym` is int64_t, or c10::SymInt in the Meta kernel)
/// and, in the real kernel, checks the inputs against the problem.
std::string bindSymbols(const ProblemSpec& spec, const TorchSignature& sig, bool checks)
{
    const std::string op = "hone::" + sig.opName;
    std::ostringstream o;
    for (const TensorSpec& t : spec.inputs) {
        const std::string v = identifier(t.name) + "_in";
        if (checks) {
            o << "    checkTensor(" << v << ", " << cString(t.name) << ", " << atenType(t.dtype) << ", "
              << cString(torchTypeName(t.dtype)) << ", " << t.shape.size() << ", first);\n";
            for (size_t d = 0; d < t.shape.size(); ++d)
                if (t.shape[d].symbol.empty())
                    o << "    TORCH_CHECK(" << v << ".size(" << d << ") == " << t.shape[d].extent << ", \"" << op << ": "
                      << t.name << ".size(" << d << ") must be " << t.shape[d].extent << ", got \", std::to_string(" << v << ".size("
                      << d << ")));\n";
        }
    }
    for (const TorchSymbol& s : sig.symbols) {
        const std::string name = identifier(s.name);
        if (s.from == TorchSymbol::From::InputDim)
            o << "    const Sym " << name << " = SIZE(" << identifier(s.input) << "_in, " << s.dim << ");\n";
        else if (s.from == TorchSymbol::From::Relation)
            o << "    const Sym " << name << " = " << s.expression << ";\n";
        else
            o << "    const Sym " << name << " = Sym(" << name << "_arg);\n";
        if (checks && s.from != TorchSymbol::From::InputDim)
            o << "    TORCH_CHECK(" << name << " >= 0, \"" << op << ": " << s.name
              << (s.from == TorchSymbol::From::Relation ? " = " + s.expression : std::string()) << " must be >= 0, got \", std::to_string("
              << name << "));\n";
    }
    if (checks) // every other use of a symbol by an input must agree with its binding
        for (const TensorSpec& t : spec.inputs)
            for (size_t d = 0; d < t.shape.size(); ++d) {
                const std::string& sym = t.shape[d].symbol;
                if (sym.empty())
                    continue;
                const auto it = std::find_if(sig.symbols.begin(), sig.symbols.end(),
                    [&](const TorchSymbol& s) { return s.name == sym; });
                if (it->from == TorchSymbol::From::InputDim && it->input == t.name && it->dim == d)
                    continue;
                std::string source = it->from == TorchSymbol::From::InputDim
                    ? it->input + ".size(" + std::to_string(it->dim) + ")"
                    : it->from == TorchSymbol::From::Relation ? it->expression : "the argument " + sym;
                o << "    TORCH_CHECK(" << identifier(t.name) << "_in.size(" << d << ") == " << identifier(sym) << ", \""
                  << op << ": " << t.name << ".size(" << d << ") is \", std::to_string(" << identifier(t.name) << "_in.size(" << d
                  << ")), \" but must equal " << sym << " = " << source << " = \", std::to_string(" << identifier(sym) << "));\n";
            }
    return o.str();
}

std::string outputShape(const TensorSpec& t)
{
    std::string dims;
    for (const Dim& d : t.shape)
        dims += std::string(dims.empty() ? "" : ", ") + (d.symbol.empty() ? "Sym(" + std::to_string(d.extent) + ")" : identifier(d.symbol));
    return "{" + dims + "}";
}

std::string opSource(const ProblemSpec& spec, const TorchSignature& sig, const std::vector<TorchKernel>& kernels,
    bool cuda, bool workspace)
{
    const std::string op = "hone::" + sig.opName;
    std::ostringstream o;
    o << "// torch.ops.hone." << sig.opName << ", generated by `hone export --torch` from problem '" << spec.name
      << "'.\n// Schema: " << sig.schema << "\n"
      << "// Inputs are checked (device, dtype, rank, shape relations) and made contiguous; outputs are\n"
         "// allocated by the op; the kernel runs on the current stream"
      << (workspace ? ", with a workspace from PyTorch's allocator" : "")
      << ".\n// Nothing here synchronizes or allocates outside PyTorch's allocator, so the op can be\n"
         "// captured in a CUDA graph. The Meta kernel gives torch.compile the output shapes.\n"
      << "#include <ATen/ATen.h>\n#include <torch/library.h>\n#include <torch/version.h>\n";
    if (cuda)
        o << "#include <ATen/cuda/CUDAContext.h>\n#include <c10/cuda/CUDAGuard.h>\n";
    o << "#include \"hone/kernel.h\"\n\n#include <algorithm>\n#include <cmath>\n#include <cstdint>\n#include <string>\n#include <vector>\n\n";
    o << dispatchSource(symbolNames(sig), kernels);
    o << R"cpp(
int32_t honeDtype(at::ScalarType t)
{
    switch (t) {
    case at::kFloat: return HONE_F32;
    case at::kHalf: return HONE_F16;
    case at::kBFloat16: return HONE_BF16;
    case at::kDouble: return HONE_F64;
    case at::kInt: return HONE_I32;
    case at::kLong: return HONE_I64;
    default: return HONE_U8;
    }
}

// Integers in messages go through std::to_string: with some PyTorch builds, streaming an
// int64_t into c10::str from an extension crashed (seen with 2.11 on the H100 machine).
std::string shapeText(const at::Tensor& t)
{
    std::string s = "[";
    for (int64_t i = 0; i < t.dim(); ++i)
        s += (i ? ", " : "") + std::to_string(t.size(i));
    return s + "]";
}

hone_tensor describe(const char* name, const at::Tensor& t)
{
    hone_tensor d {};
    d.name = name;
    d.data = t.data_ptr();
    d.dtype = honeDtype(t.scalar_type());
    d.rank = static_cast<int32_t>(t.dim());
    for (int64_t i = 0; i < t.dim() && i < HONE_MAX_RANK; ++i) {
        d.shape[i] = t.size(i);
        d.strides[i] = t.stride(i);
    }
    return d;
}

)cpp";
    o << "void checkTensor(const at::Tensor& t, const char* name, at::ScalarType dtype, const char* dtypeName, int64_t rank,\n"
         "    const at::Tensor& first)\n{\n"
      << "    TORCH_CHECK(t.defined(), \"" << op << ": \", name, \" is undefined\");\n"
      << "    TORCH_CHECK(t.device() == first.device(), \"" << op
      << ": \", name, \" is on \", t.device(), \" but the first input is on \", first.device(), \"; move every input to one "
         "device\");\n"
      << "    TORCH_CHECK(t.device().type() == " << (cuda ? "at::kCUDA" : "at::kCPU") << ", \"" << op
      << ": \", name, \" is on \", t.device(), \"; this build runs on " << (cuda ? "CUDA devices" : "the CPU") << "\");\n"
      << "    TORCH_CHECK(t.scalar_type() == dtype, \"" << op
      << ": \", name, \" must be \", dtypeName, \", got \", t.scalar_type());\n"
      << "    TORCH_CHECK(t.dim() == rank, \"" << op << ": \", name, \" must have rank \", std::to_string(rank), \", got \",\n"
         "        std::to_string(t.dim()), \" (shape \", shapeText(t), \")\");\n"
      << "}\n\n} // namespace\n\n";

    // The signature shared by the real and the Meta kernel.
    std::string params;
    auto addParam = [&](const std::string& text) { params += (params.empty() ? "" : ", ") + text; };
    for (const TensorSpec& t : spec.inputs)
        addParam("const at::Tensor& " + identifier(t.name) + "_in");
    for (const TorchSymbol& s : sig.symbols)
        if (s.from == TorchSymbol::From::Argument)
            addParam("int64_t " + identifier(s.name) + "_arg");
    for (const auto& [name, v] : spec.params)
        addParam("double " + identifier(name));
    const std::string returnType = spec.outputs.size() == 1
        ? "at::Tensor"
        : "std::tuple<" + [&] {
              std::string t;
              for (size_t i = 0; i < spec.outputs.size(); ++i)
                  t += std::string(i ? ", " : "") + "at::Tensor";
              return t;
          }() + ">";
    auto returnStatement = [&]() {
        if (spec.outputs.size() == 1)
            return "    return " + identifier(spec.outputs[0].name) + ";\n";
        std::string t = "    return { ";
        for (size_t i = 0; i < spec.outputs.size(); ++i)
            t += std::string(i ? ", " : "") + identifier(spec.outputs[i].name);
        return t + " };\n";
    };
    const std::string first = identifier(spec.inputs.front().name) + "_in";

    // The kernel.
    o << "#define SIZE(t, d) (t).size(d)\n";
    o << returnType << " run_" << sig.opName << "(" << params << ")\n{\n    using Sym = int64_t;\n"
      << "    const at::Tensor& first = " << first << ";\n";
    o << bindSymbols(spec, sig, true);
    if (cuda)
        o << "    const c10::cuda::CUDAGuard guard(first.device());\n";
    for (const TensorSpec& t : spec.inputs)
        o << "    const at::Tensor " << identifier(t.name) << " = " << identifier(t.name) << "_in.contiguous();\n";
    for (const TensorSpec& t : spec.outputs)
        o << "    at::Tensor " << identifier(t.name) << " = at::empty(" << outputShape(t) << ", first.options().dtype("
          << atenType(t.dtype) << "));\n";
    o << "    int64_t outputElements = 0;\n";
    for (const TensorSpec& t : spec.outputs)
        o << "    outputElements += " << identifier(t.name) << ".numel();\n";
    o << "    if (outputElements == 0)\n    " << returnStatement();
    o << "    const hone_tensor inputs[] = {";
    for (const TensorSpec& t : spec.inputs)
        o << " describe(" << cString(t.name) << ", " << identifier(t.name) << "),";
    o << " };\n    const hone_tensor outputs[] = {";
    for (const TensorSpec& t : spec.outputs)
        o << " describe(" << cString(t.name) << ", " << identifier(t.name) << "),";
    o << " };\n    const hone_param params[] = {";
    for (const auto& [name, v] : spec.params)
        o << " { " << cString(name) << ", double(" << identifier(name) << ") },";
    for (const TorchSymbol& s : sig.symbols)
        o << " { " << cString(s.name) << ", double(" << identifier(s.name) << ") },";
    o << " { nullptr, 0 } };\n";
    o << "    const int64_t symbols[] = {";
    for (const TorchSymbol& s : sig.symbols)
        o << " " << identifier(s.name) << ",";
    o << " 0 };\n";
    o << "    hone_args a {};\n    a.abi_version = HONE_ABI_VERSION;\n    a.num_inputs = " << spec.inputs.size()
      << ";\n    a.num_outputs = " << spec.outputs.size() << ";\n    a.num_params = "
      << spec.params.size() + sig.symbols.size() << ";\n    a.inputs = inputs;\n    a.outputs = outputs;\n    a.params = params;\n";
    if (cuda)
        o << "    a.stream = at::cuda::getCurrentCUDAStream(first.get_device()).stream();\n";
    if (workspace)
        o << "    const at::Tensor workspace = at::empty({int64_t(64) << 20}, first.options().dtype(at::kByte));\n"
             "    a.workspace = workspace.data_ptr();\n    a.workspace_bytes = size_t(workspace.numel());\n";
    o << "    std::string refused;\n"
         "    for (int c : order(symbols)) {\n"
         "        const int rc = kConfigs[c].run(&a);\n"
         "        if (rc == 0)\n"
      << "        " << returnStatement()
      << "        refused += std::string(refused.empty() ? \"\" : \"; \") + kConfigs[c].label + \" returned \" + std::to_string(rc);\n"
         "    }\n"
      << "    TORCH_CHECK(false, \"" << op << ": no kernel configuration takes this shape (\", refused, \")\");\n}\n"
      << "#undef SIZE\n\n";

    // The Meta kernel: output shapes only, symbolic where PyTorch has SymInt.
    o << "#if defined(TORCH_VERSION_MAJOR) && TORCH_VERSION_MAJOR >= 2\n"
         "#define SIZE(t, d) (t).sym_size(d)\n#define EMPTY at::empty_symint\nusing MetaSym = c10::SymInt;\n"
         "#else\n#define SIZE(t, d) (t).size(d)\n#define EMPTY at::empty\nusing MetaSym = int64_t;\n#endif\n";
    o << returnType << " meta_" << sig.opName << "(" << params << ")\n{\n    using Sym = MetaSym;\n";
    std::string metaBind = bindSymbols(spec, sig, false);
    o << metaBind;
    for (const TensorSpec& t : spec.outputs)
        o << "    at::Tensor " << identifier(t.name) << " = EMPTY(" << outputShape(t) << ", " << first
          << ".options().dtype(" << atenType(t.dtype) << "));\n";
    for (const auto& [name, v] : spec.params)
        o << "    (void)" << identifier(name) << ";\n";
    o << returnStatement() << "}\n#undef SIZE\n#undef EMPTY\n\n";

    // Which configuration serves a shape: the symbols in the order of problem.json's "symbols".
    o << "int64_t config_" << sig.opName << "(c10::IntArrayRef symbols)\n{\n"
      << "    TORCH_CHECK(symbols.size() == size_t(kNumSymbols), \"hone::" << sig.opName
      << "_config: expected " << sig.symbols.size() << " symbols, got \", std::to_string(symbols.size()));\n"
      << "    return order(symbols.data()).front();\n}\n\n";
    // A fragment: several packages (one per problem) load into one process.
    o << "TORCH_LIBRARY_FRAGMENT(hone, m)\n{\n    m.def(" << cString(sig.schema) << ");\n"
      << "    m.def(\"" << sig.opName << "_config(int[] symbols) -> int\", &config_" << sig.opName << ");\n}\n\n"
      << "TORCH_LIBRARY_IMPL(hone, " << (cuda ? "CUDA" : "CPU") << ", m)\n{\n    m.impl(" << cString(sig.opName)
      << ", &run_" << sig.opName << ");\n}\n\n"
      << "TORCH_LIBRARY_IMPL(hone, Meta, m)\n{\n    m.impl(" << cString(sig.opName) << ", &meta_" << sig.opName
      << ");\n}\n\n"
      << "// Inference only: the op has no backward, and gradients do not flow through it.\n"
      << "TORCH_LIBRARY_IMPL(hone, Autograd" << (cuda ? "CUDA" : "CPU") << ", m)\n{\n    m.impl(" << cString(sig.opName)
      << ", torch::CppFunction::makeFallthrough());\n}\n\n"
      << "TORCH_LIBRARY_IMPL(hone, AutogradMeta, m)\n{\n    m.impl(" << cString(sig.opName)
      << ", torch::CppFunction::makeFallthrough());\n}\n";
    return o.str();
}

std::string replaceAll(std::string text, const std::string& from, const std::string& to)
{
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
        text.replace(at, from.size(), to);
    return text;
}

std::string readme(const ProblemSpec& spec, const TorchSignature& sig, const std::vector<TorchKernel>& kernels, bool cuda,
    bool workspace)
{
    std::string call, relations, inputs, dispatch;
    for (const std::string& a : sig.argumentOrder)
        call += (call.empty() ? "" : ", ") + a;
    for (const TorchSymbol& s : sig.symbols) {
        if (s.from == TorchSymbol::From::Relation)
            relations += (relations.empty() ? "" : "; ") + s.name + " = " + s.expression;
        if (s.from == TorchSymbol::From::Argument)
            relations += (relations.empty() ? "" : "; ") + s.name + " is an int argument";
    }
    for (const TensorSpec& t : spec.inputs) {
        std::string dims;
        for (const Dim& d : t.shape)
            dims += (dims.empty() ? "" : ", ") + (d.symbol.empty() ? std::to_string(d.extent) : d.symbol);
        inputs += "- `" + t.name + "`: " + torchTypeName(t.dtype) + " [" + dims + "]\n";
    }
    for (const TensorSpec& t : spec.outputs) {
        std::string dims;
        for (const Dim& d : t.shape)
            dims += (dims.empty() ? "" : ", ") + (d.symbol.empty() ? std::to_string(d.extent) : d.symbol);
        inputs += "- output `" + t.name + "`: " + torchTypeName(t.dtype) + " [" + dims + "]\n";
    }
    for (const auto& [name, v] : spec.params)
        inputs += "- param `" + name + "` (default " + number(v) + ")\n";
    if (kernels.size() == 1) {
        dispatch = "one, " + kernels.front().label + ", for every shape.";
    } else {
        dispatch = "the op takes the configuration chosen for the shape of the table (problem.json) nearest "
                   "to the call's shape (distance in log space over the shape symbols) and falls back to the "
                   "others if it refuses the shape.";
        for (size_t i = 0; i < kernels.size(); ++i)
            dispatch += "\n  - " + std::to_string(i) + ": " + kernels[i].label + " (" + std::to_string(kernels[i].shapes.size())
                + " shape(s))";
    }
    std::string text(embedded::kTorchReadme);
    text = replaceAll(text, "@OP@", sig.opName);
    text = replaceAll(text, "@PROBLEM@", spec.name);
    text = replaceAll(text, "@WHAT@", kernels.size() == 1 ? kernels.front().label : std::to_string(kernels.size()) + " configurations (a per-shape portfolio)");
    text = replaceAll(text, "@DEVICE@", cuda ? "NVIDIA GPUs (CUDA)" : "the CPU");
    text = replaceAll(text, "@DEVICE_SHORT@", cuda ? "CUDA" : "CPU");
    text = replaceAll(text, "@NVCC@", cuda ? " and nvcc of the CUDA version PyTorch was built with" : "");
    text = replaceAll(text, "@SCHEMA@", "hone::" + sig.schema);
    text = replaceAll(text, "@CALL@", call);
    text = replaceAll(text, "@RELATIONS@", relations.empty() ? "every symbol comes from an input's size" : relations);
    text = replaceAll(text, "@WORKSPACE@", workspace ? "the kernel's 64 MiB workspace too." : "the kernel needs no workspace.");
    text = replaceAll(text, "@NCONFIG@", std::to_string(kernels.size()));
    text = replaceAll(text, "@DISPATCH@", dispatch);
    text = replaceAll(text, "@INPUTS@", inputs);
    return text;
}

} // namespace

KernelConfigurations writeKernelConfigurations(const std::vector<TorchKernel>& kernels, const std::string& lang,
    const fs::path& dir)
{
    KernelConfigurations out;
    TorchPackage files;
    const Writer write { dir, &files };
    // Every configuration's candidate, and a wrapper that defines its knobs and renames its
    // hone_run, so that several configurations link into one library.
    const std::string ext = lang == "cuda" ? ".cu" : ".cpp";
    std::set<std::string> flags;
    for (size_t i = 0; i < kernels.size(); ++i) {
        const TorchKernel& k = kernels[i];
        const std::string src = "kernels/k" + std::to_string(i) + "_" + fs::path(k.sourceName).filename().string();
        write(src, k.sourceText);
        std::ostringstream w;
        w << "// Configuration " << i << ": " << k.label << " (" << k.sourceName << ")";
        if (!k.shapes.empty())
            w << ", chosen for " << k.shapes.size() << " shape(s) of the set";
        w << ".\n";
        for (auto it = k.knobs.begin(); it != k.knobs.end(); ++it)
            w << "#define " << it.key() << " " << knobText(*it) << "\n";
        w << "#define hone_run hone_run_k" << i << "\n";
        if (kernels.size() == 1) {
            w << "#include \"" << src << "\"\n";
        } else {
            // Several configurations of one source define the same kernels: each gets its own
            // namespace, with the headers the source includes included before it.
            std::istringstream lines(k.sourceText);
            for (std::string line; std::getline(lines, line);)
                if (const size_t at = line.find_first_not_of(" \t");
                    at != std::string::npos && line.compare(at, 8, "#include") == 0)
                    w << line.substr(at) << "\n";
            w << "namespace hone_k" << i << " {\n#include \"" << src << "\"\n} // namespace hone_k" << i << "\n";
        }
        const std::string wrapper = "k" + std::to_string(i) + "_config" + ext;
        write(wrapper, w.str());
        out.sources.push_back(wrapper);
        if (!k.flags.empty())
            flags.insert(k.flags);
    }
    if (flags.size() > 1)
        out.warnings.push_back("the configurations were measured with different extra flags; the build applies every flag to "
                               "all of them");
    for (const auto& f : flags)
        out.extraFlags += (out.extraFlags.empty() ? "" : " ") + f;
    out.files = files.files;
    return out;
}

TorchPackage writeTorchPackage(const ProblemSpec& spec, const std::vector<TorchKernel>& kernels, const std::string& lang,
    const std::string& kernelHeader, const fs::path& dir, const std::string& cudaArch)
{
    if (kernels.empty())
        throw ExportError("a PyTorch package needs at least one kernel configuration");
    if (lang != "cpp" && lang != "cuda")
        throw ExportError("`hone export --torch` builds C++ and CUDA kernels; this candidate is " + lang);
    if (spec.inputs.empty() || spec.outputs.empty())
        throw ExportError("problem '" + spec.name + "' has no inputs or no outputs: nothing to make an op of");
    TorchPackage p;
    p.signature = torchSignature(spec);
    const TorchSignature& sig = p.signature;
    const bool cuda = lang == "cuda";
    const Writer write { dir, &p };
    bool workspace = false;
    for (const TorchKernel& k : kernels)
        workspace = workspace || k.sourceText.find("workspace") != std::string::npos;

    const KernelConfigurations written = writeKernelConfigurations(kernels, lang, dir);
    p.files = written.files;
    p.warnings = written.warnings;
    std::vector<std::string> sources = { "hone_" + sig.opName + "_op.cpp" };
    sources.insert(sources.end(), written.sources.begin(), written.sources.end());
    const std::string& extra = written.extraFlags;

    write("hone/kernel.h", kernelHeader);
    write(sources.front(), opSource(spec, sig, kernels, cuda, workspace));

    nlohmann::json problem = resolveProblem(spec);
    problem.erase("reference");
    problem["op"] = sig.opName;
    problem["schema"] = sig.schema;
    problem["device"] = cuda ? "cuda" : "cpu";
    problem["arguments"] = sig.argumentOrder;
    nlohmann::json symbolArgs = nlohmann::json::array();
    for (const TorchSymbol& s : sig.symbols)
        if (s.from == TorchSymbol::From::Argument)
            symbolArgs.push_back(s.name);
    problem["symbol_arguments"] = symbolArgs;
    nlohmann::json symbolList = nlohmann::json::array();
    for (const TorchSymbol& s : sig.symbols)
        symbolList.push_back(s.name);
    problem["symbols"] = symbolList;
    nlohmann::json inputs = nlohmann::json::array();
    for (const TensorSpec& t : spec.inputs)
        inputs.push_back(t.name);
    problem["input_names"] = inputs;
    nlohmann::json configs = nlohmann::json::array();
    for (const TorchKernel& k : kernels) {
        nlohmann::json shapes = nlohmann::json::array();
        for (const ShapeBinding& s : k.shapes)
            shapes.push_back(s);
        configs.push_back({ { "label", k.label }, { "source", k.sourceName }, { "knobs", k.knobs }, { "flags", k.flags },
            { "shapes", shapes } });
    }
    problem["configurations"] = configs;
    write("problem.json", problem.dump(2) + "\n");

    std::error_code ec;
    if (const fs::path ref = spec.dir / "torch_ref.py"; !spec.dir.empty() && fs::exists(ref, ec)) {
        std::ifstream in(ref, std::ios::binary);
        std::ostringstream text;
        text << in.rdbuf();
        write("torch_ref.py", text.str());
    } else {
        p.warnings.push_back("problem '" + spec.name + "' has no torch_ref.py: the package's pytest cannot compare the op "
            "with PyTorch and skips, saying so");
    }

    // The loader: builds with torch.utils.cpp_extension (nothing of Hone needed) and loads.
    std::ostringstream loader;
    std::string srcList;
    for (const auto& s : sources)
        srcList += "    \"" + s + "\",\n";
    loader << "\"\"\"torch.ops.hone." << sig.opName << ": build and load the operator Hone exported for problem '" << spec.name
           << "'.\n\n    import hone_" << sig.opName << "\n    op = hone_" << sig.opName << ".load()   # builds once, then loads\n"
           << "    y = op(...)  # same as torch.ops.hone." << sig.opName << "(...)\n\nSchema: " << sig.schema
           << "\n`python3 hone_" << sig.opName
           << ".py` builds and prints the library's path, for torch.ops.load_library(PATH) in a\nprocess that should not "
              "compile anything.\n\"\"\"\nimport os\nimport sys\n\nHERE = os.path.dirname(os.path.abspath(__file__))\n"
           << "NAME = \"hone_" << sig.opName << "\"\nOP = \"" << sig.opName << "\"\nSOURCES = [\n" << srcList << "]\n"
           << "CUDA = " << (cuda ? "True" : "False") << "\n"
           << "CFLAGS = [\"-O3\"" << (cuda ? "" : ", \"-march=native\", \"-fopenmp\"") << "]\n"
           << "CUDA_CFLAGS = [\"-O3\", \"-gencode=arch=compute_" << cudaArch << ",code=sm_" << cudaArch << "\"]\n"
           << "EXTRA_FLAGS = " << nlohmann::json(extra).dump() << ".split()\n"
           << "LDFLAGS = [" << (cuda ? "" : "\"-fopenmp\"");
    if (cuda)
        for (const auto& l : spec.allowedLibraries)
            if (l == "cublasLt" || l == "cublas")
                loader << "\"-l" << l << "\", ";
    loader << "]\n\n\ndef build_directory():\n"
              "    d = os.environ.get(\"HONE_TORCH_BUILD\", os.path.join(HERE, \"build\"))\n"
              "    os.makedirs(d, exist_ok=True)\n    return d\n\n\n"
              "def library_path():\n    return os.path.join(build_directory(), NAME + \".so\")\n\n\n"
              "def loaded():\n    import torch\n    try:\n        getattr(torch.ops.hone, OP)\n        return True\n"
              "    except (AttributeError, RuntimeError):\n        return False\n\n\n"
              "def load(verbose=False):\n"
              "    \"\"\"Builds the library if needed (torch.utils.cpp_extension, ninja) and loads it.\"\"\"\n"
              "    import torch\n    from torch.utils import cpp_extension\n"
              "    # PyTorch 2 builds with its own C++ standard (17 or later); 1.x defaults to C++14.\n"
              "    std = [\"-std=c++17\"] if int(torch.__version__.split(\".\")[0]) < 2 else []\n"
              "    if not loaded():\n"
              "        extra = EXTRA_FLAGS\n"
              "        cpp_extension.load(name=NAME, sources=[os.path.join(HERE, s) for s in SOURCES],\n"
              "                           extra_include_paths=[HERE],\n"
              "                           extra_cflags=CFLAGS + std + ([] if CUDA else extra),\n"
              "                           extra_cuda_cflags=CUDA_CFLAGS + (extra if CUDA else []),\n"
              "                           extra_ldflags=LDFLAGS, build_directory=build_directory(),\n"
              "                           is_python_module=False, verbose=verbose)\n"
              "    return getattr(torch.ops.hone, OP)\n\n\n"
              "if __name__ == \"__main__\":\n    load(verbose=\"-v\" in sys.argv)\n    print(library_path())\n";
    write("hone_" + sig.opName + ".py", loader.str());
    write("test_op.py", std::string(embedded::kTorchTest));
    write("README.md", readme(spec, sig, kernels, cuda, workspace));
    return p;
}

} // namespace hone::core
