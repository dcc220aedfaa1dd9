#include "script_runner.h"

#include "analyses_panel.h"
#include "main_window.h"
#include "timeline_view.h"
#include "viewer.h"

#include <QComboBox>
#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QKeyEvent>
#include <QTextStream>

#include <cstdio>

ScriptRunner::ScriptRunner(Viewer *viewer, MainWindow *window, QObject *parent)
    : QObject(parent), m_viewer(viewer), m_window(window)
{
    m_poll.setInterval(100);
    connect(&m_poll, &QTimer::timeout, this, &ScriptRunner::poll);
    connect(viewer, &Viewer::commandAnswered, this,
            [this](quint32 id, const QString &, bool ok, const QString &answer) {
                if (!m_waitingFor || id != m_waitingFor)
                    return;
                m_waitingFor = 0;
                if (ok != m_expectOk)
                    fail(QStringLiteral("the job answered %1 where %2 was expected:\n%3")
                             .arg(ok ? QStringLiteral("ok") : QStringLiteral("an error"),
                                  m_expectOk ? QStringLiteral("success") : QStringLiteral("a failure"),
                                  answer));
                else
                    pass(answer.section(QLatin1Char('\n'), -1));
            });
}

bool ScriptRunner::load(const QString &path, QString *error)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly | QIODevice::Text)) {
        *error = QStringLiteral("cannot read script %1: %2").arg(path, file.errorString());
        return false;
    }
    m_lines = QString::fromUtf8(file.readAll()).split(QLatin1Char('\n'));
    return true;
}

void ScriptRunner::start()
{
    QTimer::singleShot(0, this, &ScriptRunner::next);
}

static void say(const QString &text)
{
    std::fprintf(stdout, "script: %s\n", text.toLocal8Bit().constData());
    std::fflush(stdout);
}

QMap<QString, QString> ScriptRunner::state() const
{
    QMap<QString, QString> all = m_viewer->state();
    for (const auto &more : {m_window->analysesPanel()->state(), m_window->state()})
        for (auto it = more.constBegin(); it != more.constEnd(); ++it)
            all.insert(it.key(), it.value());
    return all;
}

void ScriptRunner::dumpState() const
{
    const auto state = this->state();
    for (auto it = state.constBegin(); it != state.constEnd(); ++it)
        say(QStringLiteral("  state %1 = %2")
                .arg(it.key(), QString(it.value()).replace(QLatin1Char('\n'), QLatin1String(" | "))));
}

void ScriptRunner::fail(const QString &why)
{
    if (m_done)
        return;
    m_done = true;
    m_poll.stop();
    say(QStringLiteral("FAIL at line %1 (%2): %3").arg(m_index + 1).arg(m_step.join(QLatin1Char(' ')), why));
    dumpState();
    emit finished(1);
}

void ScriptRunner::pass(const QString &note)
{
    m_poll.stop();
    m_condition = nullptr;
    say(QStringLiteral("line %1 ok: %2 (%3 s)%4")
            .arg(m_index + 1)
            .arg(m_step.join(QLatin1Char(' ')))
            .arg(double(m_stepTime.elapsed()) / 1000.0, 0, 'f', 2)
            .arg(note.isEmpty() ? QString() : QStringLiteral(" — ") + note));
    QTimer::singleShot(0, this, &ScriptRunner::next);
}

bool ScriptRunner::compare(const QString &key, const QString &op, const QString &expected,
                           QString *actual) const
{
    const auto state = this->state();
    if (!state.contains(key)) {
        *actual = QStringLiteral("(no such state key)");
        return false;
    }
    *actual = state.value(key);
    bool a = false, b = false;
    const double x = actual->toDouble(&a), y = expected.toDouble(&b);
    if (op == QLatin1String("contains"))
        return actual->contains(expected);
    if (op == QLatin1String("==") || op == QLatin1String("="))
        return a && b ? x == y : *actual == expected;
    if (op == QLatin1String("!="))
        return a && b ? x != y : *actual != expected;
    if (!a || !b)
        return false;
    if (op == QLatin1String(">="))
        return x >= y;
    if (op == QLatin1String("<="))
        return x <= y;
    if (op == QLatin1String(">"))
        return x > y;
    if (op == QLatin1String("<"))
        return x < y;
    return false;
}

