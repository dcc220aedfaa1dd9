/* otfx/visibility.h — which of libotfx's functions other programs can call.
 *
 * libotfx is compiled with hidden visibility: a function is internal to the library unless its
 * declaration in a public header carries OTFX_API. A traced application then cannot collide with
 * an internal helper of ours (nor we call one of its functions by the same name), and the exported
 * set is exactly the documented API, every name beginning with otfx_. */
#ifndef OTFX_VISIBILITY_H
#define OTFX_VISIBILITY_H

#if defined(OTFX_BUILDING_LIBRARY) && defined(__GNUC__)
#define OTFX_API __attribute__((visibility("default")))
#else
#define OTFX_API
#endif

#endif
