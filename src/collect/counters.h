/*
 * counters.h - per-slice hardware and software counters (`weft record --counters=LIST`,
 * counters= in WEFT_OPTIONS). Two halves:
 *   counters-table.c  the names weft accepts (perf's: the generic hardware events and the
 *                     software events), parsing a list, probing which ones this machine can
 *                     open, and the reading decisions (rdpmc through an event's mmap page, or
 *                     read() of the group) - pure code, used by the CLI and the unit tests too;
 *   counters.c        the runtime: one perf_event group per thread, read at slice begin and
 *                     end, the values written as extra words of BEGIN/END/FUNC records.
 */
#ifndef WEFT_COUNTERS_H
#define WEFT_COUNTERS_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>

#define WEFT_CTR_MAX 8 /* counters per slice (WEFT__CTR_MAX in weft_fastpath.h) */

struct weft_ctr_def {
	const char *name;  /* perf's name, as in `perf list` */
	const char *alias; /* another name perf accepts, or NULL */
	uint32_t type;     /* PERF_TYPE_HARDWARE or PERF_TYPE_SOFTWARE */
	uint64_t config;
	const char *unit;  /* "ns" for the clocks, else "" */
};

/* The table, ended by a NULL name. */
extern const struct weft_ctr_def weft_ctr_defs[];

/* The counter named `name` (its name or alias), or NULL. */
const struct weft_ctr_def *weft_ctr_find(const char *name);

/* Parses a comma-separated list of names into out[] (WEFT_CTR_MAX entries). Returns how many,
 * or -EINVAL with a one-line reason in why ("unknown counter 'x'; known: ..."), or -E2BIG
 * (more than WEFT_CTR_MAX, or one named twice: -EINVAL). */
int weft_ctr_parse(const char *list, const struct weft_ctr_def **out, char *why, size_t n);

/* The attributes of counter d as a member of a per-thread group (leader: the group's first),
 * counting user and (unless exclude_kernel) kernel work of the calling thread. */
void weft_ctr_attr(const struct weft_ctr_def *d, int leader, int exclude_kernel, struct perf_event_attr *a);

/* Can this machine count d for the calling thread? 0, or -errno of perf_event_open. */
int weft_ctr_probe(const struct weft_ctr_def *d);

/* Every counter of the table this machine can open, comma-separated, into buf. */
void weft_ctr_available(char *buf, size_t n);

/* Reads one counter through its mmap page with the seqlock protocol of perf_event_mmap_page:
 * when the page says user space may read the PMU (cap_user_rdpmc) and the event is on one now
 * (index != 0), *out = offset + the sign-extended pmc_width bits of rdpmc(index - 1), and 0 is
 * returned; otherwise -1: the caller reads the group with read(). `rdpmc` is the instruction
 * (weft_ctr_rdpmc) or, in tests, a fake. */
int weft_ctr_mmap_read(const volatile struct perf_event_mmap_page *pg, uint64_t (*rdpmc)(uint32_t idx),
		       uint64_t *out);
/* Does this page allow rdpmc at all (cap_user_rdpmc)? Decides a thread's mode at open. */
int weft_ctr_mmap_can_rdpmc(const volatile struct perf_event_mmap_page *pg);
uint64_t weft_ctr_rdpmc(uint32_t idx);

/* Parses what read() of a PERF_FORMAT_GROUP leader gave (u64 nr, then nr values) into out[n].
 * Returns 0, or -1 when the buffer is short or holds another count. */
int weft_ctr_group_parse(const uint64_t *buf, size_t bytes, unsigned n, uint64_t *out);

#endif
