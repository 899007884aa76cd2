/* The GPU analysis (src/analysis/gpu.c) and `weft report --gpu` on a trace built by hand:
 * process 50 "cudaapp" whose thread 10 makes five CUDA calls (slices with a FLOW out of
 * weft_gpu_flow_id(50, corr)), and whose CUPTI thread 11 (named in the GPU record) wrote the
 * activities: kernels vadd (twice) and reduce<256>, a copy HtoD, a memset, and a copy DtoH
 * that no call in the trace launched. The device clock runs from G0 = 1 s while the trace's
 * reads 5 ms, and 1e-4 fast: host = 5,000,000 + (gpu - G0) * 1.0001, given by five GPU_CLOCK
 * pairs 200 ns wide and one pair 1 ms wide whose middle is 300 us off (preempted: left out).
 * `test_gpu --write DIR` writes the trace into DIR and exits (tests/integration/test_gpu.py
 * converts it to Chrome JSON). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "trace_builder.h"
#include "analysis/gpu.h"

static struct tb meta, ev;

#define G0 1000000000ull
/* the exact host time of a device time G0 + d, d a multiple of 10,000 ns */
#define HOST(d) (5000000ull + (d) + (d) / 10000)
/* ticks: 2 per ns from 1000 ticks = 5,000,000 ns */
#define T(ns) (1000 + 2 * ((ns) - 5000000ull))

static void thread_rec(uint32_t tid, const char *name, uint64_t serial)
{
	unsigned char rec[64] = {0};
	memcpy(rec, &tid, 4);
	size_t l = strlen(name);
	memcpy(rec + 4, name, l + 1);
	memcpy(rec + 4 + l + 1, &serial, 8);
	tb_meta(&meta, WEFT_M_THREAD, rec, 4 + l + 1 + 8);
}

static void gpu_rec(void)
{
	unsigned char rec[128] = {0};
	uint32_t w[2] = {1, 1};
	uint64_t n[4] = {6, 0, 2, 5}; /* records, dropped, buffers, API calls */
	uint32_t v[3] = {24, 0, 11};  /* CUPTI version, 0, the tid */
	memcpy(rec, w, 8);
	memcpy(rec + 8, n, 32);
	memcpy(rec + 40, v, 12);
	const char *text = "libcupti.so.12 (CUPTI 24)";
	memcpy(rec + 52, text, strlen(text) + 1);
	tb_meta(&meta, WEFT_M_GPU, rec, 52 + strlen(text) + 1);
}

static void clock_pt(uint64_t gpu, uint64_t mid, uint64_t width)
{
	uint64_t w[3] = {gpu, mid - width / 2, mid + width / 2};
	tb_meta(&meta, WEFT_M_GPU_CLOCK, w, sizeof(w));
}

/* An H100-like device: 64 warps, 32 blocks, 228 KiB shared and 64 Ki registers per SM. */
static const struct weft_gpu_device_def h100 = {0, 132, 9, 0, 64, 32, 233472, 65536, 65536, 232448, 1024, 32,
						1980000, 85520809984ull, "NVIDIA H100 80GB HBM3"};

static void device_rec(void)
{
	unsigned char rec[128] = {0};
	const struct weft_gpu_device_def *d = &h100;
	uint32_t w[12] = {d->id, d->sms, d->cc_major, d->cc_minor, d->max_warps_sm, d->max_blocks_sm,
			  d->max_shared_sm, d->max_regs_sm, d->max_regs_block, d->max_shared_block,
			  d->max_threads_block, d->warp_size};
	memcpy(rec, w, 48);
	memcpy(rec + 48, &d->global_mem, 8);
	memcpy(rec + 56, &d->clock_khz, 4);
	memcpy(rec + 64, d->name, strlen(d->name) + 1);
	tb_meta(&meta, WEFT_M_GPU_DEVICE, rec, 64 + strlen(d->name) + 1);
}

