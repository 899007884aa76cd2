/* weft export's streaming joins (src/export/sqlite-walk.c) on a trace built by hand: a block
 * allocated in a slice on one thread, freed on another; sampled accesses from the sampler's
 * stream, out of time order across its chunks (it drains one thread's ring after another),
 * before, during and after the block's life and the slice. Each access must be joined by its
 * own time, not by the order the stream holds it in. An access in no live block waits for its
 * thread's next memory record: taken inside the allocation call (before its record) at an
 * address the call wrote, it is the block's; in a live block's chunk header too. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "trace_builder.h"
#include "export/export.h"
#include "analysis/memory.h"

static struct tb meta, ev;

static void thread_rec(uint32_t tid, const char *name, uint64_t serial)
{
	unsigned char rec[64] = {0};
	memcpy(rec, &tid, 4);
	size_t l = strlen(name);
	memcpy(rec + 4, name, l + 1);
	memcpy(rec + 4 + l + 1, &serial, 8);
	tb_meta(&meta, WEFT_M_THREAD, rec, 4 + l + 1 + 8);
}

/* ticks: 2 per ns from 1000 ticks = 5,000,000 ns, so ns(t) = 5e6 + (t - 1000) / 2 */
#define T(ns) (1000 + 2 * ((ns) - 5000000ull))

static void build(void)
{
	memset(&meta, 0, sizeof(meta));
	memset(&ev, 0, sizeof(ev));
	tb_header(&meta, WEFT_META_MAGIC, 1, 50);
	tb_clock_kind(&meta, 1);
	tb_clock(&meta, 1000, 5000000);
	tb_clock(&meta, 201000, 5100000);
	tb_site(&meta, 1, 0, "work");
	thread_rec(10, "worker", 0);
	thread_rec(11, "freer", 1);
	thread_rec(99, "weft-access", 2);
	/* ACCESS totals: page faults, 9 samples, none lost or throttled, 3 left out as weft's own */
	uint64_t acc[5] = {1, 9, 0, 0, 3};
	tb_meta(&meta, WEFT_M_ACCESS, acc, sizeof(acc));
	tb_header(&ev, WEFT_EVENTS_MAGIC, 1, 50);
	/* worker: slice "work" [5000100, 5000300], allocates 4 KiB at 0x10000 in it */
	uint64_t w[] = {T(5000100), HDR(1, WEFT_R_BEGIN, 0, 0),
			T(5000110), HDR(0, WEFT_R_ALLOC, 2, WEFT_MEM_MALLOC), 0x10000, 4096,
			T(5000300), HDR(1, WEFT_R_END, 0, 0)};
	tb_chunk(&ev, 10, 0, w, sizeof(w) / 8, 1);
	/* freer: frees it at 5000310, outside any slice */
	uint64_t f[] = {T(5000310), HDR(0, WEFT_R_FREE, 1, WEFT_MEM_FREE), 0x10000};
	tb_chunk(&ev, 11, 1ull << 40, f, sizeof(f) / 8, 1);
	/* sampler: its first chunk holds a late access elsewhere; its second, older ones */
	uint64_t s0[] = {5000350, HDR(10, WEFT_R_ACCESS, 2, 1), 0x90000, 0x401000};
	uint64_t s1[] = {5000120, HDR(10, WEFT_R_ACCESS, 2, 1), 0x10010, 0x401001,  /* block, slice */
			 5000105, HDR(10, WEFT_R_ACCESS, 2, 1), 0x10000, 0x401002,  /* inside the malloc */
			 5000305, HDR(10, WEFT_R_ACCESS, 2, 1), 0x10fff, 0x401003,  /* block, after the slice */
			 5000400, HDR(10, WEFT_R_ACCESS, 2, 1), 0x10000, 0x401004,  /* after the free */
			 5000106, HDR(11, WEFT_R_ACCESS, 2, 1), 0x10008, 0x401005,  /* another thread's, before */
			 5000107, HDR(10, WEFT_R_ACCESS, 2, 1), 0x11008, 0x401006,  /* inside: the next header */
			 5000108, HDR(10, WEFT_R_ACCESS, 2, 1), 0x12000, 0x401007,  /* inside, not the call's */
			 5000200, HDR(10, WEFT_R_ACCESS, 2, 1), 0xfff8, 0x401008};  /* the block's header */
	tb_chunk(&ev, 99, 2ull << 40, s0, sizeof(s0) / 8, 1);
	tb_chunk(&ev, 99, (2ull << 40) | 1, s1, sizeof(s1) / 8, 1);
}

