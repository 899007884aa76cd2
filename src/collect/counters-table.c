/*
 * counters-table.c - the counter names weft knows and the decisions about reading them, kept
 * free of the runtime so the CLI (which checks --counters before it starts the program) and
 * the unit tests use the same code. The names are perf's generic events: the hardware ones
 * need a PMU (a virtual machine often has none), the software ones are counted by the kernel
 * everywhere. Reading: a hardware counter whose mmap page has cap_user_rdpmc is read in user
 * space with rdpmc under the page's seqlock; everything else (software events, a counter the
 * kernel has not put on the PMU right now) by one read() of the thread's group.
 */
#include "collect/counters.h"
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define HW(n, a, c) {n, a, PERF_TYPE_HARDWARE, PERF_COUNT_HW_##c, ""}
#define SW(n, a, c, u) {n, a, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_##c, u}
const struct weft_ctr_def weft_ctr_defs[] = {
	HW("instructions", NULL, INSTRUCTIONS),
	HW("cycles", "cpu-cycles", CPU_CYCLES),
	HW("cache-references", NULL, CACHE_REFERENCES),
	HW("cache-misses", NULL, CACHE_MISSES),
	HW("branches", "branch-instructions", BRANCH_INSTRUCTIONS),
	HW("branch-misses", NULL, BRANCH_MISSES),
	HW("bus-cycles", NULL, BUS_CYCLES),
	HW("stalled-cycles-frontend", "idle-cycles-frontend", STALLED_CYCLES_FRONTEND),
	HW("stalled-cycles-backend", "idle-cycles-backend", STALLED_CYCLES_BACKEND),
	HW("ref-cycles", NULL, REF_CPU_CYCLES),
	SW("task-clock", NULL, TASK_CLOCK, "ns"),
	SW("cpu-clock", NULL, CPU_CLOCK, "ns"),
	SW("page-faults", "faults", PAGE_FAULTS, ""),
	SW("minor-faults", NULL, PAGE_FAULTS_MIN, ""),
	SW("major-faults", NULL, PAGE_FAULTS_MAJ, ""),
	SW("context-switches", "cs", CONTEXT_SWITCHES, ""),
	SW("cpu-migrations", "migrations", CPU_MIGRATIONS, ""),
	SW("alignment-faults", NULL, ALIGNMENT_FAULTS, ""),
	SW("emulation-faults", NULL, EMULATION_FAULTS, ""),
	{NULL, NULL, 0, 0, NULL},
};

const struct weft_ctr_def *weft_ctr_find(const char *name)
{
	for (const struct weft_ctr_def *d = weft_ctr_defs; d->name; d++)
		if (!strcmp(name, d->name) || (d->alias && !strcmp(name, d->alias)))
			return d;
	return NULL;
}

static void known(char *buf, size_t n)
{
	size_t o = 0;
	buf[0] = 0;
	for (const struct weft_ctr_def *d = weft_ctr_defs; d->name && o < n; d++)
		o += (size_t)snprintf(buf + o, n - o, "%s%s", o ? ", " : "", d->name);
}

int weft_ctr_parse(const char *list, const struct weft_ctr_def **out, char *why, size_t n)
{
	int k = 0;
	const char *p = list;
	while (p && *p) {
		const char *c = strchr(p, ',');
		size_t l = c ? (size_t)(c - p) : strlen(p);
		char name[64];
		if (l == 0 || l >= sizeof(name)) {
			snprintf(why, n, "empty or overlong counter name in '%s'", list);
			return -EINVAL;
		}
		memcpy(name, p, l);
		name[l] = 0;
		const struct weft_ctr_def *d = weft_ctr_find(name);
		if (!d) {
			char all[512];
			known(all, sizeof(all));
			snprintf(why, n, "unknown counter '%s'; known: %s", name, all);
			return -EINVAL;
		}
		for (int i = 0; i < k; i++)
			if (out[i] == d) {
				snprintf(why, n, "counter '%s' named twice", name);
				return -EINVAL;
			}
		if (k == WEFT_CTR_MAX) {
			snprintf(why, n, "at most %d counters", WEFT_CTR_MAX);
			return -E2BIG;
		}
		out[k++] = d;
		p = c ? c + 1 : NULL;
	}
	if (!k) {
		snprintf(why, n, "no counter named");
		return -EINVAL;
	}
	return k;
}

void weft_ctr_attr(const struct weft_ctr_def *d, int leader, int exclude_kernel, struct perf_event_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = d->type;
	a->config = d->config;
	a->disabled = 0; /* counting from the open on: slices take differences */
	a->exclude_kernel = exclude_kernel ? 1 : 0;
	a->exclude_hv = 1;
	if (leader)
		a->read_format = PERF_FORMAT_GROUP;
}

int weft_ctr_probe(const struct weft_ctr_def *d)
{
	struct perf_event_attr a;
	weft_ctr_attr(d, 1, 0, &a);
	int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0 && (errno == EACCES || errno == EPERM)) { /* perf_event_paranoid >= 2 */
		weft_ctr_attr(d, 1, 1, &a);
		fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	}
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

void weft_ctr_available(char *buf, size_t n)
{
	size_t o = 0;
	buf[0] = 0;
	for (const struct weft_ctr_def *d = weft_ctr_defs; d->name && o < n; d++)
		if (!weft_ctr_probe(d))
			o += (size_t)snprintf(buf + o, n - o, "%s%s", o ? ", " : "", d->name);
	if (!o)
		snprintf(buf, n, "none (perf_event_open refused every counter)");
}

int weft_ctr_mmap_can_rdpmc(const volatile struct perf_event_mmap_page *pg)
{
	return pg && pg->cap_user_rdpmc;
}

int weft_ctr_mmap_read(const volatile struct perf_event_mmap_page *pg, uint64_t (*rdpmc)(uint32_t idx),
		       uint64_t *out)
{
	/* The kernel bumps `lock` before and after it rewrites the page (the event moved to
	 * another counter, or off the PMU): a value read between two equal `lock`s is
	 * consistent. The compiler barriers keep the loads inside the bracket; x86 does not
	 * reorder loads with loads. */
	for (int tries = 0; tries < 100; tries++) {
		uint32_t seq = pg->lock;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		if (!pg->cap_user_rdpmc)
			return -1;
		uint32_t idx = pg->index;
		if (!idx)
			return -1; /* not on a hardware counter now: read() asks the kernel */
		int64_t v = pg->offset;
		uint16_t width = pg->pmc_width;
		uint64_t pmc = rdpmc(idx - 1);
		if (width && width < 64) /* sign-extend the counter's width */
			pmc = (uint64_t)((int64_t)(pmc << (64 - width)) >> (64 - width));
		v += (int64_t)pmc;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		if (pg->lock == seq) {
			*out = (uint64_t)v;
			return 0;
		}
	}
	return -1;
}

uint64_t weft_ctr_rdpmc(uint32_t idx)
{
#if defined(__x86_64__) || defined(__i386__)
	uint32_t lo, hi;
	__asm__ __volatile__("rdpmc" : "=a"(lo), "=d"(hi) : "c"(idx));
	return (uint64_t)hi << 32 | lo;
#else
	(void)idx;
	return 0; /* cap_user_rdpmc is an x86 feature here; other machines read() */
#endif
}

int weft_ctr_group_parse(const uint64_t *buf, size_t bytes, unsigned n, uint64_t *out)
{
	if (bytes < 8 || buf[0] != n || bytes < 8 * (1 + (size_t)n))
		return -1;
	memcpy(out, buf + 1, 8 * (size_t)n);
	return 0;
}