#define LO_HI(lo, hi) ((uint64_t)(lo) | (uint64_t)(hi) << 32)

static void build(void)
{
	memset(&meta, 0, sizeof(meta));
	memset(&ev, 0, sizeof(ev));
	tb_header(&meta, WEFT_META_MAGIC, 1, 50);
	tb_meta(&meta, WEFT_M_PROCESS_NAME, "cudaapp", 8);
	tb_clock_kind(&meta, 1);
	tb_clock(&meta, 1000, 5000000);
	tb_clock(&meta, 2001000, 6000000);
	tb_site(&meta, 1, 0, "cudaLaunchKernel");
	tb_site(&meta, 2, 0, "_Z4vaddPfPKfi");
	tb_site(&meta, 3, 0, "_Z6reduceILi256EEvPf");
	tb_site(&meta, 4, 0, "cudaMemcpy");
	tb_site(&meta, 5, 0, "cudaMemset");
	thread_rec(10, "main", 0);
	thread_rec(11, "weft-cupti", 1);
	gpu_rec();
	device_rec();
	for (uint64_t i = 0; i < 5; i++)
		clock_pt(G0 + i * 100000, HOST(i * 100000), 200);
	clock_pt(G0 + 550000, HOST(550000) + 300000, 1000000);
	tb_header(&ev, WEFT_EVENTS_MAGIC, 1, 50);
	/* the calls: BEGIN, FLOW out, END */
	uint64_t h[] = {
		T(5100000), HDR(1, WEFT_R_BEGIN, 0, 0), weft_gpu_flow_id(50, 1), HDR(0, WEFT_R_FLOW_OUT, 0, 0),
		T(5100020), HDR(1, WEFT_R_END, 0, 0),
		T(5200000), HDR(1, WEFT_R_BEGIN, 0, 0), weft_gpu_flow_id(50, 2), HDR(0, WEFT_R_FLOW_OUT, 0, 0),
		T(5200020), HDR(1, WEFT_R_END, 0, 0),
		T(5300000), HDR(1, WEFT_R_BEGIN, 0, 0), weft_gpu_flow_id(50, 3), HDR(0, WEFT_R_FLOW_OUT, 0, 0),
		T(5300020), HDR(1, WEFT_R_END, 0, 0),
		T(5400000), HDR(4, WEFT_R_BEGIN, 0, 0), weft_gpu_flow_id(50, 4), HDR(0, WEFT_R_FLOW_OUT, 0, 0),
		T(5500000), HDR(4, WEFT_R_END, 0, 0),
		T(5600000), HDR(5, WEFT_R_BEGIN, 0, 0), weft_gpu_flow_id(50, 5), HDR(0, WEFT_R_FLOW_OUT, 0, 0),
		T(5600020), HDR(5, WEFT_R_END, 0, 0),
	};
	tb_chunk(&ev, 10, 0, h, sizeof(h) / 8, 1);
	/* the activities: kernels (grid 1024; block; regs | static shared; dynamic shared) */
	uint64_t g[] = {
		G0 + 100000, HDR(1, WEFT_R_GPU, 9, WEFT_GPU_KERNEL), G0 + 110000, LO_HI(0, 1), LO_HI(7, 2),
		LO_HI(1024, 1), LO_HI(1, 256), LO_HI(1, 1), LO_HI(32, 0), 0, 0,
		G0 + 200000, HDR(2, WEFT_R_GPU, 9, WEFT_GPU_KERNEL), G0 + 220000, LO_HI(0, 1), LO_HI(7, 2),
		LO_HI(1024, 1), LO_HI(1, 256), LO_HI(1, 1), LO_HI(32, 0), 0, 0,
		G0 + 300000, HDR(3, WEFT_R_GPU, 9, WEFT_GPU_KERNEL), G0 + 340000, LO_HI(0, 1), LO_HI(7, 3),
		LO_HI(64, 1), LO_HI(1, 1024), LO_HI(1, 1), LO_HI(64, 4096), 0, 0,
		/* copy HtoD (1) pageable (1) -> device (3), 1 MB; memset 4 KiB of 0xff; copy DtoH */
		G0 + 400000, HDR(4, WEFT_R_GPU, 4, WEFT_GPU_MEMCPY), G0 + 500000, LO_HI(0, 1),
		7 | 1ull << 32 | 1ull << 40 | 3ull << 48, 1000000,
		G0 + 600000, HDR(5, WEFT_R_GPU, 4, WEFT_GPU_MEMSET), G0 + 610000, LO_HI(0, 1), LO_HI(7, 0xff), 4096,
		G0 + 700000, HDR(6, WEFT_R_GPU, 4, WEFT_GPU_MEMCPY), G0 + 710000, LO_HI(0, 1),
		7 | 2ull << 32 | 3ull << 40 | 2ull << 48, 2000000,
	};
	tb_chunk(&ev, 11, 1ull << 40, g, sizeof(g) / 8, 1);
}

