/*
 * sched.c - scheduling on the timeline (sched=1, `weft record --sched`), part of
 * libweft-preload.so. Two sources, the first that opens wins:
 *   tracepoints  (root) sched_switch, sched_waking, task_newtask and task_rename of every task
 *                on every CPU: one ring per CPU (pid -1), the four events of a CPU sharing it
 *                (PERF_EVENT_IOC_SET_OUTPUT), PERF_SAMPLE_RAW decoded with the field offsets
 *                of each tracepoint's tracefs format file (collect/sched_tp.c). Everything is
 *                recorded, not only the program's threads: the Perfetto UI's CPU tracks then
 *                show what ran instead of the program, and trace_processor's thread_state
 *                needs the other side of each switch. System-wide, so one process of a
 *                session records: the one holding a flock on the trace directory (the first;
 *                an exec'd image takes it over, a forked child does not);
 *   own switches (no root, perf_event_paranoid 2: tracepoints are refused) a dummy software
 *                event per CPU on this process with context_switch=1 and inherit (threads
 *                only, where the kernel has inherit_thread): PERF_RECORD_SWITCH of the
 *                program's own threads, shown as on/off-CPU slices. Said in one line.
 * Tracepoints refuse CLOCK_BOOTTIME, so the rings run on CLOCK_MONOTONIC and each drain moves
 * their times onto weft's CLOCK_BOOTTIME timeline by the time suspended so far, as access.c
 * does. sched_threads= reader threads (default 1; collect/cpusets.h: N, cpu, core, package,
 * numa or explicit CPU lists) each own a set of CPUs' rings and are pinned to those CPUs
 * (sched_setaffinity; a refusal leaves the thread unpinned and `weft info` says so): they wait
 * in poll() until a ring is a quarter full or 10 ms pass, then copy its records into their own
 * weft stream as SCHED records (docs/format.md). Task names go out once per task and change
 * (a COMM record), not with every switch. A full ring loses records in the kernel
 * (PERF_RECORD_LOST): counted, and shown by `weft info` with the totals of the SCHED metadata
 * record written at stop. Some kernels do not report every switch: a sched_switch whose
 * previous task is not the one the CPU's last sched_switch put on it means one or more
 * switches in between were never emitted (neither to perf nor to ftrace: seen on a VM whose
 * kernel never reports a switch out of its agent's threads, and now and then one out of idle).
 * Those are counted too (the converter closes the gap, pftrace-sched.c).
 */
#include "lib/internal.h"
#include "collect/sched_tp.h"
#include "collect/cpusets.h"
#include "collect/clockgap.h"
#include "collect/source.h"
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <sched.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#define RING_PAGES 256 /* data pages per CPU (1 MiB): ~10000 records, woken at a quarter full */
#define POLL_MS 10
#define COMM_SLOTS 4096

struct cpu_ring {
	int cpu;
	int fd[4]; /* fd[0] owns the ring; the others write into it */
	int nfd;
	void *base;
	size_t size;
	/* the switch chain of this CPU, kept by the ring's reader: the task the last sched_switch
	 * put on it (known once one was seen, forgotten at a PERF_RECORD_LOST) */
	uint32_t on_cpu;
	int on_cpu_known;
};

/* Set by sched_open before the readers exist, read-only while they run; cleared in a
 * fork child. */
static struct cpu_ring *rings;
static int nrings;
static int mode;                   /* WEFT_SCHED_MODE_*: what runs in this process */
static struct weft_sched_tp tp;    /* the tracepoints' layouts (pointers into itself: never copied) */
static pthread_t *readers;         /* one per CPU set */
static int *owner;                 /* owner[i]: the reader of rings[i] (collect/cpusets.c) */
static int nreaders;               /* ... started */
static _Atomic int pinned;         /* readers whose sched_setaffinity succeeded */
static int lock_fd = -1;           /* the flock on the trace directory (tracepoints) */
static char why_off[200];          /* why nothing runs (mode 0), for the SCHED record */
static _Atomic int quit;           /* readers: drain once more and leave */
static _Atomic uint64_t records, lost; /* written by the readers */
static _Atomic uint64_t unreported;    /* ... switches the kernel did not report (a broken chain) */

