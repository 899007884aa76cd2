/*
 * config.c - the one table of WEFT_* options. Every key is parsed here, whether it comes from
 * the WEFT_OPTIONS environment variable ("key=value:key=value") or from weft_option_set(). A
 * bad key or value is logged once, in one line that names what is valid, and the default
 * stays: tracing never stops because of a typo.
 */
#include "internal.h"
#include "../collect/counters.h"
#include "../collect/cpusets.h"
#include <ctype.h>
#include <signal.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct weft_config weft_cfg;

void weft_config_defaults(struct weft_config *c)
{
	memset(c, 0, sizeof(*c));
	c->enable = 1;
	snprintf(c->output, sizeof(c->output), "weft.data");
	snprintf(c->categories, sizeof(c->categories), "*");
	c->buffer_size = 256u << 20; /* an upper bound: chunks are allocated as needed */
	c->chunk_size = 1u << 20;
	c->writers = 1;
	snprintf(c->sched_threads, sizeof(c->sched_threads), "1");
	c->compression = 1;
	c->overflow = WEFT_OVERFLOW_DROP;
	c->sample_period_ns = 10000000;
	c->power_period_ns = 1000000000;
	snprintf(c->sysfs_root, sizeof(c->sysfs_root), "/sys");
	snprintf(c->procfs_root, sizeof(c->procfs_root), "/proc");
	snprintf(c->nvml_lib, sizeof(c->nvml_lib), "libnvidia-ml.so.1");
	c->gpu_buffer_size = 8u << 20;
	c->mpi = 1;
	c->mpi_sync = 1;
	c->max_snapshots = 16;
}

int weft_parse_size(const char *s, uint64_t *out)
{
	char *end;
	if (*s < '0' || *s > '9') /* strtoull takes " 8K", "+8K" and "-1" (as 2^64-1) */
		return -EINVAL;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (end == s || errno)
		return -EINVAL;
	uint64_t mul = 1;
	switch (tolower((unsigned char)*end)) {
	case 'k': mul = 1ull << 10; end++; break;
	case 'm': mul = 1ull << 20; end++; break;
	case 'g': mul = 1ull << 30; end++; break;
	default: break;
	}
	if (mul > 1 && tolower((unsigned char)*end) == 'i')
		end++;
	if (tolower((unsigned char)*end) == 'b')
		end++;
	if (*end || v > UINT64_MAX / mul)
		return -EINVAL;
	*out = v * mul;
	return 0;
}

int weft_parse_cpulist(const char *s, uint64_t *mask)
{
	uint64_t m = 0;
	while (*s) {
		char *end;
		long a = strtol(s, &end, 10), b;
		if (end == s || a < 0 || a > 63)
			return -EINVAL;
		b = a;
		if (*end == '-') {
			s = end + 1;
			b = strtol(s, &end, 10);
			if (end == s || b < a || b > 63)
				return -EINVAL;
		}
		for (long i = a; i <= b; i++)
			m |= 1ull << i;
		s = end;
		if (*s == ',' && s[1])
			s++;
		else if (*s)
			return -EINVAL;
	}
	if (!m)
		return -EINVAL;
	*mask = m;
	return 0;
}

static int parse_int(const char *v, long lo, long hi, int *out)
{
	char *end;
	const char *d = v + (*v == '-' && lo < 0); /* digits only: strtol takes " 2" and "+2" */
	if (*d < '0' || *d > '9')
		return -EINVAL;
	errno = 0;
	long x = strtol(v, &end, 10);
	if (end == v || *end || errno || x < lo || x > hi)
		return -EINVAL;
	*out = (int)x;
	return 0;
}

static int set_str(char *dst, size_t n, const char *v)
{
	if (strlen(v) >= n)
		return -ENAMETOOLONG;
	memcpy(dst, v, strlen(v) + 1);
	return 0;
}

int weft_parse_duration(const char *s, uint64_t *ns)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || errno || v < 0)
		return -EINVAL;
	double mul = 1;
	if (!strcmp(end, "ns") || !*end)
		mul = 1;
	else if (!strcmp(end, "us"))
		mul = 1e3;
	else if (!strcmp(end, "ms"))
		mul = 1e6;
	else if (!strcmp(end, "s"))
		mul = 1e9;
	else
		return -EINVAL;
	*ns = (uint64_t)(v * mul);
	return 0;
}

