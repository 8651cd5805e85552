#include "evaluator.h"

#include "coverage_checks.h"

#include "core/diagnosis.h"
#include "core/protocol.h"
#include "core/sha256.h"
#include "core/utf8.h"
#include "ncu_profile.h"
#include "system_info.h"
#include "timing.h"
#include "torch_reference.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <fstream>
#include <functional>
#include <new>
#include <optional>
#include <random>
#include <stdexcept>

namespace hone::backends {
namespace {

using core::protocol::FailureKind;

/// The input set `dump` writes: the first timing set of a request with the default
/// config.timing_seed.
constexpr uint64_t kTimingSeed = 1;
/// A median time under this fraction of the roofline floor fails the candidate as suspicious.
constexpr double kSuspiciousVerdict = 2.0 / 3.0;
/// The same against CPU ceilings measured under load (load average per core 0.5 or more, or
/// unknown), which can be low by a few times.
constexpr double kSuspiciousVerdictBusy = 0.1;

/// Ends the evaluation with a failure of `kind` in `stage`.
struct EvalFailure {
    FailureKind kind;
    std::string stage;
    std::string message;
};

/// The hone_args of one call: tensors over the given buffers, the problem's params and the
/// shape's symbols. Owns every array the struct points into.
class KernelArgs {
public:
    KernelArgs(const ShapeSpec& shape, const std::map<std::string, double>& params, void* stream,
        DeviceBackend* device = nullptr)
    {
        for (const auto& [name, value] : params)
            m_params.push_back({ name.c_str(), value });
        for (const auto& [name, value] : shape.symbols)
            m_params.push_back({ name.c_str(), value });
        m_args.abi_version = HONE_ABI_VERSION;
        m_args.num_params = static_cast<int32_t>(m_params.size());
        m_args.params = m_params.data();
        m_args.stream = stream;
        m_args.workspace = nullptr;
        m_args.workspace_bytes = 0;
        if (device)
            m_args.workspace = device->workspace(m_args.workspace_bytes);
    }

    void bind(const std::vector<TensorDesc>& inputs, const std::vector<void*>& inputPtrs,
        const std::vector<TensorDesc>& outputs, const std::vector<void*>& outputPtrs)
    {
        m_inputs = tensors(inputs, inputPtrs);
        m_outputs = tensors(outputs, outputPtrs);
        m_args.num_inputs = static_cast<int32_t>(m_inputs.size());
        m_args.inputs = m_inputs.data();
        m_args.num_outputs = static_cast<int32_t>(m_outputs.size());
        m_args.outputs = m_outputs.data();
    }

    const hone_args& args() const { return m_args; }

private:
    static std::vector<hone_tensor> tensors(
        const std::vector<TensorDesc>& descs, const std::vector<void*>& ptrs)
    {
        std::vector<hone_tensor> out;
        for (size_t i = 0; i < descs.size(); ++i) {
            hone_tensor t {};
            t.name = descs[i].name.c_str();
            t.data = ptrs[i];
            t.dtype = descs[i].dtype;
            t.rank = static_cast<int32_t>(descs[i].shape.size());
            int64_t stride = 1;
            for (int32_t d = t.rank - 1; d >= 0; --d) {
                t.shape[d] = descs[i].shape[static_cast<size_t>(d)];
                t.strides[d] = stride;
                stride *= t.shape[d];
            }
            out.push_back(t);
        }
        return out;
    }

