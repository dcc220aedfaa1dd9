#include "records.h"

#include <otfx/protocol.h>

QString Record::value(const char *key, const QString &fallback) const
{
    auto it = fields.constFind(QByteArray(key));
    return it == fields.constEnd() ? fallback : it.value();
}

quint64 Record::u64(const char *key, quint64 fallback) const
{
    bool ok = false;
    const quint64 v = value(key).toULongLong(&ok);
    return ok ? v : fallback;
}

qint64 Record::i64(const char *key, qint64 fallback) const
{
    bool ok = false;
    const qint64 v = value(key).toLongLong(&ok);
    return ok ? v : fallback;
}

double Record::f64(const char *key, double fallback) const
{
    bool ok = false;
    const double v = value(key).toDouble(&ok);
    return ok ? v : fallback;
}

QString Record::text() const
{
    QString out = QString::fromUtf8(type);
    for (const QByteArray &key : order)
        out += QLatin1Char(' ') + QString::fromUtf8(key) + QLatin1Char('=') + fields.value(key);
    return out;
}

Records parseRecords(const QByteArray &payload, int *malformed)
{
    Records records;
    int bad = 0;
    size_t offset = 0;
    const char *line = nullptr;
    size_t length = 0;
    while (otfx_kv_next_line(payload.constData(), static_cast<size_t>(payload.size()), &offset, &line,
                             &length)) {
        if (length == 0)
            continue;
        otfx_kv_line parsed;
        if (!otfx_kv_parse(line, length, &parsed)) {
            bad++;
            continue;
        }
        Record record;
        record.type = QByteArray(parsed.type);
        for (size_t i = 0; i < parsed.count; i++) {
            const QByteArray key(parsed.fields[i].key);
            if (!record.fields.contains(key)) { // readers take the first of a repeated key
                record.fields.insert(key, QString::fromUtf8(parsed.fields[i].value));
                record.order.append(key);
            }
        }
        otfx_kv_line_free(&parsed);
        records.append(record);
    }
    if (malformed)
        *malformed = bad;
    return records;
}

const Record *findRecord(const Records &records, const char *type)
{
    for (const Record &record : records)
        if (record.type == type)
            return &record;
    return nullptr;
}

QString encodeWord(const QString &word)
{
    otfx_text text = {};
    const QByteArray utf8 = word.toUtf8();
    otfx_text_append_encoded(&text, utf8.constData());
    const QString out =
        text.failed || !text.data ? QString() : QString::fromUtf8(text.data, int(text.length));
    otfx_text_free(&text);
    return out;
}
