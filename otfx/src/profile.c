/* profile.c — the otfx_profile result object: per-region statistics sorted by region. */
/* rwlocks are POSIX, not C11. */
#define _POSIX_C_SOURCE 200809L

#include "profile.h"

#include "error.h"

#include <stdlib.h>

otfx_profile *otfx_profile_create(void)
{
    otfx_profile *profile = calloc(1, sizeof *profile);
    if (!profile) {
        otfx_fail(OTFX_ERR_NOMEM, "out of memory creating a profile");
        return NULL;
    }
    summary_init(&profile->stats);
    return profile;
}

void otfx_profile_destroy(otfx_profile *profile)
{
    if (!profile)
        return;
    summary_free(&profile->stats);
    free(profile);
}

void otfx_profile_clear(otfx_profile *profile)
{
    if (!profile)
        return;
    summary_clear(&profile->stats);
    profile->approximate = false;
}

otfx_status profile_add_summary(otfx_profile *profile, const summary *s, bool approximate)
{
    /* Only the per-region part belongs to a profile. */
    summary regions_only = *s;
    regions_only.peer_count = 0;
    otfx_status status = summary_add(&profile->stats, &regions_only);
    if (status == OTFX_OK)
        profile->approximate |= approximate;
    return status;
}

otfx_status otfx_profile_merge(otfx_profile *into, const otfx_profile *from)
{
    if (!into || !from)
        return otfx_fail(OTFX_ERR_INVALID, "otfx_profile_merge: NULL argument");
    return profile_add_summary(into, &from->stats, from->approximate);
}

size_t otfx_profile_size(const otfx_profile *profile)
{
    return profile ? profile->stats.region_count : 0;
}

const otfx_profile_entry *otfx_profile_entries(const otfx_profile *profile)
{
    return profile ? profile->stats.regions : NULL;
}

const otfx_profile_entry *otfx_profile_find(const otfx_profile *profile, otfx_ref region)
{
    if (!profile)
        return NULL;
    uint32_t low = 0, high = profile->stats.region_count;
    while (low < high) {
        uint32_t middle = low + (high - low) / 2;
        otfx_ref key = profile->stats.regions[middle].region;
        if (key == region)
            return &profile->stats.regions[middle];
        if (key < region)
            low = middle + 1;
        else
            high = middle;
    }
    return NULL;
}

bool otfx_profile_approximate(const otfx_profile *profile)
{
    return profile && profile->approximate;
}
