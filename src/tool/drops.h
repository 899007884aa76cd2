/* drops.h - why a process's events were dropped and which option would have kept them, from
 * what its trace says: the options it ran with, its writers' CPU time against its run. */
#ifndef WEFT_DROPS_H
#define WEFT_DROPS_H
#include <stddef.h>
#include "format/reader.h"

/* One line (no newline) into out, or "" where p dropped nothing or its writes failed (weft info
 * says that on its own line). */
void weft_drops_hint(const struct weft_proc *p, char *out, size_t n);

#endif
