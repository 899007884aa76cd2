/*
 * cmd-info.c - `weft info DIR`: what a trace holds, without converting it: processes and
 * their threads, events and drops per thread, the time span, bytes raw and on disk, the
 * options the run used, what each collector did (the GPU's: its library or why it was
 * unavailable, its records and drops, and the GPUs), the hosts and their clocks
 * (info-hosts.c), and every warning about damage.
 */
#include "tool/info-snapshots.h"
#include "tool/cmd.h"
#include "format/reader.h"
#include "format/format.h"
#include "tool/drops.h"
#include "tool/info-hosts.h"
#include "tool/tracedir.h"
#include <getopt.h>
#include <stdio.h>
#include <string.h>

static void help(FILE *f)
{
	fprintf(f, "usage: weft info [OPTIONS] DIR...\n"
		   "Describe the trace directory DIR (several: as one trace). A trace of several\n"
		   "hosts or of a job's ranks also gets each host's clock offset and drift to the\n"
		   "reference host, and how many messages between processes go back in time once\n"
		   "aligned (docs/hosts.md).\n\n"
		   "  -h, --help   this text\n\n"
		   "Exit status: 0 described, 1 unreadable, 2 usage.\n");
}

static void per_event(uint64_t bytes, uint64_t events)
{
	if (events)
		printf(" (%.2f B/event)", (double)bytes / (double)events);
}

/* Processes under `parent` (pid; -1: those whose parent is not in the trace), images of one
 * pid in exec order. */
/* The process tree, found through two sorted indexes (a job of thousands of processes): by
 * (pid, image, order) for a process's images, by (parent, order) for its children. */
struct tree {
	const struct weft_trace *t;
	size_t *by_pid, *by_ppid;
};

static const struct weft_trace *tree_t; /* for the comparators */

static int cmp_pid(const void *a, const void *b)
{
	const struct weft_proc *x = &tree_t->procs[*(const size_t *)a], *y = &tree_t->procs[*(const size_t *)b];
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->gen != y->gen)
		return x->gen < y->gen ? -1 : 1;
	return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

