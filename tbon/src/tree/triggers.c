/*
 * triggers.c — the root's side of triggers (otfx/tree.h, "Triggers"; otfx/trigger.h): the job's table,
 * `trigger add|list|remove` from clients, the reports of the places (the first report of an armed trigger
 * is a firing, the others are merged into it), the firing's actions as ordinary commands down the tree,
 * the notices, and arming the trigger again once the actions are answered.
 *
 * Actions are sent from tree_poll_triggers, never from inside an answer: an answer is handled while the
 * tree holds a pointer into its request table, which a new request may move.
 */
#include "tree_internal.h"

#include <otfx/support/growth.h>
#include <otfx/trigger.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum trigger_state { TRIGGER_ARMED = 0, TRIGGER_FIRING, TRIGGER_SPENT };

struct trigger_firing {
    uint64_t time_ns; /* the event that made the condition hold */
    uint32_t rank, place;
    char detail[256];
    bool actions_due;  /* pause-app / pause-recording not sent yet */
    bool snapshot_due; /* the snapshot waits for time + after */
    uint32_t pending;  /* actions sent and not answered */
    uint32_t merged;   /* reports of other places merged into this firing */
    /* what the actions did: latency from the event to every rank paused / not recording (0: not asked
     * or failed), the snapshot, and the first action that failed */
    uint64_t paused_latency_ns, recording_latency_ns;
    bool snapshot_ok;
    char archive[1024];
    uint64_t snapshot_from, snapshot_to, snapshot_events, held_from;
    uint64_t window_reduced; /* traces a full buffer's reduction may have taken detail of the window from */
    char error[256];
};

struct root_trigger {
    uint64_t id;
    otfx_trigger_spec spec;
    char text[OTFX_TRIGGER_MAX_TEXT + 1]; /* canonical */
    enum trigger_state state;
    uint32_t fired;
    uint64_t merged;      /* every report not acted on */
    uint64_t unseen;      /* late-sender: receives the places could not evaluate (sender elsewhere) */
    uint64_t armed_at_ns; /* reports of events before this belong to an earlier firing */
    struct trigger_firing firing;
};

static const char *state_name(enum trigger_state state)
{
    return state == TRIGGER_ARMED ? "armed" : state == TRIGGER_FIRING ? "firing" : "spent";
}

static struct root_trigger *find_trigger(otfx_tree *tree, uint64_t id)
{
    for (size_t i = 0; i < tree->root.trigger_count; i++)
        if (tree->root.triggers[i].id == id)
            return &tree->root.triggers[i];
    return NULL;
}

static struct root_trigger *add_trigger(otfx_tree *tree, const otfx_trigger_spec *spec)
{
    struct tree_root *root = &tree->root;
    if (root->trigger_count >= OTFX_TRIGGER_MAX_COUNT ||
        !otfx_reserve((void **)&root->triggers, &root->trigger_capacity, root->trigger_count + 1,
                      sizeof(*root->triggers), 4))
        return NULL;
    struct root_trigger *trigger = &root->triggers[root->trigger_count++];
    memset(trigger, 0, sizeof(*trigger));
    trigger->id = ++root->next_trigger_id;
    trigger->spec = *spec;
    otfx_text text = {0};
    otfx_trigger_format(spec, &text);
    snprintf(trigger->text, sizeof(trigger->text), "%s", text.data ? text.data : "");
    otfx_text_free(&text);
    return trigger;
}

static bool add_from_config(void *user, const otfx_trigger_spec *spec)
{
    return add_trigger(user, spec) != NULL;
}

bool tree_triggers_start(otfx_tree *tree)
{
    if (!tree->config.triggers || !tree->config.triggers[0])
        return true;
    size_t index = 0, column = 0;
    char error[256];
    if (!otfx_trigger_list_parse(tree->config.triggers, add_from_config, tree, &index, &column, error,
                                 sizeof(error))) {
        fprintf(stderr, "otfx-place %d: OTFX_TRIGGERS: trigger %zu, column %zu: %s\n", tree_place_rank(tree),
                index, column, error);
        return false;
    }
    return true;
}

void tree_triggers_free(otfx_tree *tree)
{
    free(tree->root.triggers);
    tree->root.triggers = NULL;
    tree->root.trigger_count = tree->root.trigger_capacity = 0;
}

