/*
 * sampler.c - the system sampler: one thread per traced process for every periodic source
 * (cpu_mem=1: the process's CPU time and RSS; power=1: CPU frequency and idle time, RAPL energy,
 * NVIDIA GPU power, SM clock and utilization; gpu=1: the NVIDIA GPU readings alone), started
 * with the trace (libweft, so a program tracing itself gets it through WEFT_OPTIONS as well as
 * `weft record --cpu-mem --power --gpu`). Nothing of it is on the program's
 * paths: the thread wakes every sample_period (default 10 ms) for the process's own sources,
 * the CPU frequency and idle time, and every power_period (default 1 s) for power, reads each source
 * (kept-open files read with pread, getrusage, NVML calls) and writes SAMPLE records - time
 * in CLOCK_BOOTTIME ns, channel, reading - into its own weft stream. A channel is one series
 * (a CPU's frequency, a RAPL domain's energy) declared once in a SYS_CHANNEL metadata record;
 * a reading is written only when it differs from the last one, and for cumulative series the
 * last unchanged reading is written before a change (WEFT_SYSCH_HOLD), so readers see flat
 * stretches for what they are and interpolate exactly. Each source states what it samples,
 * or why it cannot, in a SYS_SOURCE record (`weft info`), and the thread's own CPU time goes
 * into SYS_OVERHEAD at stop.
 *
 * System-wide sources (frequency, idle time, RAPL, NVML) are sampled by one process of a trace: the one
 * that holds the trace directory's lock, an abstract unix socket named after the directory's
 * device and inode (released by the kernel when the process ends, nothing left on disk). The
 * other processes stand by and try again every power_period, so a child takes over when the
 * first process ends. A fork child starts its own thread (its fork_child) and stands by.
 */
#include "lib/internal.h"
#include "collect/sampler.h"
#include "collect/source.h"
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define MAX_CHANNELS 1024

/* Channels: declared and written by the sampler thread only (a fork child's thread starts
 * over with none). */
static struct channel {
	int flags;
	int have;        /* a reading was written */
	uint64_t last_v; /* the last reading written */
	uint64_t last_t; /* when */
	uint64_t seen_t; /* the last sample that read last_v */
} channels[MAX_CHANNELS + 1];
static int nchannels;
static uint64_t cur_ts; /* the time of the sample being taken (sampler thread) */

static const struct weft_sys_ops *const all_sources[] = {&weft_sys_procstat, &weft_sys_cpufreq, &weft_sys_cpuidle,
							 &weft_sys_rapl, &weft_sys_nvml};
#define NSOURCES (sizeof(all_sources) / sizeof(all_sources[0]))
enum { S_OFF, S_ACTIVE, S_STANDBY, S_UNAVAILABLE };
static int state[NSOURCES]; /* sampler thread */
static uint32_t sampler_tid;

/* The thread's life: started at trace start or in a fork child, ended by sys_stop. */
static pthread_t thread;
static int have_thread;  /* weft_g.lock (start, stop) */
static _Atomic int quit; /* set by sys_stop; the thread takes a last sample and ends */
static pthread_mutex_t wake_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake;
static int lock_fd = -1; /* the system-wide lock, while this process holds it */

/* ---- what sources use ---- */

int weft_sys_channel(unsigned kind, unsigned index, uint64_t aux, const char *name, int flags)
{
	if (nchannels == MAX_CHANNELS)
		return -1;
	int id = ++nchannels;
	memset(&channels[id], 0, sizeof(channels[id]));
	channels[id].flags = flags;
	unsigned char h[24] = {0};
	uint32_t u32 = (uint32_t)id;
	uint16_t k = (uint16_t)kind;
	memcpy(h, &u32, 4);
	memcpy(h + 4, &k, 2);
	u32 = index;
	memcpy(h + 8, &u32, 4);
	memcpy(h + 16, &aux, 8);
	weft_meta_write(WEFT_M_SYS_CHANNEL, h, sizeof(h), name, strlen(name) + 1);
	return id;
}

static void put(int ch, uint64_t t, uint64_t v)
{
	uint64_t *w = weft__reserve(24);
	if (!w)
		return; /* counted as dropped by the runtime */
	w[0] = t;
	w[1] = weft__hdr((uint32_t)ch, WEFT_R_SAMPLE, 1, 0);
	w[2] = v;
	weft__commit(w + 3);
}

void weft_sys_emit(int ch, uint64_t v)
{
	if (ch <= 0 || ch > nchannels)
		return;
	struct channel *c = &channels[ch];
	if (c->have && v == c->last_v) {
		c->seen_t = cur_ts;
		return;
	}
	if (c->have && (c->flags & WEFT_SYSCH_HOLD) && c->seen_t != c->last_t)
		put(ch, c->seen_t, c->last_v); /* the flat stretch's end */
	put(ch, cur_ts, v);
	c->have = 1;
	c->last_v = v;
	c->last_t = c->seen_t = cur_ts;
}

