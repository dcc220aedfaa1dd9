/* profile.h — the otfx_profile object's layout (private). */
#ifndef OTFX_PROFILE_H
#define OTFX_PROFILE_H

#include "summary.h"

struct otfx_profile {
    summary stats; /* regions only; peers stay empty */
    bool approximate;
};

/* Adds the per-region part of `s`; `approximate` marks the profile as pro-rated somewhere. */
otfx_status profile_add_summary(otfx_profile *profile, const summary *s, bool approximate);

#endif