enum { MODE_OFF = 0, MODE_TRACEPOINTS = 1, MODE_OWN = 2 };

/* ---- opening ---- */

static int online_cpus(int *cpus, int max)
{
	int n = 0;
	char buf[1024] = "";
	FILE *f = fopen("/sys/devices/system/cpu/online", "re");
	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = 0;
		fclose(f);
	}
	for (char *p = buf; *p && *p != '\n' && n < max;) {
		char *e;
		long a = strtol(p, &e, 10), b = a;
		if (e == p)
			break;
		if (*e == '-')
			b = strtol(e + 1, &e, 10);
		for (long c = a; c <= b && n < max; c++)
			cpus[n++] = (int)c;
		p = *e == ',' ? e + 1 : e;
	}
	if (!n) {
		long c = sysconf(_SC_NPROCESSORS_ONLN);
		for (long i = 0; i < c && n < max; i++)
			cpus[n++] = (int)i;
	}
	return n;
}

/* mapped: 0 in a fork child, where the parent's perf rings are not mapped (the kernel does
 * not copy them: VM_DONTCOPY) and their addresses may already hold another mapping */
static void ring_close(struct cpu_ring *r, int mapped)
{
	if (r->base && mapped)
		munmap(r->base, r->size);
	for (int i = 0; i < r->nfd; i++)
		close(r->fd[i]);
	r->base = NULL;
	r->nfd = 0;
}

static void close_all_mapped(int mapped)
{
	for (int i = 0; i < nrings; i++)
		ring_close(&rings[i], mapped);
	free(rings);
	rings = NULL;
	nrings = 0;
	free(owner);
	owner = NULL;
	free(readers);
	readers = NULL;
}

static void close_all(void)
{
	close_all_mapped(1);
}

static void base_attr(struct perf_event_attr *a, size_t ring_bytes)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->sample_period = 1;
	a->sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC; /* tracepoints refuse CLOCK_BOOTTIME (EINVAL) */
	a->watermark = 1;
	a->wakeup_watermark = (uint32_t)(ring_bytes / 4);
}

static int map_ring(struct cpu_ring *r)
{
	r->size = (size_t)(1 + RING_PAGES) * (size_t)sysconf(_SC_PAGESIZE);
	void *b = mmap(NULL, r->size, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd[0], 0);
	if (b == MAP_FAILED)
		return -errno;
	r->base = b;
	return 0;
}

/* The four tracepoints on every online CPU. Returns 0, or -errno with why. */
static int open_tracepoints(char *why, size_t n)
{
	char root[256];
	int rc = weft_tracefs_find(root, sizeof(root), why, n);
	if (rc)
		return rc;
	if ((rc = weft_sched_tp_load(&tp, root, why, n)))
		return rc;
	int cpus[1024];
	int nc = online_cpus(cpus, 1024);
	rings = calloc((size_t)nc, sizeof(*rings));
	if (!rings)
		return -ENOMEM;
	size_t data = (size_t)RING_PAGES * (size_t)sysconf(_SC_PAGESIZE);
	for (int i = 0; i < nc; i++) {
		struct cpu_ring *r = &rings[nrings++];
		r->cpu = cpus[i];
		for (int k = 0; k < 4; k++) {
			struct perf_event_attr a;
			base_attr(&a, data);
			a.type = PERF_TYPE_TRACEPOINT;
			a.config = tp.fmt[k].id;
			a.sample_type |= PERF_SAMPLE_RAW;
			int fd = weft_fd_high((int)syscall(SYS_perf_event_open, &a, -1, r->cpu, -1, PERF_FLAG_FD_CLOEXEC));
			if (fd < 0) {
				rc = -errno;
				snprintf(why, n, "perf_event_open of %s on CPU %d: %s", tp.fmt[k].name, r->cpu, strerror(errno));
				return rc;
			}
			r->fd[r->nfd++] = fd;
			if (k == 0 && (rc = map_ring(r))) {
				snprintf(why, n, "mmap of CPU %d's ring: %s", r->cpu, strerror(-rc));
				return rc;
			}
			if (k && ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, r->fd[0])) {
				rc = -errno;
				snprintf(why, n, "PERF_EVENT_IOC_SET_OUTPUT: %s", strerror(errno));
				return rc;
			}
		}
	}
	return 0;
}