    std::vector<hone_param> m_params;
    std::vector<hone_tensor> m_inputs;
    std::vector<hone_tensor> m_outputs;
    hone_args m_args {};
};

std::vector<HostTensor> makeTensors(const std::vector<TensorDesc>& descs)
{
    std::vector<HostTensor> out;
    out.reserve(descs.size());
    for (const auto& d : descs)
        out.emplace_back(d);
    return out;
}

std::vector<HostTensor> generateInputs(const ShapeSpec& shape, uint64_t seed)
{
    std::vector<HostTensor> inputs = makeTensors(shape.inputs);
    for (size_t i = 0; i < inputs.size(); ++i) {
        try {
            inputs[i].fill(seed, shape.label, i);
        } catch (const RequestError& e) {
            throw EvalFailure { FailureKind::WorkerError, "check", shape.label + ": " + e.what() };
        }
    }
    return inputs;
}

std::vector<void*> pointers(const std::vector<DeviceBuffer>& buffers)
{
    std::vector<void*> out;
    for (const auto& b : buffers)
        out.push_back(b.get());
    return out;
}

/// Calls hone_run, turning its return code and anything it throws into the failure a user
/// can act on. The reference's failures are the problem's, reported as worker_error.
int guardedRun(
    const std::function<int()>& call, bool isReference, const std::string& stage, const std::string& where)
{
    const std::string who = isReference ? "the reference's hone_run" : "hone_run";
    const FailureKind kind = isReference ? FailureKind::WorkerError : FailureKind::RuntimeError;
    int rc = 0;
    try {
        rc = call();
    } catch (const std::bad_alloc&) {
        throw EvalFailure { isReference ? FailureKind::WorkerError : FailureKind::MemoryLimit, stage,
            who + " ran out of memory (std::bad_alloc) on " + where };
    } catch (const RunnerForged& e) {
        throw EvalFailure { isReference ? FailureKind::WorkerError : FailureKind::ProtocolError, stage,
            who + " on " + where + ": " + e.what() };
    } catch (const RunnerDied& e) {
        throw EvalFailure { isReference ? FailureKind::WorkerError : FailureKind::Crash, stage,
            who + " on " + where + ": " + e.what() };
    } catch (const DeviceFault& e) {
        throw EvalFailure { kind, stage, who + " on " + where + ": " + e.what() };
    } catch (const std::exception& e) {
        throw EvalFailure { kind, stage, who + " threw " + e.what() + " on " + where };
    } catch (...) {
        throw EvalFailure { kind, stage,
            who + " threw an exception that is not a std::exception on " + where };
    }
    if (rc != 0)
        throw EvalFailure { kind, stage, who + " returned " + std::to_string(rc) + " on " + where };
    return rc;
}

/// A check whose candidate run itself failed (non-zero return, exception) is recorded too,
/// so the per-seed table shows where it happened; the reference's failures are not the
/// candidate's and are not recorded as checks.
void recordRunFailure(
    nlohmann::json& checks, const std::string& shape, uint64_t seed, bool afterTiming, const EvalFailure& f)
{
    if (f.kind == FailureKind::WorkerError)
        return;
    CheckOutcome outcome;
    outcome.shape = shape;
    outcome.seed = seed;
    outcome.ok = false;
    outcome.failure = f.kind;
    outcome.message = f.message;
    outcome.afterTiming = afterTiming;
    checks.push_back(outcome.toJson());
}

} // namespace

std::vector<HostTensor> Evaluator::inputsFor(const ShapeSpec& shape, uint64_t seed) const
{
    size_t inputBytes = 0;
    for (const auto& d : shape.inputs)
        inputBytes += d.bytes();
    // Large inputs are generated once per (shape, seed) and read back after that: reading is
    // cheaper than drawing (a few ms for 8 MiB against tens of ms), and leaves the host's
    // cores to the other workers.
    if (m_refCache.empty() || inputBytes < (size_t(4) << 20)) {
        const PhaseClock clock(*this, "generate");
        return generateInputs(shape, seed);
    }
    nlohmann::json key = { { "v", 1 }, { "label", shape.label }, { "symbols", shape.symbols }, { "seed", seed } };
    for (const auto& d : shape.inputs)
        key["inputs"].push_back({ d.name, dtypeName(d.dtype), d.shape, d.init });
    const auto path = m_refCache / "inputs" / (core::sha256Hex(key.dump()) + ".bin");
    std::vector<HostTensor> inputs = makeTensors(shape.inputs);
    if (loadTensors(path, inputs, "inputs"))
        return inputs;
    {
        const PhaseClock clock(*this, "generate");
        inputs = generateInputs(shape, seed);
    }
    storeTensors(path, inputs, "inputs");
    return inputs;
}

std::filesystem::path Evaluator::referenceCachePath(const ShapeSpec& shape, uint64_t seed) const
{
    size_t inputBytes = 0;
    for (const auto& d : shape.inputs)
        inputBytes += d.bytes();
    // Small shapes cost less to recompute than to read back.
    // PyTorch references start a Python process: their outputs are worth keeping at any size.
    const bool torchReference = m_referenceKey.rfind("torch-", 0) == 0;
    if (m_refCache.empty() || m_referenceKey.empty() || (inputBytes < (size_t(4) << 20) && !torchReference))
        return {};
    nlohmann::json key = { { "v", 1 }, { "reference", m_referenceKey }, { "label", shape.label },
        { "symbols", shape.symbols }, { "seed", seed }, { "params", m_request->params } };
    for (const auto& d : shape.inputs)
        key["inputs"].push_back({ d.name, dtypeName(d.dtype), d.shape, d.init });
    for (const auto& d : shape.outputs)
        key["outputs"].push_back({ d.name, dtypeName(d.dtype), d.shape });
    return m_refCache / "ref" / (core::sha256Hex(key.dump()) + ".bin");
}

namespace {

/// The content hash of cached tensors: SHA-256 of their bytes; past 16 MiB, a SHA-256 tree
/// (the digest of the 4 MiB pieces' digests, hashed on several threads), so that reading back
/// gigabytes of inputs or reference outputs is not held up by one core (docs/THREAT_MODEL.md).
std::string tensorsSha256(const std::vector<HostTensor>& tensors)
{
    constexpr size_t kPiece = size_t(4) << 20;
    size_t total = 0;
    for (const auto& t : tensors)
        total += t.bytes();
    if (total <= 4 * kPiece) {
        core::Sha256 hash;
        for (const auto& t : tensors)
            hash.update(t.data(), t.bytes());
        return hash.hexDigest();
    }
    std::vector<std::pair<const unsigned char*, size_t>> pieces;
    for (const auto& t : tensors)
        for (size_t at = 0; at < t.bytes(); at += kPiece)
            pieces.emplace_back(static_cast<const unsigned char*>(t.data()) + at, std::min(kPiece, t.bytes() - at));
    std::vector<std::string> digests(pieces.size());
    parallelFor(pieces.size(), [&](size_t begin, size_t end) {
        for (size_t i = begin; i < end; ++i) {
            core::Sha256 h;
            h.update(pieces[i].first, pieces[i].second);
            digests[i] = h.hexDigest();
        }
    }, 2);
    core::Sha256 tree;
    tree.update("hone-sha256-tree 4MiB " + std::to_string(total) + "\n");
    for (const auto& d : digests)
        tree.update(d);
    return tree.hexDigest();
}

} // namespace

bool Evaluator::loadTensors(const std::filesystem::path& path, std::vector<HostTensor>& tensors, const char* kind) const
{
    {
        const PhaseClock clock(*this, "cache_read");
        std::ifstream in(path, std::ios::binary);
        if (!in)
            return false;
        for (auto& t : tensors)
            if (!in.read(static_cast<char*>(t.data()), static_cast<std::streamsize>(t.bytes())))
                return false;
        if (in.peek() != std::ifstream::traits_type::eof())
            return false;
    }
    // Trusted only as written: a changed entry is computed again (and written again) here.
    std::string actual;
    {
        const PhaseClock clock(*this, "cache_hash");
        actual = tensorsSha256(tensors);
    }
    std::string recorded;
    const HashCheck check = checkHash(path, actual, &recorded);
    if (check == HashCheck::Mismatch)
        m_ledger.warn(tamperWarning(std::string("cached ") + kind, path, recorded, actual, "computed again"));
    if (check != HashCheck::Verified)
        return false;
    m_ledger.add(kind, path.lexically_relative(m_refCache).string(), actual);
    return true;
}

void Evaluator::storeTensors(const std::filesystem::path& path, const std::vector<HostTensor>& tensors, const char* kind) const
{
    // Written in place (no copy: these can be gigabytes) to a temporary name, then renamed, so
    // a reader never sees a partial file. A cache that cannot be written costs time, not
    // correctness.
    std::error_code ec;
    std::filesystem::create_directories(path.parent_path(), ec);
    std::string sha256;
    {
        const PhaseClock clock(*this, "cache_hash");
        sha256 = tensorsSha256(tensors);
    }
    const PhaseClock clock(*this, "cache_write");
    try {
        recordHash(path, sha256); // the manifest first: a reader that finds the entry finds its hash
    } catch (const std::exception&) {
        return;
    }
    m_ledger.add(kind, path.lexically_relative(m_refCache).string(), sha256);
    const auto tmp = path.string() + ".tmp." + std::to_string(::getpid());
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        for (const auto& t : tensors)
            out.write(static_cast<const char*>(t.data()), static_cast<std::streamsize>(t.bytes()));
        out.close();
        if (!out) {
            std::filesystem::remove(tmp, ec);
            return;
        }
    }
    std::filesystem::rename(tmp, path, ec);
    if (ec)
        std::filesystem::remove(tmp, ec);
}

Evaluator::Evaluator(DeviceBackend& device, DeviceBackend& host, ProtocolChannel& channel)
    : m_device(device)
    , m_host(host)
    , m_channel(channel)
{
}

void Evaluator::progress(const std::string& stage, const std::string& detail)
{
    closeStage();
    m_stage = stage;
    m_channel.progress(m_id, stage, detail);
}

