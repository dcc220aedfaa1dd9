// records.h — record lines (docs/protocol.md section 4) as Qt values, parsed with otfx_protocol's
// otfx_kv_parse so the viewer and the C tools read the wire format through one implementation.
#pragma once

#include <QByteArray>
#include <QHash>
#include <QMetaType>
#include <QString>
#include <QVector>

struct Record {
    QByteArray type;
    QHash<QByteArray, QString> fields;
    QVector<QByteArray> order; // the keys as they came, for text()

    bool has(const char *key) const
    {
        return fields.contains(QByteArray(key));
    }
    QString value(const char *key, const QString &fallback = QString()) const;
    quint64 u64(const char *key, quint64 fallback = 0) const;
    qint64 i64(const char *key, qint64 fallback = 0) const;
    double f64(const char *key, double fallback = 0.0) const;
    // The line again, for logs ("TYPE key=value ..." with values decoded).
    QString text() const;
};

using Records = QVector<Record>;
Q_DECLARE_METATYPE(Record)
Q_DECLARE_METATYPE(Records)

// Parses a payload of record lines; malformed lines are skipped and counted in *malformed.
Records parseRecords(const QByteArray &payload, int *malformed = nullptr);
// The first record of a type, or nullptr.
const Record *findRecord(const Records &records, const char *type);
// Percent-encodes one word of a command line (a snapshot name with a blank etc.).
QString encodeWord(const QString &word);