/* This process's threads' context switches, one ring per CPU. */
static int open_own(char *why, size_t n)
{
	int cpus[1024];
	int nc = online_cpus(cpus, 1024);
	rings = calloc((size_t)nc, sizeof(*rings));
	if (!rings)
		return -ENOMEM;
	size_t data = (size_t)RING_PAGES * (size_t)sysconf(_SC_PAGESIZE);
	int threads_only = 1;
	for (int i = 0; i < nc; i++) {
		struct cpu_ring *r = &rings[nrings++];
		r->cpu = cpus[i];
		struct perf_event_attr a;
		base_attr(&a, data);
		a.type = PERF_TYPE_SOFTWARE;
		a.config = PERF_COUNT_SW_DUMMY;
		a.sample_id_all = 1;
		a.context_switch = 1;
		a.inherit = 1;
		a.inherit_thread = (unsigned)threads_only; /* not the children it forks: they record their own */
		a.exclude_kernel = 1;
		a.exclude_hv = 1;
		int fd = (int)syscall(SYS_perf_event_open, &a, getpid(), r->cpu, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0 && errno == EINVAL && threads_only) { /* a kernel before 5.13 */
			threads_only = 0;
			a.inherit_thread = 0;
			fd = (int)syscall(SYS_perf_event_open, &a, getpid(), r->cpu, -1, PERF_FLAG_FD_CLOEXEC);
		}
		fd = weft_fd_high(fd);
		if (fd < 0) {
			int e = errno;
			snprintf(why, n, "perf_event_open of context switches on CPU %d: %s", r->cpu, strerror(e));
			return -e;
		}
		r->fd[r->nfd++] = fd;
		int rc = map_ring(r);
		if (rc) {
			snprintf(why, n, "mmap of CPU %d's ring: %s", r->cpu, strerror(-rc));
			return rc;
		}
	}
	return 0;
}

/* ---- the readers ---- */

struct comm_slot { uint32_t tid; char comm[16]; };

struct reader {
	int index; /* its CPU set: the rings i with owner[i] == index */
	struct comm_slot *comms; /* direct-mapped: the name last written for a tid (a miss writes it again) */
	int64_t gap;
};

static void put(uint64_t ts, unsigned cpu, unsigned kind, const uint64_t *x, unsigned nx)
{
	uint64_t *w = weft__reserve(16 + 8 * (size_t)nx);
	if (!w)
		return; /* counted as dropped by the runtime */
	w[0] = ts;
	w[1] = weft__hdr(cpu, WEFT_R_SCHED, nx, kind);
	memcpy(w + 2, x, 8 * (size_t)nx);
	weft__commit(w + 2 + nx);
}

/* A COMM record unless this reader wrote the same name for tid last (pid 0, the idle task,
 * is "swapper/CPU" to every reader). */
static void comm(struct reader *rd, uint64_t ts, unsigned cpu, uint32_t tid, const char name[16])
{
	if (!tid)
		return;
	struct comm_slot *s = &rd->comms[(tid * 2654435761u) % COMM_SLOTS];
	if (s->tid == tid && !strncmp(s->comm, name, 16))
		return;
	s->tid = tid;
	memcpy(s->comm, name, 16);
	uint64_t x[3] = {tid, 0, 0};
	memcpy(&x[1], name, 16);
	put(ts, cpu, WEFT_SCHED_COMM, x, 3);
}