void Evaluator::build(DeviceBackend& backend, const SourceSpec& spec, const char* role, Built& built)
{
    const std::string roleName = role;
    const bool isCandidate = roleName == "candidate";
    if (spec.lang == "python") {
        // A PyTorch module (reference.py): a reference, or the baseline it doubles as. It runs
        // on host memory; as a baseline on a CUDA target it times itself on the GPU
        // (timeCandidate), and on another device it is left out (docs/FORMATS.md).
        if (isCandidate)
            throw EvalFailure { FailureKind::BadCandidate, m_stage,
                "candidate " + spec.name + " is Python; candidates are C++, CUDA or HIP sources (a PyTorch module can "
                "only be a problem's reference or baseline)" };
        built.compile.ok = true;
        built.compile.objectPath = torchReferenceKey(spec.source);
        if ((m_request->wantCheck || m_request->wantTime) && (&backend == &m_host || backend.kind() == "cpu"))
            built.kernel = std::make_unique<TorchKernel>(spec.source, spec.name, m_request->runSeconds);
        else if (m_request->wantTime && roleName == "baseline" && backend.kind() == "cuda")
            built.kernel = std::make_unique<TorchKernel>(spec.source, spec.name, m_request->runSeconds, true);
        return;
    }
    // The candidate's faults are its own; a reference or baseline that fails is the problem's.
    auto fail = [&](FailureKind kind, const std::string& message) -> EvalFailure {
        if (isCandidate)
            return EvalFailure { kind, m_stage, message };
        return EvalFailure { FailureKind::WorkerError, m_stage,
            "the " + roleName + " " + spec.name + ": " + message };
    };
    if (!backend.acceptsLang(spec.lang))
        throw EvalFailure { FailureKind::WorkerError, m_stage,
            roleName + " " + spec.name + " is '" + spec.lang + "' code, which the " + backend.kind()
                + " backend of this worker cannot build" };
    const std::string refused = backend.refusedFlags(spec.flags);
    if (!refused.empty())
        throw fail(FailureKind::BadCandidate, refused);
    for (const auto& [name, value] : spec.knobs) {
        const std::string bad = badDefine(name, value);
        if (!bad.empty())
            throw fail(FailureKind::BadCandidate, bad);
    }
    if (spec.source.find("hone_run") == std::string::npos)
        throw fail(FailureKind::BadCandidate,
            "the source never mentions hone_run; it must define extern \"C\" int hone_run(const hone_args*)");

    CompileJob job;
    job.name = spec.name;
    job.source = spec.source;
    job.defines = spec.knobs;
    job.flags = spec.flags;
    if (&backend == &m_device)
        job.libraries = m_request->libraries;
    job.timeLimitSeconds = m_request->compileSeconds;
    built.compile = backend.compile(job);
    const CompileOutput& c = built.compile;
    m_ledger.add("object", c.cacheKey, c.objectSha256);
    if (!c.cacheWarning.empty())
        m_ledger.warn(c.cacheWarning);
    if (!c.toolError.empty())
        throw EvalFailure { FailureKind::WorkerError, m_stage, c.toolError };
    if (c.timedOut)
        throw fail(FailureKind::Timeout,
            "compiling " + spec.name
                + " took longer than limits.compile_s = " + formatNumber(job.timeLimitSeconds) + " s");
    if (!c.ok)
        throw fail(FailureKind::CompileError, c.firstError());

    // A compile-only request (resource usage, compile errors) needs no device to load into.
    if (!m_request->wantCheck && !m_request->wantTime)
        return;
    std::string error;
    bool missingEntry = false;
    built.kernel = backend.load(c, error, missingEntry);
    if (!built.kernel)
        throw fail(missingEntry ? FailureKind::BadCandidate : FailureKind::CompileError, error);
}

std::vector<HostTensor> Evaluator::referenceOutputs(
    const ShapeSpec& shape, uint64_t seed, const std::vector<HostTensor>& inputs, LoadedKernel& reference)
{
    const std::string where = shape.label + " seed " + std::to_string(seed);
    // The reference runs in a process of its own (on the host) on its own copy of the inputs,
    // unless its outputs for exactly these inputs are cached; its outputs come back here only.
    std::vector<HostTensor> want = makeTensors(shape.outputs);
    const std::filesystem::path cached = referenceCachePath(shape, seed);
    if (cached.empty() || !loadTensors(cached, want, "reference")) {
        std::optional<PhaseClock> clock(std::in_place, *this, "reference");
        std::vector<DeviceBuffer> refInputs;
        for (const auto& in : inputs) {
            refInputs.emplace_back(m_host, in.bytes());
            m_host.upload(refInputs.back().get(), in.data(), in.bytes());
        }
        std::vector<DeviceBuffer> refOutputs;
        for (auto& w : want) {
            w.poison();
            refOutputs.emplace_back(m_host, w.bytes());
            m_host.upload(refOutputs.back().get(), w.data(), w.bytes());
        }
        KernelArgs refArgs(shape, m_request->params, nullptr);
        refArgs.bind(shape.inputs, pointers(refInputs), shape.outputs, pointers(refOutputs));
        guardedRun([&] { return reference.run(refArgs.args()); }, true, m_stage, where);
        for (size_t i = 0; i < want.size(); ++i)
            m_host.download(want[i].data(), refOutputs[i].get(), want[i].bytes());
        clock.reset();
        if (!cached.empty())
            storeTensors(cached, want, "reference");
    }
    if (const std::string bad = referenceProblem(want, shape.label, seed, shape.coverage); !bad.empty())
        throw EvalFailure { FailureKind::WorkerError, m_stage, bad };
    return want;
}