static struct weft_trace *open_built(void)
{
	const char *names[2] = {"50.wmeta", "50-0.wevents"};
	const unsigned char *data[2] = {meta.p, ev.p};
	size_t sizes[2] = {meta.n, ev.n};
	struct weft_trace *t = NULL;
	char err[256];
	if (weft_trace_from_buffers(names, data, sizes, 2, &t, err, sizeof(err)))
		fail_msg("open: %s", err);
	return t;
}

static void clock_map(void **st)
{
	(void)st;
	build();
	struct weft_trace *t = open_built();
	struct weft_gpu *g;
	char err[256];
	assert_int_equal(weft_gpu_analyze(t, 1, &g, err, sizeof(err)), 0);
	assert_non_null(g);
	assert_int_equal(g->nprocs, 1);
	const struct weft_gpu_proc *gp = &g->procs[0];
	assert_int_equal(t->procs[0].ngpu_clock, 6);
	assert_int_equal(gp->clock_points, 5); /* the wide pair is left out */
	assert_true(gp->clock_residual_ns < 1.0);
	assert_int_equal(gp->n, 6);
	/* each activity at its exact host time, to 1 ns: start, end */
	static const uint64_t want[6][2] = {{100000, 110000}, {200000, 220000}, {300000, 340000},
					    {400000, 500000}, {600000, 610000}, {700000, 710000}};
	for (size_t i = 0; i < 6; i++) {
		int64_t ds = (int64_t)gp->acts[i].start - (int64_t)HOST(want[i][0]);
		int64_t de = (int64_t)gp->acts[i].end - (int64_t)HOST(want[i][1]);
		if (ds < -1 || ds > 1 || de < -1 || de > 1)
			fail_msg("activity %zu: start off by %lld ns, end by %lld ns", i, (long long)ds, (long long)de);
		assert_int_equal(gp->acts[i].corr, i + 1);
		assert_int_equal(gp->acts[i].lane, 0);     /* one stream, nothing overlaps */
		assert_int_equal(gp->acts[i].flow_end, 1); /* one activity per correlation id */
	}
	/* kinds and what the records hold */
	assert_int_equal(gp->acts[0].kind, WEFT_GPU_KERNEL);
	assert_int_equal(gp->acts[0].stream, 7);
	assert_int_equal(gp->acts[0].block[0], 256);
	assert_int_equal(gp->acts[2].static_shared, 4096);
	assert_int_equal(gp->acts[3].copy_kind, 1);
	assert_int_equal(gp->acts[3].bytes, 1000000);
	assert_int_equal(gp->acts[4].kind, WEFT_GPU_MEMSET);
	assert_int_equal(gp->acts[4].value, 0xff);
	/* occupancy from the device record: 1.0 (vadd), 0.5 (reduce) */
	assert_true(gp->acts[0].occupancy == 1.0);
	assert_true(gp->acts[2].occupancy == 0.5);
	/* launches: the call's begin, site and thread; none for the DtoH copy */
	const struct weft_gpu_launch *l = weft_gpu_launch_of(gp, 1);
	assert_non_null(l);
	assert_int_equal(l->ts, 5100000);
	assert_int_equal(l->site, 1);
	assert_int_equal(l->tid, 10);
	l = weft_gpu_launch_of(gp, 4);
	assert_non_null(l);
	assert_int_equal(l->ts, 5400000);
	assert_int_equal(l->site, 4);
	assert_null(weft_gpu_launch_of(gp, 6));
	/* names */
	char *dem;
	assert_string_equal(weft_gpu_kernel_name(gp->p, &gp->acts[2], &dem), "void reduce<256>(float*)");
	free(dem);
	weft_gpu_free(g);
	weft_trace_free(t);
	free(meta.p);
	free(ev.p);
}

