#include "checks.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace hone::backends {
namespace {

using core::protocol::FailureKind;

constexpr size_t kMaxListed = 5;

Tolerance defaultTolerance(hone_dtype dtype)
{
    switch (dtype) {
    case HONE_F64:
        return { 1e-10, 1e-8 };
    case HONE_F32:
        return { 1e-5, 1e-4 };
    case HONE_F16:
        return { 1e-3, 1e-2 };
    case HONE_BF16:
        return { 1e-2, 2e-2 };
    default:
        return { 0, 0 };
    }
}

std::string where(const std::string& shapeLabel, uint64_t seed)
{
    return shapeLabel + " seed " + std::to_string(seed);
}

/// Index of the first element of `t` whose bytes differ from `ref`, or numel when none.
size_t firstChanged(const HostTensor& ref, const HostTensor& t)
{
    const size_t size = dtypeSize(ref.desc().dtype);
    const auto* a = static_cast<const unsigned char*>(ref.data());
    const auto* b = static_cast<const unsigned char*>(t.data());
    for (size_t i = 0; i < ref.bytes(); ++i)
        if (a[i] != b[i])
            return i / size;
    return ref.numel();
}

bool allEqual(const HostTensor& t, double* value)
{
    if (t.numel() < 2)
        return false;
    const double first = t.at(0);
    for (size_t i = 1; i < t.numel(); ++i) {
        const double v = t.at(i);
        if (!(v == first) && !(std::isnan(v) && std::isnan(first)))
            return false;
    }
    *value = first;
    return true;
}

} // namespace

std::string formatNumber(double v)
{
    if (std::isnan(v))
        return "nan";
    if (std::isinf(v))
        return v > 0 ? "inf" : "-inf";
    char buf[64];
    for (int precision = 6; precision <= 17; ++precision) {
        std::snprintf(buf, sizeof buf, "%.*g", precision, v);
        if (std::strtod(buf, nullptr) == v)
            break;
    }
    return buf;
}

Tolerance toleranceFor(const nlohmann::json& tolerances, hone_dtype dtype)
{
    Tolerance t = defaultTolerance(dtype);
    if (!tolerances.is_object())
        return t;
    auto it = tolerances.find(dtypeName(dtype));
    if (it == tolerances.end() || !it->is_object())
        return t;
    if (auto a = it->find("atol"); a != it->end() && a->is_number())
        t.atol = a->get<double>();
    if (auto r = it->find("rtol"); r != it->end() && r->is_number())
        t.rtol = r->get<double>();
    return t;
}

nlohmann::json CheckOutcome::toJson() const
{
    nlohmann::json list = nlohmann::json::array();
    for (const auto& m : firstMismatches) {
        nlohmann::json j
            = { { "output", m.output }, { "index", m.index }, { "got", m.got }, { "want", m.want } };
        if (m.unwritten)
            j["unwritten"] = true;
        list.push_back(std::move(j));
    }
    nlohmann::json j = { { "shape", shape }, { "seed", seed }, { "ok", ok }, { "max_abs_err", maxAbsErr },
        { "max_rel_err", maxRelErr }, { "mismatches", mismatches }, { "first_mismatches", list } };
    if (afterTiming)
        j["after_timing"] = true;
    if (!ok && failure)
        j["failure"] = { { "kind", core::protocol::failureKindName(*failure) }, { "message", message } };
    return j;
}