void ScriptRunner::sendAndWait(const QString &line, bool expectOk)
{
    m_expectOk = expectOk;
    m_waitingFor = m_viewer->command(line);
    m_condition = nullptr;
    m_poll.start(); // for the time limit
}

void ScriptRunner::poll()
{
    if (m_done)
        return;
    if (m_condition) {
        QString why;
        if (m_condition(&why)) {
            pass(why);
            return;
        }
        if (m_stepTime.elapsed() > qint64(m_stepTimeout * 1000.0))
            fail(QStringLiteral("not reached within %1 s: %2").arg(m_stepTimeout).arg(why));
        return;
    }
    if (m_waitingFor && m_stepTime.elapsed() > qint64(m_stepTimeout * 1000.0))
        fail(QStringLiteral("no answer within %1 s").arg(m_stepTimeout));
}

// A step's numeric argument; a malformed one fails the step instead of becoming 0.
static bool positiveNumber(const QString &text, double *value)
{
    bool ok = false;
    *value = text.toDouble(&ok);
    return ok && *value > 0.0;
}

void ScriptRunner::next()
{
    if (m_done)
        return;
    for (;;) {
        m_index++;
        if (m_index >= m_lines.size()) {
            m_done = true;
            say(QStringLiteral("PASS (end of script)"));
            emit finished(0);
            return;
        }
        QString line = m_lines[m_index];
        const int hash = line.indexOf(QLatin1Char('#'));
        if (hash >= 0)
            line.truncate(hash);
        m_step = line.simplified().split(QLatin1Char(' '), Qt::SkipEmptyParts);
        if (!m_step.isEmpty())
            break;
    }
    m_stepTime.start();
    const QString verb = m_step[0];
    const QStringList args = m_step.mid(1);
    m_stepTimeout = m_timeout;
    auto waitFor = [this](const QString &key, const QString &op, const QString &value, int timeoutArg) {
        if (timeoutArg >= 0 && timeoutArg < m_step.size() &&
            !positiveNumber(m_step[timeoutArg], &m_stepTimeout)) {
            fail(QStringLiteral("the timeout '%1' is not a number of seconds").arg(m_step[timeoutArg]));
            return;
        }
        m_condition = [this, key, op, value](QString *why) {
            QString actual;
            const bool ok = compare(key, op, value, &actual);
            *why = QStringLiteral("%1 = %2").arg(key, actual);
            return ok;
        };
        m_poll.start();
        poll();
    };
    double number = 0, centre = 0.5;
    if (verb == QLatin1String("timeout") && args.size() == 1) {
        if (!positiveNumber(args[0], &m_timeout))
            fail(QStringLiteral("timeout needs seconds, not '%1'").arg(args[0]));
        else
            pass();
    } else if (verb == QLatin1String("wait-connected")) {
        waitFor(QStringLiteral("connected"), QStringLiteral("=="), QStringLiteral("1"), 1);
    } else if (verb == QLatin1String("wait-disconnected")) {
        waitFor(QStringLiteral("connected"), QStringLiteral("=="), QStringLiteral("0"), 1);
    } else if (verb == QLatin1String("wait-timeline-nonempty")) {
        waitFor(QStringLiteral("timeline_busy_cells"), QStringLiteral(">"), QStringLiteral("0"), 1);
    } else if (verb == QLatin1String("wait-profile-nonempty")) {
        waitFor(QStringLiteral("profile_rows"), QStringLiteral(">"), QStringLiteral("0"), 1);
    } else if (verb == QLatin1String("wait-events")) {
        waitFor(QStringLiteral("event_intervals"), QStringLiteral(">"), QStringLiteral("0"), 1);
    } else if (verb == QLatin1String("wait") && args.size() >= 3) {
        waitFor(args[0], args[1], args[2], 4);
    } else if (verb == QLatin1String("assert") && args.size() >= 3) {
        QString actual;
        if (compare(args[0], args[1], args.mid(2).join(QLatin1Char(' ')), &actual))
            pass(QStringLiteral("%1 = %2").arg(args[0], actual));
        else
            fail(QStringLiteral("%1 is %2").arg(args[0], actual));
    } else if (verb == QLatin1String("sleep") && args.size() == 1 && !positiveNumber(args[0], &number)) {
        fail(QStringLiteral("sleep needs seconds, not '%1'").arg(args[0]));
    } else if (verb == QLatin1String("sleep") && args.size() == 1) {
        const double seconds = number;
        m_stepTimeout = seconds + 5;
        m_condition = [this, seconds](QString *) { return m_stepTime.elapsed() >= qint64(seconds * 1000.0); };
        m_poll.start();
    } else if (verb == QLatin1String("snapshot") && !args.isEmpty()) {
        m_expectOk = true;
        m_waitingFor = m_viewer->snapshot(args[0], args.contains(QLatin1String("--window")),
                                          args.contains(QLatin1String("--overwrite")));
        m_poll.start();
    } else if (verb == QLatin1String("command") && !args.isEmpty()) {
        sendAndWait(args.join(QLatin1Char(' ')), true);
    } else if (verb == QLatin1String("expect-fail") && !args.isEmpty()) {
        sendAndWait(args.join(QLatin1Char(' ')), false);
    } else if (QStringList{QStringLiteral("record"), QStringLiteral("app"), QStringLiteral("reset"),
                           QStringLiteral("reduction"), QStringLiteral("enable"), QStringLiteral("disable")}
                   .contains(verb)) {
        QString line = m_step.join(QLatin1Char(' '));
        if (verb == QLatin1String("record") && args.size() == 2 && args[0] == QLatin1String("window"))
            line = QStringLiteral("record window %1").arg(args[1]); // "2" means seconds, as on the wire
        sendAndWait(line, true);
    } else if (verb == QLatin1String("zoom") && !args.isEmpty()) {
        bool centreOk = true;
        if (args.size() > 1)
            centre = args[1].toDouble(&centreOk);
        if (!positiveNumber(args[0], &number) || !centreOk || centre < 0.0 || centre > 1.0) {
            fail(QStringLiteral("zoom needs a factor > 0 and a centre in [0, 1]"));
        } else {
            m_viewer->timeline()->zoom(number, centre);
            pass();
        }
    } else if (verb == QLatin1String("zoom-events")) {
        // Zoom around the middle until single events are asked for.
        TimelineModel *t = m_viewer->timeline();
        if (t->hasViewport()) {
            const double target = double(t->eventsNsPerPixel()) * t->bins() * 0.9;
            const double span = double(t->to() - t->from());
            if (span > target)
                t->zoom(target / span, 0.5);
        }
        pass();
    } else if (verb == QLatin1String("show-all")) {
        m_viewer->timeline()->showAll();
        pass();
    } else if (verb == QLatin1String("ranks") && args.size() == 1) {
        if (m_window->applyRankFilter(args[0] == QLatin1String("all") ? QString() : args[0]))
            pass(m_viewer->timeline()->visibleRankSet());
        else
            fail(QStringLiteral("the rank filter '%1' was refused").arg(args[0]));
    } else if (verb == QLatin1String("messages") && !args.isEmpty()) {
        const QString filter = args.join(QLatin1Char(' '));
        if (m_window->applyMessageFilter(filter)) // ("all" clears it, as in the field)
            pass(QStringLiteral("%1 of %2 messages shown")
                     .arg(m_viewer->timeline()->shownMessages())
                     .arg(m_viewer->timeline()->messages().size()));
        else
            fail(QStringLiteral("the message filter '%1' was refused: %2")
                     .arg(filter, state().value(QStringLiteral("filter_error"))));
    } else if (verb == QLatin1String("group-ranks") && args.size() == 1) {
        // "Show these ranks in the timeline" on a structure group (after `analysis structure`)
        bool ok = false;
        const int group = args[0].toInt(&ok);
        QString why;
        if (!ok)
            fail(QStringLiteral("group-ranks needs a group number, not '%1'").arg(args[0]));
        else if (!m_window->analysesPanel()->showGroupRanks(group, &why))
            fail(why);
        else if (!state().value(QStringLiteral("filter_error")).isEmpty())
            fail(QStringLiteral("the timeline refused group %1's ranks: %2")
                     .arg(group)
                     .arg(state().value(QStringLiteral("filter_error"))));
        else
            pass(m_viewer->timeline()->rankFilter());
    } else if (verb == QLatin1String("find-function")) {
        // the profile's "Find function…": typed, then Enter (no text: the search cleared)
        const QString text = args.join(QLatin1Char(' '));
        const QString first = m_window->findFunction(text);
        const QString shown = state().value(QStringLiteral("profile_shown"));
        if (!text.isEmpty() && first.isEmpty())
            fail(QStringLiteral("no function matches '%1'").arg(text));
        else
            pass(text.isEmpty() ? QStringLiteral("%1 functions").arg(shown)
                                : QStringLiteral("%1 functions match, %2 highlighted").arg(shown, first));
    } else if (verb == QLatin1String("rank-window") && args.size() == 2) {
        bool a = false, b = false;
        const int first = args[0].toInt(&a), count = args[1].toInt(&b);
        if (!a || !b || first < 0 || count < 1) {
            fail(QStringLiteral("rank-window needs a first position >= 0 and a count >= 1"));
        } else {
            m_viewer->timeline()->setRankWindow(first, count);
            pass(m_viewer->timeline()->visibleRankSet());
        }
    } else if (verb == QLatin1String("back")) {
        m_viewer->timeline()->back();
        pass();
    } else if (verb == QLatin1String("forward")) {
        m_viewer->timeline()->forward();
        pass();
    } else if (verb == QLatin1String("key") && !args.isEmpty()) {
        // A key press on the timeline, as typed: "key Plus", "key Left alt", "key Minus ctrl".
        static const QHash<QString, int> keys = {
            {QStringLiteral("Plus"), Qt::Key_Plus},     {QStringLiteral("Minus"), Qt::Key_Minus},
            {QStringLiteral("Left"), Qt::Key_Left},     {QStringLiteral("Right"), Qt::Key_Right},
            {QStringLiteral("Up"), Qt::Key_Up},         {QStringLiteral("Down"), Qt::Key_Down},
            {QStringLiteral("PageUp"), Qt::Key_PageUp}, {QStringLiteral("PageDown"), Qt::Key_PageDown},
            {QStringLiteral("Home"), Qt::Key_Home},     {QStringLiteral("Backspace"), Qt::Key_Backspace}};
        Qt::KeyboardModifiers modifiers;
        for (const QString &m : args.mid(1))
            modifiers |= m == QLatin1String("ctrl")    ? Qt::ControlModifier
                         : m == QLatin1String("alt")   ? Qt::AltModifier
                         : m == QLatin1String("shift") ? Qt::ShiftModifier
                                                       : Qt::NoModifier;
        if (!keys.contains(args[0])) {
            fail(QStringLiteral("unknown key '%1'").arg(args[0]));
        } else {
            QKeyEvent press(QEvent::KeyPress, keys.value(args[0]), modifiers);
            QCoreApplication::sendEvent(m_window->timelineView(), &press);
            pass();
        }
    } else if (verb == QLatin1String("colour") && args.size() == 1 &&
               (args[0] == QLatin1String("role") || args[0] == QLatin1String("function"))) {
        m_window->findChild<QComboBox *>(QStringLiteral("colourBy"))
            ->setCurrentIndex(args[0] == QLatin1String("function") ? 1 : 0);
        pass();
    } else if (verb == QLatin1String("check-screen")) {
        // The screen's structure, not its pixels: rows drawn, ruler and rank labels distinct.
        TimelineView *view = m_window->timelineView();
        const int wanted = args.isEmpty() ? 1 : args[0].toInt();
        const int painted = view->paintedSlots();
        QStringList ticks;
        for (const auto &tick : view->ticks())
            ticks << tick.label;
        const QStringList ranks = view->rankLabels();
        const auto distinct = [](const QStringList &list) {
            return QSet<QString>(list.begin(), list.end()).size();
        };
        const QString note = QStringLiteral("%1 of %2 rows drawn; ruler %3; ranks %4")
                                 .arg(painted)
                                 .arg(m_viewer->timeline()->slotCount())
                                 .arg(ticks.join(QStringLiteral(", ")), ranks.join(QStringLiteral(", ")));
        if (painted < wanted)
            fail(QStringLiteral("fewer rows drawn than %1: %2").arg(wanted).arg(note));
        else if (ticks.size() < 2 || distinct(ticks) != ticks.size())
            fail(QStringLiteral("the ruler's labels are not distinct: %1").arg(note));
        else if (ranks.isEmpty() || distinct(ranks) != ranks.size())
            fail(QStringLiteral("the rank labels are not distinct: %1").arg(note));
        else
            pass(note);
    } else if (verb == QLatin1String("follow") && args.size() == 1) {
        m_viewer->timeline()->setFollowLive(args[0] == QLatin1String("on"));
        pass();
    } else if (verb == QLatin1String("highlight")) {
        const QString region =
            args.isEmpty() ? m_viewer->profile()->regionAt(0) : args.join(QLatin1Char(' '));
        m_window->timelineView()->setHighlight(region);
        pass(region);
    } else if (verb == QLatin1String("screenshot") && args.size() == 1) {
        const QString path = QFileInfo(args[0]).absoluteFilePath();
        QDir().mkpath(QFileInfo(path).absolutePath());
        if (m_window->saveScreenshot(path))
            pass(path);
        else
            fail(QStringLiteral("could not write %1").arg(path));
    } else if (verb == QLatin1String("open-archive") && args.size() == 1) {
        m_window->analysesPanel()->openArchive(QFileInfo(args[0]).absoluteFilePath());
        pass(args[0]);
    } else if (verb == QLatin1String("analysis") && !args.isEmpty()) {
        // asks like the analysis' button and waits for every answer (its failure fails the step)
        if (!m_window->analysesPanel()->ask(args[0], args.mid(1).join(QLatin1Char(' ')))) {
            fail(QStringLiteral("unknown analysis '%1' or not connected").arg(args[0]));
        } else {
            m_condition = [this](QString *why) {
                const auto s = state();
                *why =
                    QStringLiteral("analyses_pending = %1").arg(s.value(QStringLiteral("analyses_pending")));
                if (!s.value(QStringLiteral("analyses_error")).isEmpty()) {
                    fail(s.value(QStringLiteral("analyses_error")));
                    return false;
                }
                return s.value(QStringLiteral("analyses_pending")) == QLatin1String("0");
            };
            m_poll.start();
        }
    } else if (verb == QLatin1String("disconnect")) {
        m_viewer->client()->disconnectFromServer();
        pass();
    } else if (verb == QLatin1String("reconnect")) {
        m_viewer->reconnect();
        pass();
    } else if (verb == QLatin1String("print")) {
        dumpState();
        pass();
    } else if (verb == QLatin1String("quit")) {
        m_done = true;
        const int code = args.isEmpty() ? 0 : args[0].toInt();
        say(QStringLiteral("quit %1").arg(code));
        emit finished(code);
    } else {
        fail(QStringLiteral("unknown step or wrong arguments (see docs/gui.md)"));
    }
}
