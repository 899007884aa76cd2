/*
 * perf_sample.c - see perf_sample.h. The PMU's own description decides the encoding of an
 * event, as with perf: /sys/bus/event_source/devices/PMU/events/NAME holds terms such as
 * "event=0xcd,umask=0x1,ldlat=3", and PMU/format/TERM says where each goes ("config:0-7",
 * "config1:0-15"). Reading them rather than hard-coding the numbers keeps one code path for
 * every Intel generation (and the hybrid cpu_core PMU) and lets tests use a fixture root.
 */
#include "collect/perf_sample.h"
#include <ctype.h>
#include <linux/hw_breakpoint.h>
#include <time.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int read_line(const char *root, const char *pmu, const char *rel, char *out, size_t n)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s/%s", *root ? root : "/sys/bus/event_source/devices", pmu, rel);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	int ok = fgets(out, (int)n, f) != NULL;
	fclose(f);
	if (!ok)
		return -1;
	out[strcspn(out, "\n")] = 0;
	return 0;
}

/* Puts value v where PMU/format/term says (config, config1 or config2; bit ranges). */
static int place(const char *root, const char *pmu, const char *term, uint64_t v, struct perf_event_attr *a)
{
	char rel[128], fmt[256];
	snprintf(rel, sizeof(rel), "format/%s", term);
	if (read_line(root, pmu, rel, fmt, sizeof(fmt)))
		return -1;
	char *colon = strchr(fmt, ':');
	if (!colon)
		return -1;
	*colon = 0;
	__u64 *dst = !strcmp(fmt, "config") ? &a->config : !strcmp(fmt, "config1") ? &a->config1
		      : !strcmp(fmt, "config2") ? &a->config2 : NULL;
	if (!dst)
		return -1;
	/* ranges "lo-hi" or single bits, comma-separated, filled from the value's low bits up */
	for (char *r = colon + 1; *r;) {
		char *end;
		unsigned long lo = strtoul(r, &end, 10), hi = lo;
		if (end == r || lo > 63)
			return -1;
		if (*end == '-') {
			r = end + 1;
			hi = strtoul(r, &end, 10);
			if (end == r || hi < lo || hi > 63)
				return -1;
		}
		unsigned width = (unsigned)(hi - lo + 1);
		uint64_t mask = width == 64 ? ~0ull : (1ull << width) - 1;
		*dst |= (v & mask) << lo;
		v = width == 64 ? 0 : v >> width;
		r = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			return -1;
	}
	return 0;
}

