/*
 * linkage.h — how libotfx-capture's symbols are seen (private to libotfx-capture): hidden internals,
 * exported entry points, and the thread-local model of the data read on every record.
 */
#ifndef OTFX_CAPTURE_LINKAGE_H
#define OTFX_CAPTURE_LINKAGE_H

/* The library's functions are hidden one by one, not by a visibility preset: MPICH's headers do not mark
 * MPI_* as default-visible, so a preset would hide the wrappers too. */
#if defined(__GNUC__)
#define CAPTURE_INTERNAL __attribute__((visibility("hidden")))
#define CAPTURE_EXPORT   __attribute__((visibility("default")))
#else
#define CAPTURE_INTERNAL
#define CAPTURE_EXPORT
#endif

/* Thread-local data read on every record: the initial-exec model makes it one %fs-relative load instead
 * of a __tls_get_addr call (the library is preloaded or linked, never dlopen'ed late). */
#define CAPTURE_HOT_THREAD_LOCAL _Thread_local __attribute__((tls_model("initial-exec")))

#endif
