/* Host alignment (src/format/hosts.c) on a trace built by hand: three processes on three
 * hosts. nodeB's process is world rank 0: the reference, though it is not the first process.
 * nodeA (rank 1) has only CLOCK records: its boot clock is 3 s behind nodeB's on the wall clock
 * (REALTIME - BOOTTIME 3 s larger), one of its three readings 5 ms off (the median ignores it).
 * nodeC (rank 2) measured its offset over MPI: two CLOCK_SYNC records per phase, the one with
 * the smaller round trip counts; between the phases (10 s apart) the offset grew by 1000 ns, a
 * drift of +100 ns/s. Its events must land on nodeB's clock, its raw-ns records (COMPLETE,
 * ACCESS) too, and its pid and tids become pid | 2 << 22 (nodeC is the trace's third host).
 * Arrows: nodeA's slice sends 0x55 to nodeC's, which ends it after its END (with an argument
 * `bytes` there); nodeC's sends 0x56 to nodeB's, which ends before it begins (a message back
 * in time on this timeline); nodeB's 0x99 goes nowhere. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include "trace_builder.h"
#include "format/reader.h"
#include "format/hosts.h"

#define S 1000000000ll
#define REAL0 1000000000000000000ull /* nodeB's boot on the wall clock */

static struct tb meta[3], ev[3];

static void process_rec(struct tb *m, uint32_t pid, const char *host, uint32_t rank, uint64_t start)
{
	unsigned char rec[128] = {0};
	uint32_t ids[2] = {pid, 1};
	memcpy(rec, ids, 8);
	memcpy(rec + 8, &start, 8);
	size_t l = strlen(host);
	memcpy(rec + 16, host, l + 1);
	memcpy(rec + 16 + l + 1, "app\0\0", 5);
	tb_meta(m, WEFT_M_PROCESS, rec, 16 + l + 1 + 5);
	tb_meta(m, WEFT_M_PROCESS_NAME, "app", 4);
	unsigned char job[64] = {0};
	uint32_t j[4] = {rank, 3, 0, 1};
	memcpy(job, j, 16);
	memcpy(job + 16, "job7\0test\0", 10);
	tb_meta(m, WEFT_M_JOB, job, 26);
}

static void clock_rec(struct tb *m, uint64_t ticks, uint64_t boot, uint64_t real)
{
	uint64_t w[3] = {ticks, boot, real};
	tb_meta(m, WEFT_M_CLOCK, w, sizeof(w));
}

static void sync_rec(struct tb *m, uint32_t phase, int64_t off, uint64_t at, uint64_t rtt)
{
	unsigned char rec[64] = {0};
	uint32_t w[2] = {phase, 0};
	memcpy(rec, w, 8);
	memcpy(rec + 8, &off, 8);
	memcpy(rec + 16, &at, 8);
	memcpy(rec + 24, &rtt, 8);
	uint32_t rounds = 10;
	memcpy(rec + 32, &rounds, 4);
	memcpy(rec + 40, "nodeB", 6);
	tb_meta(m, WEFT_M_CLOCK_SYNC, rec, 46);
}

/* ticks: 2 per ns from 1000 ticks = `base` ns */
#define T(base, ns) (1000 + 2 * ((ns) - (base)))

