#include "session.h"

#include "records.h"

#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QRegularExpression>
#include <QSet>

#include <cstdio>

#include <sys/stat.h>
#include <unistd.h>

QString defaultSessionDirectory()
{
    const QByteArray dir = qgetenv("OTFX_SESSION_DIR");
    return dir.isEmpty() ? QDir::currentPath() : QString::fromLocal8Bit(dir);
}

QString untrustedSessionFile(const QString &path)
{
    struct stat st;
    if (::stat(QFile::encodeName(path).constData(), &st) != 0)
        return QStringLiteral("cannot be read");
    if (!S_ISREG(st.st_mode))
        return QStringLiteral("not a regular file");
    if (st.st_uid != ::geteuid())
        return QStringLiteral("owned by uid %1, not by you (uid %2)").arg(st.st_uid).arg(::geteuid());
    if ((st.st_mode & 07777) != 0600)
        return QStringLiteral("mode %1, not 0600 (others could read it or have written it)")
            .arg(uint(st.st_mode & 07777), 4, 8, QLatin1Char('0'));
    return QString();
}

QString newestSessionFile(const QString &directory)
{
    QDir dir(directory);
    const QFileInfoList files =
        dir.entryInfoList(QStringList{QStringLiteral("otfx-session-*.txt")}, QDir::Files | QDir::Readable);
    QString best;
    QDateTime bestTime;
    static QSet<QString> warned; // discovery runs every half second: say it once per file
    for (const QFileInfo &info : files) {
        const QString why = untrustedSessionFile(info.absoluteFilePath());
        if (!why.isEmpty()) {
            if (!warned.contains(info.absoluteFilePath())) {
                warned.insert(info.absoluteFilePath());
                std::fprintf(stderr, "otfx-gui: ignoring the session file %s: %s\n",
                             info.absoluteFilePath().toLocal8Bit().constData(),
                             why.toLocal8Bit().constData());
            }
            continue;
        }
        if (best.isEmpty() || info.lastModified() > bestTime) {
            best = info.absoluteFilePath();
            bestTime = info.lastModified();
        }
    }
    return best;
}

static bool isToken(const QString &text)
{
    static const QRegularExpression hex(QStringLiteral("^[0-9a-f]{32}$"));
    return hex.match(text).hasMatch();
}

bool readSessionFile(const QString &path, SessionInfo *out, QString *error)
{
    const QString why = untrustedSessionFile(path);
    if (!why.isEmpty() && QFileInfo::exists(path)) {
        *error = QStringLiteral("not using the session file %1: %2").arg(path, why);
        return false;
    }
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) {
        *error = QStringLiteral("cannot read %1: %2").arg(path, file.errorString());
        return false;
    }
    const Records records = parseRecords(file.read(64 * 1024));
    const Record *session = findRecord(records, "session");
    if (!session) {
        *error = QStringLiteral("%1 is not an otfx session file (no \"session\" line)").arg(path);
        return false;
    }
    SessionInfo info;
    info.path = path;
    info.address = session->value("address");
    info.port = quint16(session->u64("port"));
    info.token = session->value("token");
    info.job = session->value("job");
    info.ranks = session->u64("ranks");
    info.places = session->u64("places");
    info.startedNs = session->u64("started_ns");
    if (!info.valid() || !isToken(info.token)) {
        *error = QStringLiteral("%1: the session line lacks address, port or a 32-digit token").arg(path);
        return false;
    }
    *out = info;
    return true;
}

bool readTokenFile(const QString &path, QString *token, QString *error)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) {
        *error = QStringLiteral("cannot read %1: %2").arg(path, file.errorString());
        return false;
    }
    const QByteArray content = file.read(64 * 1024);
    const QString plain = QString::fromUtf8(content).trimmed();
    if (isToken(plain)) {
        *token = plain;
        return true;
    }
    const Record *session = nullptr;
    const Records records = parseRecords(content);
    session = findRecord(records, "session");
    if (session && isToken(session->value("token"))) {
        *token = session->value("token");
        return true;
    }
    *error = QStringLiteral("%1 holds neither a session line nor a 32-digit token").arg(path);
    return false;
}

bool parseAddress(const QString &text, QString *address, quint16 *port)
{
    const int colon = text.lastIndexOf(QLatin1Char(':'));
    if (colon <= 0)
        return false;
    QString host = text.left(colon);
    if (host.startsWith(QLatin1Char('[')) && host.endsWith(QLatin1Char(']')))
        host = host.mid(1, host.size() - 2);
    bool ok = false;
    const uint value = text.mid(colon + 1).toUInt(&ok);
    if (!ok || value == 0 || value > 65535 || host.isEmpty())
        return false;
    *address = host;
    *port = quint16(value);
    return true;
}
