/* trace_copy.h — a frozen private copy of a trace, for readers that take long (the OTF2 export reads a
 * trace three times and writes files meanwhile): they read the copy without any lock while the
 * original goes on taking appends. Private to libotfx. */
#ifndef OTFX_TRACE_COPY_H
#define OTFX_TRACE_COPY_H

#include <otfx/trace.h>

/* Copies everything `trace` holds (sealed pieces, open chunk, calling context, statistics) into a new
 * trace with the same configuration, definitions and location; destroy it with otfx_trace_destroy.
 * Holds the original's read lock only while copying its bytes (about a memcpy of its bytes_used);
 * the copy needs as much memory again plus a trace's fixed working memory. */
otfx_status otfx_trace_copy(otfx_trace *trace, otfx_trace **copy);

#endif