static void build(void)
{
	memset(meta, 0, sizeof(meta));
	memset(ev, 0, sizeof(ev));
	/* [0] pid 100 on nodeA, rank 1: boot = nodeB's - 3 s; clock readings at boot 7 s */
	uint64_t a0 = 7 * S;
	tb_header(&meta[0], WEFT_META_MAGIC, 1, 100);
	process_rec(&meta[0], 100, "nodeA", 1, a0);
	tb_clock_kind(&meta[0], 1);
	clock_rec(&meta[0], T(a0, a0), a0, a0 + REAL0 + 3 * S - 10);
	clock_rec(&meta[0], T(a0, a0 + 1000000), a0 + 1000000, a0 + 1000000 + REAL0 + 3 * S + 5000000);
	clock_rec(&meta[0], T(a0, a0 + 2000000), a0 + 2000000, a0 + 2000000 + REAL0 + 3 * S + 20);
	tb_site(&meta[0], 1, 0, "work");
	tb_header(&ev[0], WEFT_EVENTS_MAGIC, 1, 100);
	uint64_t e0[] = {T(a0, a0 + 500), HDR(1, WEFT_R_BEGIN, 0, 0), 0x55, HDR(0, WEFT_R_FLOW_OUT, 0, 0),
			 T(a0, a0 + 900), HDR(1, WEFT_R_END, 0, 0)};
	tb_chunk(&ev[0], 100, 0, e0, sizeof(e0) / 8, 1);
	/* [1] pid 200 on nodeB, rank 0: the reference */
	uint64_t b0 = 10 * S;
	tb_header(&meta[1], WEFT_META_MAGIC, 1, 200);
	process_rec(&meta[1], 200, "nodeB", 0, b0);
	tb_clock_kind(&meta[1], 1);
	clock_rec(&meta[1], T(b0, b0), b0, b0 + REAL0);
	clock_rec(&meta[1], T(b0, b0 + 1000000), b0 + 1000000, b0 + 1000000 + REAL0);
	tb_site(&meta[1], 1, 0, "work");
	tb_header(&ev[1], WEFT_EVENTS_MAGIC, 1, 200);
	uint64_t e1[] = {T(b0, b0 + 500), HDR(1, WEFT_R_BEGIN, 0, 0), 0x56, HDR(0, WEFT_R_FLOW_IN, 0, 0),
			 0x99, HDR(0, WEFT_R_FLOW_OUT, 0, 0), T(b0, b0 + 900), HDR(1, WEFT_R_END, 0, 0)};
	tb_chunk(&ev[1], 200, 0, e1, sizeof(e1) / 8, 1);
	/* [2] pid 300 on nodeC, rank 2: offset -5 s at boot 20 s, -5 s + 1000 ns at 30 s */
	uint64_t c0 = 20 * S;
	tb_header(&meta[2], WEFT_META_MAGIC, 1, 300);
	process_rec(&meta[2], 300, "nodeC", 2, c0);
	tb_clock_kind(&meta[2], 1);
	clock_rec(&meta[2], T(c0, c0), c0, c0 + REAL0 + 77 * S); /* REALTIME says otherwise: MPI wins */
	clock_rec(&meta[2], T(c0, c0 + 1000000), c0 + 1000000, c0 + 1000000 + REAL0 + 77 * S);
	sync_rec(&meta[2], 0, -5 * S + 100, 20 * S, 5000);
	sync_rec(&meta[2], 0, -5 * S, 20 * S, 1000);
	sync_rec(&meta[2], 1, -5 * S + 99999, 30 * S, 900);
	sync_rec(&meta[2], 1, -5 * S + 1000, 30 * S, 800);
	tb_site(&meta[2], 1, 0, "work");
	tb_site(&meta[2], 2, WEFT_KIND_ARG, "bytes");
	tb_header(&ev[2], WEFT_EVENTS_MAGIC, 1, 300);
	uint64_t e2[] = {
		T(c0, 25 * S), HDR(1, WEFT_R_BEGIN, 0, 0), 0x56, HDR(0, WEFT_R_FLOW_OUT, 0, 0),
		30 * S, HDR(1, WEFT_R_COMPLETE, 1, 0), 30 * S + 1000,
		30 * S, HDR(301, WEFT_R_ACCESS, 2, 1), 0x1000, 0x2000,
		T(c0, 29 * S), HDR(1, WEFT_R_END, 0, 0),
		/* known once it is over: an argument and the arrow that arrived */
		4096, HDR(2, WEFT_R_ARG_I64, 0, 0), 0x55, HDR(0, WEFT_R_FLOW_IN, 0, 0),
		/* a CUDA call's arrow names the process: it follows the unique pid */
		weft_gpu_flow_id(300, 5), HDR(0, WEFT_R_FLOW_OUT, 0, 0),
	};
	tb_chunk(&ev[2], 301, 0, e2, sizeof(e2) / 8, 1);
}

static struct weft_trace *open_built(void)
{
	const char *names[6] = {"100.wmeta", "100-0.wevents", "200.wmeta", "200-0.wevents", "300.wmeta", "300-0.wevents"};
	const unsigned char *data[6];
	size_t sizes[6];
	for (int i = 0; i < 3; i++) {
		data[2 * i] = meta[i].p;
		sizes[2 * i] = meta[i].n;
		data[2 * i + 1] = ev[i].p;
		sizes[2 * i + 1] = ev[i].n;
	}
	struct weft_trace *t = NULL;
	char err[256];
	if (weft_trace_from_buffers(names, data, sizes, 6, &t, err, sizeof(err)))
		fail_msg("open: %s", err);
	return t;
}

/* The records of a process's first thread, prepared (times in ns). */
static uint64_t *records(const struct weft_proc *p, size_t *n)
{
	uint64_t *buf = NULL;
	size_t cap = 0;
	const char *why;
	assert_int_equal(p->nthreads, 1);
	assert_int_equal(weft_chunk_decode_prepared(&p->threads[0].chunks[0], p, &buf, &cap, n, &why), 0);
	return buf;
}

static const struct weft_proc *by_orig_pid(const struct weft_trace *t, int pid)
{
	for (size_t i = 0; i < t->nprocs; i++)
		if (t->procs[i].orig_pid == pid)
			return &t->procs[i];
	fail_msg("no process %d", pid);
	return NULL;
}