CheckOutcome Evaluator::checkOnce(
    const ShapeSpec& shape, uint64_t seed, LoadedKernel& candidate, LoadedKernel& reference)
{
    const std::string where = shape.label + " seed " + std::to_string(seed);
    const std::vector<HostTensor> inputs = inputsFor(shape, seed);

    const std::vector<HostTensor> want = referenceOutputs(shape, seed, inputs, reference);

    // The candidate gets device copies; outputs start poisoned so unwritten elements show.
    // Device work holds the device's shared lock, so that no timing runs beside it.
    const std::string stage = m_stage;
    bool waited = false;
    const auto inUse = m_device.lockForUse([&] {
        waited = true;
        progress("wait", "another worker is timing on this device; " + where + " waits for it");
    });
    if (waited)
        progress(stage, where);
    std::vector<DeviceBuffer> devInputs;
    std::vector<uint64_t> checksums;
    std::vector<HostTensor> got = makeTensors(shape.outputs);
    std::vector<DeviceBuffer> devOutputs;
    {
        const PhaseClock clock(*this, "transfer");
        for (const auto& in : inputs) {
            devInputs.emplace_back(m_device, in.bytes());
            m_device.upload(devInputs.back().get(), in.data(), in.bytes());
        }
        for (auto& g : got) {
            g.poison();
            devOutputs.emplace_back(m_device, g.bytes());
            m_device.upload(devOutputs.back().get(), g.data(), g.bytes());
        }
    }
    {
        const PhaseClock clock(*this, "verify");
        for (const auto& in : inputs)
            checksums.push_back(in.checksum());
    }
    KernelArgs args(shape, m_request->params, m_device.stream(), &m_device);
    args.bind(shape.inputs, pointers(devInputs), shape.outputs, pointers(devOutputs));
    {
        const PhaseClock clock(*this, "candidate");
        guardedRun(
            [&] {
                const int rc = candidate.run(args.args());
                // Asynchronous faults (an illegal address, a trap) surface here, as the candidate's.
                m_device.synchronize();
                return rc;
            },
            false, m_stage, where);
    }

    std::vector<HostTensor> inputsAfter = makeTensors(shape.inputs);
    {
        const PhaseClock clock(*this, "transfer");
        for (size_t i = 0; i < got.size(); ++i)
            m_device.download(got[i].data(), devOutputs[i].get(), got[i].bytes());
        for (size_t i = 0; i < inputsAfter.size(); ++i)
            m_device.download(inputsAfter[i].data(), devInputs[i].get(), inputsAfter[i].bytes());
    }
    const PhaseClock clock(*this, "verify");
    return compareRun(shape.label, seed, inputs, checksums, inputsAfter, got, want, m_request->tolerance);
}

