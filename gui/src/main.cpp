// otfx-gui — the Qt5 viewer of a running otfx job. docs/gui.md is its manual.
#include "analyses_panel.h"
#include "main_window.h"
#include "script_runner.h"
#include "theme.h"
#include "viewer.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QTimer>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

int main(int argc, char **argv)
{
    // Sizes follow the screen's scale (high-DPI desktops), fractional factors as the desktop sets them.
    // Qt reads these attributes only before the application object exists.
    QCoreApplication::setAttribute(Qt::AA_EnableHighDpiScaling);
    QCoreApplication::setAttribute(Qt::AA_UseHighDpiPixmaps);
    QGuiApplication::setHighDpiScaleFactorRoundingPolicy(Qt::HighDpiScaleFactorRoundingPolicy::PassThrough);
    // Qt takes "-session ID" and "--session ID" for X11 session management and removes both words
    // before our parser sees them; "--session=FILE" it leaves alone. So the documented "--session FILE"
    // is joined into that form first.
    std::vector<std::string> words;
    for (int i = 0; i < argc; i++) {
        const bool session = std::strcmp(argv[i], "--session") == 0 || std::strcmp(argv[i], "-session") == 0;
        if (session && i + 1 < argc) {
            words.push_back(std::string("--session=") + argv[++i]);
        } else {
            words.push_back(argv[i]);
        }
    }
    std::vector<char *> joined;
    for (std::string &word : words)
        joined.push_back(word.data());
    joined.push_back(nullptr);
    int joinedCount = int(words.size());
    QApplication app(joinedCount, joined.data());
    QApplication::setApplicationName(QStringLiteral("otfx-gui"));
    QApplication::setApplicationVersion(QStringLiteral("0.1.0"));

    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral("The otfx viewer: connects to a running otfx job (the "
                                                    "newest otfx-session-*.txt in $OTFX_SESSION_DIR or "
                                                    "the working directory, unless told otherwise), shows "
                                                    "its status, timeline and profile, and steers it."));
    parser.addHelpOption();
    parser.addVersionOption();
    const QCommandLineOption connectOption(QStringLiteral("connect"), QStringLiteral("the job's address"),
                                           QStringLiteral("ADDR:PORT"));
    const QCommandLineOption tokenOption(QStringLiteral("token-file"),
                                         QStringLiteral("a session file or a file holding only the token"),
                                         QStringLiteral("FILE"));
    const QCommandLineOption sessionOption(QStringLiteral("session"),
                                           QStringLiteral("the job's session file"), QStringLiteral("FILE"));
    const QCommandLineOption dirOption(
        QStringLiteral("session-dir"),
        QStringLiteral("where to look for session files (default: $OTFX_SESSION_DIR, "
                       "else the working directory)"),
        QStringLiteral("DIR"));
    const QCommandLineOption scriptOption(
        QStringLiteral("script"),
        QStringLiteral("run the steps of FILE (see docs/gui.md), then quit; exit "
                       "status 1 when a step fails"),
        QStringLiteral("FILE"));
    const QCommandLineOption eventsOption(QStringLiteral("events-below"),
                                          QStringLiteral("show single events when a pixel covers at most NS "
                                                         "nanoseconds (default 20000)"),
                                          QStringLiteral("NS"));
    const QCommandLineOption archiveOption(
        QStringLiteral("archive"),
        QStringLiteral("open an OTF2 archive after the run (otfx's snapshot or Score-P's: its .otf2 file or "
                       "its directory) instead of connecting to a job; the same views and analyses"),
        QStringLiteral("FILE"));
    const QCommandLineOption themeOption(
        QStringLiteral("theme"), QStringLiteral("system (default: the desktop's colours), dark or light"),
        QStringLiteral("NAME"));
    parser.addOptions({connectOption, tokenOption, sessionOption, dirOption, scriptOption, eventsOption});
    parser.addOptions({archiveOption, themeOption});
    parser.process(app);

    auto usage = [](const QString &message) {
        std::fprintf(stderr, "otfx-gui: %s\n", message.toLocal8Bit().constData());
        return 2;
    };
    if (!theme::apply(&app, parser.value(themeOption)))
        return usage(
            QStringLiteral("bad --theme '%1': system, dark or light").arg(parser.value(themeOption)));
    if (parser.isSet(archiveOption) && (parser.isSet(connectOption) || parser.isSet(sessionOption)))
        return usage(QStringLiteral("--archive opens a finished run: not with --connect or --session"));
    Viewer viewer;
    if (parser.isSet(eventsOption))
        viewer.timeline()->setEventsNsPerPixel(parser.value(eventsOption).toULongLong());
    SessionInfo session;
    QString error;
    if (parser.isSet(connectOption)) {
        if (!parseAddress(parser.value(connectOption), &session.address, &session.port, &error))
            return usage(QStringLiteral("bad --connect '%1': %2").arg(parser.value(connectOption), error));
        if (!parser.isSet(tokenOption))
            return usage(QStringLiteral("--connect needs --token-file"));
        if (!readTokenFile(parser.value(tokenOption), &session.token, &error))
            return usage(error);
    } else if (parser.isSet(sessionOption)) {
        if (!readSessionFile(parser.value(sessionOption), &session, &error))
            return usage(error);
    }
    viewer.setSessionDirectory(parser.isSet(dirOption) ? parser.value(dirOption) : defaultSessionDirectory());

    MainWindow window(&viewer);
    window.show();

    if (parser.isSet(archiveOption)) {
        window.analysesPanel()->openArchive(parser.value(archiveOption));
    } else if (session.valid()) {
        viewer.connectToSession(session);
    } else {
        // An archive opened meanwhile (Job ▸ Open archive) is what the user looks at now: a job found
        // later must not take the views over.
        QObject::connect(window.analysesPanel()->archive(), &ArchiveBackend::opened, &viewer,
                         &Viewer::stopDiscovery);
        if (!viewer.discover()) {
            // No job yet: the viewer keeps looking every half second (a job starting up); meanwhile the
            // connect dialog offers the other ways, and closes itself when a job is found.
            std::fprintf(stderr, "otfx-gui: no otfx-session-*.txt in %s yet; waiting for one\n",
                         viewer.sessionDirectory().toLocal8Bit().constData());
            if (!parser.isSet(scriptOption))
                QTimer::singleShot(0, &window, [&window, &viewer] {
                    if (viewer.client()->state() == ProtocolClient::Disconnected)
                        window.openConnectDialog();
                });
        }
    }

    ScriptRunner *runner = nullptr;
    if (parser.isSet(scriptOption)) {
        runner = new ScriptRunner(&viewer, &window, &app);
        if (!runner->load(parser.value(scriptOption), &error))
            return usage(error);
        QObject::connect(runner, &ScriptRunner::finished, &app,
                         [](int code) { QCoreApplication::exit(code); });
        runner->start();
    }
    return app.exec();
}
