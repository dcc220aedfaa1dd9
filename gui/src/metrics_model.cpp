#include "metrics_model.h"

#include <algorithm>

#include <QRegularExpression>

#include <cmath>

MetricsModel::MetricsModel(QObject *parent) : QAbstractTableModel(parent) {}

QString MetricsModel::availableCommand()
{
    return QStringLiteral("metrics available");
}

QString MetricsModel::listCommand()
{
    return QStringLiteral("metrics list");
}

QString MetricsModel::setCommand(const QStringList &metrics)
{
    static const QRegularExpression name(QStringLiteral("^[A-Za-z0-9:._-]+$"));
    if (metrics.size() > 16)
        return QString();
    for (const QString &m : metrics)
        if (!name.match(m).hasMatch())
            return QString();
    return QStringLiteral("metrics set ") +
           (metrics.isEmpty() ? QStringLiteral("none") : metrics.join(QLatin1Char(',')));
}

QString MetricsModel::timelineCommand(const QString &metric, quint64 from, quint64 to, int bins,
                                      const QString &ranks)
{
    // the protocol takes 1–10000 columns
    QString line = QStringLiteral("metric-timeline %1 --from %2ns --to %3ns --bins %4")
                       .arg(metric)
                       .arg(from)
                       .arg(to)
                       .arg(std::clamp(bins, 1, 10000));
    if (!ranks.isEmpty())
        line += QStringLiteral(" --ranks ") + ranks;
    return line;
}

bool MetricsModel::applyAvailable(const Records &records)
{
    QVector<Metric> metrics;
    for (const Record &r : records) {
        if (r.type != "metric")
            continue;
        // every place lists the whole table for its own ranks: the job's counts are their sums
        Metric *m = nullptr;
        for (Metric &known : metrics)
            if (known.name == r.value("name"))
                m = &known;
        if (!m) {
            metrics.append(Metric());
            m = &metrics.last();
            m->name = r.value("name");
            m->unit = r.value("unit");
            m->source = r.value("source");
            m->help = r.value("help");
            m->accumulated = r.u64("accumulated") != 0;
        }
        m->countedRanks += int(r.u64("counted_ranks"));
        m->refusedRanks += int(r.u64("refused_ranks"));
        if (m->reason.isEmpty())
            m->reason = r.value("reason");
    }
    if (metrics.isEmpty())
        return false;
    beginResetModel();
    m_metrics = metrics;
    endResetModel();
    return true;
}

bool MetricsModel::applySelection(const Records &records)
{
    QVector<Selection> selection;
    QVector<Refusal> refusals;
    const auto list = [](const Record &r, const char *key) {
        const QString v = r.value(key);
        return v == QLatin1String("none") ? QStringList() : v.split(QLatin1Char(','), Qt::SkipEmptyParts);
    };
    for (const Record &r : records) {
        if (r.type == "metrics") {
            Selection s;
            s.ranks = r.value("ranks");
            s.place = int(r.u64("place"));
            s.selected = list(r, "selected");
            s.counted = list(r, "counted");
            s.refused = list(r, "refused");
            selection.append(s);
        } else if (r.type == "refused") {
            refusals.append({r.value("ranks"), r.value("metric"), r.value("reason"), int(r.u64("place"))});
        }
    }
    if (selection.isEmpty() && refusals.isEmpty())
        return false;
    beginResetModel();
    m_hasSelection = true;
    m_selection = selection;
    m_refusals = refusals;
    endResetModel();
    return true;
}

bool MetricsModel::applyTimeline(const Records &records, bool final)
{
    const Record *header = findRecord(records, "metric-timeline");
    if (!header)
        return false;
    m_hasTimeline = true;
    m_timelineHeader = *header;
    const Record *partial = findRecord(records, "partial");
    m_partial = !final || partial;
    m_answered = int(partial ? partial->u64("answered") : header->u64("places_answered"));
    m_total = int(partial ? partial->u64("total") : header->u64("places_total"));
    m_rows.clear();
    const int columns = bins();
    const auto cells = [columns](const Record &r, const char *key) {
        QVector<double> values(columns, std::nan(""));
        const QStringList items = r.value(key).split(QLatin1Char(','));
        for (int i = 0; i < columns && i < items.size(); i++) {
            bool ok = false;
            const double v = items[i].toDouble(&ok);
            if (ok) // "-": a cell without data
                values[i] = v;
        }
        return values;
    };
    for (const Record &r : records) {
        if (r.type != "row")
            continue;
        Row row;
        row.index = int(r.u64("index"));
        row.firstRank = int(r.u64("first_rank"));
        row.lastRank = int(r.u64("last_rank"));
        row.min = cells(r, "min_per_s");
        row.mean = cells(r, "mean_per_s");
        row.max = cells(r, "max_per_s");
        m_rows.append(row);
    }
    emit timelineChanged();
    return true;
}

