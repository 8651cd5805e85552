#include "views/kb_curator.h"

#include <QComboBox>
#include <QDateTime>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QSplitter>
#include <QTableView>
#include <QTextCursor>
#include <QUrl>
#include <QVBoxLayout>

#include <algorithm>

namespace hone::views {

namespace {

constexpr int kSearchResults = 20;

QString qs(const std::string& s)
{
    return QString::fromStdString(s);
}

/// "sm_90, gfx942" or "sm_90 gfx942": the items of a tag list as typed (the base canonicalises
/// them when it stores the tags).
QStringList splitList(const QString& text)
{
    static const QRegularExpression separators(QStringLiteral("[,\\s]+"));
    return text.split(separators, Qt::SkipEmptyParts);
}

} // namespace

// ---- KbCurator ----------------------------------------------------------------------------

KbCurator::KbCurator(KnowledgeAccess* base, QWidget* parent)
    : QWidget(parent)
    , m_kb(base)
    , m_docs(new KbDocumentsModel(base, this))
    , m_results(new KnowledgeHitsModel(this))
    , m_docTable(new QTableView(this))
    , m_resultTable(new QTableView(this))
    , m_preview(new QPlainTextEdit(this))
    , m_search(new QLineEdit(this))
    , m_status(new QLabel(this))
    , m_defaultKind(new QComboBox(this))
    , m_import(new QPushButton(QStringLiteral("Import…"), this))
    , m_tags(new QPushButton(QStringLiteral("Edit tags…"), this))
    , m_remove(new QPushButton(QStringLiteral("Remove"), this))
    , m_confirm([this](QString question) {
        return QMessageBox::question(this, QStringLiteral("Remove document"), question) == QMessageBox::Yes;
    })
{
    setAcceptDrops(true);

    m_docTable->setModel(m_docs);
    m_docTable->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_docTable->setSelectionMode(QAbstractItemView::SingleSelection);
    m_docTable->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_docTable->verticalHeader()->hide();
    m_docTable->horizontalHeader()->setStretchLastSection(true);
    m_docTable->setColumnWidth(KbDocumentsModel::Title, 260);
    m_docTable->setColumnWidth(KbDocumentsModel::Tags, 260);

    m_resultTable->setModel(m_results);
    m_resultTable->setItemDelegateForColumn(
        KnowledgeHitsModel::Snippet, new HtmlSnippetDelegate(m_resultTable));
    m_resultTable->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_resultTable->setSelectionMode(QAbstractItemView::SingleSelection);
    m_resultTable->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_resultTable->verticalHeader()->hide();
    m_resultTable->horizontalHeader()->setStretchLastSection(true);
    m_resultTable->setColumnWidth(KnowledgeHitsModel::Rank, 36);
    m_resultTable->setColumnWidth(KnowledgeHitsModel::Snippet, 360);

    m_preview->setReadOnly(true);
    m_preview->setPlaceholderText(QStringLiteral("Select a document to read its chunks."));
    m_search->setPlaceholderText(QStringLiteral("Search the knowledge base (Enter)"));
    m_search->setClearButtonEnabled(true);
    m_status->setWordWrap(true);
    m_status->setTextFormat(Qt::PlainText);
    m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_defaultKind->addItem(QStringLiteral("files must name their kind"));
    for (const char* kind : { "guidance", "hardware", "correctness" })
        m_defaultKind->addItem(
            QStringLiteral("untagged files: ") + QLatin1String(kind), QString::fromLatin1(kind));
    m_defaultKind->setToolTip(QStringLiteral("The kind given to imported files whose front-matter has no "
                                             "'category:' line"));
    m_import->setToolTip(QStringLiteral("Add .md, .txt, .html or .pdf files (or drop them on this panel)"));

    auto* buttons = new QHBoxLayout;
    buttons->addWidget(m_import);
    buttons->addWidget(m_defaultKind);
    buttons->addWidget(m_tags);
    buttons->addWidget(m_remove);
    buttons->addSpacing(12);
    buttons->addWidget(m_search, 1);

    auto* lower = new QSplitter(Qt::Horizontal, this);
    lower->addWidget(m_resultTable);
    lower->addWidget(m_preview);
    auto* split = new QSplitter(Qt::Vertical, this);
    split->addWidget(m_docTable);
    split->addWidget(lower);
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 1);

