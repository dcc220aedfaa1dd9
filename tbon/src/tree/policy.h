/*
 * policy.h — the tree's answer policy: when a place answers a request, when the root sends a PARTIAL,
 * how many queries enter the tree, how long the end of a job waits (private to tbon/src/tree/). Pure
 * functions of a request's progress and the time: no MPI, no messages (tests/tbon/test_tree_policy.c).
 */
#ifndef OTFX_TBON_TREE_POLICY_H
#define OTFX_TBON_TREE_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The root sends a PARTIAL when leaves are still missing this long after the request. */
#define ANSWER_PARTIAL_AFTER_NS (200u * 1000u * 1000u)
/* Queries in the tree at once (more wait at the root). */
#define ANSWER_MAX_QUERIES_IN_TREE 8
/* How long the root waits for requests in flight at the end before it shuts the tree down anyway. */
#define ANSWER_DRAIN_TIMEOUT_NS (10ull * 1000u * 1000u * 1000u)
/* The last command of a failed job: how long a place waits for its ranks' answers to the flush. */
#define ANSWER_FINAL_FLUSH_NS (2ull * 1000u * 1000u * 1000u)
/* A query that flushes the ranks first (otfx_command_flushes_first): how long a place waits for their
 * answers before it starts its leaf anyway, at most a quarter of the module time limit: the event places
 * wait for each other inside the replay with the leaf's deadline, so every one must start well within
 * it. */
#define ANSWER_QUERY_FLUSH_NS (2ull * 1000u * 1000u * 1000u)
/* ... and how long after its part a place waits for the root to end the job before ending it itself. */
#define ANSWER_FAILED_END_WAIT_NS (60ull * 1000u * 1000u * 1000u)

/* Where one request stands at one place. */
struct answer_progress {
    uint32_t children_waiting; /* children that have not answered */
    bool own_pending;          /* this place's own part is still running */
    uint64_t started_ns;       /* when the request arrived here */
    bool partial_sent;         /* the root sent its PARTIAL */
};

/* A request arrived at `now_ns`: nothing answered yet. */
void answer_begin(struct answer_progress *progress, uint64_t now_ns);
/* Whether the place answers now: its own part and every child answered. */
bool answer_complete(const struct answer_progress *progress);
/* Whether the root sends a PARTIAL now: a query a client waits for (`client_waits`), something already
 * answered (`anything_in`), still waiting for a part, no PARTIAL sent yet, and ANSWER_PARTIAL_AFTER_NS
 * past. */
bool answer_partial_due(const struct answer_progress *progress, bool client_waits, bool anything_in,
                        uint64_t now_ns);
/* Whether a client's query enters the tree now, given the queries waiting before it and those in the tree
 * (a query that does not enter waits, in order). */
bool answer_admits_query(size_t waiting_before, size_t queries_in_tree);
/* The end of the job: whether the root stops waiting for the requests in flight (none left, or
 * ANSWER_DRAIN_TIMEOUT_NS since the draining began). */
bool answer_drained(size_t requests_in_flight, uint64_t draining_since_ns, uint64_t now_ns);
/* The last command of a failed job: whether a place stops waiting for its ranks' answers to the flush. */
bool answer_final_flush_over(const struct answer_progress *progress, uint64_t now_ns);
/* A query's flush: whether a place stops waiting for its ranks' answers and starts the leaf
 * (ANSWER_QUERY_FLUSH_NS, or a quarter of `module_timeout_ns` when that is shorter). */
bool answer_query_flush_over(const struct answer_progress *progress, uint64_t now_ns,
                             uint64_t module_timeout_ns);

#endif
