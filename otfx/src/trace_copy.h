/* trace_copy.h — a frozen private copy of a trace, for readers that take long (the OTF2 export reads a
 * trace three times and writes files meanwhile): they read the copy without any lock while the
 * original goes on taking appends. Private to libotfx. */
#ifndef OTFX_TRACE_COPY_H
#define OTFX_TRACE_COPY_H

#include <otfx/trace.h>

/* Copies everything `trace` holds (sealed pieces, open chunk, calling context, statistics) into a new
 * trace with the same configuration, definitions and location; destroy it with otfx_trace_destroy.
 * The sealed pieces are shared, not copied (trace_internal.h, blob_share): the original's read lock is
 * held while the piece table, the statistics and the open chunk are copied, and the copy needs that much
 * memory plus a trace's fixed working memory — and keeps alive the sealed chunks the trace lets go of
 * (reduces away) while the copy exists. */
otfx_status otfx_trace_copy(otfx_trace *trace, otfx_trace **copy);

#endif
