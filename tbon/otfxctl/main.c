/*
 * otfxctl — the command-line client of a running otfx job (docs/protocol.md, docs/usage.md).
 *
 *   otfxctl [--connect ADDR:PORT --token-file F | --session FILE | --archive A.otf2] [--json] [--partial]
 *           [--timeout S] COMMAND...
 *   otfxctl [connection options] watch [--interval S] [--count N]
 *   otfxctl [connection options] critical-path|wait-states [options] --follow [--interval S] [--count N]
 *
 * The command is checked here with otfx_command_parse before anything is contacted. Exit codes:
 * 0 done, 1 the job answered with an error, 2 bad argument, 3 no session file (or an archive that cannot
 * be read), 4 cannot reach the job
 * (refused, gone, no answer in time), 5 the token was refused.
 *
 * This file: the options and the command. request.c talks to the job (through otfx/client.h), output.c
 * prints answers, watch.c is the watch command and critical-path / wait-states --follow.
 */
#define _GNU_SOURCE
#include "otfxctl.h"

#include "dot.h"
#include "output.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
    "usage: otfxctl [OPTIONS] COMMAND [ARGS...]\n"
    "\n"
    "Talks to a running otfx job (started with otfx-run) through the session file its root place\n"
    "wrote: the newest otfx-session-*.txt in $OTFX_SESSION_DIR, else in the working directory.\n"
    "\n"
    "options (before the command):\n"
    "  --session FILE          use this session file\n"
    "  --connect ADDR:PORT     connect there (needs --token-file)\n"
    "  --token-file FILE       the token: a session file or a file holding just the token\n"
    "  --archive A.otf2        instead of a job: open this OTF2 archive (otfx's or Score-P's) and\n"
    "                          answer the queries with the same analyses, in this process\n"
    "  --json                  one JSON object per record line on stdout (JSON lines); the line's type\n"
    "                          is the key \"record\", numbers are JSON numbers, all else strings\n"
    "  --partial               also print partial results (sent before the slowest places answered)\n"
    "  --timeout S             give up after S seconds without the answer (default 30; 0: wait forever)\n"
    "  -h, --help              this text\n"
    "\n"
    "commands:\n"
    "  status                                  per place: ranks, events/s, buffer, reduction, states\n"
    "  record pause | record resume            stop / restart recording on every rank\n"
    "  record window DURATION                  record from now for DURATION, then stop\n"
    "  app pause | app resume                  block / release the application ranks\n"
    "  reset                                   drop the events held (definitions stay)\n"
    "  reduction ring|time|type|depth|stop     reduction strategy when a buffer is full\n"
    "  enable CLASSES | disable CLASSES        comma list of p2p, collective, mpi-other, user, all\n"
    "  metrics set LIST|none | add LIST | remove LIST\n"
    "                                          change the metrics every rank reads at its events (a comma\n"
    "                                          list: task-clock, page-faults, cycles, ...); the answer says\n"
    "                                          per rank what it counts and why it cannot count the rest\n"
    "  metrics list | metrics available        what each rank reads now / every metric otfx knows, with\n"
    "                                          how many ranks can count it\n"
    "  snapshot PATH [--from T] [--to T] [--ranks SET] [--overwrite] [--compensated]\n"
    "                                          write an OTF2 archive under the snapshot directory\n"
    "                                          (--compensated: every event at its compensated time)\n"
    "  overhead measure                        every rank measures its recording costs again\n"
    "  profile  [--from T] [--to T] [--ranks SET] [--metrics [LIST]] [--compensated]\n"
    "                                          with --metrics: per region and metric, its growth over the\n"
    "                                          visits (inclusive, exclusive) and rate per second\n"
    "  metric-timeline NAME [--from T] [--to T] [--ranks SET] [--bins N] [--rows N]\n"
    "                                          one metric's rate per second, time x ranks (min/mean/max)\n"
    "  timeline [--from T] [--to T] [--ranks SET] [--bins N] [--rows N] [--compensated]\n"
    "                                          --compensated: the measurement's intrusion taken out\n"
    "  messages [--from T] [--to T] [--ranks SET] [--groups N]\n"
    "  events   [--from T] [--to T] [--ranks SET] [--limit N]\n"
    "  critical-path [--from T] [--to T] [--ranks SET] [--zero FUNC] [--top M] [--limit N] [--no-flush]\n"
    "                                          the longest path of CPU time across the ranks: its length,\n"
    "                                          the M functions most on it (CP time, share, CPU share; with\n"
    "                                          --zero the path without FUNC's time), its first N segments\n"
    "  wait-states [--from T] [--to T] [--ranks SET] [--top M] [--limit N] [--no-flush]\n"
    "                                          time waiting in MPI for other ranks: totals per kind, per\n"
    "                                          function and rank (M largest), N largest \"who made me\n"
    "                                          wait\" rank pairs\n"
    "    ... --follow [--interval S] [--count N] [--follow-id ID]\n"
    "                                          follow the live stream: the places keep the replay, and the\n"
    "                                          query is asked again every S seconds (default 1), N times\n"
    "                                          (0: until interrupted or the job ends), each answer covering\n"
    "                                          everything so far; --follow takes no value (otfxctl picks a\n"
    "                                          random ID, sent as the protocol's --follow ID; --follow-id\n"
    "                                          chooses it, 1..2^63-1)\n"
    "  structure [--ranks SET] [--group-tolerance PCT] [--top M] [--dot FILE]\n"
    "                                          the program's structure: ranks grouped by their task\n"
    "                                          activity graphs (same nodes, edges and neighbours, edge\n"
    "                                          times within PCT %, default 2), each group's graph and its\n"
    "                                          M most frequent causal paths; --dot writes it for Graphviz\n"
    "  query MODULE [--from T] [--to T] [--ranks SET] [--bins N] [--rows N] [--groups N] [--limit N]\n"
    "  load-module PATH                        load an analysis module (a shared object) on every place\n"
    "  trigger add SPEC...                     a trigger: a condition the places watch for and what the job\n"
    "                                          does then, e.g. trigger add 'duration(MPI_Recv) > 1s =>\n"
    "                                          pause-app, snapshot(-2s) to slow, notify' (docs/usage.md,\n"
    "                                          \"Triggers\"); an error says at which column\n"
    "  trigger list | trigger remove ID        the job's triggers: state, firings, the last one's actions\n"
    "  watch [--interval S] [--count N]        live status every S seconds (default 1), N times (0: until\n"
    "                                          interrupted or the job ends)\n"
    "\n"
    "  Times and durations: 2s, 1.5s, 500ms, 10us, 100ns or plain seconds, on the job's clock.\n"
    "  Rank sets: all, or a list like 0-3,7.\n"
    "\n"
    "exit codes: 0 done, 1 the job answered with an error, 2 bad argument, 3 no session file (or\n"
    "            an archive that cannot be read),\n"
    "            4 the job cannot be reached (refused, gone, no answer in time), 5 token refused\n";