/* A command down the tree on behalf of trigger `id` (0: nobody waits for its answer). */
static bool send_command(otfx_tree *tree, uint64_t id, const otfx_command *command, uint64_t argument)
{
    const uint32_t request_id = tree->next_request++;
    if (tree->next_request == 0)
        tree->next_request = 1;
    struct tree_request *request = tree_add_request(tree, request_id, TREE_COMMAND, command, argument);
    if (!request)
        return false;
    request->trigger = id;
    tree_dispatch(tree, request, NULL, 0);
    return true;
}

static otfx_command plain_command(otfx_command_kind kind)
{
    otfx_command command;
    memset(&command, 0, sizeof(command));
    command.kind = kind;
    command.to = UINT64_MAX;
    return command;
}

/* ---- clients ---------------------------------------------------------------------------------------- */

/* What a firing's actions came to, as `trigger list` and the trigger-acted notice both say it; the notice
 * names the snapshot's window and calls its event count `events`, the list line `snapshot_events`. */
static void append_outcome(otfx_text *text, const struct trigger_firing *f, bool as_notice)
{
    if (f->paused_latency_ns)
        otfx_kv_u64(text, "pause_latency_ns", f->paused_latency_ns);
    if (f->recording_latency_ns)
        otfx_kv_u64(text, "recording_latency_ns", f->recording_latency_ns);
    if (f->snapshot_ok) {
        otfx_kv_str(text, "archive", f->archive);
        if (as_notice) {
            otfx_kv_u64(text, "from", f->snapshot_from);
            otfx_kv_u64(text, "to", f->snapshot_to);
        }
        otfx_kv_u64(text, as_notice ? "events" : "snapshot_events", f->snapshot_events);
        otfx_kv_u64(text, "held_from", f->held_from);
        otfx_kv_u64(text, "window_reduced", f->window_reduced);
    }
    if (f->error[0])
        otfx_kv_str(text, "error", f->error);
}

static void list_triggers(otfx_tree *tree, const otfx_server_request *client)
{
    otfx_text text = {0};
    otfx_kv_begin(&text, "triggers");
    otfx_kv_u64(&text, "count", tree->root.trigger_count);
    otfx_kv_end(&text);
    for (size_t i = 0; i < tree->root.trigger_count; i++) {
        const struct root_trigger *t = &tree->root.triggers[i];
        const struct trigger_firing *f = &t->firing;
        otfx_kv_begin(&text, "trigger");
        otfx_kv_u64(&text, "id", t->id);
        otfx_kv_str(&text, "state", state_name(t->state));
        otfx_kv_u64(&text, "fired", t->fired);
        otfx_kv_u64(&text, "times", t->spec.times);
        otfx_kv_u64(&text, "merged", t->merged);
        otfx_kv_str(&text, "spec", t->text);
        if (t->spec.condition == OTFX_TRIGGER_LATE_SENDER)
            otfx_kv_u64(&text, "unseen", t->unseen);
        if (t->fired) {
            otfx_kv_u64(&text, "last_time", f->time_ns);
            otfx_kv_u64(&text, "last_rank", f->rank);
            otfx_kv_u64(&text, "last_place", f->place);
            otfx_kv_str(&text, "detail", f->detail);
            append_outcome(&text, f, false);
        }
        otfx_kv_end(&text);
    }
    tree_reply(tree, client->client, client->request, OTFX_FRAME_REPLY, &text);
    otfx_text_free(&text);
}

