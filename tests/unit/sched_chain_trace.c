/* sched_chain_trace DIR - writes a hand-made `--sched` trace into DIR whose CPUs' switch chains
 * are broken the two ways weft meets: a switch the kernel did not report, and the gap between
 * two program images (exec) where nothing was recorded. tests/integration/test_sched.py
 * converts it and checks what trace_processor makes of it (no mismatched_sched_switch_tids, no
 * negative sched durations but each CPU's last, the missing switches where weft puts them).
 *
 * Process 60 "app", its image 0 (60.wmeta), reader thread 11 "weft-sched" (times in ns):
 *   CPU 0  1,000,000 switch 0 -> 100 (app)       CPU 1  1,000,000 switch 0 -> 101
 *          2,000,000 switch 100 -> 70 (an agent)        5,000,000 switch 101 -> 0
 *          3,000,000 waking of 100, made by 200   (the kernel left out 70 -> 200)
 *          4,000,000 switch 200 -> 0
 * its image 1 after exec (60.1.wmeta), reader thread 12 "weft-sched", nothing recorded
 * between 5,000,000 and 20,000,000:
 *   CPU 0 20,000,000 switch 300 -> 100           CPU 1 21,000,000 switch 0 -> 101
 *         22,000,000 switch 100 -> 0
 * The SCHED metadata of image 0 says 1 switch was not reported. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "trace_builder.h"
#include "collect/sched_tp.h"

#define LO_HI(lo, hi) ((uint64_t)(lo) | (uint64_t)(hi) << 32)
/* prev_state | prev prio << 32 | next prio << 48 */
#define STATE(s) ((uint64_t)(s) | 120ull << 32 | 120ull << 48)

static void thread_rec(struct tb *meta, uint32_t tid, const char *name, uint64_t serial)
{
	unsigned char rec[64] = {0};
	memcpy(rec, &tid, 4);
	size_t l = strlen(name);
	memcpy(rec + 4, name, l + 1);
	memcpy(rec + 4 + l + 1, &serial, 8);
	tb_meta(meta, WEFT_M_THREAD, rec, 4 + l + 1 + 8);
}

static void sched_meta(struct tb *meta, uint64_t records, uint64_t unreported)
{
	unsigned char rec[128] = {0};
	uint32_t head[2] = {1, 2};
	uint64_t v[2] = {records, 0};
	uint32_t rd[2] = {1, 1};
	memcpy(rec, head, 8);
	memcpy(rec + 8, v, 16);
	memcpy(rec + 24, rd, 8);
	static const char tail[] = "6.18.0\0x86_64\0\0000-1"; /* release, machine, why, the reader's CPUs */
	memcpy(rec + 32, tail, sizeof(tail));
	memcpy(rec + 32 + sizeof(tail), &unreported, 8);
	tb_meta(meta, WEFT_M_SCHED, rec, 32 + sizeof(tail) + 8);
}

static void comm(uint64_t *w, size_t *n, uint64_t ts, unsigned cpu, uint32_t tid, const char *name)
{
	uint64_t x[3] = {tid, 0, 0};
	memcpy(&x[1], name, strlen(name));
	w[(*n)++] = ts;
	w[(*n)++] = HDR(cpu, WEFT_R_SCHED, 3, WEFT_SCHED_COMM);
	for (int i = 0; i < 3; i++)
		w[(*n)++] = x[i];
}

static void rec2(uint64_t *w, size_t *n, uint64_t ts, unsigned cpu, unsigned kind, uint64_t a, uint64_t b)
{
	w[(*n)++] = ts;
	w[(*n)++] = HDR(cpu, WEFT_R_SCHED, 2, kind);
	w[(*n)++] = a;
	w[(*n)++] = b;
}

static void image(const char *dir, const char *stem, uint32_t reader, const uint64_t *w, size_t n, uint64_t records,
		  uint64_t unreported)
{
	struct tb meta = {0}, ev = {0};
	tb_header(&meta, WEFT_META_MAGIC, 1, 60);
	tb_meta(&meta, WEFT_M_PROCESS_NAME, "app", 4);
	tb_clock_kind(&meta, 0);
	tb_clock(&meta, 1000000, 1000000);
	thread_rec(&meta, 60, "app", 0);
	thread_rec(&meta, reader, "weft-sched", 1);
	sched_meta(&meta, records, unreported);
	tb_header(&ev, WEFT_EVENTS_MAGIC, 1, 60);
	tb_chunk(&ev, reader, 1ull << 40, w, n, 0);
	char path[512];
	const struct tb *parts[2] = {&meta, &ev};
	const char *suffix[2] = {".wmeta", "-0.wevents"};
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/%s%s", dir, stem, suffix[i]);
		FILE *f = fopen(path, "wb");
		if (!f || fwrite(parts[i]->p, 1, parts[i]->n, f) != parts[i]->n || fclose(f)) {
			perror(path);
			exit(1);
		}
	}
	free(meta.p);
	free(ev.p);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: sched_chain_trace DIR\n");
		return 2;
	}
	uint64_t w[128];
	size_t n = 0;
	comm(w, &n, 1000000, 0, 100, "app");
	rec2(w, &n, 1000000, 0, WEFT_SCHED_SWITCH, LO_HI(0, 100), STATE(0));
	comm(w, &n, 1000000, 1, 101, "app-worker");
	rec2(w, &n, 1000000, 1, WEFT_SCHED_SWITCH, LO_HI(0, 101), STATE(0));
	comm(w, &n, 2000000, 0, 70, "agent");
	rec2(w, &n, 2000000, 0, WEFT_SCHED_SWITCH, LO_HI(100, 70), STATE(1));
	comm(w, &n, 3000000, 0, 200, "other");
	rec2(w, &n, 3000000, 0, WEFT_SCHED_WAKING, LO_HI(100, 0), 120 | (uint64_t)200 << 32);
	rec2(w, &n, 4000000, 0, WEFT_SCHED_SWITCH, LO_HI(200, 0), STATE(1));
	rec2(w, &n, 5000000, 1, WEFT_SCHED_SWITCH, LO_HI(101, 0), STATE(1));
	image(argv[1], "60", 11, w, n, 6, 1);
	n = 0;
	comm(w, &n, 20000000, 0, 300, "later");
	comm(w, &n, 20000000, 0, 100, "app");
	rec2(w, &n, 20000000, 0, WEFT_SCHED_SWITCH, LO_HI(300, 100), STATE(0));
	comm(w, &n, 21000000, 1, 101, "app-worker");
	rec2(w, &n, 21000000, 1, WEFT_SCHED_SWITCH, LO_HI(0, 101), STATE(0));
	rec2(w, &n, 22000000, 0, WEFT_SCHED_SWITCH, LO_HI(100, 0), STATE(1));
	image(argv[1], "60.1", 12, w, n, 3, 0);
	return 0;
}
