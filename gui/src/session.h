// session.h — finding a job: session files (docs/protocol.md section 1) and token files.
#pragma once

#include <QString>

struct SessionInfo {
    QString path; // the session file, empty when given by --connect
    QString address;
    quint16 port = 0;
    QString token;
    QString job;
    quint64 ranks = 0, places = 0, startedNs = 0;
    bool valid() const
    {
        return !address.isEmpty() && port != 0 && token.size() == 32;
    }
};

// The directory to search: $OTFX_SESSION_DIR, else the working directory.
QString defaultSessionDirectory();
// The newest otfx-session-*.txt (by modification time) in `directory`, or an empty string.
QString newestSessionFile(const QString &directory);
// Reads a session file; false with *error set when it is not one.
bool readSessionFile(const QString &path, SessionInfo *out, QString *error);
// A --token-file: a session file, or a file holding only the 32 hex digits of the token.
bool readTokenFile(const QString &path, QString *token, QString *error);
// "ADDR:PORT" (IPv6 as [ADDR]:PORT).
bool parseAddress(const QString &text, QString *address, quint16 *port);