bool tree_trigger_client(otfx_tree *tree, const otfx_server_request *client, uint64_t *argument)
{
    const otfx_command *command = &client->command;
    if (command->kind == OTFX_CMD_TRIGGER_LIST) {
        list_triggers(tree, client);
        return true;
    }
    if (command->kind == OTFX_CMD_TRIGGER_REMOVE) {
        struct root_trigger *trigger = find_trigger(tree, command->trigger_id);
        if (!trigger) {
            char message[96];
            snprintf(message, sizeof(message), "no trigger %" PRIu64 " (trigger list shows them)",
                     command->trigger_id);
            tree_reply_error(tree, client->client, client->request, OTFX_ERR_CODE_BAD_COMMAND, message);
            return true;
        }
        /* actions of a firing under way go on; their answers find no trigger and are dropped */
        const size_t index = (size_t)(trigger - tree->root.triggers);
        memmove(trigger, trigger + 1, (--tree->root.trigger_count - index) * sizeof(*trigger));
        *argument = command->trigger_id;
        return false; /* and down to the places, answered like any command */
    }
    if (command->kind != OTFX_CMD_TRIGGER_ADD)
        return false;
    otfx_trigger_spec spec;
    size_t column = 0;
    char error[256];
    if (!otfx_trigger_parse(command->path, &spec, &column, error, sizeof(error))) {
        tree_reply_error(tree, client->client, client->request, OTFX_ERR_CODE_BAD_COMMAND, error);
        return true;
    }
    const struct root_trigger *trigger = add_trigger(tree, &spec);
    if (!trigger) {
        char message[96];
        snprintf(message, sizeof(message), "too many triggers (at most %u): remove one first",
                 OTFX_TRIGGER_MAX_COUNT);
        tree_reply_error(tree, client->client, client->request, OTFX_ERR_CODE_BAD_COMMAND, message);
        return true;
    }
    *argument = trigger->id;
    return false; /* handle_client_request sends it down with the id */
}

void tree_trigger_added_line(otfx_tree *tree, uint64_t id, otfx_text *lines)
{
    const struct root_trigger *trigger = find_trigger(tree, id);
    if (!trigger)
        return;
    otfx_kv_begin(lines, "trigger");
    otfx_kv_u64(lines, "id", trigger->id);
    otfx_kv_u64(lines, "times", trigger->spec.times);
    otfx_kv_str(lines, "spec", trigger->text);
    otfx_kv_end(lines);
}

/* ---- reports and firings ---------------------------------------------------------------------------- */

static void notice_report(otfx_tree *tree, const char *event, const struct root_trigger *trigger,
                          uint64_t time, uint32_t rank, uint32_t place, const char *detail)
{
    otfx_text text = {0};
    otfx_kv_begin(&text, "notice");
    otfx_kv_str(&text, "event", event);
    otfx_kv_u64(&text, "trigger", trigger->id);
    otfx_kv_u64(&text, "firing", trigger->fired);
    otfx_kv_u64(&text, "rank", rank);
    otfx_kv_u64(&text, "place", place);
    otfx_kv_u64(&text, "time", time);
    otfx_kv_str(&text, "condition", otfx_trigger_condition_name(trigger->spec.condition));
    otfx_kv_str(&text, "detail", detail);
    otfx_kv_str(&text, "spec", trigger->text);
    otfx_kv_end(&text);
    tree_broadcast_notice(tree, &text);
    otfx_text_free(&text);
}

void tree_report_trigger(otfx_tree *tree, uint64_t id, uint64_t time_ns, uint32_t rank, uint32_t place,
                         const char *detail, size_t detail_length)
{
    char what[256];
    const size_t kept = detail_length < sizeof(what) - 1 ? detail_length : sizeof(what) - 1;
    memcpy(what, detail, kept);
    what[kept] = '\0';
    if (!tree_finishes_requests(tree)) {
        struct tree_buffer message;
        if (tree_encode_trigger(&message, id, time_ns, rank, place, what, kept))
            tree_send(tree, tree->parent, &message);
        else
            fprintf(stderr, "otfx-place %d: out of memory: trigger %" PRIu64 "'s report is lost\n",
                    tree_place_rank(tree), id);
        return;
    }
    struct root_trigger *trigger = find_trigger(tree, id);
    if (!trigger)
        return; /* removed meanwhile */
    const bool notify = (trigger->spec.actions & OTFX_TRIGGER_NOTIFY) != 0;
    if (trigger->state != TRIGGER_ARMED || time_ns < trigger->armed_at_ns ||
        tree->root.end_stage >= ROOT_DRAINING) {
        /* the same firing seen by another place (or by this one before the trigger was armed again) */
        trigger->merged++;
        if (trigger->state == TRIGGER_FIRING)
            trigger->firing.merged++;
        if (notify)
            notice_report(tree, "trigger-merged", trigger, time_ns, rank, place, what);
        return;
    }
    trigger->state = TRIGGER_FIRING;
    trigger->fired++;
    struct trigger_firing *f = &trigger->firing;
    memset(f, 0, sizeof(*f));
    f->time_ns = time_ns;
    f->rank = rank;
    f->place = place;
    snprintf(f->detail, sizeof(f->detail), "%s", what);
    f->actions_due = (trigger->spec.actions & (OTFX_TRIGGER_PAUSE_APP | OTFX_TRIGGER_PAUSE_RECORDING)) != 0;
    f->snapshot_due = (trigger->spec.actions & OTFX_TRIGGER_SNAPSHOT) != 0;
    fprintf(stderr, "otfx: trigger %" PRIu64 " fired (%u of %u) on rank %u: %s\n", trigger->id,
            trigger->fired, trigger->spec.times, rank, what);
    if (notify)
        notice_report(tree, "trigger-fired", trigger, time_ns, rank, place, what);
}