/* Encodes PMU/events/name into a (config fields). */
static int encode(const char *root, const char *pmu, const char *name, struct perf_event_attr *a)
{
	char rel[128], ev[512];
	snprintf(rel, sizeof(rel), "events/%s", name);
	if (read_line(root, pmu, rel, ev, sizeof(ev)))
		return -1;
	char *save = NULL;
	for (char *t = strtok_r(ev, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		while (isspace((unsigned char)*t))
			t++;
		char *eq = strchr(t, '=');
		uint64_t v = 1;
		if (eq) {
			*eq = 0;
			char *end;
			v = strtoull(eq + 1, &end, 0);
			if (end == eq + 1)
				return -1;
		}
		if (place(root, pmu, t, v, a))
			return -1;
	}
	return 0;
}

static int pmu_type(const char *root, const char *pmu, uint32_t *type)
{
	char s[64];
	if (read_line(root, pmu, "type", s, sizeof(s)))
		return -1;
	char *end;
	unsigned long v = strtoul(s, &end, 10);
	if (end == s)
		return -1;
	*type = (uint32_t)v;
	return 0;
}

int weft_access_attr(int src, const char *root, uint64_t period, struct perf_event_attr *a,
		     struct perf_event_attr *aux, int *needs_aux, char *why, size_t n)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->exclude_kernel = 1;
	a->exclude_hv = 1;
	a->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR;
	*needs_aux = 0;
	if (!root)
		root = "";
	/* A hardware PMU's samples are taken in NMI context, where the kernel reads only NMI-safe
	 * clocks: CLOCK_BOOTTIME is refused (EINVAL), CLOCK_MONOTONIC taken; the runtime moves
	 * those onto weft's timeline (the boottime - monotonic gap: time suspended). */
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	switch (src) {
	case WEFT_ACC_PAGEFAULT:
		a->type = PERF_TYPE_SOFTWARE;
		a->config = PERF_COUNT_SW_PAGE_FAULTS;
		a->sample_period = period ? period : 1;
		a->use_clockid = 1; /* a software event takes any clock: weft's own */
		a->clockid = CLOCK_BOOTTIME;
		return 0;
	case WEFT_ACC_PEBS_LOAD:
	case WEFT_ACC_PEBS_STORE: {
		const char *name = src == WEFT_ACC_PEBS_LOAD ? "mem-loads" : "mem-stores";
		const char *pmu = NULL;
		char probe[64];
		for (int i = 0; i < 2 && !pmu; i++) { /* the hybrid parts' big cores first */
			const char *cand = i ? "cpu" : "cpu_core";
			char rel[64];
			snprintf(rel, sizeof(rel), "events/%s", name);
			if (!read_line(root, cand, rel, probe, sizeof(probe)))
				pmu = cand;
		}
		if (!pmu) {
			snprintf(why, n, "no cpu PMU with %s events (virtual machine, or not Intel?)", name);
			return -ENOENT;
		}
		if (pmu_type(root, pmu, &a->type) || encode(root, pmu, name, a)) {
			snprintf(why, n, "cannot read the %s PMU's description of %s", pmu, name);
			return -ENOENT;
		}
		a->precise_ip = 3;
		a->sample_period = period ? period : (src == WEFT_ACC_PEBS_LOAD ? 1009 : 10007);
		a->sample_type |= PERF_SAMPLE_WEIGHT | PERF_SAMPLE_DATA_SRC;
		if (src == WEFT_ACC_PEBS_LOAD && !read_line(root, pmu, "events/mem-loads-aux", probe, sizeof(probe))) {
			/* Sapphire Rapids and later: the load event needs this leader in its group */
			memset(aux, 0, sizeof(*aux));
			aux->size = sizeof(*aux);
			aux->type = a->type;
			aux->exclude_kernel = 1;
			aux->exclude_hv = 1;
			if (encode(root, pmu, "mem-loads-aux", aux)) {
				snprintf(why, n, "cannot read the %s PMU's description of mem-loads-aux", pmu);
				return -ENOENT;
			}
			*needs_aux = 1;
		}
		return 0;
	}
	case WEFT_ACC_IBS_OP:
		if (pmu_type(root, "ibs_op", &a->type)) {
			snprintf(why, n, "no AMD IBS op PMU (ibs_op)");
			return -ENOENT;
		}
		a->sample_period = period ? period : 0x10000; /* ops between samples (a multiple of 16) */
		a->sample_type |= PERF_SAMPLE_WEIGHT | PERF_SAMPLE_DATA_SRC;
		return 0;
	default:
		snprintf(why, n, "unknown access source %d", src);
		return -EINVAL;
	}
}

int weft_watch_attr(uint64_t addr, unsigned len, int rw, struct perf_event_attr *a, char *why, size_t n)
{
	memset(a, 0, sizeof(*a));
	if (len != 1 && len != 2 && len != 4 && len != 8) {
		snprintf(why, n, "a watchpoint covers 1, 2, 4 or 8 bytes, not %u", len);
		return -EINVAL;
	}
	if (!addr || addr % len) {
		snprintf(why, n, "a %u-byte watchpoint needs an address that is a multiple of %u, not 0x%llx", len, len,
			 (unsigned long long)addr);
		return -EINVAL;
	}
	a->size = sizeof(*a);
	a->type = PERF_TYPE_BREAKPOINT;
	a->bp_type = rw ? HW_BREAKPOINT_RW : HW_BREAKPOINT_W;
	a->bp_addr = addr;
	a->bp_len = len;
	a->sample_period = 1;
	a->exclude_kernel = 1;
	a->exclude_hv = 1;
	a->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	return 0;
}

