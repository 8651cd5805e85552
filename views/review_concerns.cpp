#include "views/review_concerns.h"

#include "core/export_bundle.h"

#include <QStringList>

#include <set>

namespace hone::views {

namespace {

QString pct(double fraction) { return QString::number(100.0 * fraction, 'f', 1) + QLatin1Char('%'); }

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

std::vector<ReviewConcern> reviewConcerns(const core::protocol::EvalResult& result, const ReviewPolicy& policy)
{
    using Kind = ReviewConcern::Kind;
    std::vector<ReviewConcern> out;

    // Timing noise: the timed shape, then every other timed shape of a shape set, both sides.
    QStringList noisy;
    auto checkCv = [&](const core::protocol::Timing& timing, const QString& where) {
        const double cv = timing.stats.cv.value_or(0.0);
        if (cv > policy.maxCv)
            noisy << QStringLiteral("%1 candidate CV %2").arg(where, pct(cv));
        const double baseCv = timing.baseline ? timing.baseline->cv.value_or(0.0) : 0.0;
        if (baseCv > policy.maxCv)
            noisy << QStringLiteral("%1 baseline CV %2").arg(where, pct(baseCv));
    };
    const QString timedShape = result.timing && result.timing->shape ? QString::fromStdString(*result.timing->shape)
                                                                     : QString();
    if (result.timing)
        checkCv(*result.timing, timedShape.isEmpty() ? QStringLiteral("timed shape") : timedShape);
    for (const auto& s : result.shapeResults()) {
        const QString name = QString::fromStdString(s.label);
        if (s.timing && name != timedShape)
            checkCv(*s.timing, name);
    }
    if (!noisy.isEmpty())
        out.push_back({Kind::NoisyTiming,
            QStringLiteral("Noisy timing (limit %1): %2. The median may not hold on a quieter or busier machine.")
                .arg(pct(policy.maxCv), noisy.join(QStringLiteral(", ")))});

    if (result.timing && result.timing->baseline) {
        const core::SpeedupInterval ci = core::speedupInterval(*result.timing);
        if (ci.valid && ci.low <= 1.0)
            out.push_back({Kind::IntervalIncludesOne,
                QStringLiteral("The 95% interval of the speedup, %1x – %2x, includes 1x: the candidate may be no "
                               "faster than the baseline.")
                    .arg(ci.low, 0, 'f', 2)
                    .arg(ci.high, 0, 'f', 2)});
    }

    if (result.suspicious())
        out.push_back({Kind::Suspicious,
            QStringLiteral("Suspicious: the time is below what the roofline floor allows (%1). Check that the "
                           "kernel does all of its work.")
                .arg(result.evidence().empty() ? QStringLiteral("no evidence text")
                                               : QString::fromStdString(result.evidence()))});

    std::set<QString> failing;
    if (result.checks)
        for (const auto& c : *result.checks)
            if (!c.ok)
                failing.insert(QString::fromStdString(c.shape));
    if (!failing.empty()) {
        QStringList names(failing.begin(), failing.end());
        out.push_back({Kind::FailingShape,
            QStringLiteral("Failed correctness checks on %1.").arg(names.join(QStringLiteral(", ")))});
    }

    QStringList slowerOn;
    if (result.objective)
        for (const auto& s : result.objective->slowerOn)
            slowerOn << QString::fromStdString(s);
    if (!slowerOn.isEmpty())
        out.push_back({Kind::SlowerShape,
            QStringLiteral("Slower than the baseline on %1.").arg(slowerOn.join(QStringLiteral(", ")))});
    return out;
}

} // namespace hone::views
