/*
 * policy.c — the tree's answer policy (see policy.h).
 */
#include "policy.h"

void answer_begin(struct answer_progress *progress, uint64_t now_ns)
{
    *progress = (struct answer_progress){.started_ns = now_ns};
}

bool answer_complete(const struct answer_progress *progress)
{
    return progress->children_waiting == 0 && !progress->own_pending;
}

bool answer_partial_due(const struct answer_progress *progress, bool client_waits, bool anything_in,
                        uint64_t now_ns)
{
    return client_waits && !progress->partial_sent && anything_in && !answer_complete(progress) &&
           now_ns - progress->started_ns >= ANSWER_PARTIAL_AFTER_NS;
}

bool answer_admits_query(size_t waiting_before, size_t queries_in_tree)
{
    return waiting_before == 0 && queries_in_tree < ANSWER_MAX_QUERIES_IN_TREE;
}

bool answer_drained(size_t requests_in_flight, uint64_t draining_since_ns, uint64_t now_ns)
{
    return requests_in_flight == 0 || now_ns - draining_since_ns >= ANSWER_DRAIN_TIMEOUT_NS;
}

bool answer_final_flush_over(const struct answer_progress *progress, uint64_t now_ns)
{
    return now_ns - progress->started_ns >= ANSWER_FINAL_FLUSH_NS;
}

bool answer_query_flush_over(const struct answer_progress *progress, uint64_t now_ns,
                             uint64_t module_timeout_ns)
{
    const uint64_t bound =
        module_timeout_ns / 4 < ANSWER_QUERY_FLUSH_NS ? module_timeout_ns / 4 : ANSWER_QUERY_FLUSH_NS;
    return now_ns - progress->started_ns >= bound;
}
