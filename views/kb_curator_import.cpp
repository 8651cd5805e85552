// KbCurator's writes: importing files and the bundled corpus, re-tagging and removing
// documents (kb_curator.cpp holds the panel itself).
#include "views/kb_curator.h"

#include "knowledge/corpus.h"

#include <QComboBox>
#include <QFileInfo>
#include <QMessageBox>
#include <QStringList>

namespace hone::views {

namespace kb = hone::knowledge;

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

KbImportOutcome::Status outcomeOf(kb::AddStatus s)
{
    switch (s) {
    case kb::AddStatus::Added:
        return KbImportOutcome::Status::Added;
    case kb::AddStatus::Updated:
        return KbImportOutcome::Status::Updated;
    case kb::AddStatus::Unchanged:
        return KbImportOutcome::Status::Unchanged;
    case kb::AddStatus::Duplicate:
        return KbImportOutcome::Status::Duplicate;
    }
    return KbImportOutcome::Status::Error;
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
        const auto results = kb::importCorpus(*m_kb, m_corpusDir.toStdString());
        int added = 0;
        for (const auto& r : results)
            added += r.status == kb::AddStatus::Added || r.status == kb::AddStatus::Updated ? 1 : 0;
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
        const std::vector<std::string> found = kb::expandDocumentPath(p.toStdString());
        if (found.empty()) {
            KbImportOutcome o;
            o.path = p;
            o.message
                = p + QStringLiteral(": the folder holds no .md, .txt, .html or .pdf files; check the path");
            out.push_back(std::move(o));
        }
        for (const auto& f : found)
            files << qs(f);
    }
    std::optional<kb::Category> fallback;
    if (m_defaultKind->currentIndex() > 0)
        fallback = static_cast<kb::Category>(m_defaultKind->currentData().toInt());
    auto read = [&](const QString& f) {
        try {
            return kb::readDocument(f.toStdString());
        } catch (const kb::IngestError&) {
            if (!fallback)
                throw;
            // Read again with the default kind; an override would also replace the kind of a
            // file that names one, so it is only tried when the plain read failed. A file that
            // fails for another reason fails the same way again.
            kb::IngestOverrides ov;
            ov.category = fallback;
            return kb::readDocument(f.toStdString(), ov);
        }
    };
    // One transaction per file: a bad file is reported and the others (and every stored
    // document) stay.
    for (const QString& f : files) {
        KbImportOutcome o;
        o.path = f;
        try {
            const kb::SourceDocument doc = read(f);
            const kb::AddResult r = m_kb->add(doc);
            o.status = outcomeOf(r.status);
            o.uid = qs(r.uid);
            o.chunks = r.chunks;
            if (r.status == kb::AddStatus::Duplicate)
                o.message = QStringLiteral("same text as %1; nothing stored").arg(qs(r.note));
        } catch (const kb::IngestError& e) {
            o.message = qs(e.what()); // starts with the file name and says what to do
            if (o.message.contains(QStringLiteral(": no category;")))
                o.message += QStringLiteral(" (or pick a kind for untagged files next to Import…)");
        } catch (const std::exception& e) {
            o.message = f + QStringLiteral(": ") + qs(e.what());
        }
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

bool KbCurator::retag(const QString& uid, const kb::Tags& tags, QString* error)
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
    const QString platform = qs(tags.platform).trimmed().toLower();
    if (!platform.isEmpty() && !platforms.contains(platform))
        return fail(QStringLiteral("platform '%1': expected cuda, hip, cpu or any").arg(qs(tags.platform)));
    try {
        const auto d = m_kb->document(uid.toStdString());
        if (!d)
            return fail(
                QStringLiteral("%1: no such live document (removed meanwhile?); pick one in the table")
                    .arg(uid));
        if (d->category == kb::Category::Skill)
            return fail(QStringLiteral("%1 is a skill: its tags come from the session it was learnt from; "
                                       "learn it again with `hone kb learn SESSION --arch A`")
                            .arg(uid));
        // The KnowledgeBase's only write is add(): the same chunks (one section each, which
        // chunking keeps as they are) under the new tags make a new version of the document.
        kb::SourceDocument doc;
        doc.uid = d->uid;
        doc.title = d->title;
        doc.format = d->format;
        doc.origin = d->origin;
        doc.category = d->category;
        doc.categorySet = true;
        doc.tags = tags;
        if (doc.tags.platform.empty())
            doc.tags.platform = "any";
        for (const auto& c : m_kb->chunks(d->id))
            doc.sections.push_back({ c.heading, c.body, c.pageFirst });
        const kb::AddResult r = m_kb->add(doc);
        if (r.status == kb::AddStatus::Unchanged) {
            setStatus(QStringLiteral("%1: tags unchanged").arg(uid), false);
            return true;
        }
        if (r.status != kb::AddStatus::Updated)
            return fail(QStringLiteral("%1: the tags were not stored (%2)")
                            .arg(uid, QString::fromLatin1(kb::addStatusName(r.status))));
        m_docs->reload();
        selectDocument(qs(r.uid));
        setStatus(QStringLiteral("%1: tags updated (version %2; the previous version stays in the history)")
                      .arg(qs(r.uid))
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
    const QString title = row >= 0 ? qs(m_docs->document(row)->title) : uid;
    const QString question
        = QStringLiteral("Remove \"%1\" (%2) from the knowledge base?\nIts chunks leave the "
                         "search; its history and the hits recorded against it stay.")
              .arg(title, uid);
    if (m_confirm && !m_confirm(question)) {
        setStatus(QStringLiteral("%1: not removed").arg(uid), false);
        return false;
    }
    try {
        if (!m_kb->remove(uid.toStdString())) {
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