static void on_tracepoint(struct reader *rd, struct cpu_ring *r, uint64_t ts, unsigned cpu, const unsigned char *raw,
			  size_t len)
{
	struct weft_sched_ev e;
	if (weft_sched_tp_decode(&tp, raw, len, &e))
		return;
	uint64_t x[3];
	switch (e.kind) {
	case WEFT_SCHED_SWITCH:
		/* (the ring holds one CPU's switches in the order they happened: they run with
		 * interrupts off under the runqueue lock) */
		if (r->on_cpu_known && r->on_cpu != e.pid)
			atomic_fetch_add_explicit(&unreported, 1, memory_order_relaxed);
		r->on_cpu = e.next_pid;
		r->on_cpu_known = 1;
		comm(rd, ts, cpu, e.pid, e.comm);
		comm(rd, ts, cpu, e.next_pid, e.next_comm);
		x[0] = e.pid | (uint64_t)e.next_pid << 32;
		x[1] = (uint32_t)e.prev_state | (uint64_t)(uint16_t)e.prio << 32 | (uint64_t)(uint16_t)e.next_prio << 48;
		put(ts, cpu, WEFT_SCHED_SWITCH, x, 2);
		break;
	case WEFT_SCHED_WAKING:
		comm(rd, ts, cpu, e.pid, e.comm);
		x[0] = e.pid | (uint64_t)(uint32_t)e.target_cpu << 32;
		x[1] = (uint16_t)e.prio | (uint64_t)e.common_pid << 32;
		put(ts, cpu, WEFT_SCHED_WAKING, x, 2);
		break;
	case WEFT_SCHED_NEWTASK:
		comm(rd, ts, cpu, e.pid, e.comm);
		x[0] = e.pid | (uint64_t)e.common_pid << 32;
		x[1] = e.clone_flags;
		put(ts, cpu, WEFT_SCHED_NEWTASK, x, 2);
		break;
	case WEFT_SCHED_RENAME: {
		x[0] = e.pid | (uint64_t)e.common_pid << 32;
		memcpy(&x[1], e.comm, 16);
		put(ts, cpu, WEFT_SCHED_RENAME, x, 3);
		struct comm_slot *s = &rd->comms[(e.pid * 2654435761u) % COMM_SLOTS];
		s->tid = e.pid;
		memcpy(s->comm, e.comm, 16);
		break;
	}
	default:
		break;
	}
}

static void ring_copy(const struct cpu_ring *r, uint64_t off, void *out, size_t len)
{
	const struct perf_event_mmap_page *h = r->base;
	const char *data = (const char *)r->base + h->data_offset;
	uint64_t size = h->data_size, o = off % size;
	size_t first = len < size - o ? len : (size_t)(size - o);
	memcpy(out, data + o, first);
	memcpy((char *)out + first, data, len - first);
}

