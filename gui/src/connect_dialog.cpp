#include "connect_dialog.h"

#include <QDateTime>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>

ConnectDialog::ConnectDialog(const SessionInfo &current, const QString &sessionDirectory, QWidget *parent)
    : QDialog(parent), m_directory(sessionDirectory)
{
    setWindowTitle(tr("Connect to an otfx job"));
    auto *layout = new QVBoxLayout(this);
    auto *intro = new QLabel(tr("Pick the job's session file (otfx-run writes otfx-session-JOB.txt into its "
                                "--session-dir), or give the address and a token file."));
    intro->setWordWrap(true);
    layout->addWidget(intro);
    auto *form = new QFormLayout;
    m_sessionFile = new QLineEdit(current.path);
    auto *sessionRow = new QHBoxLayout;
    sessionRow->addWidget(m_sessionFile);
    auto *newest = new QPushButton(tr("Newest"));
    newest->setToolTip(tr("The newest otfx-session-*.txt in %1").arg(m_directory));
    auto *browse = new QPushButton(tr("Browse…"));
    sessionRow->addWidget(newest);
    sessionRow->addWidget(browse);
    form->addRow(tr("Session file:"), sessionRow);
    m_address = new QLineEdit(current.path.isEmpty() && current.port
                                  ? QStringLiteral("%1:%2").arg(current.address).arg(current.port)
                                  : QString());
    m_address->setPlaceholderText(tr("ADDR:PORT (instead of a session file)"));
    form->addRow(tr("Address:"), m_address);
    m_tokenFile = new QLineEdit;
    m_tokenFile->setPlaceholderText(tr("a session file or a file holding only the token"));
    auto *tokenRow = new QHBoxLayout;
    tokenRow->addWidget(m_tokenFile);
    auto *browseToken = new QPushButton(tr("Browse…"));
    tokenRow->addWidget(browseToken);
    form->addRow(tr("Token file:"), tokenRow);
    layout->addLayout(form);
    m_message = new QLabel;
    m_message->setStyleSheet(QStringLiteral("color: #b00020"));
    m_message->setWordWrap(true);
    layout->addWidget(m_message);
    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    buttons->button(QDialogButtonBox::Ok)->setText(tr("Connect"));
    layout->addWidget(buttons);
    connect(newest, &QPushButton::clicked, this, &ConnectDialog::findNewest);
    connect(browse, &QPushButton::clicked, this, &ConnectDialog::browseSession);
    connect(browseToken, &QPushButton::clicked, this, &ConnectDialog::browseToken);
    connect(buttons, &QDialogButtonBox::accepted, this, &ConnectDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &ConnectDialog::reject);
    if (current.path.isEmpty() && !current.port)
        findNewest();
}

bool ConnectDialog::findNewest()
{
    const QString path = newestSessionFile(m_directory);
    const QString when = QDateTime::currentDateTime().toString(QStringLiteral("HH:mm:ss"));
    m_message->setStyleSheet(path.isEmpty() ? QStringLiteral("color: #b00020") : QString());
    if (path.isEmpty()) {
        m_message->setText(tr("No usable otfx-session-*.txt in %1 (looked at %2). The viewer keeps looking "
                              "and connects as soon as a job writes one.")
                               .arg(m_directory, when));
        return false;
    }
    m_sessionFile->setText(path);
    m_message->setText(tr("Newest session file of %1 (looked at %2).").arg(m_directory, when));
    return true;
}

QString ConnectDialog::message() const
{
    return m_message->text();
}

void ConnectDialog::browseSession()
{
    const QString path = QFileDialog::getOpenFileName(
        this, tr("Session file"), m_directory, tr("otfx session files (otfx-session-*.txt);;All files (*)"));
    if (!path.isEmpty())
        m_sessionFile->setText(path);
}

void ConnectDialog::browseToken()
{
    const QString path = QFileDialog::getOpenFileName(this, tr("Token file"), m_directory);
    if (!path.isEmpty())
        m_tokenFile->setText(path);
}

void ConnectDialog::accept()
{
    QString error;
    m_message->setStyleSheet(QStringLiteral("color: #b00020"));
    if (!m_address->text().trimmed().isEmpty()) {
        SessionInfo info;
        if (!parseAddress(m_address->text().trimmed(), &info.address, &info.port, &error)) {
            m_message->setText(tr("The address must be ADDR:PORT: %1").arg(error));
            return;
        }
        if (!readTokenFile(m_tokenFile->text().trimmed(), &info.token, &error)) {
            m_message->setText(error);
            return;
        }
        m_session = info;
        QDialog::accept();
        return;
    }
    SessionInfo info;
    if (!readSessionFile(m_sessionFile->text().trimmed(), &info, &error)) {
        m_message->setText(error);
        return;
    }
    m_session = info;
    QDialog::accept();
}