typedef int (*setter_fn)(struct weft_config *c, const char *v);
#define SETTER(fn) static int fn(struct weft_config *c, const char *v)

SETTER(set_enable) { return parse_int(v, 0, 1, &c->enable); }
SETTER(set_output) { return *v ? set_str(c->output, sizeof(c->output), v) : -EINVAL; }
SETTER(set_name) { return set_str(c->name, sizeof(c->name), v); }
SETTER(set_host) { return set_str(c->host, sizeof(c->host), v); }
/* a list of name patterns (glob.c); a bad regex or an over-long pattern is refused */
static int set_patterns(char *dst, size_t n, const char *v)
{
	return weft_glob_list_check(v) ? -EINVAL : set_str(dst, n, v);
}
SETTER(set_categories) { return set_patterns(c->categories, sizeof(c->categories), v); }
SETTER(set_filter) { return set_patterns(c->filter, sizeof(c->filter), v); }
SETTER(set_writers) { return parse_int(v, 1, 16, &c->writers); }
SETTER(set_compression) { return parse_int(v, -100, 19, &c->compression); }
SETTER(set_buffer_size)
{
	uint64_t x;
	if (weft_parse_size(v, &x) || x < (8u << 10) || x > (64ull << 30))
		return -EINVAL;
	c->buffer_size = x;
	return 0;
}
SETTER(set_chunk_size)
{
	uint64_t x;
	if (weft_parse_size(v, &x) || x < (4u << 10) || x > WEFT_MAX_CHUNK)
		return -EINVAL;
	c->chunk_size = x;
	return 0;
}
SETTER(set_writer_cpus)
{
	uint64_t m;
	if (weft_parse_cpulist(v, &m))
		return -EINVAL;
	return set_str(c->writer_cpus, sizeof(c->writer_cpus), v);
}
SETTER(set_func_depth)
{
	int d;
	if (parse_int(v, 0, 1000000, &d))
		return -EINVAL;
	c->func_depth = (uint32_t)d;
	return 0;
}
SETTER(set_func_min) { return weft_parse_duration(v, &c->func_min_ns); }
SETTER(set_func_filter) { return set_patterns(c->func_filter, sizeof(c->func_filter), v); }
SETTER(set_func_libs) { return set_patterns(c->func_libs, sizeof(c->func_libs), v); }
SETTER(set_memory) { return parse_int(v, 0, 1, &c->memory); }
SETTER(set_memory_stacks) { return parse_int(v, 0, 1, &c->memory_stacks); }
SETTER(set_memory_threshold)
{
	uint64_t x;
	if (weft_parse_size(v, &x) || x > (1ull << 48))
		return -EINVAL;
	c->memory_threshold = x;
	return 0;
}
SETTER(set_memory_sample)
{
	uint64_t x;
	if (weft_parse_size(v, &x) || x > (1ull << 40))
		return -EINVAL;
	c->memory_sample = x;
	return 0;
}
SETTER(set_mem_access)
{
	static const char *const ok[] = {"0", "1", "auto", "pagefault", "pebs", "ibs"};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (!strcmp(v, ok[i]))
			return set_str(c->mem_access, sizeof(c->mem_access), strcmp(v, "0") ? v : "");
	return -EINVAL;
}
SETTER(set_mem_access_period)
{
	uint64_t x;
	char *end;
	errno = 0;
	x = strtoull(v, &end, 10);
	if (errno || end == v || *end || x > (1ull << 32) || v[0] < '0' || v[0] > '9')
		return -EINVAL;
	c->mem_access_period = x;
	return 0;
}
int weft_watch_parse(const char *list, struct weft_watch_spec *out, char *why, size_t n)
{
	int count = 0;
	const char *p = list;
	if (!*p)
		return 0;
	for (;;) {
		const char *end = strchrnul(p, ',');
		char spec[256];
		if ((size_t)(end - p) >= sizeof(spec) || end == p) {
			snprintf(why, n, end == p ? "an empty watch spec" : "a watch spec longer than %zu bytes",
				 sizeof(spec) - 1);
			return -EINVAL;
		}
		if (count == WEFT_MAX_WATCH) {
			snprintf(why, n, "at most %d watchpoints (the debug registers of x86)", WEFT_MAX_WATCH);
			return -EINVAL;
		}
		memcpy(spec, p, (size_t)(end - p));
		spec[end - p] = 0;
		struct weft_watch_spec *w = &out[count];
		memset(w, 0, sizeof(*w));
		char *save = NULL, *t = strtok_r(spec, ":/", &save);
		if (!t) {
			snprintf(why, n, "an empty watch spec");
			return -EINVAL;
		}
		if (!strncmp(t, "0x", 2) || !strncmp(t, "0X", 2)) {
			char *e;
			errno = 0;
			unsigned long long a = strtoull(t + 2, &e, 16);
			if (e == t + 2 || *e || errno || !a) {
				snprintf(why, n, "bad address '%s'", t);
				return -EINVAL;
			}
			w->addr = a;
		} else {
			int ok = (isalpha((unsigned char)*t) || *t == '_') && strlen(t) < sizeof(w->symbol);
			for (const char *c = t; ok && *c; c++)
				ok = isalnum((unsigned char)*c) || *c == '_' || *c == '.' || *c == '$';
			if (!ok) {
				snprintf(why, n, "'%s' is neither a symbol nor a 0x address", t);
				return -EINVAL;
			}
			memcpy(w->symbol, t, strlen(t) + 1);
		}
		int have_len = 0, have_mode = 0;
		while ((t = strtok_r(NULL, ":/", &save))) {
			if (!have_mode && (!strcmp(t, "w") || !strcmp(t, "rw"))) {
				w->rw = t[0] == 'r';
				have_mode = 1;
			} else if (!have_len && (!strcmp(t, "1") || !strcmp(t, "2") || !strcmp(t, "4") || !strcmp(t, "8"))) {
				w->len = (unsigned)(t[0] - '0');
				have_len = 1;
			} else {
				snprintf(why, n, "bad watch field '%s': expected a length (1, 2, 4, 8) or w or rw, once each", t);
				return -EINVAL;
			}
		}
		if (w->addr && w->addr % (w->len ? w->len : 8)) {
			snprintf(why, n, "0x%llx is not a multiple of the watched length %u", (unsigned long long)w->addr,
				 w->len ? w->len : 8);
			return -EINVAL;
		}
		count++;
		if (!*end)
			return count;
		p = end + 1;
	}
}

