/* dropkeep.c - what a drop leaves open, kept: see dropkeep.h. */
#include "dropkeep.h"
#include "format/format.h"
#include <string.h>

/* From word `from` on, the opens on stack `key` go (closed by an end after them). */
static void cut_opens(struct weft_dropkeep *k, size_t from, unsigned key)
{
	size_t o = from;
	for (size_t i = from; i < k->nkeep;) {
		uint64_t h = k->keep[i + 1];
		unsigned type = weft_rec_type(h);
		size_t len = 2 + weft_rec_extra(h);
		if (!weft_rec_opens(type) || weft_rec_stack(type, h) != key) {
			memmove(k->keep + o, k->keep + i, len * 8);
			o += len;
		}
		i += len;
	}
	k->nkeep = o;
}

void weft_dropkeep_note(struct weft_dropkeep *k, const uint64_t *w, size_t n)
{
	if (n < 2)
		return;
	uint64_t h = w[1];
	unsigned type = weft_rec_type(h);
	size_t len = 2 + weft_rec_extra(h);
	if (len > n || (!weft_rec_opens(type) && !weft_rec_closes(type)))
		return;
	unsigned key = weft_rec_stack(type, h);
	if (weft_rec_closes(type)) {
		size_t at = SIZE_MAX; /* the innermost kept open it closes */
		for (size_t i = 0; i < k->nkeep; i += 2 + weft_rec_extra(k->keep[i + 1])) {
			uint64_t o = k->keep[i + 1];
			if (weft_rec_opens(weft_rec_type(o)) && weft_rec_stack(weft_rec_type(o), o) == key &&
			    weft_rec_id(o) == weft_rec_id(h))
				at = i;
		}
		if (at != SIZE_MAX) { /* begun and ended in the drop: neither matters after it */
			cut_opens(k, at, key);
			return;
		}
		/* it closes a slice begun before the drop, and (an exception) those begun in it above */
		cut_opens(k, 0, key);
	}
	if (k->nkeep + len > WEFT_DROPKEEP_WORDS)
		return; /* (dropped, as before) */
	memcpy(k->keep + k->nkeep, w, len * 8);
	k->nkeep += len;
}

uint64_t weft_dropkeep_events(const struct weft_dropkeep *k)
{
	uint64_t n = 0;
	for (size_t i = 0; i < k->nkeep; i += 2 + weft_rec_extra(k->keep[i + 1]))
		n += weft_rec_events(weft_rec_type(k->keep[i + 1]));
	return n;
}

size_t weft_dropkeep_write(struct weft_dropkeep *k, uint64_t *out, uint64_t lost)
{
	size_t n = 0;
	if (lost) { /* at the drop's start, or the first kept record's time if earlier */
		out[0] = k->nkeep && k->keep[0] < k->since ? k->keep[0] : k->since;
		out[1] = weft__hdr(0, WEFT_R_DROPPED, 1, 0);
		out[2] = lost;
		n = 3;
	}
	memcpy(out + n, k->keep, k->nkeep * 8);
	n += k->nkeep;
	k->nkeep = 0;
	return n;
}
