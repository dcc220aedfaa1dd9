/*
 * otfx/testpoint.h — test points: the settings (kind "test" in capture/settings/settings.tsv, named
 * OTFX_TEST_*) with which tests bend otfx's behaviour on purpose: a skewed clock, a place that falls
 * behind, a place that pretends to be on another node. Never set in real runs.
 *
 * Production code reads a test point through these functions only (the ordinary getters of
 * otfx/settings.h refuse them), so that `grep otfx_testpoint` finds every place where a test can
 * change what the code does, and docs/settings.md lists them all. Each answers false when the test
 * point is unset; an invalid value is reported on stderr once ("otfx: OTFX_TEST_X=V is not …:
 * ignored") and answers false too: a test point never stops a job.
 */
#ifndef OTFX_TESTPOINT_H
#define OTFX_TESTPOINT_H

#include <otfx/settings.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Whether a bool test point is set to 1. */
bool otfx_testpoint_enabled(otfx_setting id);
/* An integer test point's value. */
bool otfx_testpoint_integer(otfx_setting id, long long *value);
/* A string test point's value, NULL when unset. */
const char *otfx_testpoint_string(otfx_setting id);
/* A real test point's value. */
bool otfx_testpoint_real(otfx_setting id, double *value);

#ifdef __cplusplus
}
#endif
#endif
