/* test_helpers.h — small helpers shared by the otfx unit tests. */
#ifndef OTFX_TEST_HELPERS_H
#define OTFX_TEST_HELPERS_H

#include "random_stream.h"
#include "reference.h"

#include "otfx/trace.h"

/* Appends every event of the trace's window to `log` (via otfx_query_events). */
otfx_status collect_events(otfx_trace *trace, otfx_time from, otfx_time to, bool context, event_log *log);

/* Generates `count` events from `stream`, appends them to `trace` in batches and, if `log` is not
 * NULL, keeps them there. Returns the first status other than OTFX_OK and OTFX_ERR_STOPPED. */
otfx_status feed(otfx_trace *trace, random_stream *stream, size_t count, event_log *log);

/* Whether two events are equal field by field (the union compared per type). */
bool events_equal(const otfx_event *a, const otfx_event *b);

/* Checks that a query's events are well nested: every LEAVE closes the innermost open ENTER of the
 * same region, times never go backwards (context ENTERs excepted). Returns the index of the first
 * offending event, or SIZE_MAX when all are fine. */
size_t first_nesting_error(const event_log *log, size_t context_enters);

/* Resident set size of this process in bytes (from /proc/self/statm), 0 if unknown. */
size_t resident_bytes(void);

#endif