int weft_watch_selftest_verdict(int open_errno, uint64_t writes, uint64_t samples, char *why, size_t n)
{
	if (open_errno) {
		snprintf(why, n, "perf_event_open of a hardware watchpoint failed: %s%s", strerror(open_errno),
			 open_errno == EACCES || open_errno == EPERM
				 ? " (kernel.perf_event_paranoid too high? run as root or lower it)"
			 : open_errno == ENOENT || open_errno == EOPNOTSUPP ? " (no breakpoint PMU in this kernel)"
			 : open_errno == ENOSPC ? " (every debug register is taken)" : "");
		return -open_errno;
	}
	if (!samples) {
		snprintf(why, n, "hardware watchpoints open but do not fire here (virtual machine?)");
		return -ENODEV;
	}
	if (samples != writes) {
		snprintf(why, n, "hardware watchpoints fire %llu times for %llu writes here",
			 (unsigned long long)samples, (unsigned long long)writes);
		return -EIO;
	}
	return 0;
}

int weft_perf_decode_sample(uint64_t t, const void *body, size_t len, struct weft_perf_sample *s)
{
	const unsigned char *p = body, *end = p + len;
	memset(s, 0, sizeof(*s));
#define NEED(k) do { if ((size_t)(end - p) < (k)) return -1; } while (0)
#define U64(dst) do { NEED(8); uint64_t v_; memcpy(&v_, p, 8); p += 8; dst = v_; } while (0)
	uint64_t skip;
	if (t & (PERF_SAMPLE_READ | PERF_SAMPLE_BRANCH_STACK | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER |
		 PERF_SAMPLE_REGS_INTR | PERF_SAMPLE_AUX))
		return -1;
	if (t & PERF_SAMPLE_IDENTIFIER)
		U64(skip);
	if (t & PERF_SAMPLE_IP)
		U64(s->ip);
	if (t & PERF_SAMPLE_TID) {
		NEED(8);
		memcpy(&s->pid, p, 4);
		memcpy(&s->tid, p + 4, 4);
		p += 8;
	}
	if (t & PERF_SAMPLE_TIME)
		U64(s->time);
	if (t & PERF_SAMPLE_ADDR)
		U64(s->addr);
	if (t & PERF_SAMPLE_ID)
		U64(skip);
	if (t & PERF_SAMPLE_STREAM_ID)
		U64(skip);
	if (t & PERF_SAMPLE_CPU) {
		NEED(8);
		memcpy(&s->cpu, p, 4);
		p += 8;
	}
	if (t & PERF_SAMPLE_PERIOD)
		U64(skip);
	if (t & PERF_SAMPLE_CALLCHAIN) {
		uint64_t nr;
		U64(nr);
		if (nr > (uint64_t)(end - p) / 8)
			return -1;
		p += nr * 8;
	}
	if (t & PERF_SAMPLE_RAW) {
		uint32_t size;
		NEED(4);
		memcpy(&size, p, 4);
		p += 4;
		NEED(size);
		p += size;
	}
	if (t & (PERF_SAMPLE_WEIGHT | PERF_SAMPLE_WEIGHT_STRUCT)) {
		uint64_t w;
		U64(w);
		/* the struct form's first 32 bits are the latency */
		s->weight = (t & PERF_SAMPLE_WEIGHT_STRUCT) ? (w & 0xffffffffu) : w;
	}
	if (t & PERF_SAMPLE_DATA_SRC)
		U64(s->data_src);
	if (t & PERF_SAMPLE_TRANSACTION)
		U64(skip);
	if (t & PERF_SAMPLE_PHYS_ADDR)
		U64(s->phys_addr);
	(void)skip;
#undef U64
#undef NEED
	return 0;
}

int weft_perf_data_src_is_write(uint64_t data_src)
{
	unsigned op = (unsigned)(data_src & 0x1f); /* mem_op */
	if (op & PERF_MEM_OP_STORE)
		return 1;
	if (op & PERF_MEM_OP_LOAD)
		return 0;
	return -1;
}
