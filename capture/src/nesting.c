/*
 * nesting.c — the per-thread depth inside the tool (nesting.h). A module of its own at the bottom of the
 * library: every layer marks its own calls out of the library, none has to reach up for the count.
 */
#include "nesting.h"

CAPTURE_HOT_THREAD_LOCAL unsigned capture_tool_nesting;