CheckOutcome compareRun(const std::string& shapeLabel, uint64_t seed,
    const std::vector<HostTensor>& inputsBefore, const std::vector<uint64_t>& checksumsBefore,
    const std::vector<HostTensor>& inputsAfter, const std::vector<HostTensor>& got,
    const std::vector<HostTensor>& want, const nlohmann::json& tolerances)
{
    CheckOutcome out;
    out.shape = shapeLabel;
    out.seed = seed;

    for (size_t t = 0; t < inputsAfter.size(); ++t) {
        if (inputsAfter[t].checksum() == checksumsBefore[t])
            continue;
        const size_t at = firstChanged(inputsBefore[t], inputsAfter[t]);
        out.ok = false;
        out.failure = FailureKind::InputMutation;
        out.message = "input '" + inputsBefore[t].desc().name + "' was modified by the candidate on "
            + where(shapeLabel, seed) + " (first change at index " + std::to_string(at) + ": "
            + formatNumber(inputsBefore[t].at(at)) + " became " + formatNumber(inputsAfter[t].at(at))
            + "); inputs are read-only";
        return out;
    }

    std::string partialMessage;
    std::string nanMessage;
    std::string wrongMessage;
    for (size_t o = 0; o < got.size(); ++o) {
        const HostTensor& g = got[o];
        const HostTensor& w = want[o];
        const std::string& name = g.desc().name;
        const hone_dtype dtype = g.desc().dtype;
        const Tolerance tol = toleranceFor(tolerances, dtype);
        // Chunks of the output are compared on several threads; their findings are merged in
        // index order, so the result (first indices, listed mismatches) is the serial one.
        struct Part {
            size_t unwritten = 0, firstUnwritten = 0;
            size_t nonFinite = 0, firstNonFinite = 0;
            size_t wrong = 0, firstWrong = 0;
            size_t mismatches = 0;
            double wrongAbs = 0, maxAbs = 0, maxRel = 0;
            std::vector<Mismatch> listed;
        };
        constexpr size_t kPart = size_t(1) << 18;
        const size_t numel = g.numel();
        std::vector<Part> parts((numel + kPart - 1) / kPart);
        parallelFor(parts.size(), [&](size_t pb, size_t pe) {
            for (size_t pi = pb; pi < pe; ++pi) {
                Part& pt = parts[pi];
                auto note = [&](size_t i, double gv, double wv, bool isUnwritten) {
                    ++pt.mismatches;
                    if (pt.listed.size() < kMaxListed)
                        pt.listed.push_back({ name, i, gv, wv, isUnwritten });
                };
                for (size_t i = pi * kPart; i < std::min(numel, (pi + 1) * kPart); ++i) {
                    const double wv = w.at(i);
                    if (g.isPoison(i) && !w.isPoison(i)) {
                        if (pt.unwritten++ == 0)
                            pt.firstUnwritten = i;
                        note(i, std::nan(""), wv, true);
                        continue;
                    }
                    const double gv = g.at(i);
                    if (!std::isfinite(gv) && std::isfinite(wv)) {
                        if (pt.nonFinite++ == 0)
                            pt.firstNonFinite = i;
                        note(i, gv, wv, false);
                        continue;
                    }
                    if (!std::isfinite(wv)) {
                        // The reference itself is NaN or Inf here: demand the same class of value.
                        const bool same = (std::isnan(wv) && std::isnan(gv)) || gv == wv;
                        if (!same) {
                            if (pt.wrong++ == 0)
                                pt.firstWrong = i;
                            note(i, gv, wv, false);
                        }
                        continue;
                    }
                    const double diff = std::fabs(gv - wv);
                    pt.maxAbs = std::max(pt.maxAbs, diff);
                    if (wv != 0)
                        pt.maxRel = std::max(pt.maxRel, diff / std::fabs(wv));
                    if (diff > tol.atol + tol.rtol * std::fabs(wv)) {
                        if (pt.wrong++ == 0)
                            pt.firstWrong = i;
                        pt.wrongAbs = std::max(pt.wrongAbs, diff);
                        note(i, gv, wv, false);
                    }
                }
            }
        }, 4);
        size_t unwritten = 0, firstUnwritten = 0, nonFinite = 0, firstNonFinite = 0, wrong = 0, firstWrong = 0;
        double wrongAbs = 0;
        for (const Part& pt : parts) {
            if (pt.unwritten && unwritten == 0)
                firstUnwritten = pt.firstUnwritten;
            if (pt.nonFinite && nonFinite == 0)
                firstNonFinite = pt.firstNonFinite;
            if (pt.wrong && wrong == 0)
                firstWrong = pt.firstWrong;
            unwritten += pt.unwritten;
            nonFinite += pt.nonFinite;
            wrong += pt.wrong;
            wrongAbs = std::max(wrongAbs, pt.wrongAbs);
            out.maxAbsErr = std::max(out.maxAbsErr, pt.maxAbs);
            out.maxRelErr = std::max(out.maxRelErr, pt.maxRel);
            out.mismatches += pt.mismatches;
            for (const auto& m : pt.listed)
                if (out.firstMismatches.size() < kMaxListed)
                    out.firstMismatches.push_back(m);
        }
        const std::string total = std::to_string(g.numel());
        if (unwritten && partialMessage.empty())
            partialMessage = std::to_string(unwritten) + " of " + total + " elements of '" + name
                + "' were never written (first at index " + std::to_string(firstUnwritten) + ") on "
                + where(shapeLabel, seed);
        if (nonFinite && nanMessage.empty())
            nanMessage = "output '" + name + "' has " + std::to_string(nonFinite) + " of " + total
                + " elements NaN or Inf where the reference is finite on " + where(shapeLabel, seed)
                + " (first at index " + std::to_string(firstNonFinite) + ": got "
                + formatNumber(g.at(firstNonFinite)) + ", want " + formatNumber(w.at(firstNonFinite)) + ")";
        if (wrong && wrongMessage.empty()) {
            wrongMessage = "output '" + name + "' differs from the reference at " + std::to_string(wrong)
                + " of " + total + " elements on " + where(shapeLabel, seed) + " (first at index "
                + std::to_string(firstWrong) + ": got " + formatNumber(g.at(firstWrong)) + ", want "
                + formatNumber(w.at(firstWrong)) + "; largest error " + formatNumber(wrongAbs)
                + " against atol " + formatNumber(tol.atol) + " + rtol " + formatNumber(tol.rtol)
                + " * |want|)";
            double value = 0;
            if (allEqual(g, &value))
                wrongMessage
                    += "; output '" + name + "' is constant (every element = " + formatNumber(value) + ")";
        }
    }
    if (!partialMessage.empty()) {
        out.failure = FailureKind::PartialWrite;
        out.message = partialMessage;
    } else if (!nanMessage.empty()) {
        out.failure = FailureKind::Nan;
        out.message = nanMessage;
    } else if (!wrongMessage.empty()) {
        out.failure = FailureKind::WrongResult;
        out.message = wrongMessage;
    }
    out.ok = !out.failure.has_value();
    return out;
}

