// session.cpp — the viewer's side of finding a job: Qt types around the client library's session
// discovery (otfx/client.h), so the viewer, otfxctl and the Python client follow one set of rules.
#include "session.h"

#include <otfx/client.h>

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QSet>

#include <cstdio>

QString defaultSessionDirectory()
{
    const QString dir = QString::fromLocal8Bit(otfx_session_default_dir());
    return dir == QLatin1String(".") ? QDir::currentPath() : dir;
}

QString untrustedSessionFile(const QString &path)
{
    char why[256];
    if (otfx_session_file_trusted(QFile::encodeName(path).constData(), why, sizeof why))
        return QString();
    return QString::fromLocal8Bit(why);
}

// Discovery runs every half second while the viewer waits for a job: each skipped file is named once.
static void warnOnce(void *, const char *path, const char *why)
{
    static QSet<QByteArray> warned;
    if (warned.contains(QByteArray(path)))
        return;
    warned.insert(QByteArray(path));
    std::fprintf(stderr, "otfx-gui: ignoring the session file %s: %s\n", path, why);
}

QString newestSessionFile(const QString &directory)
{
    char path[4096];
    if (!otfx_session_find_newest(QFile::encodeName(directory).constData(), path, sizeof path, warnOnce,
                                  nullptr))
        return QString();
    return QFileInfo(QFile::decodeName(path)).absoluteFilePath();
}

bool readSessionFile(const QString &path, SessionInfo *out, QString *error)
{
    otfx_session session;
    char why[8192];
    if (otfx_session_read(QFile::encodeName(path).constData(), &session, why, sizeof why) != OTFX_CLIENT_OK) {
        *error = QString::fromLocal8Bit(why);
        return false;
    }
    SessionInfo info;
    info.path = path;
    info.address = QString::fromUtf8(session.address);
    info.port = quint16(QByteArray(session.port).toUInt());
    info.token = QString::fromLatin1(session.token);
    info.job = QString::fromUtf8(session.job);
    info.ranks = session.ranks;
    info.places = session.places;
    info.startedNs = session.started_ns;
    *out = info;
    return true;
}

bool readTokenFile(const QString &path, QString *token, QString *error)
{
    char found[OTFX_SESSION_TOKEN_DIGITS + 1], why[8192];
    if (otfx_session_read_token(QFile::encodeName(path).constData(), found, sizeof found, why, sizeof why) !=
        OTFX_CLIENT_OK) {
        *error = QString::fromLocal8Bit(why);
        return false;
    }
    *token = QString::fromLatin1(found);
    return true;
}

bool parseAddress(const QString &text, QString *address, quint16 *port, QString *error)
{
    char host[256], digits[16], why[128];
    if (!otfx_parse_address(text.toUtf8().constData(), host, sizeof host, digits, sizeof digits, why,
                            sizeof why)) {
        if (error)
            *error = QString::fromUtf8(why);
        return false;
    }
    *address = QString::fromUtf8(host);
    *port = quint16(QByteArray(digits).toUInt());
    return true;
}