SETTER(set_sched)
{
	if (strcmp(v, "0") && strcmp(v, "1"))
		return -EINVAL;
	c->sched = v[0] == '1';
	return 0;
}
SETTER(set_sched_threads)
{
	char why[160];
	if (strlen(v) >= sizeof(c->sched_threads) || weft_cpusets_check(v, why, sizeof(why)))
		return -EINVAL;
	return set_str(c->sched_threads, sizeof(c->sched_threads), v);
}
SETTER(set_watch)
{
	char why[200];
	struct weft_watch_spec w[WEFT_MAX_WATCH];
	int k = weft_watch_parse(v, w, why, sizeof(why));
	if (k < 0)
		return k;
	memcpy(c->watch, w, sizeof(w));
	c->nwatch = k;
	return 0;
}
SETTER(set_overflow)
{
	if (!strcmp(v, "drop"))
		c->overflow = WEFT_OVERFLOW_DROP;
	else if (!strcmp(v, "block"))
		c->overflow = WEFT_OVERFLOW_BLOCK;
	else
		return -EINVAL;
	return 0;
}

SETTER(set_cpu_mem) { return parse_int(v, 0, 1, &c->cpu_mem); }
SETTER(set_cpu_mem_exact) { return set_patterns(c->cpu_mem_exact, sizeof(c->cpu_mem_exact), v); }
SETTER(set_power) { return parse_int(v, 0, 1, &c->power); }
/* sampling periods: 1 ms to 1 hour */
static int set_period(uint64_t *dst, const char *v)
{
	uint64_t ns;
	if (weft_parse_duration(v, &ns) || ns < 1000000 || ns > 3600000000000ull)
		return -EINVAL;
	*dst = ns;
	return 0;
}
SETTER(set_sample_period) { return set_period(&c->sample_period_ns, v); }
SETTER(set_power_period) { return set_period(&c->power_period_ns, v); }
SETTER(set_sysfs_root) { return *v ? set_str(c->sysfs_root, sizeof(c->sysfs_root), v) : -EINVAL; }
SETTER(set_procfs_root) { return *v ? set_str(c->procfs_root, sizeof(c->procfs_root), v) : -EINVAL; }
SETTER(set_nvml_lib) { return *v ? set_str(c->nvml_lib, sizeof(c->nvml_lib), v) : -EINVAL; }
SETTER(set_gpu) { return parse_int(v, 0, 1, &c->gpu); }
SETTER(set_cupti_lib) { return *v ? set_str(c->cupti_lib, sizeof(c->cupti_lib), v) : -EINVAL; }
SETTER(set_gpu_buffer_size)
{
	uint64_t n;
	if (weft_parse_size(v, &n) || n < (64u << 10) || n > (256u << 20))
		return -EINVAL;
	c->gpu_buffer_size = n;
	return 0;
}
SETTER(set_mpi) { return parse_int(v, 0, 1, &c->mpi); }
SETTER(set_mpi_sync) { return parse_int(v, 0, 1, &c->mpi_sync); }
SETTER(set_live) { return parse_int(v, 0, 1, &c->live); }
/* control=: an absolute path (weft record's control socket, record-control.c) */
SETTER(set_control) { return *v == '/' || !*v ? set_str(c->control, sizeof(c->control), v) : -EINVAL; }
SETTER(set_counters)
{
	const struct weft_ctr_def *d[WEFT_CTR_MAX];
	char why[64];
	if (strcmp(v, "0") && weft_ctr_parse(v, d, why, sizeof(why)) < 0)
		return -EINVAL;
	return set_str(c->counters, sizeof(c->counters), strcmp(v, "0") ? v : "");
}
/* snapshot_signal=: USR2, SIGUSR2, RTMIN+3, 12; 0 none. Signals the CPU raises for a fault, the
 * ones that cannot be caught and SIGABRT (abort() must end the program) are refused. */