nlohmann::json Evaluator::timeCandidate(const ShapeSpec& shape, LoadedKernel& candidate, LoadedKernel* baseline,
    LoadedKernel& reference, double* medianSeconds)
{
    const EvalRequest& req = *m_request;
    // A PyTorch baseline on a GPU times itself, in its own process on its own GPU copies of the
    // input sets, in blocks of samples that alternate with the candidate's (docs/BENCH.md).
    TorchKernel* gpuTorch = dynamic_cast<TorchKernel*>(baseline);
    if (gpuTorch && !gpuTorch->onGpu())
        gpuTorch = nullptr;
    if (gpuTorch)
        baseline = nullptr;
    // Several input sets, drawn in an order the candidate cannot predict, so that a kernel that
    // is honest only on inputs it has seen (or caches results) is caught by the verified calls.
    size_t inputBytes = 0;
    for (const auto& d : shape.inputs)
        inputBytes += d.bytes();
    const size_t sets = inputBytes <= (size_t(64) << 20) ? 3 : 2;
    std::vector<uint64_t> seeds;
    for (size_t s = 0; s < sets; ++s)
        seeds.push_back(req.timingSeed + s);
    std::vector<std::vector<HostTensor>> inputs;
    std::vector<std::vector<HostTensor>> want;
    std::vector<std::vector<uint64_t>> checksums;
    for (uint64_t seed : seeds) {
        progress("inputs", shape.label + ": inputs and reference outputs of timing set seed " + std::to_string(seed));
        inputs.push_back(inputsFor(shape, seed));
        want.push_back(referenceOutputs(shape, seed, inputs.back(), reference));
        checksums.emplace_back();
        const PhaseClock clock(*this, "verify");
        for (const auto& in : inputs.back())
            checksums.back().push_back(in.checksum());
    }
    // On a GPU the judge's own kernels poison, verify and checksum in device memory (the
    // host does it where they are off: the reason goes into the timing record).
    const std::string deviceChecksOff = m_device.prepareDeviceChecks();
    const bool deviceChecks = deviceChecksOff.empty();
    std::mt19937_64 rng(std::random_device {}());
    const uint64_t checksumKey = rng();
    // The candidate and the baseline get separate copies of every input set: neither can
    // change what the other reads, and both are checksummed after timing.
    std::vector<std::vector<DeviceBuffer>> candIn(sets), baseIn(sets), wantOnDevice(sets);
    std::vector<std::vector<std::optional<uint64_t>>> candSums(sets), baseSums(sets);
    {
        // Copies are device work too: on a GPU another process's timing would share the chip
        // with them (time-sliced contexts), so they wait for it and hold it off.
        const auto inUse = m_device.lockForUse([&] {
            progress("wait", "another worker is timing on this device; the timing inputs wait for it");
        });
        for (size_t s = 0; s < sets; ++s)
            for (const auto& in : inputs[s]) {
                candIn[s].emplace_back(m_device, in.bytes());
                m_device.upload(candIn[s].back().get(), in.data(), in.bytes());
                if (baseline) {
                    baseIn[s].emplace_back(m_device, in.bytes());
                    m_device.upload(baseIn[s].back().get(), in.data(), in.bytes());
                }
            }
        if (deviceChecks)
            for (size_t s = 0; s < sets; ++s) {
                for (const auto& w : want[s]) {
                    wantOnDevice[s].emplace_back(m_device, w.bytes());
                    m_device.upload(wantOnDevice[s].back().get(), w.data(), w.bytes());
                }
                for (const auto& b : candIn[s])
                    candSums[s].push_back(m_device.checksumOnDevice(b.get(), b.bytes(), checksumKey));
                for (const auto& b : baseIn[s])
                    baseSums[s].push_back(m_device.checksumOnDevice(b.get(), b.bytes(), checksumKey));
            }
    }
    // Separate outputs, so neither kernel finds the other's results in place.
    auto makeOutputs = [&] {
        std::vector<DeviceBuffer> outs;
        for (const auto& d : shape.outputs)
            outs.emplace_back(m_device, d.bytes());
        return outs;
    };
    const std::vector<DeviceBuffer> candOut = makeOutputs();
    const std::vector<DeviceBuffer> baseOut = baseline ? makeOutputs() : std::vector<DeviceBuffer>();
    std::vector<KernelArgs> candArgs, baseArgs;
    for (size_t s = 0; s < sets; ++s) {
        candArgs.emplace_back(shape, req.params, m_device.stream(), &m_device);
        candArgs.back().bind(shape.inputs, pointers(candIn[s]), shape.outputs, pointers(candOut));
        baseArgs.emplace_back(shape, req.params, m_device.stream(), &m_device);
        if (baseline)
            baseArgs.back().bind(shape.inputs, pointers(baseIn[s]), shape.outputs, pointers(baseOut));
    }
    // Every timed call of the candidate starts from poisoned outputs.
    std::vector<HostTensor> poisoned; // the host's copy, made where the device cannot fill
    auto poisonOutputs = [&] {
        for (size_t i = 0; i < candOut.size(); ++i) {
            const TensorDesc& d = shape.outputs[i];
            if (deviceChecks && m_device.poisonOnDevice(candOut[i].get(), d.dtype, d.numel()))
                continue;
            if (poisoned.empty()) {
                poisoned = makeTensors(shape.outputs);
                for (auto& p : poisoned)
                    p.poison();
            }
            m_device.upload(candOut[i].get(), poisoned[i].data(), poisoned[i].bytes());
        }
    };

    auto timeOne = [&](LoadedKernel& k, const KernelArgs& a, bool isBaseline) {
        int rc = 0;
        double ns = 0;
        guardedRun(
            [&] {
                if (auto* torch = dynamic_cast<TorchKernel*>(&k))
                    ns = torch->timedRun(a.args(), rc); // a PyTorch baseline, by its own clock
                else
                    ns = m_device.timedRun(k, a.args(), rc);
                return rc;
            },
            false, m_stage, shape.label + (isBaseline ? " (baseline)" : ""));
        return ns;
    };
    // The schedule (input set, who goes first, which calls are verified) comes from a source
    // the candidate's process cannot read (rng, above).
    int verified = 0;
    int verifiedOnDevice = 0;
    auto verify = [&](size_t set, int call) {
        // On the device first: a count of 0 is what compareRun would pass; anything else is
        // compared again on the host, which names the element.
        bool clean = deviceChecks;
        for (size_t i = 0; clean && i < candOut.size(); ++i) {
            const TensorDesc& d = shape.outputs[i];
            const Tolerance tol = toleranceFor(req.tolerance, d.dtype);
            const std::optional<uint64_t> bad = m_device.mismatchesOnDevice(
                candOut[i].get(), wantOnDevice[set][i].get(), d.dtype, d.numel(), tol.atol, tol.rtol);
            clean = bad && *bad == 0;
        }
        if (clean) {
            ++verified;
            ++verifiedOnDevice;
            return;
        }
        std::vector<HostTensor> got = makeTensors(shape.outputs);
        for (size_t i = 0; i < got.size(); ++i)
            m_device.download(got[i].data(), candOut[i].get(), got[i].bytes());
        // Outputs only: every input copy is checksummed once timing is over.
        const CheckOutcome outcome = compareRun(
            shape.label, seeds[set], inputs[set], checksums[set], {}, got, want[set], req.tolerance);
        ++verified;
        if (!outcome.ok)
            throw EvalFailure { *outcome.failure, "time",
                "timed call " + std::to_string(call) + " (input set seed " + std::to_string(seeds[set])
                    + "): " + outcome.message };
    };

    // A stage of its own: other workers on this device may be timing, and the wait says
    // nothing about this candidate.
    progress("wait",
        "waiting for the " + m_device.kind() + " timing lock (one timing stage per device at a time)");
    const auto lock = m_device.lockForTiming();
    progress("time",
        shape.label + ": " + std::to_string(req.warmup) + " warm-up and " + std::to_string(req.samples)
            + " interleaved samples over " + std::to_string(sets) + " input sets"
            + (baseline || gpuTorch ? " against the baseline" : ""));
    // The baseline's failures are the problem's, not the candidate's.
    auto torchCall = [&](const std::function<void()>& call) {
        try {
            call();
        } catch (const std::exception& e) {
            throw EvalFailure { FailureKind::WorkerError, "time",
                "the PyTorch baseline on the GPU, " + shape.label + ": " + e.what() };
        }
    };
    nlohmann::json torchMethod;
    if (gpuTorch) {
        std::vector<HostTensor> torchOut = makeTensors(shape.outputs);
        for (size_t s = 0; s < sets; ++s) {
            std::vector<void*> in;
            for (auto& t : inputs[s])
                in.push_back(t.data());
            std::vector<void*> out;
            for (auto& t : torchOut)
                out.push_back(t.data());
            KernelArgs hostArgs(shape, req.params, nullptr);
            hostArgs.bind(shape.inputs, in, shape.outputs, out);
            torchCall([&] { torchMethod = gpuTorch->stage(static_cast<int>(s), hostArgs.args()); });
        }
    }
    for (int i = 0; i < req.warmup; ++i) {
        const size_t set = rng() % sets;
        poisonOutputs();
        timeOne(candidate, candArgs[set], false);
        if (baseline)
            timeOne(*baseline, baseArgs[set], true);
    }
    std::vector<double> cand;
    std::vector<double> base;
    std::vector<double> ratios;
    // A disturbed sample (see DeviceBackend::lastRunDisturbed) is taken again: a one-off delay
    // is the host's, work left on a side stream comes back every time and is then counted.
    int resampled = 0;
    int sideStream = 0;
    auto sample = [&](LoadedKernel& k, const KernelArgs& a, bool isBaseline, const std::vector<MemRegion>& workingSet) {
        double ns = 0;
        for (int attempt = 0; attempt < 3; ++attempt) {
            if (!isBaseline)
                poisonOutputs();
            m_device.flushCaches(workingSet);
            ns = timeOne(k, a, isBaseline);
            if (!m_device.lastRunDisturbed())
                return ns;
            if (attempt < 2)
                ++resampled;
        }
        ++sideStream;
        return ns;
    };
    // The GPU PyTorch baseline: a block of samples on one drawn input set, before or after
    // (drawn per block) the candidate's samples of the same block.
    constexpr int kTorchBlock = 5;
    int torchCovered = 0;
    bool torchAfter = false;
    auto torchBlock = [&](int n) {
        const int set = static_cast<int>(rng() % sets);
        int covered = 0;
        std::vector<double> ns;
        torchCall([&] { ns = gpuTorch->timeOnGpu(set, n, covered); });
        torchCovered += covered;
        base.insert(base.end(), ns.begin(), ns.end());
    };
    auto lastNote = std::chrono::steady_clock::now();
    for (int i = 0; i < req.samples; ++i) {
        if (gpuTorch && i % kTorchBlock == 0) {
            torchAfter = rng() & 1;
            if (!torchAfter)
                torchBlock(std::min(kTorchBlock, req.samples - i));
        }
        // A heartbeat for slow kernels (a naive baseline can take a second a call).
        if (std::chrono::steady_clock::now() - lastNote > std::chrono::seconds(5)) {
            progress("time", shape.label + ": sample " + std::to_string(i + 1) + " of " + std::to_string(req.samples));
            lastNote = std::chrono::steady_clock::now();
        }
        const size_t set = rng() % sets;
        std::vector<MemRegion> workingSet;
        for (const std::vector<DeviceBuffer>* group :
            { static_cast<const std::vector<DeviceBuffer>*>(&candIn[set]), &candOut,
                static_cast<const std::vector<DeviceBuffer>*>(&baseIn[set]), &baseOut })
            for (const auto& b : *group)
                workingSet.push_back(MemRegion { b.get(), b.bytes() });
        // Who goes first is drawn, so drift (clocks, thermals) hits both alike.
        const bool candidateFirst = !baseline || (rng() & 1);
        double c = 0;
        double b = 0;
        if (candidateFirst)
            c = sample(candidate, candArgs[set], false, workingSet);
        if (baseline)
            b = sample(*baseline, baseArgs[set], true, workingSet);
        if (!candidateFirst)
            c = sample(candidate, candArgs[set], false, workingSet);
        // Timed calls are verified against the reference, drawn after the call returned (so a
        // candidate cannot know which): about one in three where outputs are in host memory,
        // one in six on a GPU, and always the last.
        if (rng() % (m_device.verifiesEveryTimedCall() ? 3 : 6) == 0 || i + 1 == req.samples)
            verify(set, i + 1);
        cand.push_back(c);
        if (baseline) {
            base.push_back(b);
            if (c > 0)
                ratios.push_back(b / c);
        }
        if (gpuTorch && torchAfter && ((i + 1) % kTorchBlock == 0 || i + 1 == req.samples))
            torchBlock(i % kTorchBlock + 1);
    }
    if (gpuTorch)
        for (size_t k = 0; k < cand.size() && k < base.size(); ++k)
            if (cand[k] > 0)
                ratios.push_back(base[k] / cand[k]);
    // Inputs are read-only for both kernels, through all of timing. A keyed checksum on the
    // device that still matches needs no copy to the host.
    int checksummedOnDevice = 0;
    for (size_t s = 0; s < sets; ++s)
        for (const std::vector<DeviceBuffer>* group : { &candIn[s], &baseIn[s] })
            for (size_t i = 0; i < group->size(); ++i) {
                const auto& before = group == &candIn[s] ? candSums[s] : baseSums[s];
                if (i < before.size() && before[i]) {
                    const std::optional<uint64_t> now
                        = m_device.checksumOnDevice((*group)[i].get(), (*group)[i].bytes(), checksumKey);
                    if (now && *now == *before[i]) {
                        ++checksummedOnDevice;
                        continue;
                    }
                }
                HostTensor after(shape.inputs[i]);
                m_device.download(after.data(), (*group)[i].get(), after.bytes());
                if (after.checksum() != checksums[s][i])
                    throw EvalFailure { FailureKind::InputMutation, "time",
                        std::string(group == &candIn[s] ? "the candidate" : "the baseline") + " changed input '"
                            + shape.inputs[i].name + "' (input set seed " + std::to_string(seeds[s])
                            + ") during timing; inputs are read-only" };
            }
    std::string clockWhy;
    guardedRun(
        [&] {
            clockWhy = m_device.clockDisagreement(candidate);
            return 0;
        },
        false, m_stage, shape.label);
    if (!clockWhy.empty())
        throw EvalFailure { FailureKind::Suspicious, "time", clockWhy };

    // Launch geometry and occupancy: one captured (not executed) call of the candidate.
    try {
        m_launches = m_device.launchProfile(candidate, candArgs[0].args());
    } catch (const DeviceFault&) {
        throw;
    } catch (const std::exception& e) {
        m_launches = { { "error", std::string("launch profile failed: ") + e.what() } };
    }

    const SampleStats cs = summarizeSamples(cand);
    nlohmann::json timing = toJson(cs);
    timing["shape"] = shape.label;
    timing["warmup"] = req.warmup;
    timing["seed"] = req.timingSeed;
    timing["input_sets"] = seeds;
    timing["verified_calls"] = verified;
    timing["checks_on"] = deviceChecks
        ? nlohmann::json { { "where", "device" }, { "verified_calls", verifiedOnDevice },
              { "inputs_checksummed", checksummedOnDevice } }
        : nlohmann::json { { "where", "host" }, { "why", deviceChecksOff } };
    if (nlohmann::json info = m_device.timingInfo(); !info.is_null()) {
        info["side_stream_samples"] = sideStream;
        info["resampled"] = resampled;
        timing["method"] = info;
    }
    if (baseline || gpuTorch) {
        timing["baseline"] = toJson(summarizeSamples(base));
        timing["speedup"] = quantile(ratios, 0.5);
    }
    if (gpuTorch) {
        torchMethod["method"] = "PyTorch eager in the reference's process: L2 flush, torch.cuda._sleep, CUDA events";
        torchMethod["interleave"] = "blocks of " + std::to_string(kTorchBlock) + " samples, order drawn per block";
        torchMethod["covered"] = base.empty() ? 0.0 : static_cast<double>(torchCovered) / base.size();
        timing["baseline_method"] = torchMethod;
    }
    *medianSeconds = cs.medianNs * 1e-9;
    return timing;
}