static void sync_fix(void **st)
{
	(void)st;
	struct weft_clock_sync r[4] = {
		{.phase = 0, .offset_ns = 100, .at_ns = 1000, .rtt_ns = 50},
		{.phase = 0, .offset_ns = 90, .at_ns = 1010, .rtt_ns = 20},
		{.phase = 1, .offset_ns = 90 + 500, .at_ns = 1010 + 1000000000, .rtt_ns = 30},
		{.phase = 1, .offset_ns = 7, .at_ns = 1020 + 1000000000, .rtt_ns = 31},
	};
	const struct weft_clock_sync *v[4] = {&r[0], &r[1], &r[2], &r[3]};
	int64_t off;
	uint64_t x0, rtt;
	double drift;
	assert_int_equal(weft_hosts_sync_fix(v, 4, &off, &x0, &drift, &rtt), 2);
	assert_int_equal(off, 90);
	assert_int_equal(x0, 1010);
	assert_int_equal(rtt, 20);
	assert_true(drift > 499e-9 && drift < 501e-9);
	/* one phase: a constant */
	assert_int_equal(weft_hosts_sync_fix(v + 2, 2, &off, &x0, &drift, &rtt), 1);
	assert_int_equal(off, 590);
	assert_true(drift == 0);
	assert_int_equal(weft_hosts_sync_fix(v, 0, &off, &x0, &drift, &rtt), 0);
	/* two phases that agree within their round trips (here one ping-pong preempted for ms, as
	 * on an oversubscribed node): no drift measured, the better phase's offset, brought inside
	 * the other's bounds, as a constant - not a line tilted by ms/s */
	struct weft_clock_sync q[3] = {
		{.phase = 0, .offset_ns = 100, .at_ns = 1000, .rtt_ns = 20},
		{.phase = 1, .offset_ns = 100 + 1900, .at_ns = 1000 + 300000000, .rtt_ns = 3800},
		{.phase = 0, .offset_ns = 2000 + 1895, .at_ns = 1000, .rtt_ns = 3800},
	};
	const struct weft_clock_sync *w[2] = {&q[0], &q[1]};
	assert_int_equal(weft_hosts_sync_fix(w, 2, &off, &x0, &drift, &rtt), 2);
	assert_int_equal(off, 100);
	assert_int_equal(x0, 1000);
	assert_int_equal(rtt, 20);
	assert_true(drift == 0);
	w[0] = &q[2]; /* phase 0 the worse: phase 1's offset and time */
	w[1] = &q[1];
	q[1].rtt_ns = 10;
	assert_int_equal(weft_hosts_sync_fix(w, 2, &off, &x0, &drift, &rtt), 2);
	assert_int_equal(off, 2000);
	assert_int_equal(x0, 1000 + 300000000);
	assert_int_equal(rtt, 10);
	assert_true(drift == 0);
	q[1].offset_ns = 2000 + 1900; /* outside phase 0's bounds' reach: the line */
	q[1].rtt_ns = 3800;
	q[2].offset_ns = 0;
	assert_int_equal(weft_hosts_sync_fix(w, 2, &off, &x0, &drift, &rtt), 2);
	assert_int_equal(off, 0);
	assert_true(drift > 0);
	/* the better phase's offset outside the other's bounds (which still overlap its own): the
	 * nearest point within them */
	struct weft_clock_sync c[2] = {
		{.phase = 0, .offset_ns = 0, .at_ns = 1000, .rtt_ns = 100},
		{.phase = 1, .offset_ns = 1000, .at_ns = 2000, .rtt_ns = 1920},
	};
	const struct weft_clock_sync *u[2] = {&c[0], &c[1]};
	assert_int_equal(weft_hosts_sync_fix(u, 2, &off, &x0, &drift, &rtt), 2);
	assert_int_equal(off, 40);
	assert_true(drift == 0);
	/* the correction: the line through both phases */
	struct weft_ns_fix f = {.x0 = 1000, .off = -5, .drift = 1e-6};
	assert_int_equal(weft_ns_fix_apply(&f, 1000), 995);
	assert_int_equal(weft_ns_fix_apply(&f, 1000 + 1000000000), 1000 + 1000000000 - 5 + 1000);
	assert_int_equal(weft_ns_fix_apply(&f, 0), 0); /* never below 0 */
}

static void real_median(void **st)
{
	(void)st;
	struct weft_clock_pt p[4] = {{0, 10, 110}, {0, 20, 1020}, {0, 30, 150}, {0, 40, 0}};
	const struct weft_clock_pt *v[4] = {&p[0], &p[1], &p[2], &p[3]};
	int64_t m = 0;
	assert_int_equal(weft_hosts_real_median(v, 4, &m), 3); /* a reading without REALTIME: left out */
	assert_int_equal(m, 120);
	assert_int_equal(weft_hosts_real_median(v, 2, &m), 2);
	assert_int_equal(m, 100); /* an even count: the lower middle, a value measured */
}