static struct weft_trace *trace(void)
{
	const char *names[2] = {"50.wmeta", "50-0.wevents"};
	const unsigned char *data[2] = {meta.p, ev.p};
	size_t sizes[2] = {meta.n, ev.n};
	struct weft_trace *t = NULL;
	char err[256];
	assert_int_equal(weft_trace_from_buffers(names, data, sizes, 2, &t, err, sizeof(err)), 0);
	return t;
}

static sqlite3 *export_db(char *path)
{
	struct weft_trace *t = trace();
	char err[256];
	struct weft_export_summary sum;
	int rc = weft_export_sqlite(t, path, &sum, err, sizeof(err));
	if (rc)
		fail_msg("export: %s", err);
	weft_trace_free(t);
	sqlite3 *db = NULL;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	return db;
}

static int64_t q1(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
		fail_msg("%s: %s", sql, sqlite3_errmsg(db));
	assert_int_equal(sqlite3_step(s), SQLITE_ROW);
	int64_t v = sqlite3_column_type(s, 0) == SQLITE_NULL ? -1 : sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return v;
}

static void joins_by_time(void **st)
{
	(void)st;
	build();
	char dir[] = "/tmp/weft-sqlj-XXXXXX", path[64];
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/t.db", dir);
	sqlite3 *db = export_db(path);
	/* the block: allocated by worker (utid 1) in slice 1, freed by freer (utid 2) in none */
	assert_int_equal(q1(db, "select count(*) from allocations"), 1);
	assert_int_equal(q1(db, "select utid * 1000 + free_utid from allocations"), 1002);
	assert_int_equal(q1(db, "select alloc_ts from allocations"), 5000110);
	assert_int_equal(q1(db, "select free_ts from allocations"), 5000310);
	assert_int_equal(q1(db, "select slice_id from allocations"), (1ll << 32) | 1);
	assert_int_equal(q1(db, "select free_slice_id from allocations"), -1);
	/* the accesses, by instruction: which joined to the block, which to the slice */
	assert_int_equal(q1(db, "select count(*) from accesses"), 9);
	assert_int_equal(q1(db, "select group_concat(ip - 4198400, '') from (select ip from accesses "
				"where allocation_id = 1 order by ip)"), 12368);
	assert_int_equal(q1(db, "select group_concat(ip - 4198400, '') from (select ip from accesses "
				"where slice_id = (1 << 32 | 1) order by ip)"), 12678);
	assert_int_equal(q1(db, "select count(*) from accesses where utid = 1"), 8);
	assert_int_equal(q1(db, "select count(*) from accesses where region = 'malloc'"), 5);
	/* no map: the block's pages are the heap's as the allocation shows them */
	assert_int_equal(q1(db, "select group_concat(ip - 4198400, '') from (select ip from accesses "
				"where region = 'malloc arena' order by ip)"), 45);
	assert_int_equal(q1(db, "select count(*) from accesses where region = 'unknown'"), 2);
	assert_int_equal(q1(db, "select count(*) from accesses where region = 'unknown' and ip in (4198400, 4198407)"), 2);
	assert_int_equal(q1(db, "select count(*) from accesses where is_write is null and source = 'pagefault'"), 9);
	/* the slice row and the threads */
	assert_int_equal(q1(db, "select dur from slices where name = 'work'"), 200);
	assert_int_equal(q1(db, "select count(*) from threads"), 3);
	sqlite3_close(db);
	unlink(path);
	rmdir(dir);
	/* the .pftrace's per-site counts (analysis/memory.c) join the same way */
	struct weft_trace *t = trace();
	struct weft_mem *m = NULL;
	char err[256];
	assert_int_equal(weft_mem_analyze(t, &m, err, sizeof(err)), 0);
	const struct weft_mem_proc *mp = weft_mem_for(m, &t->procs[0]);
	assert_non_null(mp);
	assert_int_equal(t->procs[0].access_samples, 9);
	assert_int_equal(t->procs[0].access_own, 3);
	assert_int_equal(mp->joined_accesses, 5);
	assert_int_equal(mp->unjoined.count, 4);
	assert_int_equal(mp->naccess_sites, 1);
	assert_int_equal(mp->access_sites[0].site, 1); /* "work" */
	assert_int_equal(mp->access_sites[0].count, 5);
	for (size_t i = 1; i < mp->access_sites[0].npoints; i++) /* cumulative, in time order */
		assert_true(mp->access_sites[0].points[i].ts > mp->access_sites[0].points[i - 1].ts);
	weft_mem_free(m);
	weft_trace_free(t);
	free(meta.p);
	free(ev.p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(joins_by_time)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
