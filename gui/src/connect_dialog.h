// connect_dialog.h — choose a job: the newest session file of the viewer's session directory
// (--session-dir, else $OTFX_SESSION_DIR, else ./), a session file, or an address with a token (file).
#pragma once

#include "session.h"

#include <QDialog>

class QLineEdit;
class QLabel;

class ConnectDialog : public QDialog
{
    Q_OBJECT
  public:
    ConnectDialog(const SessionInfo &current, const QString &sessionDirectory, QWidget *parent = nullptr);
    SessionInfo session() const
    {
        return m_session;
    }

    // Fills in the newest session file of the session directory, or says (with the time of the search)
    // that there is none yet; true when one was found.
    bool findNewest();
    QString message() const;

  private:
    void browseSession();
    void browseToken();
    void accept() override;

    QLineEdit *m_sessionFile, *m_address, *m_tokenFile;
    QLabel *m_message;
    SessionInfo m_session;
    QString m_directory;
};