static void drain(struct reader *rd, struct cpu_ring *r)
{
	struct perf_event_mmap_page *h = r->base;
	uint64_t head = __atomic_load_n(&h->data_head, __ATOMIC_ACQUIRE), tail = h->data_tail;
	uint64_t n = 0;
	while (tail + sizeof(struct perf_event_header) <= head) {
		struct perf_event_header eh;
		ring_copy(r, tail, &eh, sizeof(eh));
		if (eh.size < sizeof(eh) || tail + eh.size > head)
			break;
		unsigned char body[512];
		size_t len = eh.size - sizeof(eh) < sizeof(body) ? eh.size - sizeof(eh) : sizeof(body);
		ring_copy(r, tail + sizeof(eh), body, len);
		tail += eh.size;
		/* sample_id / sample: u32 pid, u32 tid, u64 time, u32 cpu, u32 0 [, u32 size, raw] */
		if (eh.type == PERF_RECORD_SAMPLE && len >= 28) {
			uint64_t t;
			uint32_t cpu, size;
			memcpy(&t, body + 8, 8);
			memcpy(&cpu, body + 16, 4);
			memcpy(&size, body + 24, 4);
			if (28 + (size_t)size <= len)
				on_tracepoint(rd, r, (uint64_t)((int64_t)t + rd->gap), cpu, body + 28, size);
			n++;
		} else if ((eh.type == PERF_RECORD_SWITCH) && len >= 24) {
			uint32_t tid, cpu;
			uint64_t t;
			memcpy(&tid, body + 4, 4);
			memcpy(&t, body + 8, 8);
			memcpy(&cpu, body + 16, 4);
			int out = (eh.misc & PERF_RECORD_MISC_SWITCH_OUT) != 0;
			int preempt = (eh.misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) != 0;
			uint64_t x = tid | (uint64_t)(out && preempt) << 32;
			put((uint64_t)((int64_t)t + rd->gap), cpu, out ? WEFT_SCHED_OUT : WEFT_SCHED_IN, &x, 1);
			n++;
		} else if (eh.type == PERF_RECORD_LOST && len >= 16) {
			uint64_t v[2];
			memcpy(v, body, sizeof(v));
			atomic_fetch_add_explicit(&lost, v[1], memory_order_relaxed);
			r->on_cpu_known = 0; /* what follows a loss is no sign of the kernel's */
		}
	}
	__atomic_store_n(&h->data_tail, tail, __ATOMIC_RELEASE);
	if (n)
		atomic_fetch_add_explicit(&records, n, memory_order_relaxed);
}

static void *reader_main(void *arg)
{
	struct reader *rd = arg;
	char name[16];
	snprintf(name, sizeof(name), rd->index ? "weft-sched-%d" : "weft-sched", rd->index);
	weft_thread_own(name);
	struct pollfd pf[WEFT_CPUSETS_MAX_CPUS];
	int np = 0;
	cpu_set_t set;
	CPU_ZERO(&set);
	for (int i = 0; i < nrings && np < WEFT_CPUSETS_MAX_CPUS; i++)
		if (owner[i] == rd->index) {
			pf[np++] = (struct pollfd){.fd = rings[i].fd[0], .events = POLLIN};
			if (rings[i].cpu < CPU_SETSIZE)
				CPU_SET(rings[i].cpu, &set);
		}
	if (!sched_setaffinity(0, sizeof(set), &set)) /* near its rings; a refusal (cgroup cpuset) leaves it be */
		atomic_fetch_add(&pinned, 1);
	for (;;) {
		int last = atomic_load(&quit);
		rd->gap = weft_clock_gap(); /* the time suspended so far: the rings' offset */
		for (int i = 0; i < nrings; i++)
			if (owner[i] == rd->index)
				drain(rd, &rings[i]);
		if (last)
			break;
		poll(pf, (nfds_t)np, POLL_MS);
	}
	free(rd->comms);
	free(rd);
	return NULL;
}

