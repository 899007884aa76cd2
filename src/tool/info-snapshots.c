/*
 * info-snapshots.c - what `weft info` says about a process's snapshot requests (SNAPSHOT
 * metadata, format 1.8): how many were taken and refused, why each refusal (the throttles
 * max-snapshots and min-interval, a failed dump, too many waiting), and each request with its
 * time, origin, reason and the DIR/snapshot-N it wrote.
 */
#include "tool/info-snapshots.h"
#include "format/format.h"
#include <stdio.h>
#include <string.h>

#define SHOWN 20

void weft_info_snapshots(const struct weft_trace *t, const struct weft_proc *p)
{
	if (!p->nsnaps)
		return;
	size_t taken = 0, refused[8] = {0}, nrefused = 0;
	for (size_t i = 0; i < p->nsnaps; i++) {
		if (!p->snaps[i].refused) {
			taken++;
			continue;
		}
		nrefused++;
		refused[p->snaps[i].refused < 8 ? p->snaps[i].refused : 0]++;
	}
	printf("  snapshots: %zu taken, %zu refused", taken, nrefused);
	if (nrefused) {
		const char *sep = " (";
		for (unsigned k = 1; k < 8; k++)
			if (refused[k]) {
				printf("%s%zu %s", sep, refused[k], weft_snap_refusal_name(k));
				sep = ", ";
			}
		if (refused[0])
			printf("%s%zu unknown", sep, refused[0]);
		printf(")");
	}
	printf("\n");
	/* times from the trace's first event (the process's first clock point when it has none) */
	uint64_t base = t->first_ns ? t->first_ns : p->nclock ? p->clock[0].boot_ns : 0;
	for (size_t i = 0; i < p->nsnaps && i < SHOWN; i++) {
		const struct weft_snap_mark *m = &p->snaps[i];
		uint64_t ns = weft_proc_ns(p, m->ticks);
		printf("    +%.6f s  %-8s %s", ns >= base ? (double)(ns - base) / 1e9 : 0.0,
		       weft_snap_origin_name(m->origin), m->refused ? "refused: " : "taken");
		if (m->refused == WEFT_SNAP_FAILED)
			printf("failed (%s)", strerror((int)m->err));
		else if (m->refused)
			printf("%s", weft_snap_refusal_name(m->refused));
		printf("  \"%s\"", m->reason ? m->reason : "");
		if (m->number)
			printf("  -> snapshot-%u", m->number);
		printf("\n");
	}
	if (p->nsnaps > SHOWN)
		printf("    ... and %zu more\n", p->nsnaps - SHOWN);
}
