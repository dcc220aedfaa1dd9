// snapshot_dialog.h — "save a snapshot": a name the job resolves under its snapshot directory
// (otfx-run --snapshot-dir), the whole buffers or only the visible window, overwrite or not.
#pragma once

#include <QDialog>

class QLineEdit;
class QRadioButton;
class QCheckBox;
class QLabel;

class SnapshotDialog : public QDialog
{
    Q_OBJECT
  public:
    // `snapshotDir` is where the job writes snapshots as far as the viewer can tell (for browsing).
    SnapshotDialog(const QString &snapshotDir, const QString &window, QWidget *parent = nullptr);
    QString name() const;
    bool visibleWindow() const;
    bool overwrite() const;

  private:
    void browse();
    void accept() override;
    QString m_dir;
    QLineEdit *m_name;
    QRadioButton *m_whole, *m_visible;
    QCheckBox *m_overwrite;
    QLabel *m_message;
};