void tree_report_unseen(otfx_tree *tree, uint64_t id, uint64_t count)
{
    if (!tree_finishes_requests(tree)) {
        struct tree_buffer message;
        if (tree_encode_unseen(&message, id, count))
            tree_send(tree, tree->parent, &message);
        else
            fprintf(stderr, "otfx-place %d: out of memory: trigger %" PRIu64 "'s unseen count is lost\n",
                    tree_place_rank(tree), id);
        return;
    }
    struct root_trigger *trigger = find_trigger(tree, id);
    if (trigger)
        trigger->unseen += count;
}

/* The snapshot's place lines: the archive, events, the oldest time held, the first error. */
static void read_snapshot_lines(struct trigger_firing *f, const struct tree_request *request)
{
    size_t offset = 0, length = 0;
    const char *line;
    f->held_from = UINT64_MAX;
    while (otfx_kv_next_line(request->lines.data, request->lines.length, &offset, &line, &length)) {
        otfx_kv_line kv;
        if (!otfx_kv_parse(line, length, &kv))
            continue;
        if (strcmp(kv.type, "place") == 0) {
            const char *ok = otfx_kv_get(&kv, "ok"), *archive = otfx_kv_get(&kv, "archive"),
                       *events = otfx_kv_get(&kv, "events"), *held = otfx_kv_get(&kv, "held_from"),
                       *reduced = otfx_kv_get(&kv, "window_reduced"), *error = otfx_kv_get(&kv, "error");
            if (reduced)
                f->window_reduced += strtoull(reduced, NULL, 10);
            if (archive && !f->archive[0])
                snprintf(f->archive, sizeof(f->archive), "%s", archive);
            if (events)
                f->snapshot_events += strtoull(events, NULL, 10);
            if (held && strtoull(held, NULL, 10) < f->held_from)
                f->held_from = strtoull(held, NULL, 10);
            if (ok && strcmp(ok, "1") != 0 && error && !f->error[0])
                snprintf(f->error, sizeof(f->error), "snapshot: %s", error);
        }
        otfx_kv_line_free(&kv);
    }
}

void tree_trigger_action_answered(otfx_tree *tree, const struct tree_request *request)
{
    struct root_trigger *trigger = find_trigger(tree, request->trigger);
    if (!trigger || trigger->state != TRIGGER_FIRING)
        return;
    struct trigger_firing *f = &trigger->firing;
    if (f->pending)
        f->pending--;
    const uint64_t now = tree_now_ns();
    const uint64_t latency = now > f->time_ns ? now - f->time_ns : 1;
    const bool ok = request->count_failed == 0;
    char token[64];
    if (!ok && !f->error[0])
        snprintf(f->error, sizeof(f->error), "%s failed on %u of %u places",
                 tree_command_token(request->command.kind, token, sizeof(token)), request->count_failed,
                 request->count_ok + request->count_failed);
    switch (request->command.kind) {
    case OTFX_CMD_APP_PAUSE:
        f->paused_latency_ns = ok ? latency : 0;
        break;
    case OTFX_CMD_RECORD_PAUSE:
        f->recording_latency_ns = ok ? latency : 0;
        break;
    case OTFX_CMD_SNAPSHOT:
        read_snapshot_lines(f, request);
        f->snapshot_ok = ok;
        break;
    default:
        break;
    }
}

static void notice_acted(otfx_tree *tree, const struct root_trigger *trigger)
{
    const struct trigger_firing *f = &trigger->firing;
    otfx_text text = {0};
    otfx_kv_begin(&text, "notice");
    otfx_kv_str(&text, "event", "trigger-acted");
    otfx_kv_u64(&text, "trigger", trigger->id);
    otfx_kv_u64(&text, "firing", trigger->fired);
    otfx_kv_u64(&text, "merged", f->merged);
    otfx_kv_str(&text, "state", state_name(trigger->state));
    append_outcome(&text, f, true);
    otfx_kv_end(&text);
    tree_broadcast_notice(tree, &text);
    otfx_text_free(&text);
}

