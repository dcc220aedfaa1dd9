// archive_backend.h — an OTF2 archive (otfx's snapshot or Score-P's) opened after the run and served in
// this process (otfx/archive.h): read on a worker thread into an in-process store, then served by the
// root's own server on 127.0.0.1 with a private session file. The viewer connects to it like to a live
// job, so every model gets its answers through the one protocol client, from the same analysis modules.
#pragma once

#include "session.h"

#include <QMetaType>
#include <QObject>
#include <QString>

Q_DECLARE_METATYPE(SessionInfo)

struct otfx_archive;
struct otfx_archive_server;

class ArchiveBackend : public QObject
{
    Q_OBJECT
  public:
    explicit ArchiveBackend(QObject *parent = nullptr);
    ~ArchiveBackend() override;

    // Starts reading the archive (its .otf2 anchor file, or the directory holding one); opened() or
    // failed() follows. An archive served before is closed first.
    void open(const QString &path);
    void close();
    bool opening() const
    {
        return m_opening;
    }
    bool serving() const
    {
        return m_server != nullptr;
    }
    QString path() const
    {
        return m_path;
    }
    // What the archive held, for people: ranks, locations, events, records otfx has no event for.
    QString description() const
    {
        return m_description;
    }

    // The anchor file of PATH: PATH itself, or the one *.otf2 file of a directory (a snapshot's name).
    static QString anchorOf(const QString &path, QString *error);

  signals:
    // The session to connect to (its started_ns: the archive's first event, so times read from there).
    void opened(const SessionInfo &session);
    void failed(const QString &why);

  private:
    void finishOpening(otfx_archive *archive, const QString &error);

    otfx_archive *m_archive = nullptr;
    otfx_archive_server *m_server = nullptr;
    QString m_path, m_description;
    bool m_opening = false;
    quint64 m_generation = 0; // an open() started later supersedes one still reading
};
