// KbCurator's writes: importing files and the bundled corpus, re-tagging and removing
// documents (kb_curator.cpp holds the panel itself).
#include "views/kb_curator.h"

#include <QComboBox>
#include <QFileInfo>
#include <QMessageBox>
#include <QStringList>

namespace hone::views {

namespace {

QString qs(const std::string& s)
{
    return QString::fromStdString(s);
}

QString statusWord(KbImportOutcome::Status s)
{
    switch (s) {
    case KbImportOutcome::Status::Added:
        return QStringLiteral("added");
    case KbImportOutcome::Status::Updated:
        return QStringLiteral("updated");
    case KbImportOutcome::Status::Unchanged:
        return QStringLiteral("unchanged");
    case KbImportOutcome::Status::Duplicate:
        return QStringLiteral("duplicate");
    case KbImportOutcome::Status::Error:
        return QStringLiteral("error");
    }
    return {};
}

} // namespace

bool KbCurator::importCorpus()
{
    if (!m_kb || m_corpusDir.isEmpty()) {
        setStatus(QStringLiteral("No corpus to import: %1")
                      .arg(m_kb ? QStringLiteral("the bundled corpus was not found (set HONE_RESOURCES)")
                                : QStringLiteral("no knowledge base is configured")),
            true);
        return false;
    }
    try {
        const int added = m_kb->importCorpus(m_corpusDir);
        reload();
        setStatus(QStringLiteral("Imported the bundled corpus from %1: %2 documents added (%3 documents, %4 chunks now)")
                      .arg(m_corpusDir)
                      .arg(added)
                      .arg(m_docs->rowCount())
                      .arg(m_kb->liveChunkCount()),
            false);
    } catch (const std::exception& e) {
        setStatus(QStringLiteral("The bundled corpus was not imported: %1").arg(qs(e.what())), true);
        return false;
    }
    emit knowledgeChanged();
    return true;
}

std::vector<KbImportOutcome> KbCurator::importFiles(const QStringList& paths)
{
    std::vector<KbImportOutcome> out;
    if (!m_kb) {
        setStatus(QStringLiteral("Nothing imported: no knowledge base is configured (open a store or start "
                                 "the workbench with --kb FILE)."),
            true);
        return out;
    }
    // Folders expand to their supported files, as `hone kb add` does.
    QStringList files;
    for (const QString& p : paths) {
        const QStringList found = m_kb->expandPath(p);
        if (found.empty()) {
            KbImportOutcome o;
            o.path = p;
            o.message
                = p + QStringLiteral(": the folder holds no .md, .txt, .html or .pdf files; check the path");
            out.push_back(std::move(o));
        }
        files << found;
    }
    const QString fallback = m_defaultKind->currentIndex() > 0 ? m_defaultKind->currentData().toString() : QString();
    // One transaction per file: a bad file is reported and the others (and every stored
    // document) stay.
    for (const QString& f : files) {
        KbImportOutcome o = m_kb->importFile(f, fallback);
        if (o.status == KbImportOutcome::Status::Error && o.message.contains(QStringLiteral(": no category;")))
            o.message += QStringLiteral(" (or pick a kind for untagged files next to Import…)");
        out.push_back(std::move(o));
    }

    int counts[5] = { 0, 0, 0, 0, 0 };
    QStringList lines;
    QString lastStored;
    for (const auto& o : out) {
        ++counts[static_cast<int>(o.status)];
        switch (o.status) {
        case KbImportOutcome::Status::Error:
            lines << QStringLiteral("error: ") + o.message;
            break;
        case KbImportOutcome::Status::Duplicate:
            lines << QStringLiteral("duplicate: %1 (%2): %3").arg(o.path, o.uid, o.message);
            break;
        default:
            lines << QStringLiteral("%1: %2 (%3 chunks) from %4")
                         .arg(statusWord(o.status), o.uid)
                         .arg(o.chunks)
                         .arg(o.path);
            lastStored = o.uid;
            break;
        }
    }
    const QString summary = QStringLiteral(
        "Imported %1 file(s): %2 added, %3 updated, %4 unchanged, %5 duplicate, %6 error(s).")
                                .arg(out.size())
                                .arg(counts[0])
                                .arg(counts[1])
                                .arg(counts[2])
                                .arg(counts[3])
                                .arg(counts[4]);
    setStatus(summary + QLatin1Char('\n') + lines.join(QLatin1Char('\n')), counts[4] > 0);
    if (counts[0] + counts[1] > 0) {
        m_docs->reload();
        selectDocument(lastStored);
        emit knowledgeChanged();
    }
    return out;
}

bool KbCurator::retag(const QString& uid, const KbTags& tags, QString* error)
{
    auto fail = [&](const QString& why) {
        if (error)
            *error = why;
        setStatus(why, true);
        return false;
    };
    if (!m_kb)
        return fail(QStringLiteral("No knowledge base is configured."));
    static const QStringList platforms
        = { QStringLiteral("any"), QStringLiteral("cuda"), QStringLiteral("hip"), QStringLiteral("cpu") };
    const QString platform = tags.platform.trimmed().toLower();
    if (!platform.isEmpty() && !platforms.contains(platform))
        return fail(QStringLiteral("platform '%1': expected cuda, hip, cpu or any").arg(tags.platform));
    try {
        const auto d = m_kb->document(uid);
        if (!d)
            return fail(
                QStringLiteral("%1: no such live document (removed meanwhile?); pick one in the table")
                    .arg(uid));
        if (d->isSkill())
            return fail(QStringLiteral("%1 is a skill: its tags come from the session it was learnt from; "
                                       "learn it again with `hone kb learn SESSION --arch A`")
                            .arg(uid));
        const KbImportOutcome r = m_kb->retag(uid, tags);
        if (r.status == KbImportOutcome::Status::Unchanged) {
            setStatus(QStringLiteral("%1: tags unchanged").arg(uid), false);
            return true;
        }
        if (r.status != KbImportOutcome::Status::Updated)
            return fail(QStringLiteral("%1: the tags were not stored (%2)").arg(uid, statusWord(r.status)));
        m_docs->reload();
        selectDocument(r.uid);
        setStatus(QStringLiteral("%1: tags updated (version %2; the previous version stays in the history)")
                      .arg(r.uid)
                      .arg(r.version),
            false);
        emit knowledgeChanged();
        return true;
    } catch (const std::exception& e) {
        return fail(QStringLiteral("%1: the tags could not be stored: %2").arg(uid, qs(e.what())));
    }
}

bool KbCurator::removeDocument(const QString& uid)
{
    if (!m_kb || uid.isEmpty())
        return false;
    const int row = m_docs->rowOf(uid);
    const QString title = row >= 0 ? m_docs->document(row)->title : uid;
    const QString question
        = QStringLiteral("Remove \"%1\" (%2) from the knowledge base?\nIts chunks leave the "
                         "search; its history and the hits recorded against it stay.")
              .arg(title, uid);
    if (m_confirm && !m_confirm(question)) {
        setStatus(QStringLiteral("%1: not removed").arg(uid), false);
        return false;
    }
    try {
        if (!m_kb->remove(uid)) {
            setStatus(QStringLiteral("%1: no such live document (removed meanwhile?)").arg(uid), true);
            m_docs->reload();
            return false;
        }
    } catch (const std::exception& e) {
        setStatus(QStringLiteral("%1: could not be removed: %2").arg(uid, qs(e.what())), true);
        return false;
    }
    m_docs->reload();
    m_results->setRows({});
    setStatus(QStringLiteral("%1: removed (%2 documents left)").arg(uid).arg(m_docs->rowCount()), false);
    emit knowledgeChanged();
    return true;
}

} // namespace hone::views