/* The snapshot of [time − before, time + after], to PATH (PATH-K from the second firing on). */
static bool send_snapshot(otfx_tree *tree, struct root_trigger *trigger)
{
    struct trigger_firing *f = &trigger->firing;
    otfx_command command = plain_command(OTFX_CMD_SNAPSHOT);
    if (trigger->fired > 1)
        snprintf(command.path, sizeof(command.path), "%s-%u", trigger->spec.snapshot_path, trigger->fired);
    else
        snprintf(command.path, sizeof(command.path), "%s", trigger->spec.snapshot_path);
    command.from =
        f->time_ns > trigger->spec.snapshot_before_ns ? f->time_ns - trigger->spec.snapshot_before_ns : 0;
    command.to = f->time_ns + trigger->spec.snapshot_after_ns + 1; /* windows are half-open: the event in */
    command.from_given = command.to_given = true;
    f->snapshot_from = command.from;
    f->snapshot_to = command.to;
    f->pending++;
    if (!send_command(tree, trigger->id, &command, 0)) {
        f->pending--;
        snprintf(f->error, sizeof(f->error), "snapshot: out of memory");
        return false;
    }
    return true;
}

bool tree_triggers_snapshot_due(const otfx_tree *tree)
{
    for (size_t i = 0; i < tree->root.trigger_count; i++)
        if (tree->root.triggers[i].state == TRIGGER_FIRING && tree->root.triggers[i].firing.snapshot_due)
            return true;
    return false;
}

bool tree_poll_triggers(otfx_tree *tree)
{
    bool active = false;
    const uint64_t now = tree_now_ns();
    for (size_t i = 0; i < tree->root.trigger_count; i++) {
        struct root_trigger *trigger = &tree->root.triggers[i];
        struct trigger_firing *f = &trigger->firing;
        if (trigger->state != TRIGGER_FIRING)
            continue;
        const uint64_t id = trigger->id;
        if (f->actions_due) {
            f->actions_due = false;
            active = true;
            if (trigger->spec.actions & OTFX_TRIGGER_PAUSE_RECORDING) {
                const otfx_command command = plain_command(OTFX_CMD_RECORD_PAUSE);
                f->pending++;
                if (!send_command(tree, id, &command, 0))
                    f->pending--;
            }
            trigger = find_trigger(tree, id); /* the table does not move, but stay on the safe side */
            if (trigger && (trigger->spec.actions & OTFX_TRIGGER_PAUSE_APP)) {
                const otfx_command command = plain_command(OTFX_CMD_APP_PAUSE);
                trigger->firing.pending++;
                if (!send_command(tree, id, &command, 0))
                    trigger->firing.pending--;
            }
            i = (size_t)-1; /* look again from the start */
            continue;
        }
        /* once every place is done (the ranks ended) nothing more will come: the snapshot goes now */
        if (f->snapshot_due && (now >= f->time_ns + trigger->spec.snapshot_after_ns || tree->done_sent) &&
            !tree_snapshot_in_flight(tree)) {
            f->snapshot_due = false;
            send_snapshot(tree, trigger);
            active = true;
            i = (size_t)-1;
            continue;
        }
        if (f->snapshot_due || f->pending)
            continue;
        /* every action answered: the firing is over */
        trigger->state = trigger->fired < trigger->spec.times ? TRIGGER_ARMED : TRIGGER_SPENT;
        trigger->armed_at_ns = now;
        if (trigger->spec.actions & OTFX_TRIGGER_NOTIFY)
            notice_acted(tree, trigger);
        fprintf(stderr, "otfx: trigger %" PRIu64 " acted (firing %u, %u reports merged)%s%s\n", id,
                trigger->fired, f->merged, f->error[0] ? ": " : "", f->error);
        if (trigger->state == TRIGGER_ARMED) {
            otfx_command command = plain_command(OTFX_CMD_TRIGGER_ARM);
            send_command(tree, 0, &command, id);
        }
        active = true;
        i = (size_t)-1;
    }
    return active;
}
