#include "wait_states_model.h"

#include "format.h"

WaitStatesModel::WaitStatesModel(QObject *parent) : QAbstractTableModel(parent) {}

const char *WaitStatesModel::kindKey(int kind)
{
    static const char *keys[KindCount] = {"late_sender_ns", "late_receiver_ns", "wait_nxn_ns",
                                          "late_broadcast_ns", "early_reduce_ns"};
    return kind >= 0 && kind < KindCount ? keys[kind] : "";
}

QString WaitStatesModel::kindName(int kind)
{
    static const char *names[KindCount] = {"late sender", "late receiver", "wait at N×N", "late broadcast",
                                           "early reduce"};
    return kind >= 0 && kind < KindCount ? tr(names[kind]) : QString();
}

QString WaitStatesModel::command(const QString &windowOptions, int top, int pairs)
{
    QString line = QStringLiteral("wait-states");
    if (!windowOptions.isEmpty())
        line += QLatin1Char(' ') + windowOptions;
    return line + QStringLiteral(" --top %1 --limit %2").arg(top).arg(pairs);
}

bool WaitStatesModel::applyReply(const Records &records)
{
    const Record *header = findRecord(records, "wait-states");
    if (!header)
        return false;
    beginResetModel();
    m_hasAnswer = true;
    m_header = *header;
    m_functions.clear();
    m_ranks.clear();
    m_pairs.clear();
    for (const Record &record : records) {
        if (record.type == "ws-function") {
            FunctionWait f;
            f.name = record.value("name");
            f.kind = record.value("kind");
            f.waitNs = record.u64("wait_ns");
            f.count = record.u64("count");
            f.share = record.f64("share");
            m_functions.append(f);
        } else if (record.type == "ws-rank") {
            RankWait r;
            r.rank = int(record.u64("rank"));
            r.waitNs = record.u64("wait_ns");
            for (int k = 0; k < KindCount; k++)
                r.byKind[k] = record.u64(kindKey(k));
            m_ranks.append(r);
        } else if (record.type == "ws-pair") {
            Pair p;
            p.waiting = int(record.u64("waiting"));
            p.causing = int(record.u64("causing"));
            p.waitNs = record.u64("wait_ns");
            p.share = record.f64("share");
            m_pairs.append(p);
        }
    }
    endResetModel();
    return true;
}

void WaitStatesModel::clear()
{
    beginResetModel();
    m_hasAnswer = false;
    m_header = Record();
    m_functions.clear();
    m_ranks.clear();
    m_pairs.clear();
    endResetModel();
    m_slices.clear();
    emit slicesChanged();
}

QStringList WaitStatesModel::startSlices(quint64 from, quint64 to, int count)
{
    m_slices.clear();
    QStringList lines;
    if (to <= from || count <= 0) {
        emit slicesChanged();
        return lines;
    }
    count = int(std::min<quint64>(quint64(count), to - from));
    for (int i = 0; i < count; i++) {
        Slice slice;
        slice.from = from + (to - from) * quint64(i) / quint64(count);
        slice.to = from + (to - from) * quint64(i + 1) / quint64(count);
        m_slices.append(slice);
        // every rank's total in the slice (--top: the rank lines); no pairs needed
        lines << QStringLiteral("wait-states --from %1ns --to %2ns --top 4096 --limit 1 --no-flush")
                     .arg(slice.from)
                     .arg(slice.to);
    }
    emit slicesChanged();
    return lines;
}

bool WaitStatesModel::applySlice(int index, const Records &records)
{
    if (index < 0 || index >= m_slices.size() || !findRecord(records, "wait-states"))
        return false;
    Slice &slice = m_slices[index];
    slice.answered = true;
    slice.waitNs.clear();
    for (const Record &record : records)
        if (record.type == "ws-rank")
            slice.waitNs.insert(int(record.u64("rank")), record.u64("wait_ns"));
    emit slicesChanged();
    return true;
}

int WaitStatesModel::slicesAnswered() const
{
    return int(std::count_if(m_slices.begin(), m_slices.end(), [](const Slice &s) { return s.answered; }));
}

quint64 WaitStatesModel::sliceMaximum() const
{
    quint64 maximum = 0;
    for (const Slice &slice : m_slices)
        for (quint64 v : slice.waitNs)
            maximum = std::max(maximum, v);
    return maximum;
}

QString WaitStatesModel::summary() const
{
    if (!m_hasAnswer)
        return tr("no wait states computed yet");
    QStringList kinds;
    for (int k = 0; k < KindCount; k++)
        if (kindNs(k))
            kinds << tr("%1 %2").arg(kindName(k), formatDuration(double(kindNs(k))));
    QString text = tr("%1 waiting in MPI for other ranks").arg(formatDuration(double(totalNs())));
    if (!kinds.isEmpty())
        text += QStringLiteral(": ") + kinds.join(QStringLiteral(", "));
    if (!m_pairs.isEmpty())
        text += tr("; most: rank %1 waiting for rank %2 (%3)")
                    .arg(m_pairs[0].waiting)
                    .arg(m_pairs[0].causing)
                    .arg(formatDuration(double(m_pairs[0].waitNs)));
    if (m_header.u64("late_receiver_unknown"))
        text += tr("; %1 blocking sends not rated").arg(m_header.u64("late_receiver_unknown"));
    if (m_header.u64("partial"))
        text += tr(" (partial: %1 of %2 places)")
                    .arg(m_header.value("places_answered"), m_header.value("places_total"));
    return text;
}

int WaitStatesModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : int(m_functions.size());
}

int WaitStatesModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant WaitStatesModel::data(const QModelIndex &index, int role) const
{
    if (!index.isValid() || index.row() >= m_functions.size())
        return QVariant();
    const FunctionWait &f = m_functions[index.row()];
    if (role == Qt::TextAlignmentRole)
        return index.column() <= Kind ? QVariant(Qt::AlignLeft | Qt::AlignVCenter)
                                      : QVariant(Qt::AlignRight | Qt::AlignVCenter);
    const bool sortKey = role == Qt::UserRole;
    if (role != Qt::DisplayRole && !sortKey)
        return QVariant();
    switch (index.column()) {
    case Function:
        return f.name;
    case Kind:
        return f.kind;
    case Wait:
        return sortKey ? QVariant(f.waitNs) : QVariant(formatDuration(double(f.waitNs)));
    case Count:
        return sortKey ? QVariant(f.count) : QVariant(QString::number(f.count));
    case Share:
        return sortKey ? QVariant(f.share) : QVariant(QString::number(f.share * 100.0, 'f', 1) + '%');
    default:
        return QVariant();
    }
}

QVariant WaitStatesModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return QVariant();
    static const char *names[] = {"MPI function", "kind", "waiting", "times", "share"};
    return section >= 0 && section < ColumnCount ? tr(names[section]) : QVariant();
}