nlohmann::json Evaluator::dump(const nlohmann::json& request)
{
    m_id = requestId(request);
    m_stage = "dump";
    nlohmann::json reply = core::protocol::makeMessage("dumped");
    reply["id"] = m_id;
    try {
        auto dirIt = request.find("dir");
        if (dirIt == request.end() || !dirIt->is_string() || dirIt->get<std::string>().empty())
            throw EvalFailure { FailureKind::WorkerError, "dump", "dump request needs a 'dir' string" };
        const std::filesystem::path dir = dirIt->get<std::string>();
        // The problem part of an eval request, with the reference standing in as candidate.
        nlohmann::json asEval = request;
        asEval["stages"] = { "time" };
        if (request.contains("problem") && request["problem"].is_object() && request["problem"].contains("reference"))
            asEval["candidate"] = request["problem"]["reference"];
        EvalRequest req;
        try {
            req = EvalRequest::fromJson(asEval);
        } catch (const RequestError& e) {
            throw EvalFailure { FailureKind::WorkerError, "dump", std::string("bad dump request: ") + e.what() };
        }
        m_request = &req;
        Built reference;
        progress("compile", "reference");
        build(m_host, req.reference, "reference", reference);
        m_referenceKey = std::filesystem::path(reference.compile.objectPath).filename().string();
        const ShapeSpec& shape = req.bench[req.timingShape];
        progress("dump", shape.label + ": inputs and reference outputs to " + dir.string());
        const std::vector<HostTensor> inputs = inputsFor(shape, kTimingSeed);
        const std::vector<HostTensor> want = referenceOutputs(shape, kTimingSeed, inputs, *reference.kernel);
        std::filesystem::create_directories(dir);
        nlohmann::json manifest = { { "problem", req.problemName }, { "shape", shape.label },
            { "symbols", shape.symbols }, { "params", req.params }, { "seed", kTimingSeed },
            { "tolerance", req.tolerance }, { "flops", shape.flops }, { "bytes", shape.bytes } };
        auto write = [&](const char* role, const std::vector<TensorDesc>& descs, const std::vector<HostTensor>& ts) {
            for (size_t i = 0; i < ts.size(); ++i) {
                const std::string file = std::string(role) + "_" + std::to_string(i) + "_" + descs[i].name + ".bin";
                std::ofstream out(dir / file, std::ios::binary | std::ios::trunc);
                out.write(static_cast<const char*>(ts[i].data()), static_cast<std::streamsize>(ts[i].bytes()));
                if (!out)
                    throw EvalFailure { FailureKind::WorkerError, "dump", "cannot write " + (dir / file).string() };
                manifest[role].push_back({ { "name", descs[i].name }, { "dtype", dtypeName(descs[i].dtype) },
                    { "shape", descs[i].shape }, { "file", file } });
            }
        };
        write("inputs", shape.inputs, inputs);
        write("outputs", shape.outputs, want);
        writeFileAtomically(dir / "manifest.json", manifest.dump(2) + "\n");
        reply["status"] = "ok";
        reply["manifest"] = (dir / "manifest.json").string();
    } catch (const EvalFailure& f) {
        reply = core::protocol::makeFailure(m_id, f.kind, f.stage, f.message);
    } catch (const std::exception& e) {
        reply = core::protocol::makeFailure(m_id, FailureKind::WorkerError, m_stage, e.what());
    }
    m_request = nullptr;
    return reply;
}