/* At the end: every held channel's last reading, so its series reaches the last sample. */
static void flush_holds(void)
{
	for (int ch = 1; ch <= nchannels; ch++) {
		struct channel *c = &channels[ch];
		if (c->have && (c->flags & WEFT_SYSCH_HOLD) && c->seen_t != c->last_t) {
			put(ch, c->seen_t, c->last_v);
			c->last_t = c->seen_t;
		}
	}
}

char *weft_sys_path(char *path, size_t n, const char *root, const char *fmt, ...)
{
	int l = snprintf(path, n, "%s", root);
	va_list ap;
	va_start(ap, fmt);
	int m = l >= 0 && (size_t)l < n ? vsnprintf(path + l, n - (size_t)l, fmt, ap) : -1;
	va_end(ap);
	if (m < 0 || (size_t)(l + m) >= n)
		path[0] = 0;
	return path;
}

int weft_sys_read_u64(int fd, uint64_t *v)
{
	char buf[64];
	ssize_t r = pread(fd, buf, sizeof(buf) - 1, 0);
	if (r < 0)
		return -errno;
	buf[r] = 0;
	char *p = buf, *end;
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p < '0' || *p > '9')
		return -EINVAL; /* empty (a file being rewritten) or not a number */
	errno = 0;
	unsigned long long x = strtoull(p, &end, 10);
	if (errno)
		return -errno;
	*v = x;
	return 0;
}

int weft_sys_read_line(const char *path, char *buf, size_t n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t r = read(fd, buf, n - 1);
	int e = errno;
	close(fd);
	if (r < 0)
		return -e;
	buf[r] = 0;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

/* ---- the thread ---- */

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* 1 when this process samples the system-wide sources of its trace (see the top). */
static int take_system_lock(void)
{
	if (lock_fd >= 0)
		return 1;
	struct stat st;
	if (stat(weft_g.dir, &st))
		return 1; /* no directory to agree on: sample */
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 1;
	struct sockaddr_un a;
	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	int l = snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1, "weft-sys:%llx:%llx", (unsigned long long)st.st_dev,
			 (unsigned long long)st.st_ino);
	if (bind(fd, (struct sockaddr *)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)l))) {
		int e = errno;
		close(fd);
		return e != EADDRINUSE; /* another process holds it; any other failure: sample */
	}
	lock_fd = fd;
	return 1;
}

static void describe(size_t i, int st, const char *text)
{
	const struct weft_sys_ops *s = all_sources[i];
	unsigned char h[24] = {0};
	uint32_t w[2] = {s->source, st == S_ACTIVE ? WEFT_SYS_USED : st == S_STANDBY ? WEFT_SYS_STANDBY
										      : WEFT_SYS_UNAVAILABLE};
	uint64_t period = s->power_clock ? weft_cfg.power_period_ns : weft_cfg.sample_period_ns;
	memcpy(h, w, 8);
	memcpy(h + 8, &period, 8);
	memcpy(h + 16, &sampler_tid, 4);
	weft_meta_write(WEFT_M_SYS_SOURCE, h, sizeof(h), text, strlen(text) + 1);
}

static int asked(size_t i)
{
	switch (all_sources[i]->source) {
	case WEFT_SYS_CPU_MEM: return weft_cfg.cpu_mem;
	case WEFT_SYS_NVML: return weft_cfg.power || weft_cfg.gpu; /* gpu=1: NVML beside CUPTI */
	default: return weft_cfg.power;
	}
}

/* Opens source i (its state S_OFF or S_STANDBY): active, standing by, or unavailable. */
static void open_source(size_t i)
{
	const struct weft_sys_ops *s = all_sources[i];
	if (s->system_wide && !take_system_lock()) {
		if (state[i] != S_STANDBY)
			describe(i, S_STANDBY, "sampled by another process of this trace (this one takes over when it ends)");
		state[i] = S_STANDBY;
		return;
	}
	char desc[512] = "";
	weft_in_runtime++; /* dlopen and friends allocate: weft's, not the program's */
	int rc = s->open(desc, sizeof(desc));
	weft_in_runtime--;
	state[i] = rc ? S_UNAVAILABLE : S_ACTIVE;
	describe(i, state[i], desc);
	if (!rc) {
		cur_ts = weft_boottime_ns();
		s->sample(); /* the first readings, at start */
	}
}

static void sample_all(int power_clock)
{
	for (size_t i = 0; i < NSOURCES; i++) {
		if (state[i] == S_STANDBY && power_clock)
			open_source(i);
		else if (state[i] == S_ACTIVE && all_sources[i]->power_clock == power_clock) {
			cur_ts = weft_boottime_ns();
			all_sources[i]->sample();
		}
	}
}