    // A fresh base is offered the corpus Hone ships; the offer goes once there are documents.
    m_offer = new QWidget(this);
    m_offer->setObjectName(QStringLiteral("corpusOffer"));
    m_importCorpus = new QPushButton(QStringLiteral("Import the bundled corpus"), m_offer);
    m_importCorpus->setObjectName(QStringLiteral("importCorpus"));
    auto* offerLayout = new QHBoxLayout(m_offer);
    offerLayout->setContentsMargins(0, 0, 0, 0);
    auto* offerText = new QLabel(QStringLiteral("This knowledge base is empty. Hone ships a corpus of correctness "
                                                "rules, hardware notes and optimisation guidance (`hone kb init` "
                                                "imports it headless)."),
        m_offer);
    offerText->setWordWrap(true);
    offerLayout->addWidget(offerText, 1);
    offerLayout->addWidget(m_importCorpus);
    m_offer->hide();
    connect(m_importCorpus, &QPushButton::clicked, this, [this] { importCorpus(); });

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(m_offer);
    layout->addLayout(buttons);
    layout->addWidget(split, 1);
    layout->addWidget(m_status);

    connect(m_import, &QPushButton::clicked, this, &KbCurator::importClicked);
    connect(m_tags, &QPushButton::clicked, this, &KbCurator::editTagsClicked);
    connect(m_remove, &QPushButton::clicked, this, &KbCurator::removeClicked);
    connect(m_search, &QLineEdit::returnPressed, this, [this] { search(m_search->text()); });
    connect(m_docTable->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
        [this](const QModelIndex& cur) {
            previewDocument(cur.row());
            updateEnabled();
        });
    connect(m_docs, &QAbstractItemModel::modelReset, this, [this] {
        m_preview->clear();
        updateEnabled();
    });
    connect(m_resultTable, &QTableView::clicked, this, [this](const QModelIndex& i) { previewHit(i.row()); });
    connect(
        m_resultTable, &QTableView::activated, this, [this](const QModelIndex& i) { previewHit(i.row()); });

    setKnowledgeBase(base);
}

void KbCurator::setKnowledgeBase(KnowledgeAccess* base)
{
    m_kb = base;
    m_docs->setKnowledgeBase(base); // re-reads the documents
    m_results->setRows({});
    showSummary();
}

void KbCurator::reload()
{
    m_docs->reload();
    showSummary();
}

void KbCurator::showSummary()
{
    if (!m_kb)
        setStatus(QStringLiteral("No knowledge base is configured: open a store, or start the workbench with "
                                 "--kb FILE, to curate documents."),
            true);
    else
        setStatus(QStringLiteral("%1 documents, %2 chunks in %3")
                      .arg(m_docs->rowCount())
                      .arg(m_kb->liveChunkCount())
                      .arg(m_kb->location()),
            false);
    m_offer->setVisible(corpusOffered());
    updateEnabled();
}

void KbCurator::setCorpusDir(const QString& dir)
{
    m_corpusDir = dir;
    m_offer->setVisible(corpusOffered());
}

bool KbCurator::corpusOffered() const
{
    if (!m_kb || m_corpusDir.isEmpty())
        return false;
    // Skills written back by runs do not make a base curated: offered until some document of
    // another kind is there.
    for (int row = 0; row < m_docs->rowCount(); ++row)
        if (!m_docs->document(row)->isSkill())
            return false;
    return true;
}

QString KbCurator::statusText() const
{
    return m_status->text();
}

QString KbCurator::previewText() const
{
    return m_preview->toPlainText();
}

void KbCurator::setDefaultKind(const QString& kind)
{
    m_defaultKind->setCurrentIndex(kind.isEmpty() ? 0 : std::max(0, m_defaultKind->findData(kind)));
}

void KbCurator::setStatus(const QString& text, bool error)
{
    m_status->setText(text);
    m_status->setStyleSheet(error ? QStringLiteral("color: #b00020;") : QString());
}

void KbCurator::updateEnabled()
{
    const bool haveKb = m_kb != nullptr;
    const bool haveDoc = haveKb && !selectedUid().isEmpty();
    m_import->setEnabled(haveKb);
    m_search->setEnabled(haveKb);
    m_tags->setEnabled(haveDoc);
    m_remove->setEnabled(haveDoc);
}

QString KbCurator::selectedUid() const
{
    const QModelIndex cur = m_docTable->selectionModel()->currentIndex();
    return cur.isValid() ? cur.siblingAtColumn(0).data(KbDocumentsModel::UidRole).toString() : QString();
}