/* Theoretical occupancy by hand from gpu.c's formula on the H100-like device (warps = threads /
 * 32; blocks = min(32, 64 / warps, 65536 / (regs * 32 rounded up to 256) / warps, 233472 /
 * (shared + 1 KiB, rounded up to 128)); occupancy = blocks * warps / 64). */
static void occupancy(void **st)
{
	(void)st;
	/* 256 threads = 8 warps, 32 regs: 8 blocks by warps, 65536 / 1024 / 8 = 8 by registers,
	 * 233472 / 1024 = 228 by shared memory: 8 * 8 / 64 = 1.0 */
	assert_true(weft_gpu_occupancy(&h100, 256, 32, 0, 0) == 1.0);
	/* 1024 threads = 32 warps, 64 regs: 65536 / 2048 / 32 = 1 block: 32 / 64 = 0.5 */
	assert_true(weft_gpu_occupancy(&h100, 1024, 64, 0, 0) == 0.5);
	/* 128 threads = 4 warps, 32 regs, 48 KiB shared: 233472 / (49152 + 1024) = 4 blocks (16 by
	 * warps and registers): 4 * 4 / 64 = 0.25 */
	assert_true(weft_gpu_occupancy(&h100, 128, 32, 49152, 0) == 0.25);
	/* the same with a 100 KiB carveout: 102400 / 50176 = 2 blocks: 8 / 64 = 0.125 */
	assert_true(weft_gpu_occupancy(&h100, 128, 32, 49152, 102400) == 0.125);
	/* 32 threads = 1 warp, no limits but 32 blocks: 32 / 64 = 0.5 */
	assert_true(weft_gpu_occupancy(&h100, 32, 16, 0, 0) == 0.5);
	assert_true(weft_gpu_occupancy(NULL, 256, 32, 0, 0) < 0);
	assert_true(weft_gpu_occupancy(&h100, 0, 32, 0, 0) < 0);
}

static void write_dir(const char *dir)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/50.wmeta", dir);
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	fwrite(meta.p, 1, meta.n, f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/50-0.wevents", dir);
	f = fopen(path, "wb");
	assert_non_null(f);
	fwrite(ev.p, 1, ev.n, f);
	fclose(f);
}

static char *run(const char *cmd, int *status)
{
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	static char out[16384];
	size_t n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = 0;
	*status = pclose(p);
	return out;
}

static const char report_want[] =
	"# process 50 cudaapp: GPU libcupti.so.12 (CUPTI 24); 6 records, 0 dropped by CUPTI, 5 of 6 clock points "
	"used, clock fit residual 0 ns\n"
	"# GPU 0: NVIDIA H100 80GB HBM3, 132 SMs, compute capability 9.0, 79.6 GiB\n"
	"\n"
	" Launches    Total (ns)  Average (ns)  Maximum (ns)  Occupancy  Registers  Shared (B)  Kernel\n"
	"        1         40004         40004         40004       0.50         64        4096  reduce<256>\n"
	"        2         30003         15001         20002       1.00         32           0  vadd\n"
	"\n"
	"    Count           Bytes    Total (us)       GB/s  Copy\n"
	"        1         1000000       100.010      10.00  HtoD\n"
	"        1         2000000        10.001     199.98  DtoH\n"
	"        1            4096        10.001       0.41  memset\n"
	"\n"
	"launch latency (CUDA call to device start, us): 5 launches, min 0.010, p50 0.030, p90 0.060, p99 0.060, "
	"max 0.060\n";