static int parse_signal(const char *v, int *out)
{
	static const struct { const char *n; int sig; } names[] = {
		{"HUP", SIGHUP}, {"INT", SIGINT}, {"QUIT", SIGQUIT}, {"USR1", SIGUSR1}, {"USR2", SIGUSR2},
		{"PIPE", SIGPIPE}, {"ALRM", SIGALRM}, {"TERM", SIGTERM}, {"CHLD", SIGCHLD}, {"CONT", SIGCONT},
		{"TSTP", SIGTSTP}, {"TTIN", SIGTTIN}, {"TTOU", SIGTTOU}, {"URG", SIGURG}, {"XCPU", SIGXCPU},
		{"XFSZ", SIGXFSZ}, {"VTALRM", SIGVTALRM}, {"PROF", SIGPROF}, {"WINCH", SIGWINCH}, {"IO", SIGIO},
		{"PWR", SIGPWR}, {"SYS", SIGSYS},
	};
	if (!strncmp(v, "SIG", 3))
		v += 3;
	int sig = -1;
	if (isdigit((unsigned char)*v)) {
		if (parse_int(v, 0, 64, &sig))
			return -EINVAL;
	} else if (!strncmp(v, "RTMIN", 5) || !strncmp(v, "RTMAX", 5)) {
		int k = 0;
		if (v[5] && (v[5] != (v[3] == 'I' ? '+' : '-') || parse_int(v + 6, 0, 32, &k)))
			return -EINVAL;
		sig = v[3] == 'I' ? SIGRTMIN + k : SIGRTMAX - k;
		if (sig < SIGRTMIN || sig > SIGRTMAX)
			return -EINVAL;
	} else {
		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (!strcmp(v, names[i].n))
				sig = names[i].sig;
	}
	if (sig < 0 || sig == SIGKILL || sig == SIGSTOP || sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE ||
	    sig == SIGILL || sig == SIGTRAP || sig == SIGABRT)
		return -EINVAL;
	*out = sig;
	return 0;
}
SETTER(set_snapshot_signal) { return parse_signal(v, &c->snapshot_signal); }
SETTER(set_trigger)
{
	struct weft_trigger_spec t[WEFT_MAX_TRIGGERS];
	char why[200];
	if (weft_trigger_parse(v, t, why, sizeof(why)) < 0)
		return -EINVAL;
	return set_str(c->trigger, sizeof(c->trigger), v);
}
SETTER(set_max_snapshots) { return parse_int(v, 0, 1000000, &c->max_snapshots); }
SETTER(set_min_interval) { return weft_parse_duration(v, &c->min_interval_ns); }
SETTER(set_after)
{
	uint64_t ns;
	if (weft_parse_duration(v, &ns) || ns > 3600000000000ull)
		return -EINVAL;
	c->after_ns = ns;
	return 0;
}