std::string referenceProblem(const std::vector<HostTensor>& want, const std::string& shapeLabel, uint64_t seed,
    bool allowConstant)
{
    for (const auto& w : want) {
        // Integer poison (0xA5 bytes) is a value a reference may legitimately write, so only
        // float outputs, whose poison is a NaN with a payload, can be checked this way.
        if (!isFloat(w.desc().dtype))
            continue;
        std::atomic<size_t> unwritten {0};
        parallelFor(w.numel(), [&](size_t b, size_t e) {
            size_t n = 0;
            for (size_t i = b; i < e; ++i)
                n += w.isPoison(i) ? 1 : 0;
            unwritten += n;
        });
        if (unwritten)
            return "the reference left " + std::to_string(unwritten) + " of " + std::to_string(w.numel())
                + " elements of '" + w.desc().name + "' unwritten on " + where(shapeLabel, seed)
                + "; every output element must be written";
    }
    for (const auto& w : want) {
        double value = 0;
        if (!allowConstant && isFloat(w.desc().dtype) && allEqual(w, &value))
            return "problem init makes reference output '" + w.desc().name
                + "' constant (every element = " + formatNumber(value) + " on " + where(shapeLabel, seed)
                + "); a constant kernel would pass — widen the init distribution";
    }
    return {};
}

} // namespace hone::backends
