#include "archive_backend.h"

#include "format.h"

#include <otfx/archive.h>

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QPointer>
#include <QThread>

ArchiveBackend::ArchiveBackend(QObject *parent) : QObject(parent)
{
    qRegisterMetaType<SessionInfo>();
}

ArchiveBackend::~ArchiveBackend()
{
    close();
}

QString ArchiveBackend::anchorOf(const QString &path, QString *error)
{
    const QFileInfo info(path);
    if (info.isDir()) {
        const QStringList anchors = QDir(path).entryList({QStringLiteral("*.otf2")}, QDir::Files);
        if (anchors.size() == 1)
            return QDir(path).filePath(anchors[0]);
        *error = anchors.isEmpty() ? tr("%1 holds no .otf2 anchor file").arg(path)
                                   : tr("%1 holds several archives (%2): choose one .otf2 file")
                                         .arg(path, anchors.join(QStringLiteral(", ")));
        return QString();
    }
    if (!info.exists()) {
        *error = tr("%1: no such file").arg(path);
        return QString();
    }
    return path;
}

void ArchiveBackend::close()
{
    m_generation++;
    m_opening = false;
    otfx_archive_server_stop(m_server); // clients get job-ended: the viewer shows the archive closed
    m_server = nullptr;
    otfx_archive_close(m_archive);
    m_archive = nullptr;
    m_path.clear();
    m_description.clear();
}

void ArchiveBackend::open(const QString &path)
{
    close();
    QString why;
    const QString anchor = anchorOf(path, &why);
    if (anchor.isEmpty()) {
        emit failed(why);
        return;
    }
    m_path = anchor;
    m_opening = true;
    const quint64 generation = m_generation;
    QPointer<ArchiveBackend> self(this);
    // Reading a large archive takes a while: never on the event loop's thread.
    QThread *reader = QThread::create([self, anchor, generation] {
        char error[1024] = "";
        otfx_archive *archive =
            otfx_archive_open(QFile::encodeName(anchor).constData(), nullptr, error, sizeof error);
        const QString message = QString::fromUtf8(error);
        QMetaObject::invokeMethod(
            qApp,
            [self, archive, message, generation] {
                if (!self || self->m_generation != generation) {
                    otfx_archive_close(archive); // superseded or closed meanwhile
                    return;
                }
                self->finishOpening(archive, message);
            },
            Qt::QueuedConnection);
    });
    connect(reader, &QThread::finished, reader, &QObject::deleteLater);
    reader->start();
}

void ArchiveBackend::finishOpening(otfx_archive *archive, const QString &error)
{
    m_opening = false;
    if (!archive) {
        m_path.clear();
        emit failed(error);
        return;
    }
    char why[1024] = "";
    otfx_archive_server *server = otfx_archive_serve(archive, 2, why, sizeof why);
    if (!server) {
        otfx_archive_close(archive);
        m_path.clear();
        emit failed(tr("cannot serve %1: %2").arg(m_path, QString::fromUtf8(why)));
        return;
    }
    m_archive = archive;
    m_server = server;
    const otfx_archive_info *info = otfx_archive_info_of(archive);
    m_description = tr("%1: %2 ranks, %3 locations, %4 events over %5")
                        .arg(QFileInfo(m_path).fileName())
                        .arg(info->ranks)
                        .arg(info->locations)
                        .arg(formatCount(double(info->events)))
                        .arg(formatDuration(double(info->last_time - info->first_time)));
    if (info->records_ignored)
        m_description += tr(" (%1 records of kinds otfx does not hold skipped)").arg(info->records_ignored);
    SessionInfo session;
    QString readError;
    if (!readSessionFile(QString::fromLocal8Bit(otfx_archive_server_session_path(server)), &session,
                         &readError)) {
        const QString path = m_path;
        close();
        emit failed(tr("cannot serve %1: %2").arg(path, readError));
        return;
    }
    session.startedNs = info->first_time;
    emit opened(session);
}