int Evaluator::runOnce(const nlohmann::json& request)
{
    try {
        EvalRequest req = EvalRequest::fromJson(request);
        m_request = &req;
        Built candidate;
        build(m_device, req.candidate, "candidate", candidate);
        const ShapeSpec& shape = req.bench[req.timingShape];
        const std::vector<HostTensor> inputs = generateInputs(shape, 1);
        std::vector<DeviceBuffer> devInputs;
        for (const auto& in : inputs) {
            devInputs.emplace_back(m_device, in.bytes());
            m_device.upload(devInputs.back().get(), in.data(), in.bytes());
        }
        std::vector<DeviceBuffer> devOutputs;
        for (const auto& d : shape.outputs)
            devOutputs.emplace_back(m_device, d.bytes());
        KernelArgs args(shape, req.params, m_device.stream(), &m_device);
        args.bind(shape.inputs, pointers(devInputs), shape.outputs, pointers(devOutputs));
        const int rc = candidate.kernel->run(args.args());
        m_device.synchronize();
        m_request = nullptr;
        return rc == 0 ? 0 : 1;
    } catch (const EvalFailure& f) {
        std::fprintf(stderr, "hone-worker --profile-once: %s\n", f.message.c_str());
    } catch (const std::exception& e) {
        std::fprintf(stderr, "hone-worker --profile-once: %s\n", e.what());
    }
    m_request = nullptr;
    return 1;
}

void Evaluator::closeStage()
{
    const auto now = std::chrono::steady_clock::now();
    if (!m_stage.empty())
        m_stageSeconds[m_stage] += std::chrono::duration<double>(now - m_stageStart).count();
    m_stageStart = now;
}

