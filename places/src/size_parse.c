/*
 * size_parse.c — buffer sizes as users write them ("256K", "64M"): shared by the place (OTFX_BUFFER)
 * and otfx-run (--buffer), which must agree on what a size means. No MPI or otfx inside, so that
 * otfx-run links only this file of the place library.
 */
#include <otfx/place.h>

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

int otfx_place_parse_size(const char *text, size_t *bytes)
{
    if (!text || !isdigit((unsigned char)text[0]))
        return -1;
    char *end = NULL;
    errno = 0;
    unsigned long long value = strtoull(text, &end, 10);
    if (errno || value == 0)
        return -1;
    unsigned shift = 0;
    switch (toupper((unsigned char)*end)) {
    case 'K':
        shift = 10;
        end++;
        break;
    case 'M':
        shift = 20;
        end++;
        break;
    case 'G':
        shift = 30;
        end++;
        break;
    default:
        break;
    }
    if (shift && (*end == 'i' || *end == 'I'))
        end++;
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end)
        return -1;
    if (value > (SIZE_MAX >> shift))
        return -1;
    *bytes = (size_t)value << shift;
    return 0;
}