int fail(int code, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    fputs("otfxctl: ", stderr);
    vfprintf(stderr, format, args);
    fputc('\n', stderr);
    va_end(args);
    return code;
}

static bool parse_seconds(const char *text, double *out)
{
    char *end;
    errno = 0;
    const double value = strtod(text, &end);
    if (!*text || *end || errno || !(value >= 0) || value > 1e7)
        return false;
    *out = value;
    return true;
}

/* The command words as one line: each word percent-encoded, so a path with blanks stays one word. */
static void join_words(char **words, int count, otfx_text *out)
{
    for (int i = 0; i < count; i++) {
        if (i)
            otfx_text_append(out, " ", 1);
        /* "--opt=value": the '=' must stay raw */
        const char *equals = strncmp(words[i], "--", 2) == 0 ? strchr(words[i], '=') : NULL;
        if (equals) {
            otfx_text_append(out, words[i], (size_t)(equals - words[i]) + 1);
            otfx_text_append_encoded(out, equals + 1);
        } else {
            otfx_text_append_encoded(out, words[i]);
        }
    }
}

int main(int argc, char **argv)
{
    options opts = {.timeout_s = 30};
    int i = 1;
    for (; i < argc && strncmp(argv[i], "-", 1) == 0; i++) {
        const char *arg = argv[i];
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            fputs(usage_text, stdout);
            return EXIT_OK;
        } else if (strcmp(arg, "--json") == 0) {
            opts.json = true;
        } else if (strcmp(arg, "--partial") == 0) {
            opts.partial = true;
        } else if (strcmp(arg, "--session") == 0 || strcmp(arg, "--connect") == 0 ||
                   strcmp(arg, "--token-file") == 0 || strcmp(arg, "--timeout") == 0 ||
                   strcmp(arg, "--archive") == 0) {
            if (!value)
                return fail(EXIT_BAD_ARGUMENT, "%s needs a value (see otfxctl --help)", arg);
            i++;
            if (strcmp(arg, "--session") == 0)
                opts.session = value;
            else if (strcmp(arg, "--connect") == 0)
                opts.connect = value;
            else if (strcmp(arg, "--token-file") == 0)
                opts.token_file = value;
            else if (strcmp(arg, "--archive") == 0)
                opts.archive = value;
            else if (!parse_seconds(value, &opts.timeout_s))
                return fail(EXIT_BAD_ARGUMENT, "bad --timeout '%s': expected seconds", value);
        } else {
            return fail(EXIT_BAD_ARGUMENT, "unknown option %s (see otfxctl --help)", arg);
        }
    }
    if (i == argc)
        return fail(EXIT_BAD_ARGUMENT, "no command given (see otfxctl --help)");
    if (!!opts.session + !!opts.connect + !!opts.archive > 1)
        return fail(EXIT_BAD_ARGUMENT, "--session, --connect and --archive exclude each other");

    /* the command, checked before anything is contacted */
    bool watching = strcmp(argv[i], "watch") == 0;
    double interval_s = 1.0;
    uint64_t count = 0;
    const char *dot_path = NULL;
    otfx_text line = {0};
    otfx_command command;
    bool following = false;
    int words = argc - i;
    char **word = argv + i;
    char **kept = NULL;
    if (strcmp(argv[i], "critical-path") == 0 || strcmp(argv[i], "wait-states") == 0) {
        /* otfxctl's own --follow, --interval, --count and --follow-id; the rest is the query */
        kept = calloc((size_t)words, sizeof *kept);
        if (!kept)
            return fail(EXIT_BAD_ARGUMENT, "out of memory");
        int kept_count = 0;
        bool repeat_options = false;
        uint64_t id = 0;
        for (int w = 0; w < words; w++) {
            const char *arg = word[w];
            const char *next = w + 1 < words ? word[w + 1] : NULL;
            if (strncmp(arg, "--follow=", 9) == 0 ||
                (strcmp(arg, "--follow") == 0 && next && next[0] >= '0' && next[0] <= '9')) {
                free(kept);
                return fail(
                    EXIT_BAD_ARGUMENT,
                    "otfxctl's --follow takes no value (it chooses the ID); --follow-id ID chooses it");
            } else if (strcmp(arg, "--follow") == 0) {
                following = true;
            } else if (strcmp(arg, "--follow-id") == 0 && next) {
                char *end;
                errno = 0;
                id = strtoull(next, &end, 10);
                if (!*next || *end || errno || next[0] == '-' || id == 0 || id > INT64_MAX) {
                    free(kept);
                    return fail(EXIT_BAD_ARGUMENT, "bad --follow-id '%s': expected 1..2^63-1", next);
                }
                following = true;
                w++;
            } else if (strcmp(arg, "--interval") == 0 && next) {
                if (!parse_seconds(next, &interval_s) || interval_s < 0.05) {
                    free(kept);
                    return fail(EXIT_BAD_ARGUMENT, "bad --interval '%s': expected seconds (at least 0.05)",
                                next);
                }
                repeat_options = true;
                w++;
            } else if (strcmp(arg, "--count") == 0 && next) {
                char *end;
                errno = 0;
                count = strtoull(next, &end, 10);
                if (!*next || *end || errno || next[0] == '-') {
                    free(kept);
                    return fail(EXIT_BAD_ARGUMENT, "bad --count '%s': expected a number", next);
                }
                repeat_options = true;
                w++;
            } else {
                kept[kept_count++] = word[w];
            }
        }
        if (repeat_options && !following) {
            free(kept);
            return fail(EXIT_BAD_ARGUMENT, "--interval and --count go with --follow (see otfxctl --help)");
        }
        word = kept;
        words = kept_count;
        command.follow = id;
        if (following) {
            join_words(word, words, &line);
            char error[512];
            const uint64_t chosen = id;
            if (line.failed || !otfx_command_parse(line.data, &command, error, sizeof error)) {
                otfx_text_free(&line);
                free(kept);
                return fail(EXIT_BAD_ARGUMENT, "%s (see otfxctl --help)",
                            line.failed ? "out of memory" : error);
            }
            command.follow = chosen;
            otfx_text_free(&line);
        }
    }
    if (following) {
        /* the query is formatted once its ID is known (follow) */
    } else if (watching) {
        for (int w = i + 1; w < argc; w++) {
            if (w + 1 < argc && strcmp(argv[w], "--interval") == 0) {
                if (!parse_seconds(argv[++w], &interval_s) || interval_s < 0.05)
                    return fail(EXIT_BAD_ARGUMENT, "bad --interval '%s': expected seconds (at least 0.05)",
                                argv[w]);
            } else if (w + 1 < argc && strcmp(argv[w], "--count") == 0) {
                char *end;
                errno = 0;
                count = strtoull(argv[++w], &end, 10);
                if (!*argv[w] || *end || errno || argv[w][0] == '-')
                    return fail(EXIT_BAD_ARGUMENT, "bad --count '%s': expected a number", argv[w]);
            } else {
                return fail(EXIT_BAD_ARGUMENT, "watch takes --interval S and --count N, not '%s'", argv[w]);
            }
        }
    } else {
        /* structure --dot FILE: a client-side option, taken out before the command is checked */
        if (strcmp(argv[i], "structure") == 0) {
            for (int w = i + 1; w < argc; w++) {
                if (strcmp(argv[w], "--dot") != 0 && strncmp(argv[w], "--dot=", 6) != 0)
                    continue;
                const bool joined = argv[w][5] == '=';
                if (!joined && w + 1 == argc)
                    return fail(EXIT_BAD_ARGUMENT, "--dot needs a file (see otfxctl --help)");
                dot_path = joined ? argv[w] + 6 : argv[w + 1];
                const int taken = joined ? 1 : 2;
                memmove(argv + w, argv + w + taken, sizeof *argv * (size_t)(argc - w - taken));
                argc -= taken;
                break;
            }
        }
        if (!kept) {
            word = argv + i;
            words = argc - i;
        }
        join_words(word, words, &line);
        char error[512];
        if (line.failed || !otfx_command_parse(line.data, &command, error, sizeof error)) {
            otfx_text_free(&line);
            free(kept);
            return fail(EXIT_BAD_ARGUMENT, "%s (see otfxctl --help)", line.failed ? "out of memory" : error);
        }
        /* send the canonical form: what the job sees is exactly what was checked here */
        otfx_text_free(&line);
        otfx_command_format(&command, &line);
        if (line.failed) {
            free(kept);
            return fail(EXIT_BAD_ARGUMENT, "out of memory");
        }
    }
    free(kept);

    otfx_client *client;
    int rc = open_job(&opts, &client);
    if (rc == EXIT_OK) {
        if (following) {
            rc = follow(client, &opts, &command, interval_s, count);
        } else if (watching) {
            rc = watch(client, &opts, interval_s, count);
        } else if (dot_path) {
            otfx_text reply = {0};
            rc = run_request(client, 1, line.data, &opts, opts.partial, &reply).exit_code;
            if (rc == EXIT_OK && !reply.failed) {
                print_payload(reply.data ? reply.data : "", reply.length, opts.json);
                if (!write_structure_dot(reply.data ? reply.data : "", reply.length, dot_path))
                    rc = fail(EXIT_BAD_ARGUMENT, "cannot write %s", dot_path);
            }
            otfx_text_free(&reply);
        } else {
            rc = run_request(client, 1, line.data, &opts, opts.partial, NULL).exit_code;
        }
    }
    close_job(client);
    otfx_text_free(&line);
    return rc;
}
