#include "views/review_concerns.h"

#include "core/export_bundle.h"

#include <QStringList>

#include <set>

namespace hone::views {

namespace {

const nlohmann::json& field(const nlohmann::json& j, const char* key)
{
    static const nlohmann::json null;
    if (!j.is_object())
        return null;
    const auto it = j.find(key);
    return it == j.end() ? null : *it;
}

double numberOr(const nlohmann::json& j, const char* key, double fallback)
{
    const auto& v = field(j, key);
    return v.is_number() ? v.get<double>() : fallback;
}

QString pct(double fraction) { return QString::number(100.0 * fraction, 'f', 1) + QLatin1Char('%'); }

QString shapeName(const nlohmann::json& j, const QString& fallback)
{
    const auto& s = field(j, "shape");
    return s.is_string() ? QString::fromStdString(s.get<std::string>()) : fallback;
}

} // namespace

const char* concernKey(ReviewConcern::Kind kind)
{
    switch (kind) {
    case ReviewConcern::Kind::NoisyTiming:
        return "noisy_timing";
    case ReviewConcern::Kind::IntervalIncludesOne:
        return "interval_includes_1x";
    case ReviewConcern::Kind::Suspicious:
        return "suspicious";
    case ReviewConcern::Kind::FailingShape:
        return "failing_shape";
    case ReviewConcern::Kind::SlowerShape:
        return "slower_shape";
    }
    return "unknown";
}

std::vector<ReviewConcern> reviewConcerns(const nlohmann::json& result, const ReviewPolicy& policy)
{
    using Kind = ReviewConcern::Kind;
    std::vector<ReviewConcern> out;
    if (!result.is_object())
        return out;

    // Timing noise: the timed shape, then every other timed shape of a shape set, both sides.
    QStringList noisy;
    auto checkCv = [&](const nlohmann::json& timing, const QString& where) {
        const double cv = numberOr(timing, "cv", 0);
        if (cv > policy.maxCv)
            noisy << QStringLiteral("%1 candidate CV %2").arg(where, pct(cv));
        const double baseCv = numberOr(field(timing, "baseline"), "cv", 0);
        if (baseCv > policy.maxCv)
            noisy << QStringLiteral("%1 baseline CV %2").arg(where, pct(baseCv));
    };
    const auto& timing = field(result, "timing");
    checkCv(timing, shapeName(timing, QStringLiteral("timed shape")));
    const auto& shapes = field(result, "shapes");
    if (shapes.is_array())
        for (const auto& s : shapes) {
            const auto& t = field(s, "timing");
            const QString name = shapeName(s, QStringLiteral("shape"));
            if (name != shapeName(timing, QString()))
                checkCv(t, name);
        }
    if (!noisy.isEmpty())
        out.push_back({Kind::NoisyTiming,
            QStringLiteral("Noisy timing (limit %1): %2. The median may not hold on a quieter or busier machine.")
                .arg(pct(policy.maxCv), noisy.join(QStringLiteral(", ")))});

    if (timing.is_object() && field(timing, "baseline").is_object()) {
        const core::SpeedupInterval ci = core::speedupInterval(timing);
        if (ci.valid && ci.low <= 1.0)
            out.push_back({Kind::IntervalIncludesOne,
                QStringLiteral("The 95% interval of the speedup, %1x – %2x, includes 1x: the candidate may be no "
                               "faster than the baseline.")
                    .arg(ci.low, 0, 'f', 2)
                    .arg(ci.high, 0, 'f', 2)});
    }

    if (field(field(result, "diagnosis"), "suspicious") == true)
        out.push_back({Kind::Suspicious,
            QStringLiteral("Suspicious: the time is below what the roofline floor allows (%1). Check that the "
                           "kernel does all of its work.")
                .arg(QString::fromStdString(field(field(result, "diagnosis"), "evidence").is_string()
                        ? field(field(result, "diagnosis"), "evidence").get<std::string>()
                        : std::string("no evidence text")))});

    std::set<QString> failing;
    const auto& checks = field(result, "checks");
    if (checks.is_array())
        for (const auto& c : checks)
            if (field(c, "ok") == false)
                failing.insert(shapeName(c, QStringLiteral("?")));
    if (!failing.empty()) {
        QStringList names(failing.begin(), failing.end());
        out.push_back({Kind::FailingShape,
            QStringLiteral("Failed correctness checks on %1.").arg(names.join(QStringLiteral(", ")))});
    }

    const auto& slower = field(field(result, "objective"), "slower_on");
    QStringList slowerOn;
    if (slower.is_array())
        for (const auto& s : slower)
            if (s.is_string())
                slowerOn << QString::fromStdString(s.get<std::string>());
    if (!slowerOn.isEmpty())
        out.push_back({Kind::SlowerShape,
            QStringLiteral("Slower than the baseline on %1.").arg(slowerOn.join(QStringLiteral(", ")))});
    return out;
}

} // namespace hone::views
