// connect_dialog.h — choose a job: the newest session file of a directory, a session file, or an
// address with a token (file).
#pragma once

#include "session.h"

#include <QDialog>

class QLineEdit;
class QLabel;

class ConnectDialog : public QDialog
{
    Q_OBJECT
  public:
    explicit ConnectDialog(const SessionInfo &current, QWidget *parent = nullptr);
    SessionInfo session() const
    {
        return m_session;
    }

  private:
    void findNewest();
    void browseSession();
    void browseToken();
    void accept() override;

    QLineEdit *m_sessionFile, *m_address, *m_tokenFile;
    QLabel *m_message;
    SessionInfo m_session;
};
