/* settings_internal.h — the descriptors generated from settings.tsv (settings_table.c). */
#ifndef OTFX_SETTINGS_INTERNAL_H
#define OTFX_SETTINGS_INTERNAL_H

#include <otfx/settings.h>

extern const otfx_setting_info otfx_setting_table[OTFX_SETTING_COUNT];

#endif