static void *sampler_main(void *arg)
{
	(void)arg;
	weft_thread_own("weft-sampler");
	sampler_tid = (uint32_t)syscall(SYS_gettid);
	uint64_t wall0 = mono_ns(), rounds = 0;
	for (size_t i = 0; i < NSOURCES; i++)
		if (asked(i))
			open_source(i);
	uint64_t ps = weft_cfg.sample_period_ns, pp = weft_cfg.power_period_ns;
	uint64_t next_s = wall0 + ps, next_p = wall0 + pp;
	for (;;) {
		int q = atomic_load(&quit);
		uint64_t now = mono_ns();
		int any_s = 0, any_p = 0;
		for (size_t i = 0; i < NSOURCES; i++) {
			any_s |= state[i] == S_ACTIVE && !all_sources[i]->power_clock;
			any_p |= (state[i] == S_ACTIVE && all_sources[i]->power_clock) || state[i] == S_STANDBY;
		}
		if (q || now >= next_s) {
			sample_all(0);
			rounds += any_s;
			next_s += ps;
			if (next_s <= now) /* late (the machine was busy, or suspended): no catching up */
				next_s = now + ps;
		}
		if (q || now >= next_p) {
			sample_all(1);
			rounds += any_p;
			next_p += pp;
			if (next_p <= now)
				next_p = now + pp;
		}
		if (q)
			break;
		if (!any_s && !any_p)
			next_s = next_p = UINT64_MAX / 2; /* nothing to sample: wait for the stop */
		uint64_t until = next_s < next_p ? next_s : next_p;
		struct timespec ts = {(time_t)(until / 1000000000ull), (long)(until % 1000000000ull)};
		pthread_mutex_lock(&wake_lock);
		while (!atomic_load(&quit) && pthread_cond_timedwait(&wake, &wake_lock, &ts) != ETIMEDOUT)
			;
		pthread_mutex_unlock(&wake_lock);
	}
	flush_holds();
	for (size_t i = 0; i < NSOURCES; i++)
		if (state[i] == S_ACTIVE)
			all_sources[i]->close(0);
	uint64_t ov[3] = {thread_cpu_ns(), mono_ns() - wall0, rounds};
	weft_meta_write(WEFT_M_SYS_OVERHEAD, ov, sizeof(ov), NULL, 0);
	return NULL;
}

static void init_wake(void)
{
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&wake, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&wake_lock, NULL);
}

/* A fresh state for this process's thread: the trace's start, or a fork child. */
static void reset(void)
{
	init_wake();
	atomic_store(&quit, 0);
	nchannels = 0;
	memset(state, 0, sizeof(state));
}

static void start_thread(void)
{
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old); /* signals are the program's */
	have_thread = pthread_create(&thread, NULL, sampler_main, NULL) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* ---- the source's face (collect/source.h) ---- */

static int sys_wanted(void)
{
	return weft_cfg.cpu_mem || weft_cfg.power || weft_cfg.gpu;
}

/* Each periodic source says on the thread, in its SYS_SOURCE record, what it samples or why it
 * cannot: the sampler itself only needs its thread. */
static int sys_open(char *why, size_t n)
{
	(void)why;
	(void)n;
	reset();
	return 0;
}

static void sys_stop(void)
{
	if (!have_thread)
		return;
	have_thread = 0;
	pthread_mutex_lock(&wake_lock);
	atomic_store(&quit, 1);
	pthread_cond_signal(&wake);
	pthread_mutex_unlock(&wake_lock);
	if (!weft_g.in_signal) /* a fatal signal's stop takes what was written so far */
		pthread_join(thread, NULL);
}

static void sys_fork_child(void)
{
	/* the parent's thread is not in the child; its lock is the parent's to hold */
	if (lock_fd >= 0) {
		close(lock_fd);
		lock_fd = -1;
	}
	if (!have_thread || atomic_load(&weft_g.run) != WEFT_RUN_ON)
		return;
	for (size_t i = 0; i < NSOURCES; i++)
		if (state[i] == S_ACTIVE)
			all_sources[i]->close(1);
	have_thread = 0;
	reset();
	start_thread();
}

static void sys_describe(char *buf, size_t n)
{
	double sp = (double)weft_cfg.sample_period_ns / 1e6, pp = (double)weft_cfg.power_period_ns / 1e6;
	size_t o = 0;
	if (weft_cfg.cpu_mem)
		o += (size_t)snprintf(buf + o, o < n ? n - o : 0, "the process's CPU time and RSS every %g ms; ", sp);
	if (weft_cfg.power)
		o += (size_t)snprintf(buf + o, o < n ? n - o : 0,
				      "CPU frequency and idle time every %g ms, RAPL energy every %g ms; ", sp, pp);
	if (weft_cfg.power || weft_cfg.gpu)
		o += (size_t)snprintf(buf + o, o < n ? n - o : 0, "NVIDIA GPU power, clocks and utilization (NVML) every %g ms; ",
				      pp);
	if (o >= 2 && o - 2 < n)
		buf[o - 2] = 0; /* (the last "; ") */
}

const struct weft_source weft_source_sys = {
	.name = "sampler",
	.option = "cpu_mem,power,gpu",
	.wanted = sys_wanted,
	.open = sys_open,
	.start = start_thread,
	.fork_child = sys_fork_child,
	.stop = sys_stop,
	.describe = sys_describe,
};

int weft_sys_fd_budget(void)
{
	struct rlimit r;
	rlim_t lim = getrlimit(RLIMIT_NOFILE, &r) ? 1024 : r.rlim_cur;
	if (lim == RLIM_INFINITY || lim > 65536)
		lim = 65536;
	int b = (int)(lim / 16);
	return b < 8 ? 8 : b;
}