nlohmann::json Evaluator::evaluate(const nlohmann::json& request)
{
    m_id = requestId(request);
    m_stageSeconds.clear();
    m_phaseSeconds.clear();
    m_stageStart = std::chrono::steady_clock::now();
    m_stage = "request";
    m_launches = nullptr;
    m_referenceKey.clear();
    m_ledger.clear();
    nlohmann::json result = core::protocol::makeMessage("result");
    result["id"] = m_id;
    nlohmann::json checks = nlohmann::json::array();
    EvalRequest req;
    std::string flagsUsed;
    Built candidate;
    try {
        try {
            req = EvalRequest::fromJson(request);
        } catch (const RequestError& e) {
            throw EvalFailure { FailureKind::WorkerError, "request",
                std::string("bad eval request: ") + e.what() };
        }
        m_request = &req;
        {
            CompileJob shown;
            shown.defines = req.candidate.knobs;
            shown.flags = req.candidate.flags;
            flagsUsed = m_device.flagsFor(shown);
        }

        progress("compile", "candidate " + req.candidate.name);
        build(m_device, req.candidate, "candidate", candidate);
        Built reference;
        if (req.wantCheck || req.wantTime) {
            progress("compile", "reference");
            build(m_host, req.reference, "reference", reference);
            m_referenceKey = std::filesystem::path(reference.compile.objectPath).filename().string();
        }
        Built baseline;
        if (req.wantTime && req.baseline) {
            progress("compile", "baseline " + req.baseline->name);
            build(m_device, *req.baseline, "baseline", baseline);
        }

        if (req.wantCheck) {
            // The listed shapes on every check seed, then the coverage checks (problem.coverage):
            // the listed shapes under each extra distribution and shapes drawn from the ranges.
            std::vector<CoverageCheck> plan;
            for (const auto& shape : req.check)
                for (uint64_t seed : req.seeds)
                    plan.push_back({ shape, seed });
            try {
                for (auto& c : coverageChecks(req))
                    plan.push_back(std::move(c));
            } catch (const RequestError& e) {
                throw EvalFailure { FailureKind::WorkerError, "check", e.what() };
            }
            size_t done = 0;
            for (const auto& [shape, seed] : plan) {
                progress("check",
                    shape.label + " seed " + std::to_string(seed) + " (" + std::to_string(++done) + " of "
                        + std::to_string(plan.size()) + ")");
                CheckOutcome outcome;
                try {
                    outcome = checkOnce(shape, seed, *candidate.kernel, *reference.kernel);
                } catch (const EvalFailure& f) {
                    recordRunFailure(checks, shape.label, seed, false, f);
                    throw;
                }
                checks.push_back(outcome.toJson());
                if (!outcome.ok)
                    throw EvalFailure { *outcome.failure, "check", outcome.message };
            }
        }

        if (req.wantTime) {
            core::Ceilings ceilings;
            std::string ceilingsError;
            bool haveCeilings = false;
            // One bench shape, every check: timing, the re-check on fresh inputs, the roofline
            // verdict. `verdict` says why a time far below the floor cannot be trusted.
            auto timeShape = [&](size_t index, bool primary, std::string& verdict) {
                const ShapeSpec& shape = req.bench[index];
                double seconds = 0;
                nlohmann::json timing
                    = timeCandidate(shape, *candidate.kernel, baseline.kernel.get(), *reference.kernel, &seconds);

                // Fresh inputs after timing: a candidate that caches results across calls (or
                // keys a cache on pointers) fails here.
                const uint64_t recheckSeed = req.recheckSeed;
                progress("recheck", shape.label + " seed " + std::to_string(recheckSeed) + " after timing");
                CheckOutcome outcome;
                try {
                    outcome = checkOnce(shape, recheckSeed, *candidate.kernel, *reference.kernel);
                } catch (const EvalFailure& f) {
                    recordRunFailure(checks, shape.label, recheckSeed, true, f);
                    throw;
                }
                outcome.afterTiming = true;
                checks.push_back(outcome.toJson());
                if (!outcome.ok)
                    throw EvalFailure { *outcome.failure, "recheck", "after timing: " + outcome.message };

                progress("diagnose", shape.label + ": roofline against the device's measured ceilings");
                if (!haveCeilings) {
                    haveCeilings = true;
                    try {
                        ceilings = m_device.ceilings(false, nullptr);
                    } catch (const std::exception& e) {
                        ceilingsError = e.what();
                    }
                    for (const std::string& w : m_device.takeCacheWarnings())
                        m_ledger.warn(w);
                }
                const core::Roofline roofline = core::computeRoofline(
                    shape.flops, shape.bytes, seconds, core::forComputeUnit(ceilings, shape.compute));
                std::optional<core::OccupancyInfo> occupancy;
                if (m_launches.is_object() && m_launches.contains("theoretical"))
                    occupancy = core::OccupancyInfo { m_launches["theoretical"].get<double>(),
                        m_launches.value("limiter", std::string()) };
                if (primary && !m_launches.is_null())
                    result["occupancy"] = m_launches;
                core::Diagnosis diagnosis = core::diagnose(roofline, occupancy);
                if (primary && req.wantProfile) {
                    progress("profile", "Nsight Compute on one call of the candidate");
                    nlohmann::json prof = m_device.profile(request);
                    if (prof.is_null())
                        prof = { { "error", "the " + m_device.kind() + " backend has no profiler stage" } };
                    if (const std::string ev = ncuEvidence(prof); !ev.empty())
                        diagnosis.evidence += ". " + ev;
                    result["profile"] = prof;
                }
                if (!ceilingsError.empty())
                    diagnosis.evidence += " (ceilings unavailable: " + ceilingsError + ")";
                if (shape.flopsUnknown)
                    diagnosis.evidence += ". The cost model's FLOPs are unknown (flops = \"unknown\" in problem.toml): "
                                          "only bytes are placed on the roofline, and compute-bound cannot be told";
                // Far below the floor is not a fast kernel but a wrong measurement or a lie: a
                // verdict, not a remark (the remark alone starts at 90% of the floor). Host ceilings
                // measured on a busy machine can be low by a few times, so against those only a
                // time under a tenth of the floor is a verdict.
                const bool quietCeilings
                    = m_device.kind() != "cpu" || (ceilings.loadPerCore >= 0 && ceilings.loadPerCore < 0.5);
                const double verdictFraction = quietCeilings ? kSuspiciousVerdict : kSuspiciousVerdictBusy;
                if (roofline.floorSeconds > 0 && seconds < verdictFraction * roofline.floorSeconds)
                    verdict = shape.label + ": " + diagnosis.evidence;
                nlohmann::json entry = { { "index", index }, { "shape", shape.label }, { "timing", timing },
                    { "roofline", core::toJson(roofline) }, { "diagnosis", core::toJson(diagnosis) } };
                if (timing.contains("speedup"))
                    entry["speedup"] = timing["speedup"];
                return entry;
            };

            std::string verdict;
            nlohmann::json first = timeShape(req.timingShapes.front(), true, verdict);
            result["timing"] = first["timing"];
            result["roofline"] = first["roofline"];
            result["diagnosis"] = first["diagnosis"];
            if (!verdict.empty())
                throw EvalFailure { FailureKind::Suspicious, "diagnose", first["diagnosis"]["evidence"] };
            if (req.timingShapes.size() > 1) {
                // Per-shape results (docs/FORMATS.md); the first shape screens the others.
                result["shapes"] = nlohmann::json::array({ first });
                const double screenedAt = first.value("speedup", 0.0);
                bool screened = req.screenSpeedup > 0 && screenedAt < req.screenSpeedup;
                // Screened out on the heaviest shape, a candidate may still be the fastest on
                // another: timed on the probe shape, it passes where it beats the best there.
                std::optional<nlohmann::json> probe;
                if (screened && req.screenProbe) {
                    probe = timeShape(*req.screenProbe, false, verdict);
                    if (!verdict.empty())
                        throw EvalFailure { FailureKind::Suspicious, "diagnose", verdict };
                    const double probedAt = probe->value("speedup", 0.0);
                    screened = !(probedAt >= req.screenProbeSpeedup && probedAt > 0);
                    if (!screened)
                        progress("time",
                            "under the screening bar on " + first["shape"].get<std::string>() + " but "
                                + std::to_string(probedAt) + " on " + (*probe)["shape"].get<std::string>()
                                + ", at least the best there: timed on every shape");
                }
                result["screened"] = screened;
                if (screened) {
                    progress("time",
                        "screened out on " + first["shape"].get<std::string>() + ": speedup "
                            + std::to_string(screenedAt) + " under " + std::to_string(req.screenSpeedup)
                            + (probe ? " (and under the best on " + (*probe)["shape"].get<std::string>() + ")" : "")
                            + "; the other shapes are not timed");
                    if (probe)
                        result["shapes"].push_back(*probe);
                }
                for (size_t i = 1; !screened && i < req.timingShapes.size(); ++i) {
                    if (probe && req.timingShapes[i] == *req.screenProbe) {
                        result["shapes"].push_back(*probe);
                        continue;
                    }
                    nlohmann::json entry = timeShape(req.timingShapes[i], false, verdict);
                    result["shapes"].push_back(entry);
                    if (!verdict.empty())
                        throw EvalFailure { FailureKind::Suspicious, "diagnose", verdict };
                }
            }
        }
        result["status"] = "ok";
    } catch (const EvalFailure& f) {
        result["status"] = "failed";
        result["failure"] = { { "kind", core::protocol::failureKindName(f.kind) }, { "stage", f.stage },
            { "message", core::validUtf8(f.message) } }; // may quote a candidate's or compiler's bytes
    } catch (const std::bad_alloc&) {
        result["status"] = "failed";
        result["failure"] = { { "kind", "memory_limit" }, { "stage", m_stage },
            { "message", "the worker ran out of memory (std::bad_alloc) in stage " + m_stage } };
    } catch (const std::exception& e) {
        result["status"] = "failed";
        result["failure"] = { { "kind", "worker_error" }, { "stage", m_stage },
            { "message", core::validUtf8(std::string("worker error in stage ") + m_stage + ": " + e.what()) } };
    }
    // The candidate's compile record, also (above all) when it failed to compile.
    if (!candidate.compile.command.empty() || !candidate.compile.toolError.empty())
        result["compile"] = candidate.compile.toJson();
    result["checks"] = checks;
    if (!m_ledger.empty())
        result["cache"] = m_ledger.toJson();
    // Where the evaluation's wall time went, per stage ("wait" is the queue for the timing lock).
    closeStage();
    result["stage_seconds"] = m_stageSeconds;
    result["phases"] = m_phaseSeconds;
    result["environment"] = { { "device", m_device.deviceName() }, { "backend", m_device.kind() },
        { "compiler", m_device.compilerVersion() }, { "cores", cpuCores() }, { "host", hostName() },
        { "flags", flagsUsed }, { "cpu_flags", cpuFeatureFlags() } };
    m_request = nullptr;
    m_channel.clearContext();
    return result;
}

} // namespace hone::backends