/* flight=SIZE[,AGE][,noexit] (weft record --flight-recorder): the ring's size, the time it keeps
 * at least where the size allows (0: as much as fits), and whether the program's exit skips
 * its snapshot. "0" turns it off. */
SETTER(set_flight)
{
	char buf[128];
	if (strlen(v) >= sizeof(buf))
		return -EINVAL;
	if (!strcmp(v, "0")) {
		c->flight_size = c->flight_age_ns = 0;
		c->flight_noexit = 0;
		return 0;
	}
	snprintf(buf, sizeof(buf), "%s", v);
	uint64_t size = 0, age = 0;
	int noexit = 0, n = 0;
	for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save), n++) {
		if (!strcmp(tok, "noexit"))
			noexit = 1;
		else if (n == 0 && !weft_parse_size(tok, &size))
			;
		else if (n == 1 && !weft_parse_duration(tok, &age) && age)
			;
		else
			return -EINVAL;
	}
	if (size == 0)
		size = 64ull << 20;
	if (size < (1ull << 20) || size > (64ull << 30))
		return -EINVAL;
	c->flight_size = size;
	c->flight_age_ns = age;
	c->flight_noexit = noexit;
	return 0;
}

/* switch_output=SIZE|TIME (weft record --switch-output): perf's suffixes, B/K/M/G a size (case
 * insensitive), s, m, h a time ("ms", "us" too); "0" off. */
SETTER(set_switch_output)
{
	uint64_t x = 0;
	size_t l = strlen(v);
	if (!strcmp(v, "0")) {
		c->switch_output[0] = 0;
		c->switch_bytes = c->switch_ns = 0;
		return 0;
	}
	if (!l || l >= sizeof(c->switch_output))
		return -EINVAL;
	char last = v[l - 1];
	if (last == 's' || last == 'm' || last == 'h') {
		char num[32];
		snprintf(num, sizeof(num), "%s", v);
		double mul = 1;
		if (last == 'm' || last == 'h') {
			num[l - 1] = 's';
			mul = last == 'm' ? 60 : 3600;
		}
		if (weft_parse_duration(num, &x) || (double)x * mul < 1e6 || (double)x * mul > 1e15)
			return -EINVAL;
		c->switch_ns = (uint64_t)((double)x * mul);
		c->switch_bytes = 0;
	} else {
		if (weft_parse_size(v, &x) || x < (256u << 10) || x > (16ull << 30))
			return -EINVAL;
		c->switch_bytes = x;
		c->switch_ns = 0;
	}
	return set_str(c->switch_output, sizeof(c->switch_output), v);
}
SETTER(set_switch_max_files) { return parse_int(v, 0, 1000000, &c->switch_max_files); }

