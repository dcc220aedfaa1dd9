#include "snapshot_dialog.h"

#include <QCheckBox>
#include <QDateTime>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRadioButton>
#include <QVBoxLayout>

SnapshotDialog::SnapshotDialog(const QString &snapshotDir, const QString &window, QWidget *parent)
    : QDialog(parent), m_dir(snapshotDir)
{
    setWindowTitle(tr("Save a snapshot"));
    auto *layout = new QVBoxLayout(this);
    auto *intro =
        new QLabel(tr("The job's event places write one OTF2 archive together. The name is resolved "
                      "under the job's snapshot directory (otfx-run --snapshot-dir); names that leave "
                      "it are refused by the job."));
    intro->setWordWrap(true);
    layout->addWidget(intro);
    auto *form = new QFormLayout;
    m_name = new QLineEdit(QStringLiteral("otfx-snapshot-") +
                           QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss")));
    auto *row = new QHBoxLayout;
    row->addWidget(m_name);
    auto *browse = new QPushButton(tr("Browse…"));
    browse->setToolTip(tr("Pick a name in %1").arg(snapshotDir));
    row->addWidget(browse);
    form->addRow(tr("Archive name:"), row);
    m_whole = new QRadioButton(tr("Everything the buffers hold"));
    m_visible = new QRadioButton(tr("The visible window (%1)").arg(window));
    m_whole->setChecked(true);
    m_visible->setEnabled(!window.isEmpty());
    form->addRow(tr("Contents:"), m_whole);
    form->addRow(QString(), m_visible);
    m_overwrite = new QCheckBox(tr("Replace an existing archive of that name"));
    form->addRow(QString(), m_overwrite);
    layout->addLayout(form);
    m_message = new QLabel;
    m_message->setStyleSheet(QStringLiteral("color: #b00020"));
    layout->addWidget(m_message);
    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Save | QDialogButtonBox::Cancel);
    layout->addWidget(buttons);
    connect(browse, &QPushButton::clicked, this, &SnapshotDialog::browse);
    connect(buttons, &QDialogButtonBox::accepted, this, &SnapshotDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &SnapshotDialog::reject);
}

void SnapshotDialog::browse()
{
    const QString path =
        QFileDialog::getSaveFileName(this, tr("Snapshot name"), QDir(m_dir).filePath(m_name->text()),
                                     QString(), nullptr, QFileDialog::DontConfirmOverwrite);
    if (path.isEmpty())
        return;
    const QString relative = QDir(m_dir).relativeFilePath(path);
    if (relative.startsWith(QLatin1String("..")))
        m_message->setText(
            tr("%1 is outside the snapshot directory %2: the job would refuse it").arg(path, m_dir));
    else
        m_message->clear();
    m_name->setText(relative);
}

void SnapshotDialog::accept()
{
    if (name().isEmpty()) {
        m_message->setText(tr("Give the archive a name"));
        return;
    }
    QDialog::accept();
}

QString SnapshotDialog::name() const
{
    return m_name->text().trimmed();
}

bool SnapshotDialog::visibleWindow() const
{
    return m_visible->isChecked();
}

bool SnapshotDialog::overwrite() const
{
    return m_overwrite->isChecked();
}