static void report(void **st)
{
	(void)st;
	build();
	char dir[] = "/tmp/weft-gpu-XXXXXX", cmd[600];
	assert_non_null(mkdtemp(dir));
	write_dir(dir);
	int status;
	snprintf(cmd, sizeof(cmd), "%s report --gpu %s 2>&1", WEFT_BIN, dir);
	const char *out = run(cmd, &status);
	assert_int_equal(status, 0);
	assert_string_equal(out, report_want);
	snprintf(cmd, sizeof(cmd), "%s info %s 2>&1 | grep -A1 '  gpu:'", WEFT_BIN, dir);
	out = run(cmd, &status);
	assert_string_equal(out, "  gpu:      used: libcupti.so.12 (CUPTI 24); 6 records, 0 dropped by CUPTI, 2 buffers, "
				 "5 CUDA calls, 6 clock points\n"
				 "            GPU 0: NVIDIA H100 80GB HBM3, 132 SMs, compute capability 9.0, 79.6 GiB\n");
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
	free(meta.p);
	free(ev.p);
}

/* A trace whose GPU collector was unavailable: the report says so and why, status 0. */
static void report_unavailable(void **st)
{
	(void)st;
	memset(&meta, 0, sizeof(meta));
	memset(&ev, 0, sizeof(ev));
	tb_header(&meta, WEFT_META_MAGIC, 1, 50);
	tb_clock_kind(&meta, 1);
	tb_clock(&meta, 1000, 5000000);
	tb_clock(&meta, 2001000, 6000000);
	tb_site(&meta, 1, 0, "work");
	thread_rec(10, "main", 0);
	unsigned char rec[128] = {0};
	const char *why = "libcupti.so not found (cupti_lib= names it)";
	memcpy(rec + 48, why, strlen(why) + 1); /* state 0, no tids */
	tb_meta(&meta, WEFT_M_GPU, rec, 48 + strlen(why) + 1);
	tb_header(&ev, WEFT_EVENTS_MAGIC, 1, 50);
	uint64_t h[] = {T(5100000), HDR(1, WEFT_R_BEGIN, 0, 0), T(5100020), HDR(1, WEFT_R_END, 0, 0)};
	tb_chunk(&ev, 10, 0, h, sizeof(h) / 8, 1);
	char dir[] = "/tmp/weft-gpu-XXXXXX", cmd[600];
	assert_non_null(mkdtemp(dir));
	write_dir(dir);
	int status;
	snprintf(cmd, sizeof(cmd), "%s report --gpu %s 2>&1", WEFT_BIN, dir);
	const char *out = run(cmd, &status);
	assert_int_equal(status, 0);
	assert_string_equal(out, "no GPU activity in the trace: the GPU collector was unavailable: libcupti.so not "
				 "found (cupti_lib= names it)\n");
	snprintf(cmd, sizeof(cmd), "%s info %s 2>&1 | grep '  gpu:'", WEFT_BIN, dir);
	out = run(cmd, &status);
	assert_string_equal(out, "  gpu:      unavailable: libcupti.so not found (cupti_lib= names it)\n");
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
	free(meta.p);
	free(ev.p);
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--write")) {
		build();
		write_dir(argv[2]);
		return 0;
	}
	const struct CMUnitTest tests[] = {cmocka_unit_test(clock_map), cmocka_unit_test(occupancy),
					   cmocka_unit_test(report), cmocka_unit_test(report_unavailable)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