static void aligned_trace(void **st)
{
	(void)st;
	build();
	struct weft_trace *t = open_built();
	assert_int_equal(t->hosts.n, 3);
	assert_string_equal(t->hosts.h[0].name, "nodeB"); /* rank 0's host */
	assert_string_equal(t->hosts.h[1].name, "nodeA");
	assert_string_equal(t->hosts.h[2].name, "nodeC");
	const struct weft_host *ha = &t->hosts.h[1], *hc = &t->hosts.h[2];
	assert_int_equal(ha->method, WEFT_ALIGN_REALTIME);
	assert_int_equal(ha->offset_ns, 3 * S + 20);
	assert_int_equal(ha->npoints, 3);
	assert_int_equal(hc->method, WEFT_ALIGN_MPI);
	assert_int_equal(hc->phases, 2);
	assert_int_equal(hc->offset_ns, -5 * S);
	assert_int_equal(hc->rtt_ns, 1000);
	assert_true(hc->drift_ns_s > 99.99 && hc->drift_ns_s < 100.01);

	/* the reference is untouched */
	const struct weft_proc *b = by_orig_pid(t, 200);
	assert_int_equal(b->pid, 200);
	assert_false(b->fixed);
	assert_string_equal(b->name, "app rank 0 (nodeB)");
	size_t n;
	uint64_t *r = records(b, &n);
	assert_int_equal(r[0], 10 * S + 500);
	free(r);

	/* nodeA: + 3 s + 20 ns, pid | 1 << 22 */
	const struct weft_proc *a = by_orig_pid(t, 100);
	assert_int_equal(a->pid, 100 | 1 << 22);
	assert_int_equal(a->threads[0].tid, 100 | 1 << 22);
	assert_string_equal(a->name, "app rank 1 (nodeA)");
	assert_int_equal(a->start_ns, 10 * S + 20);
	r = records(a, &n);
	assert_int_equal(r[0], 10 * S + 20 + 500);
	assert_int_equal(r[4], 10 * S + 20 + 900);
	free(r);

	/* nodeC: -5 s, drift 100 ns/s from boot 20 s */
	const struct weft_proc *c = by_orig_pid(t, 300);
	assert_int_equal(c->pid, 300 | 2 << 22);
	assert_int_equal(c->threads[0].tid, 301 | 2 << 22);
	assert_string_equal(c->name, "app rank 2 (nodeC)");
	r = records(c, &n);
	assert_int_equal(n, 19);
	/* ticks: the drift is composed into the tick -> ns map, whose 2^-32 ns per tick
	 * resolution is a few ns over seconds */
	assert_true(llabs((int64_t)(r[0] - (20 * S + 500))) <= 3); /* BEGIN */
	assert_int_equal(r[2], 0x56);                             /* a user's flow id: as given */
	assert_int_equal(r[4], 25 * S + 1000);                    /* COMPLETE start */
	assert_int_equal(r[6], 25 * S + 2000);                    /* and end */
	assert_int_equal(r[7], 25 * S + 1000);                    /* ACCESS */
	assert_int_equal(weft_rec_id(r[8]), 301 | 2 << 22);       /* by the unique tid */
	assert_true(llabs((int64_t)(r[11] - (24 * S + 900))) <= 3); /* END */
	assert_int_equal(r[13], 4096);
	assert_int_equal(r[15], 0x55);
	assert_int_equal(r[17], weft_gpu_flow_id(300 | 2 << 22, 5));
	free(r);
	assert_int_equal(t->first_ns, 10 * S + 500);
	assert_int_equal(t->last_ns, 25 * S + 2000);
	weft_trace_free(t);
	for (int i = 0; i < 3; i++) {
		free(meta[i].p);
		free(ev[i].p);
	}
}

/* `test_hosts --write DIR`: the trace's files into DIR (tests/integration/test_hosts.py converts
 * them: rank names and order, machine ids). */
static int write_dir(const char *dir)
{
	build();
	for (int i = 0; i < 3; i++)
		for (int k = 0; k < 2; k++) {
			char path[512];
			snprintf(path, sizeof(path), k ? "%s/%d-0.wevents" : "%s/%d.wmeta", dir, 100 * (i + 1));
			FILE *f = fopen(path, "wb");
			if (!f)
				return 1;
			const struct tb *b = k ? &ev[i] : &meta[i];
			fwrite(b->p, 1, b->n, f);
			if (fclose(f))
				return 1;
		}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--write"))
		return write_dir(argv[2]);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sync_fix),
		cmocka_unit_test(real_median),
		cmocka_unit_test(aligned_trace),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
