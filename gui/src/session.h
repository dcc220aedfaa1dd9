// session.h — finding a job: session files (docs/protocol.md section 1) and token files, in Qt types
// over the client library (otfx/client.h) that otfxctl uses too: the same rules and messages.
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
// Why a session file must not be used (empty: it may be): not the user's own, or not mode 0600 — it
// names the server the token goes to.
QString untrustedSessionFile(const QString &path);
// The newest otfx-session-*.txt (by modification time) in `directory` that may be used, or an empty
// string; files of another owner or another mode than 0600 are named on stderr (once each) and skipped.
QString newestSessionFile(const QString &directory);
// Reads a session file (its first line); false with *error set when it is not one or may not be used.
bool readSessionFile(const QString &path, SessionInfo *out, QString *error);
// A --token-file: a session file, or a file whose first line is only the 32 hex digits of the token.
bool readTokenFile(const QString &path, QString *token, QString *error);
// "ADDR:PORT" (IPv6 as [ADDR]:PORT); false with why in *error (when given).
bool parseAddress(const QString &text, QString *address, quint16 *port, QString *error = nullptr);
