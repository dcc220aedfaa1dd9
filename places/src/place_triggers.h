/*
 * place_triggers.h — triggers at an event place (private to places/): the conditions of otfx/trigger.h
 * evaluated on every batch's events as they are appended, and the ranks' silence for `hang`.
 *
 * Cost: nothing while no trigger is armed (one pointer test per batch). While one is, every event of a
 * batch is looked at once: ENTER and LEAVE keep a stack of the open regions per stream (region and enter
 * time), and a table by region id says which triggers name the region (filled when a region is first
 * seen), so a LEAVE costs a pop and one table load. While a trigger is armed the place's ranks send
 * what they buffered every PLACE_TRIGGER_FLUSH_NS by themselves (CAPTURE_CONTROL_FLUSH_EVERY), so that a
 * condition is seen about that long after it held at the latest.
 *
 * A trigger whose condition held is disarmed here and reported to the tree (otfx_tree_host.next_firing);
 * the root decides whether the job acts and arms it again (`trigger arm`) when it may fire again.
 */
#ifndef OTFX_PLACES_PLACE_TRIGGERS_H
#define OTFX_PLACES_PLACE_TRIGGERS_H

#include <otfx/trace.h>
#include <otfx/tree.h>
#include <otfx/trigger.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PLACE_TRIGGER_FLUSH_NS (100u * 1000u * 1000u)

struct event_place;
struct served_rank;
struct place_stream;

/* OTFX_TRIGGERS (ids 1, 2, … as the root numbers them); false when it does not parse (said on stderr). */
bool place_triggers_start(struct event_place *place, const char *list);
void place_triggers_free(struct event_place *place);
void place_triggers_free_stream(struct place_stream *stream);

/* trigger add (replaces a trigger of the same id), remove, arm. False with a reason in `why`. */
bool place_trigger_add(struct event_place *place, uint64_t id, const char *text, char *why, size_t size);
bool place_trigger_remove(struct event_place *place, uint64_t id);
bool place_trigger_arm(struct event_place *place, uint64_t id);

/* A batch of `rank`'s stream was appended: its events (the stream's open regions were `depth_before`
 * deep before them). */
void place_triggers_on_batch(struct event_place *place, struct served_rank *rank, struct place_stream *stream,
                             const otfx_event *events, size_t count, uint32_t depth_before);
/* Every turn of the loop: the ranks' periodic flush on or off as triggers are armed, silent ranks.
 * Returns whether it did anything. */
bool place_triggers_poll(struct event_place *place, uint64_t now_ns);
/* late-sender trigger `id`: the receives paired with their send at this place, and those whose sender
 * another event place serves (never evaluated). False when `id` is not a late-sender trigger here. */
bool place_trigger_late_sender_counts(struct event_place *place, uint64_t id, uint64_t *paired,
                                      uint64_t *unseen);
/* The end-of-run lines of the late-sender triggers: "otfx-place P: trigger ID late-sender paired=N
 * unseen=U lost=L" (lost: ends the bounded table of unpaired ends dropped before their other end came). */
void place_triggers_report(struct event_place *place);
/* Late-sender receives counted as unseen and not reported up yet: a trigger and how many more, at most
 * one report per trigger every PLACE_TRIGGER_FLUSH_NS (the counts feed `trigger list`'s unseen=). */
bool place_triggers_next_unseen(struct event_place *place, uint64_t *trigger, uint64_t *count);
/* The next firing not reported yet. */
bool place_triggers_next_firing(struct event_place *place, otfx_tree_firing *firing);

#endif