static void start_readers(void)
{
	int cpus[WEFT_CPUSETS_MAX_CPUS];
	char why[160];
	owner = calloc((size_t)nrings + 1, sizeof(int));
	for (int i = 0; i < nrings && i < WEFT_CPUSETS_MAX_CPUS; i++)
		cpus[i] = rings[i].cpu;
	int want = owner ? weft_cpusets_split(weft_cfg.sched_threads, weft_cfg.sysfs_root, cpus, nrings, owner, why,
					      sizeof(why)) : -ENOMEM;
	if (want < 1 && owner) { /* (the option was checked when set) */
		memset(owner, 0, sizeof(int) * (size_t)nrings);
		want = 1;
	}
	readers = owner ? calloc((size_t)want, sizeof(pthread_t)) : NULL;
	if (!readers)
		want = 0;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old); /* signals are the program's */
	for (int i = 0; i < want; i++) {
		struct reader *rd = calloc(1, sizeof(*rd));
		if (rd)
			rd->comms = calloc(COMM_SLOTS, sizeof(struct comm_slot));
		if (!rd || !rd->comms) {
			free(rd);
			break;
		}
		rd->index = i;
		if (pthread_create(&readers[nreaders], NULL, reader_main, rd)) {
			free(rd->comms);
			free(rd);
			break;
		}
		nreaders++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	/* with fewer readers than sets, the last sets' rings would go undrained: a failed start
	 * ends sampling */
	if (nreaders < want || !want) {
		atomic_store(&quit, 1);
		for (int i = 0; i < nreaders; i++)
			pthread_join(readers[i], NULL);
		nreaders = 0;
		close_all();
		snprintf(why_off, sizeof(why_off), "cannot start the reader threads");
		mode = MODE_OFF;
	}
}

/* ---- start, stop ---- */

static const int *cpus_of_rings(void)
{
	static int c[WEFT_CPUSETS_MAX_CPUS];
	for (int i = 0; i < nrings && i < WEFT_CPUSETS_MAX_CPUS; i++)
		c[i] = rings[i].cpu;
	return c;
}

static void write_meta(void)
{
	struct utsname u;
	if (uname(&u))
		memset(&u, 0, sizeof(u));
	uint32_t head[2] = {(uint32_t)mode, (uint32_t)nrings};
	uint64_t v[2] = {atomic_load(&records), atomic_load(&lost)};
	uint32_t rd[2] = {(uint32_t)nreaders, (uint32_t)atomic_load(&pinned)};
	char tail[sizeof(u.release) + sizeof(u.machine) + sizeof(why_off) + 2048 + 4 + 8]; /* + the u64 after the strings */
	size_t o = 0;
	o += (size_t)snprintf(tail + o, sizeof(tail) - o, "%s", u.release) + 1;
	o += (size_t)snprintf(tail + o, sizeof(tail) - o, "%s", u.machine) + 1;
	o += (size_t)snprintf(tail + o, sizeof(tail) - o, "%s", mode ? "" : why_off) + 1;
	/* the readers' CPU sets, '/' between them: "0-1,4-5/2-3,6-7" */
	size_t start = o;
	for (int k = 0; k < nreaders && owner; k++) {
		char one[1024];
		weft_cpusets_format(cpus_of_rings(), owner, nrings, k, one, sizeof(one));
		size_t l = strlen(one);
		if (o + l + 3 + 8 > sizeof(tail))
			break;
		if (o > start)
			tail[o++] = '/';
		memcpy(tail + o, one, l);
		o += l;
	}
	tail[o++] = 0;
	uint64_t un = atomic_load(&unreported);
	memcpy(tail + o, &un, 8); /* after the strings (the sets left room) */
	o += 8;
	static unsigned char buf[8 + 16 + 8 + sizeof(tail)]; /* (at stop, once: not on a small signal stack) */
	memcpy(buf, head, 8);
	memcpy(buf + 8, v, 16);
	memcpy(buf + 24, rd, 8);
	memcpy(buf + 32, tail, o);
	weft_meta_write(WEFT_M_SCHED, buf, 32 + o, NULL, 0);
}

static int started;

static void sched_stop(void) /* before the trace stops */
{
	if (!started)
		return;
	started = 0;
	atomic_store(&quit, 1);
	if (!weft_g.in_signal) {
		for (int i = 0; i < nreaders; i++)
			pthread_join(readers[i], NULL);
	}
	write_meta();
	if (!weft_g.in_signal) { /* (a fatal signal's handler frees nothing: the process ends) */
		nreaders = 0;
		close_all();
	}
}