void MetricsModel::clear()
{
    beginResetModel();
    m_metrics.clear();
    m_selection.clear();
    m_refusals.clear();
    m_hasSelection = false;
    m_hasTimeline = m_partial = false;
    m_answered = m_total = 0;
    m_timelineHeader = Record();
    m_rows.clear();
    endResetModel();
    emit timelineChanged();
}

QStringList MetricsModel::selectedNames() const
{
    QStringList names;
    for (const Selection &s : m_selection)
        for (const QString &m : s.selected)
            if (!names.contains(m))
                names.append(m);
    return names;
}

bool MetricsModel::isSelected(const QString &metric) const
{
    for (const Selection &s : m_selection)
        if (s.selected.contains(metric))
            return true;
    return false;
}

int MetricsModel::metricIndex(const QString &name) const
{
    for (int i = 0; i < m_metrics.size(); i++)
        if (m_metrics[i].name == name)
            return i;
    return -1;
}

double MetricsModel::maximumMean() const
{
    double maximum = 0.0;
    for (const Row &r : m_rows)
        for (double v : r.mean)
            if (!std::isnan(v))
                maximum = std::max(maximum, v);
    return maximum;
}

QString MetricsModel::rowLabel(int row) const
{
    const Row &r = m_rows[row];
    return r.firstRank == r.lastRank ? QString::number(r.firstRank)
                                     : QStringLiteral("%1–%2").arg(r.firstRank).arg(r.lastRank);
}

QString MetricsModel::summary() const
{
    if (m_metrics.isEmpty())
        return tr("Ask for the metrics the ranks can count");
    int countable = 0;
    for (const Metric &m : m_metrics)
        countable += m.countedRanks > 0;
    QString text = tr("%1 metrics, %2 counted on some rank").arg(m_metrics.size()).arg(countable);
    if (m_hasSelection) {
        const QStringList selected = selectedNames();
        text +=
            tr("; selected: %1").arg(selected.isEmpty() ? tr("none") : selected.join(QStringLiteral(", ")));
    }
    return text;
}

QString MetricsModel::timelineSummary() const
{
    if (!m_hasTimeline)
        return tr("Choose a metric and ask for its timeline of the visible window");
    QString text = tr("%1 (%2/s), %3 rows × %4 columns, mean per cell; hover for min / max")
                       .arg(timelineMetric(), timelineUnit())
                       .arg(m_rows.size())
                       .arg(bins());
    if (m_partial)
        text += tr(" — partial: %1 of %2 places").arg(m_answered).arg(m_total);
    return text;
}

int MetricsModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : int(m_metrics.size());
}

int MetricsModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant MetricsModel::data(const QModelIndex &index, int role) const
{
    if (!index.isValid() || index.row() >= m_metrics.size())
        return QVariant();
    const Metric &m = m_metrics[index.row()];
    if (role == Qt::ToolTipRole)
        return m.reason.isEmpty() ? m.help : m.help + QStringLiteral("\n") + m.reason;
    if (role != Qt::DisplayRole && role != Qt::UserRole)
        return QVariant();
    switch (index.column()) {
    case Name:
        return m.name;
    case Unit:
        return m.unit;
    case Counted:
        if (role == Qt::UserRole)
            return m.countedRanks;
        if (m.refusedRanks == 0)
            return tr("%1 ranks").arg(m.countedRanks);
        // the reason says what to fix (a kernel setting, a machine without PMU, no PAPI)
        return m.countedRanks == 0
                   ? tr("refused: %1").arg(m.reason)
                   : tr("%1 ranks; %2 refused: %3").arg(m.countedRanks).arg(m.refusedRanks).arg(m.reason);
    case Selected:
        return isSelected(m.name) ? tr("yes") : tr("no");
    }
    return QVariant();
}

QVariant MetricsModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return QVariant();
    static const char *names[] = {"metric", "unit", "counted on", "selected"};
    return section >= 0 && section < ColumnCount ? tr(names[section]) : QVariant();
}