static const struct {
	const char *key;
	setter_fn set;
	const char *valid;
} options[] = {
	{"enable", set_enable, "0 or 1"},
	{"output", set_output, "a directory path ({name} {host} {pid} expand)"},
	{"name", set_name, "a component name"},
	{"categories", set_categories, "comma-separated globs or /regex/, '-' prefix disables"},
	{"filter", set_filter, "comma-separated globs or /regex/ of event names, '-' excludes"},
	{"buffer_size", set_buffer_size, "a size from 8K to 64G (k/M/G suffix)"},
	{"chunk_size", set_chunk_size, "a size from 4K to 64M"},
	{"writers", set_writers, "1 to 16"},
	{"writer_cpus", set_writer_cpus, "a CPU list such as 1 or 0-3,6"},
	{"compression", set_compression, "a zstd level from -100 to 19, 0 = none"},
	{"overflow", set_overflow, "drop or block"},
	{"func_depth", set_func_depth, "a call depth, 0 = unlimited"},
	{"func_min", set_func_min, "a duration such as 500ns, 5us, 1ms"},
	{"func_filter", set_func_filter, "comma-separated globs or /regex/ of function names, '-' excludes"},
	{"func_libs", set_func_libs, "comma-separated globs or /regex/ of library file names, '-' excludes"},
	{"memory", set_memory, "0 or 1 (record allocations; weft record's runtime)"},
	{"memory_stacks", set_memory_stacks, "0 or 1"},
	{"memory_threshold", set_memory_threshold, "a size such as 4K (only blocks at least that big)"},
	{"memory_sample", set_memory_sample, "a size such as 64K (mean bytes between samples), 0 = every block"},
	{"mem_access", set_mem_access, "0, 1/auto (the best source available), pagefault, pebs or ibs"},
	{"mem_access_period", set_mem_access_period,
	 "events between samples, 0 to 2^32 (0: the source's default: every page fault, 1009 PEBS loads, 10007 stores, 65536 IBS ops)"},
	{"counters", set_counters, "comma-separated perf counter names (instructions, cycles, task-clock, page-faults, ...), 0 = none"},
	{"watch", set_watch, "up to 4 of SYMBOL or 0xADDR, each with /LEN (1, 2, 4, 8) and /w or /rw, comma-separated"},
	{"sched", set_sched, "0 or 1 (scheduling events; weft record's runtime)"},
	{"sched_threads", set_sched_threads, "1 to 16 threads, cpu, core, package, numa or CPU lists such as 0-3/4-7 (threads reading the per-CPU rings)"},
	{"cpu_mem", set_cpu_mem, "0 or 1 (sample the process's CPU time and RSS every sample_period)"},
	{"cpu_mem_exact", set_cpu_mem_exact, "comma-separated globs or /regex/ of slice names whose thread CPU time and RSS are read at begin and end, '-' excludes"},
	{"power", set_power, "0 or 1 (sample CPU frequency every sample_period, RAPL and GPU power every power_period)"},
	{"sample_period", set_sample_period, "a duration from 1ms to 1h such as 10ms (the default)"},
	{"power_period", set_power_period, "a duration from 1ms to 1h such as 1s (the default)"},
	{"sysfs_root", set_sysfs_root, "a directory standing for /sys (for tests)"},
	{"procfs_root", set_procfs_root, "a directory standing for /proc (for tests)"},
	{"nvml_lib", set_nvml_lib, "the NVML library dlopen loads (default libnvidia-ml.so.1)"},
	{"gpu", set_gpu, "0 or 1 (CUDA kernels, copies, API calls and device memory through CUPTI; GPU power, clocks and utilization through NVML every power_period)"},
	{"cupti_lib", set_cupti_lib, "the CUPTI library dlopen loads (default: searched in CUDA_HOME, /usr/local/cuda and the loader path)"},
	{"gpu_buffer_size", set_gpu_buffer_size, "a size from 64K to 256M: each CUPTI activity buffer (default 8M)"},
	{"host", set_host, "the host name to record (default: the hostname)"},
	{"mpi", set_mpi, "0 or 1 (MPI calls and messages, where libweft-mpi.so is loaded; default 1)"},
	{"live", set_live, "0 or 1 (weft top's calls and self times are counted from the start, not from the first time it asks; costs the writer a hash lookup per call; default 0)"},
	{"mpi_sync", set_mpi_sync, "0 or 1 (each rank's clock offset measured over MPI at MPI_Init and MPI_Finalize, with every rank of the job; 0 where some ranks run without weft; default 1)"},
	{"control", set_control, "the absolute path of weft record's control socket (set by weft record: enable, disable, snapshot, stop reach this process through it)"},
	{"flight", set_flight, "0 or SIZE[,AGE][,noexit]: keep the last SIZE (1M to 64G) of events in memory, at least AGE of time where SIZE allows, written only by a snapshot (flight recorder)"},
	{"switch_output", set_switch_output, "0, a size from 256K to 16G (K/M/G) or a time from 1ms (s, m, h): the trace as consecutive parts DIR/part-N, each a trace directory"},
	{"switch_max_files", set_switch_max_files, "0 (keep every part) or N: only the last N parts are kept"},
	{"snapshot_signal", set_snapshot_signal, "a signal name or number such as USR2 or RTMIN+1 (it requests a snapshot; not SEGV, BUS, FPE, ILL, TRAP, ABRT, KILL, STOP), 0 = none"},
	{"trigger", set_trigger, "PATTERN>DURATION, comma-separated (up to 8): a slice whose name matches the glob or /regex/ and lasts longer requests a snapshot at its end"},
	{"max_snapshots", set_max_snapshots, "the most snapshots taken, 0 to 1000000 (default 16); later requests are refused and counted"},
	{"min_interval", set_min_interval, "a duration such as 10s: a request sooner than this after the last snapshot is refused and counted"},
	{"after", set_after, "a duration up to 1h such as 2s: data kept after a trigger before the snapshot is written"},
};