static int cmp_ppid(const void *a, const void *b)
{
	const struct weft_proc *x = &tree_t->procs[*(const size_t *)a], *y = &tree_t->procs[*(const size_t *)b];
	if (x->ppid != y->ppid)
		return x->ppid < y->ppid ? -1 : 1;
	return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

/* The first entry of ix (sorted by key) whose key is >= v. */
static size_t lower(const struct tree *tr, const size_t *ix, int v, int by_ppid)
{
	size_t lo = 0, hi = tr->t->nprocs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct weft_proc *p = &tr->t->procs[ix[mid]];
		if ((by_ppid ? p->ppid : p->pid) < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void print_proc_tree(const struct tree *tr, const struct weft_proc *p, int depth, int guard);

static void print_children(const struct tree *tr, int parent, int depth, int guard)
{
	const struct weft_trace *t = tr->t;
	for (size_t j = lower(tr, tr->by_ppid, parent, 1); j < t->nprocs; j++) {
		const struct weft_proc *p = &t->procs[tr->by_ppid[j]];
		if (p->ppid != parent)
			break;
		if (p->pid != parent)
			print_proc_tree(tr, p, depth, guard);
	}
}

static void print_proc_tree(const struct tree *tr, const struct weft_proc *p, int depth, int guard)
{
	const struct weft_trace *t = tr->t;
	if (guard > 64 || p->gen) /* exec'd images are listed under their first image */
		return;
	for (size_t j = lower(tr, tr->by_pid, p->pid, 0); j < t->nprocs; j++) { /* images in exec order */
		const struct weft_proc *q = &t->procs[tr->by_pid[j]];
		if (q->pid != p->pid)
			break;
		if (q->gen < 0 || (size_t)q->gen >= t->nprocs)
			continue;
		printf("%*s%d %s", depth * 2, "", q->pid, q->name);
		if (q->gen)
			printf(" (after exec #%d)", q->gen);
		printf(":");
		for (int a = 0; a < q->argc; a++)
			printf(" %s", q->argv[a]);
		printf("\n");
	}
	print_children(tr, p->pid, depth + 1, guard + 1);
}

static void print_tree(const struct weft_trace *t)
{
	struct tree tr = {t, malloc((t->nprocs + 1) * sizeof(size_t)), malloc((t->nprocs + 1) * sizeof(size_t))};
	if (!tr.by_pid || !tr.by_ppid) {
		free(tr.by_pid);
		free(tr.by_ppid);
		return;
	}
	for (size_t i = 0; i < t->nprocs; i++)
		tr.by_pid[i] = tr.by_ppid[i] = i;
	tree_t = t;
	qsort(tr.by_pid, t->nprocs, sizeof(size_t), cmp_pid);
	qsort(tr.by_ppid, t->nprocs, sizeof(size_t), cmp_ppid);
	for (size_t i = 0; i < t->nprocs; i++) { /* the roots: their parent is not in the trace */
		const struct weft_proc *p = &t->procs[i];
		size_t j = lower(&tr, tr.by_pid, p->ppid, 0);
		int root = p->ppid == p->pid || j == t->nprocs || t->procs[tr.by_pid[j]].pid != p->ppid;
		if (root)
			print_proc_tree(&tr, p, 1, 0);
	}
	free(tr.by_pid);
	free(tr.by_ppid);
}

/* DIR holds no trace of its own but the flight recorder's snapshot-N or --switch-output's
 * part-N, each a trace directory: say so, and how to look at one. 0 when it holds none. */
/* The runtime's word on a window a fatal signal could not write (lib/fatal.c). */
static void print_not_written(const char *name, const char *line, void *ud)
{
	(void)ud;
	printf("not written: %s (%s)\n", line, name);
}

static int flight_dir(const char *dir)
{
	struct weft_tracedir_subdirs s[2];
	weft_tracedir_subdirs(dir, s);
	if (!s[0].n && !s[1].n && !weft_tracedir_not_written(dir, NULL, NULL))
		return 0;
	static const char *const kind[2] = {"snapshot", "part"};
	printf("trace:      %s: %s directory, no trace of its own\n", dir,
	       s[1].n && !s[0].n ? "a --switch-output" : "a flight recorder");
	for (int k = 0; k < 2; k++) {
		if (!s[k].n)
			continue;
		if (s[k].n == 1)
			printf("%-11s 1 (%s-%u), a trace directory: weft info %s/%s-%u\n", k ? "parts:" : "snapshots:",
			       kind[k], s[k].lo, dir, kind[k], s[k].lo);
		else
			printf("%-11s %u (%s-%u .. %s-%u), each a trace directory: weft info %s/%s-N\n",
			       k ? "parts:" : "snapshots:", s[k].n, kind[k], s[k].lo, kind[k], s[k].hi, dir, kind[k]);
	}
	weft_tracedir_not_written(dir, print_not_written, NULL);
	return 1;
}

int cmd_info(int argc, char **argv)
{
	static const struct option opts[] = {{"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'h') {
			help(stdout);
			return WEFT_EXIT_OK;
		}
		weft_cli_error("info", "unknown option '%s' (see 'weft info --help')", argv[optind - 1]);
		return WEFT_EXIT_USAGE;
	}
	/* several directories: one trace (a job's hosts) */
	const char *def = "weft.data", *const *dirs = optind < argc ? (const char *const *)argv + optind : &def;
	size_t ndirs = optind < argc ? (size_t)(argc - optind) : 1;
	struct weft_trace *t;
	char err[512];
	if (weft_trace_open_dirs(dirs, ndirs, &t, err, sizeof(err))) {
		if (ndirs == 1 && flight_dir(dirs[0]))
			return WEFT_EXIT_OK;
		weft_cli_error("info", "%s", err);
		return WEFT_EXIT_FAIL;
	}
	uint64_t events = 0, dropped = 0, raw = 0, stored = 0, threads = 0, own = 0;
	for (size_t i = 0; i < t->nprocs; i++) {
		const struct weft_proc *p = &t->procs[i];
		raw += p->bytes_raw;
		stored += p->bytes_stored;
		for (size_t k = 0; k < p->nthreads; k++) {
			events += p->threads[k].events;
			own += (uint64_t)p->threads[k].weft_own;
		}
		threads += p->nthreads;
		dropped += weft_proc_dropped(p);
	}
	printf("trace:      %s\n", t->dir);
	printf("span:       %.6f s (%.3f ms)\n", (double)(t->last_ns - t->first_ns) / 1e9,
	       (double)(t->last_ns - t->first_ns) / 1e6);
	printf("processes:  %zu\n", t->nprocs);
	printf("threads:    %llu", (unsigned long long)(threads - own));
	if (own) /* (a sched reader, a sampler: their records are the trace's, the threads not the program's) */
		printf(" (and %llu of weft's)", (unsigned long long)own);
	printf("\n");
	printf("events:     %llu\n", (unsigned long long)events);
	printf("dropped:    %llu\n", (unsigned long long)dropped);
	printf("bytes raw:  %llu", (unsigned long long)raw);
	per_event(raw, events);
	printf("\nbytes disk: %llu", (unsigned long long)stored);
	per_event(stored, events);
	printf("\n");
	weft_info_hosts(t);
	printf("\nprocess tree:\n");
	print_tree(t);
	for (size_t i = 0; i < t->nprocs; i++) {
		const struct weft_proc *p = &t->procs[i];
		printf("\nprocess %d \"%s\" (parent %d)%s%s\n", p->pid, p->name, p->ppid,
		       p->gen ? " [after exec]" : "", p->finished ? "" : " [not finished: killed or still running]");
		if (p->gen)
			printf("  image:    #%d of this process, after exec\n", p->gen);
		if (p->argc) {
			printf("  command:  ");
			for (int a = 0; a < p->argc; a++)
				printf("%s%s", a ? " " : "", p->argv[a]);
			printf("\n");
		}
		if (p->host)
			printf("  host:     %s\n", p->host);
		if (p->has_job)
			printf("  job:      rank %d of %u (local %d of %u), %s job %s\n",
			       p->job_rank == WEFT_RANK_NONE ? -1 : (int)p->job_rank, p->job_size,
			       p->job_local_rank == WEFT_RANK_NONE ? -1 : (int)p->job_local_rank, p->job_local_size,
			       p->job_launcher, p->job_id);
		if (p->options && *p->options)
			printf("  options:  %s\n", p->options);
		for (size_t k = 0; k < p->nnotes; k++)
			printf("  note:     %s\n", p->notes[k]);
		for (const char *l = p->sources; l && *l;) { /* each data source's describe line */
			const char *e = strchr(l, '\n');
			int n = e ? (int)(e - l) : (int)strlen(l);
			printf("  source:   %.*s\n", n, l);
			l += n + (e != NULL);
		}
		printf("  clock:    %s, %zu calibration points\n",
		       p->clock_kind == 1 ? "tsc" : p->clock_kind == 2 ? "cntvct" : "boottime ns", p->nclock);
		if (p->has_mpi) /* the MPI wrappers' record (libweft-mpi.so, docs/mpi.md) */
			printf("  mpi:      rank %u of %u, %s%s%s: %llu calls recorded, %llu messages sent with an "
			       "arrow, %llu received with one, %llu not drawn (unsure match)\n",
			       p->mpi_rank, p->mpi_size,
			       p->mpi_flavor == WEFT_MPI_OPENMPI ? "Open MPI" : p->mpi_flavor == WEFT_MPI_MPICH ? "MPICH" : "MPI",
			       p->mpi_flags & WEFT_MPI_F_FORTRAN ? ", Fortran" : "",
			       p->mpi_flags & WEFT_MPI_F_OFF ? ", not recorded (mpi=0)" : "",
			       (unsigned long long)p->mpi_calls, (unsigned long long)p->mpi_sent,
			       (unsigned long long)p->mpi_received, (unsigned long long)p->mpi_undrawn);
		size_t said = 0;
		for (size_t k = 0; k < p->nclock_sync; k++) { /* weft's cost, measured (1.9) */
			const struct weft_clock_sync *c = &p->clock_sync[k];
			if (c->took_us && !c->rounds) /* the reference rank: it measured the others */
				printf("%s phase %u %.3f ms (the reference)", said++ ? "," : "  clock sync:", c->phase,
				       c->took_us / 1e3);
			else if (c->took_us)
				printf("%s phase %u %.3f ms (%u round trips, best %.1f us)", said++ ? "," : "  clock sync:",
				       c->phase, c->took_us / 1e3, c->rounds, c->rtt_ns / 1e3);
		}
		if (said)
			printf("; weft's own slices (weft: clock sync), outside the program's MPI calls\n");
		if (p->finished)
			printf("  recorded: %llu events, %llu dropped, %llu after stop, %llu chunks\n",
			       (unsigned long long)p->fin[0], (unsigned long long)p->fin[1],
			       (unsigned long long)p->fin[2], (unsigned long long)p->fin[5]);
		char hint[512];
		weft_drops_hint(p, hint, sizeof(hint));
		if (*hint)
			printf("  drops:    %s\n", hint);
		if (p->has_window) {
			uint64_t a = weft_proc_ns(p, p->window[0]), b = weft_proc_ns(p, p->window[1]);
			if (p->window[0]) /* 0: nothing was lost, the window is the whole run so far */
				printf("  window:   from %llu to %llu ns (%.3f ms), snapshot %u: %s\n", (unsigned long long)a,
				       (unsigned long long)b, b > a ? (double)(b - a) / 1e6 : 0.0, p->window_number,
				       p->window_reason ? p->window_reason : "");
			else
				printf("  window:   from the start to %llu ns, snapshot %u: %s\n", (unsigned long long)b,
				       p->window_number, p->window_reason ? p->window_reason : "");
			/* the same window in --time's terms: from the trace's start (its earliest event, which
			 * here is the real begin of the outermost slice re-emitted: the program's start for
			 * main), as the Perfetto UI's timeline counts */
			if (b >= a && a >= t->first_ns)
				printf("            --time %.6f:%.6f (seconds from the trace's start, as in the "
				       "Perfetto UI)\n", (double)(a - t->first_ns) / 1e9, (double)(b - t->first_ns) / 1e9);
			printf("  not in window: %llu events (evicted, or before its start); %llu in it, %llu open "
			       "slices re-emitted\n", (unsigned long long)p->window[3], (unsigned long long)p->window[4],
			       (unsigned long long)p->window[5]);
			printf("  flight recorder: %llu events taken, %llu evicted, %llu written in snapshots\n",
			       (unsigned long long)p->window[6], (unsigned long long)p->window[7],
			       (unsigned long long)p->window[8]);
		}
		if (p->has_ring && p->ring[1] && p->ring[2]) { /* what a full ring holds, as measured */
			double each = (double)p->ring[1] / (double)p->ring[2];
			printf("  ring:     %.0f MiB, %llu events in %.1f MiB of it at the snapshot (%.1f B each): "
			       "about %.2f M events when full\n", (double)p->ring[0] / 1048576.0,
			       (unsigned long long)p->ring[2], (double)p->ring[1] / 1048576.0, each,
			       (double)p->ring[0] / each / 1e6);
		} else if (p->has_ring) {
			printf("  ring:     %.0f MiB, nothing in it at the snapshot (the window is the threads' "
			       "current chunks)\n", (double)p->ring[0] / 1048576.0);
		}
		if (p->end_signal)
			printf("  ended by: %s (thread %u)\n", strsignal((int)p->end_signal), p->end_signal_tid);
		weft_info_snapshots(t, p); /* snapshot requests, taken and refused */
		if (p->write_errno)
			printf("  write failed: %s; the events of later chunks are counted as dropped\n",
			       strerror((int)p->write_errno));
		if (p->disabled)
			printf("  not recorded: disabled %llu events (weft record --delay, the disable command; "
			       "not drops)\n", (unsigned long long)p->disabled);
		if (p->func_filtered)
			printf("  filtered: %llu function events (func_depth/func_min; asked for, not drops)\n",
			       (unsigned long long)p->func_filtered);
		if (p->has_overhead)
			printf("  overhead: writer threads %.1f ms CPU, %llu buffer switches (slow paths)\n",
			       (double)p->writer_cpu_ns / 1e6, (unsigned long long)p->slow_paths);
		if (p->mem_recorded) {
			printf("  memory:   allocations recorded%s", p->mem_stacks ? ", with call stacks" : "");
			if (p->mem_threshold)
				printf(", only blocks of at least %llu bytes", (unsigned long long)p->mem_threshold);
			if (p->mem_sample)
				printf(", sampled: one per %llu bytes on average", (unsigned long long)p->mem_sample);
			if (p->mem_sample_full)
				printf(" (%llu samples left out: sample set full)", (unsigned long long)p->mem_sample_full);
			printf("\n");
			if (p->mem_nested_lost)
				printf("            %u allocation calls of signal handlers dropped (they interrupted another "
				       "event of their thread; counted in dropped)\n", p->mem_nested_lost);
			if (p->mem_not_interposed)
				printf("            NOT the program's malloc: %s defines its own, which comes first "
				       "(only mmap and weft_heap_* recorded)\n", p->mem_allocator ? p->mem_allocator : "it");
			else if (p->mem_allocator)
				printf("            allocator: %s (its calls recorded)\n", p->mem_allocator);
		}
		if (p->nctr) { /* counters= (COUNTERS record) */
			printf("  counters: ");
			for (unsigned k = 0; k < p->nctr; k++)
				printf("%s%s", k ? ", " : "", p->ctr_names[k]);
			printf(" per slice (%s%s)\n", p->ctr_flags & 2 ? "rdpmc" : "read()",
			       p->ctr_flags & 1 ? ", user space only" : "");
		}
		if (p->has_access) {
			static const char *const src[] = {"page faults", "page faults", "PEBS loads and stores",
							  "PEBS loads and stores", "IBS ops"};
			printf("  accesses: %s sampled: %llu samples, %llu lost, %llu throttled\n",
			       src[p->access_source < 5 ? p->access_source : 0], (unsigned long long)p->access_samples,
			       (unsigned long long)p->access_lost, (unsigned long long)p->access_throttled);
			printf("            left out: %llu samples in weft's own memory\n", (unsigned long long)p->access_own);
		}
		if (p->has_sched && p->sched_mode == 1)
			printf("  sched:    every task on %u CPUs (tracepoints sched_switch, sched_waking, task_newtask, "
			       "task_rename): %llu records, %llu lost, %u reader thread%s\n", p->sched_cpus,
			       (unsigned long long)p->sched_records, (unsigned long long)p->sched_lost, p->sched_readers,
			       p->sched_readers == 1 ? "" : "s");
		else if (p->has_sched && p->sched_mode == 2)
			printf("  sched:    the program's own context switches on %u CPUs (no root): %llu records, "
			       "%llu lost\n", p->sched_cpus, (unsigned long long)p->sched_records,
			       (unsigned long long)p->sched_lost);
		else if (p->has_sched)
			printf("  sched:    unavailable: %s\n", p->sched_why[0] ? p->sched_why : "unknown reason");
		if (p->has_sched && p->sched_mode == 1 && p->sched_unreported)
			printf("            %llu switch%s not reported by the kernel (a CPU's next switch was out of another "
			       "task): the .pftrace puts %s at the next task's first record\n",
			       (unsigned long long)p->sched_unreported, p->sched_unreported == 1 ? "" : "es",
			       p->sched_unreported == 1 ? "it" : "each");
		if (p->has_sched && p->sched_mode && p->sched_sets[0]) {
			/* one line per reader: its thread name and CPUs */
			const char *q = p->sched_sets;
			for (uint32_t k = 0; *q; k++) {
				size_t l = strcspn(q, "/");
				char name[24];
				snprintf(name, sizeof(name), k ? "weft-sched-%u" : "weft-sched", k);
				printf("            reader %-14s CPUs %.*s\n", name, (int)l, q);
				q += l + (q[l] == '/');
			}
			if (p->sched_pinned < p->sched_readers)
				printf("            %u of %u readers not pinned to their CPUs (sched_setaffinity refused)\n",
				       p->sched_readers - p->sched_pinned, p->sched_readers);
		}
		if (p->has_watch) {
			printf("  watched:  %zu hardware watchpoint%s, %llu lost", p->nwatches, p->nwatches == 1 ? "" : "s",
			       (unsigned long long)p->watch_lost);
			if (p->watch_unwatched)
				printf(", %llu not opened on a thread", (unsigned long long)p->watch_unwatched);
			printf("\n");
			for (size_t k = 0; k < p->nwatches; k++) {
				const struct weft_watch_total *w = &p->watches[k];
				printf("            %s%s0x%llx, %u bytes, %s: %llu hits\n", w->name, w->name[0] ? " at " : "",
				       (unsigned long long)w->addr, w->len, w->source == 6 ? "reads and writes" : "writes",
				       (unsigned long long)w->hits);
			}
		}
		int sampled = 0;
		for (size_t k = 0; k < WEFT_SYS_NSOURCES; k++)
			sampled |= p->sys_sources[k].present;
		if (sampled) { /* the system sampler: each source asked for, used or why not */
			static const char *const names[WEFT_SYS_NSOURCES] = {"?", "cpu-mem", "cpufreq", "cpuidle", "rapl", "nvml"};
			printf("  sampler:  ");
			if (p->has_sys_overhead)
				printf("%.3f ms CPU in %.3f s (%.3f%%), %llu rounds\n", (double)p->sys_cpu_ns / 1e6,
				       (double)p->sys_wall_ns / 1e9,
				       p->sys_wall_ns ? 100.0 * (double)p->sys_cpu_ns / (double)p->sys_wall_ns : 0.0,
				       (unsigned long long)p->sys_rounds);
			else
				printf("running, or ended without a clean stop\n");
			for (size_t k = 0; k < WEFT_SYS_NSOURCES; k++) {
				const struct weft_sys_src_def *sd = &p->sys_sources[k];
				if (!sd->present)
					continue;
				printf("    %-8s %s: %s\n", names[k] ? names[k] : "?",
				       sd->state == WEFT_SYS_USED ? "used" : sd->state == WEFT_SYS_STANDBY ? "standby" : "unavailable",
				       sd->text ? sd->text : "");
			}
		}
		if (p->has_gpu && p->gpu_state == 1)
			printf("  gpu:      used: %s; %llu records, %llu dropped by CUPTI, %llu buffers, %llu CUDA calls, "
			       "%zu clock points\n", p->gpu_text[0] ? p->gpu_text : "CUPTI", (unsigned long long)p->gpu_records,
			       (unsigned long long)p->gpu_dropped, (unsigned long long)p->gpu_buffers,
			       (unsigned long long)p->gpu_api_calls, p->ngpu_clock);
		else if (p->has_gpu)
			printf("  gpu:      unavailable: %s\n", p->gpu_text[0] ? p->gpu_text : "unknown reason");
		for (size_t k = 0; k < p->ngpu_devices; k++) {
			const struct weft_gpu_device_def *d = &p->gpu_devices[k];
			printf("            GPU %u: %s, %u SMs, compute capability %u.%u, %.1f GiB\n", d->id,
			       d->name[0] ? d->name : "?", d->sms, d->cc_major, d->cc_minor, (double)d->global_mem / 1073741824.0);
		}
		if (p->has_rusage)
			printf("  usage:    peak RSS %.1f MiB, CPU %.3f s user, %.3f s system\n", (double)p->max_rss / 1048576.0,
			       (double)p->user_ns / 1e9, (double)p->sys_ns / 1e9);
		for (int mine = 0; mine < 2; mine++) /* the program's threads, then weft's */
			for (size_t k = 0; k < p->nthreads; k++) {
				const struct weft_thread_data *th = &p->threads[k];
				if (th->weft_own != mine)
					continue;
				printf("  %s %u \"%s\": %llu events, %llu dropped, %zu chunks\n",
				       mine ? "weft's thread" : "thread", th->tid, th->name, (unsigned long long)th->events,
				       (unsigned long long)th->dropped, th->nchunks);
			}
	}
	if (t->nwarnings) {
		printf("\nwarnings:\n");
		for (size_t i = 0; i < t->nwarnings; i++)
			printf("  %s\n", t->warnings[i]);
	}
	weft_trace_free(t);
	return WEFT_EXIT_OK;
}