bool KbCurator::selectDocument(const QString& uid)
{
    const int row = m_docs->rowOf(uid);
    if (row < 0)
        return false;
    m_docTable->selectionModel()->setCurrentIndex(
        m_docs->index(row, 0), QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    m_docTable->scrollTo(m_docs->index(row, 0));
    return true;
}

void KbCurator::search(const QString& text)
{
    if (m_search->text() != text)
        m_search->setText(text);
    if (!m_kb)
        return;
    if (text.trimmed().isEmpty()) {
        m_results->setRows({});
        setStatus(QStringLiteral("Type words to search for, then Enter."), false);
        return;
    }
    try {
        std::vector<KnowledgeHitRow> rows = m_kb->search(text, kSearchResults);
        const size_t found = rows.size();
        m_results->setRows(std::move(rows));
        setStatus(found == 0 ? QStringLiteral("No document matches \"%1\".").arg(text)
                             : QStringLiteral("%1 hit(s) for \"%2\"").arg(found).arg(text),
            false);
    } catch (const std::exception& e) {
        m_results->setRows({});
        setStatus(QStringLiteral("Search \"%1\" failed: %2").arg(text, qs(e.what())), true);
    }
}

void KbCurator::previewDocument(int row)
{
    const KbDocument* d = m_docs->document(row);
    if (!d || !m_kb) {
        m_preview->clear();
        return;
    }
    QString text = QStringLiteral("%1\n%2 v%3 · %4 · %5\n")
                       .arg(d->title, d->uid)
                       .arg(d->version)
                       .arg(d->kind, d->origin);
    try {
        for (const auto& c : m_kb->chunks(d->id)) {
            text += QStringLiteral("\n## ") + c.heading;
            if (c.pageFirst > 0)
                text += QStringLiteral("  [p. %1]").arg(c.pageFirst);
            text += QLatin1Char('\n') + c.body + QLatin1Char('\n');
        }
    } catch (const std::exception& e) {
        text += QStringLiteral("\n(the chunks could not be read: %1)").arg(qs(e.what()));
    }
    m_preview->setPlainText(text);
}

void KbCurator::previewHit(int row)
{
    const KnowledgeHitRow* h = m_results->hit(row);
    if (!h || !selectDocument(h->uid))
        return;
    // Bring the hit's chunk into view.
    const auto chunk = m_kb->chunk(h->chunkId);
    if (!chunk)
        return;
    m_preview->moveCursor(QTextCursor::Start);
    m_preview->find(QStringLiteral("## ") + chunk->heading);
    m_preview->ensureCursorVisible();
}

void KbCurator::importClicked()
{
    const QStringList files
        = QFileDialog::getOpenFileNames(this, QStringLiteral("Import into the knowledge base"), QString(),
            QStringLiteral("Documents (*.md *.markdown *.txt *.text *.html *.htm *.pdf);;All files (*)"));
    if (!files.isEmpty())
        importFiles(files);
}

void KbCurator::editTagsClicked()
{
    const QString uid = selectedUid();
    const int row = m_docs->rowOf(uid);
    if (row < 0)
        return;
    const KbDocument d = *m_docs->document(row);
    QDialog dialog(this);
    dialog.setWindowTitle(QStringLiteral("Tags of %1").arg(uid));
    auto* form = new QFormLayout(&dialog);
    auto* platform = new QLineEdit(d.tags.platform, &dialog);
    platform->setPlaceholderText(QStringLiteral("cuda, hip, cpu or any"));
    auto* arch = new QLineEdit(joinedList(d.tags.arch), &dialog);
    arch->setPlaceholderText(QStringLiteral("sm_90, gfx942, x86_64-avx2… (empty: any)"));
    auto* family = new QLineEdit(joinedList(d.tags.family), &dialog);
    family->setPlaceholderText(QStringLiteral("softmax, gemm, reduction… (empty: any)"));
    auto* source = new QLineEdit(d.tags.source, &dialog);
    auto* version = new QLineEdit(d.tags.version, &dialog);
    form->addRow(QStringLiteral("Platform"), platform);
    form->addRow(QStringLiteral("Arch"), arch);
    form->addRow(QStringLiteral("Family"), family);
    form->addRow(QStringLiteral("Source"), source);
    form->addRow(QStringLiteral("Version"), version);
    auto* box = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, &dialog);
    form->addRow(box);
    connect(box, &QDialogButtonBox::accepted, &dialog, &QDialog::accept);
    connect(box, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
    if (dialog.exec() != QDialog::Accepted)
        return;
    KbTags t;
    t.platform = platform->text().trimmed();
    t.arch = splitList(arch->text());
    t.family = splitList(family->text());
    t.source = source->text().trimmed();
    t.version = version->text().trimmed();
    retag(uid, t);
}

void KbCurator::removeClicked()
{
    removeDocument(selectedUid());
}

void KbCurator::dragEnterEvent(QDragEnterEvent* event)
{
    if (!m_kb || !event->mimeData()->hasUrls())
        return;
    for (const QUrl& u : event->mimeData()->urls())
        if (u.isLocalFile()) {
            event->acceptProposedAction();
            return;
        }
}

void KbCurator::dragMoveEvent(QDragMoveEvent* event)
{
    if (m_kb && event->mimeData()->hasUrls())
        event->acceptProposedAction();
}

void KbCurator::dropEvent(QDropEvent* event)
{
    if (!m_kb || !event->mimeData()->hasUrls())
        return;
    QStringList files;
    for (const QUrl& u : event->mimeData()->urls())
        if (u.isLocalFile())
            files << u.toLocalFile();
    if (files.isEmpty())
        return;
    event->acceptProposedAction();
    importFiles(files);
}

} // namespace hone::views
