/* Records two nested regions into an installed otfx and checks the profile it answers. */
#include <otfx/trace.h>
#include <stdio.h>

int main(void)
{
    otfx_defs *defs = otfx_defs_create();
    otfx_ref location, outer, inner;
    otfx_trace *trace = NULL;
    otfx_trace_config config = otfx_trace_config_default(1 << 20);
    if (!defs || otfx_defs_location(defs, 0, 0, &location) != OTFX_OK ||
        otfx_defs_region(defs, "outer", OTFX_ROLE_USER_FUNCTION, &outer) != OTFX_OK ||
        otfx_defs_region(defs, "inner", OTFX_ROLE_USER_FUNCTION, &inner) != OTFX_OK ||
        otfx_trace_create(&config, defs, location, &trace) != OTFX_OK) {
        fprintf(stderr, "consumer: setup failed: %s\n", otfx_last_error());
        return 1;
    }
    otfx_event events[4] = {
        {.time = 100, .type = OTFX_EV_ENTER, .u.region.region = outer},
        {.time = 150, .type = OTFX_EV_ENTER, .u.region.region = inner},
        {.time = 180, .type = OTFX_EV_LEAVE},
        {.time = 300, .type = OTFX_EV_LEAVE},
    };
    size_t appended = 0;
    otfx_profile *profile = otfx_profile_create();
    if (otfx_trace_append(trace, events, 4, &appended) != OTFX_OK ||
        otfx_query_profile(trace, 0, OTFX_TIME_MAX, profile) != OTFX_OK) {
        fprintf(stderr, "consumer: %s\n", otfx_last_error());
        return 1;
    }
    const otfx_profile_entry *entry = otfx_profile_find(profile, outer);
    int ok = entry && entry->visits == 1 && entry->inclusive == 200 && entry->exclusive == 170;
    printf("consumer: outer visits=%llu inclusive=%llu exclusive=%llu %s\n",
           entry ? (unsigned long long)entry->visits : 0ull,
           entry ? (unsigned long long)entry->inclusive : 0ull,
           entry ? (unsigned long long)entry->exclusive : 0ull, ok ? "ok" : "WRONG");
    otfx_profile_destroy(profile);
    otfx_trace_destroy(trace);
    otfx_defs_destroy(defs);
    return ok ? 0 : 1;
}