static void atfork_child(void)
{
	/* the rings and readers are the parent's; the flock stays the parent's too */
	int was = mode;
	close_all_mapped(0);
	nreaders = 0;
	atomic_store(&pinned, 0);
	if (lock_fd >= 0)
		close(lock_fd);
	lock_fd = -1;
	atomic_store(&records, 0);
	atomic_store(&lost, 0);
	atomic_store(&unreported, 0);
	atomic_store(&quit, 0);
	started = 0;
	mode = MODE_OFF;
	if (was != MODE_OWN) /* the parent records every task, this one's too */
		return;
	char why[200];
	if (open_own(why, sizeof(why))) {
		close_all();
		return;
	}
	mode = MODE_OWN;
	started = 1;
	start_readers();
}

/* Is this the session's one system-wide recorder? (A flock on the trace directory: held by
 * the first process; one it forks shares it and stays out, an exec'd image takes it over.) */
static int first_in_session(void)
{
	const char *dir = getenv("WEFT_SESSION");
	if (!dir || !*dir)
		return 1;
	lock_fd = weft_fd_high(open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	if (lock_fd < 0)
		return 1;
	if (flock(lock_fd, LOCK_EX | LOCK_NB) == 0)
		return 1;
	close(lock_fd);
	lock_fd = -1;
	return 0;
}

static int paranoid(void)
{
	int v = 2;
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");
	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = 2;
		fclose(f);
	}
	return v;
}

/* ---- the source's face (collect/source.h) ---- */

/* Opens the rings and starts their readers: 0 (running), WEFT_SOURCE_IDLE (another process of
 * the session records every task), or -errno with the reason in why. The own-switches
 * fallback is said in one line. */
static int sched_open(char *why, size_t n)
{
	char notice[300] = "";
	size_t nn = sizeof(notice);
	weft_in_runtime++;
	if (!first_in_session()) {
		weft_in_runtime--;
		return WEFT_SOURCE_IDLE;
	}
	char tpwhy[200] = "";
	int rc = open_tracepoints(tpwhy, sizeof(tpwhy));
	if (!rc) {
		mode = MODE_TRACEPOINTS;
	} else {
		close_all();
		if (lock_fd >= 0) {
			close(lock_fd);
			lock_fd = -1;
		}
		if (geteuid() != 0 || rc == -EACCES || rc == -EPERM)
			snprintf(notice, nn, "sched: full scheduling needs root (perf_event_paranoid %d): recording the "
				 "program's own context switches", paranoid());
		else
			snprintf(notice, nn, "sched: scheduling tracepoints unavailable (%s): recording the program's own "
				 "context switches", tpwhy);
		rc = open_own(why, n);
		if (rc) {
			close_all();
			snprintf(why_off, sizeof(why_off), "%s", why);
			mode = MODE_OFF;
			write_meta();
			weft_in_runtime--;
			return rc;
		}
		mode = MODE_OWN;
	}
	started = 1;
	start_readers();
	weft_in_runtime--;
	if (notice[0])
		weft_log(WEFT_LOG_WARN, "%s", notice);
	if (mode == MODE_OFF) {
		snprintf(why, n, "%s", why_off);
		write_meta();
		started = 0;
		return -EAGAIN;
	}
	return 0;
}

static int sched_wanted(void)
{
	return weft_cfg.sched;
}

static void sched_describe(char *buf, size_t n)
{
	snprintf(buf, n, "%s", mode == MODE_TRACEPOINTS ? "every task's scheduling on every CPU (tracepoints)"
			       : mode == MODE_OWN ? "the program's own context switches"
						  : "none here: the parent records every task's (tracepoints)");
}

const struct weft_source weft_source_sched = {
	.name = "sched",
	.option = "sched",
	.wanted = sched_wanted,
	.open = sched_open,
	.fork_child = atfork_child, /* the child's readers start after its trace restarted */
	.stop = sched_stop,
	.describe = sched_describe,
};