const char *weft_config_valid(const char *key)
{
	for (size_t i = 0; i < sizeof(options) / sizeof(options[0]); i++)
		if (!strcmp(key, options[i].key))
			return options[i].valid;
	return NULL;
}

const char *weft_config_keys(char *out, size_t n)
{
	out[0] = 0;
	for (size_t i = 0; i < sizeof(options) / sizeof(options[0]); i++) {
		strncat(out, i ? ", " : "", n - strlen(out) - 1);
		strncat(out, options[i].key, n - strlen(out) - 1);
	}
	return out;
}

int weft_config_set(struct weft_config *c, const char *key, const char *val, int log_errors)
{
	for (size_t i = 0; i < sizeof(options) / sizeof(options[0]); i++) {
		if (strcmp(key, options[i].key))
			continue;
		int rc = options[i].set(c, val);
		if (rc && log_errors)
			weft_log(WEFT_LOG_WARN, "bad value '%s' for option %s: expected %s; using the default",
				 val, key, options[i].valid);
		return rc ? -EINVAL : 0;
	}
	if (log_errors) {
		char keys[1024];
		weft_log(WEFT_LOG_WARN, "unknown option '%s' ignored; valid keys: %s", key,
			 weft_config_keys(keys, sizeof(keys)));
	}
	return -ENOENT;
}

int weft_config_apply(struct weft_config *c, const char *opts, int log_errors)
{
	if (!opts)
		return 0;
	size_t n = strlen(opts);
	char *buf = malloc(n + 1);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, opts, n + 1);
	int bad = 0;
	char *save = NULL;
	for (char *tok = strtok_r(buf, ":", &save); tok; tok = strtok_r(NULL, ":", &save)) {
		char *eq = strchr(tok, '=');
		if (!eq) {
			if (log_errors)
				weft_log(WEFT_LOG_WARN, "option '%s' ignored: expected key=value", tok);
			bad++;
			continue;
		}
		*eq = 0;
		if (weft_config_set(c, tok, eq + 1, log_errors))
			bad++;
	}
	free(buf);
	size_t g = strlen(c->given);
	if (g + n + 2 < sizeof(c->given))
		snprintf(c->given + g, sizeof(c->given) - g, "%s%s", g ? ":" : "", opts);
	return bad;
}

void weft_host(char *out, size_t n)
{
	if (weft_cfg.host[0]) {
		snprintf(out, n, "%s", weft_cfg.host);
		return;
	}
	snprintf(out, n, "localhost");
	if (n > 1 && gethostname(out, n - 1) == 0)
		out[n - 1] = 0;
}

/* Expand {name} {host} {pid} in the output pattern. */
int weft_expand_output(const char *pat, const char *name, char *out, size_t n)
{
	char host[256];
	weft_host(host, sizeof(host));
	size_t o = 0;
	for (const char *p = pat; *p; p++) {
		char tmp[300];
		const char *ins = NULL;
		if (!strncmp(p, "{name}", 6)) {
			ins = (name && *name) ? name : "weft";
			p += 5;
		} else if (!strncmp(p, "{host}", 6)) {
			ins = host;
			p += 5;
		} else if (!strncmp(p, "{pid}", 5)) {
			snprintf(tmp, sizeof(tmp), "%d", (int)getpid());
			ins = tmp;
			p += 4;
		}
		if (ins) {
			size_t l = strlen(ins);
			if (o + l >= n)
				return -ENAMETOOLONG;
			memcpy(out + o, ins, l);
			o += l;
		} else {
			if (o + 1 >= n)
				return -ENAMETOOLONG;
			out[o++] = *p;
		}
	}
	out[o] = 0;
	return 0;
}
