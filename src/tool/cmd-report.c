/*
 * cmd-report.c - `weft report DIR`: functions and slices by total time, self time, calls,
 * average and maximum (like `uftrace report` / `perf report`), per thread with --threads or
 * per process with --processes,
 * as a call tree with --tree (like `uftrace graph`), as CSV or JSON for scripts; allocations
 * (report-memory.c), counters (report-counters.c), GPU work (report-gpu.c) or MPI calls
 * (report-mpi.c) instead of time.
 */
#include "tool/cmd.h"
#include "tool/shortname.h"
#include "tool/textout.h"
#include "tool/report-memory.h"
#include "tool/report-counters.h"
#include "tool/report-gpu.h"
#include "tool/report-mpi.h"
#include "tool/convert-job.h"
#include "export/profile.h"
#include "tool/timewin.h"
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void help(FILE *f)
{
	fprintf(f, "usage: weft report [OPTIONS] [DIR...]   (default weft.data; several: one trace)\n"
		   "Where the time went in the trace DIR.\n\n"
		   "  -s, --sort KEY      total (default), self, calls, avg, max or name\n"
		   "      --threads       one table per thread\n"
		   "      --processes     one table per process (with the images it exec'd)\n"
		   "      --tree          the call tree: time and calls along each call path\n"
		   "  -f, --format FMT    text (default), csv or json\n"
		   "      --time FROM:TO  only this window, in seconds from the trace's start (2.5:3.5,\n"
		   "                      2500ms:3500ms, :5s, 10s:): totals are the window's\n"
		   "  -n, --limit N       at most N rows (default: all)\n"
		   "  -j, --jobs N        threads to use (default 2)\n"
		   "  -m, --memory        allocations instead of time (a trace recorded with --memory or\n"
		   "                      weft_heap_*): per slice allocations, bytes, frees, bytes at the\n"
		   "                      peak, leaked, temporary, average; a summary and a size histogram\n"
		   "      --counters      counters instead of time (a trace recorded with --counters):\n"
		   "                      per slice name the calls and, per counter, the total of the\n"
		   "                      deltas (end minus begin) and the delta per call; IPC when\n"
		   "                      instructions and cycles were both recorded\n"
		   "      --gpu           GPU work instead of time (a trace recorded with --gpu): per\n"
		   "                      kernel launches, device time, occupancy, registers and shared\n"
		   "                      memory; per copy kind count, bytes, time and GB/s; the launch\n"
		   "                      latency (CUDA call to device start) distribution\n"
		   "      --mpi           MPI calls instead of time (an MPI job): per rank the time in\n"
		   "                      MPI and outside; per MPI function calls, time, bytes and\n"
		   "                      wait (a receive's time before its send began, a collective's\n"
		   "                      before its last member arrived); the compute imbalance\n"
		   "                      (max/mean); the bytes each rank sent each other. Under\n"
		   "                      mpirun/srun -n N the job's ranks share the work (the trace's\n"
		   "                      directory must be writable: they meet there); other reports\n"
		   "                      are printed by rank 0 alone\n"
		   "      --leaks         with --memory: every leaked block and its slice stack\n"
		   "      --unit U        the text tables' times in U: ns, us, ms or s (default: each\n"
		   "                      table's or column's own, from its largest value)\n"
		   "      --full-names    C++ names with return type and parameters (the text table\n"
		   "                      shows them without; csv and json always give them whole)\n"
		   "  -h, --help          this text\n\n"
		   "With --memory, -s takes bytes (default), allocs, peak, leaked, temporary, avg, frees\n"
		   "or name.\n"
		   "Total time counts a recursive function once (its outermost call); self time is\n"
		   "total minus the recorded calls it made. Exit status: 0, 1 unreadable, 2 usage.\n");
}

static int sort_key;
static int cmp(const void *a, const void *b)
{
	const struct weft_fstat *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	uint64_t u = 0, v = 0;
	switch (sort_key) {
	case 0: u = x->total; v = y->total; break;
	case 1: u = x->self; v = y->self; break;
	case 2: u = x->calls; v = y->calls; break;
	case 3: u = x->total / x->calls; v = y->total / y->calls; break;
	case 4: u = x->max; v = y->max; break;
	default: return strcmp(x->name, y->name);
	}
	if (u != v)
		return u > v ? -1 : 1;
	return strcmp(x->name, y->name);
}

static const char *fmt_in(uint64_t ns, struct weft_unit u, char *buf, size_t n)
{
	snprintf(buf, n, "%12.*f", u.decimals, (double)ns / u.div);
	return buf;
}

/* A column header right-aligned over its numbers: "Total (ms)". */
static const char *col(const char *what, struct weft_unit u, char *buf, size_t n)
{
	char t[32];
	snprintf(t, sizeof(t), "%s (%s)", what, u.name);
	snprintf(buf, n, "%12s", t);
	return buf;
}

static int full_names; /* --full-names: C++ names with return type and parameters */
static const char *shown_name(const char *name)
{
	return full_names ? name : weft_short_name_whole(name);
}

static void max_self(const struct weft_tnode *n, uint64_t *m)
{
	for (const struct weft_tnode *c = n->child; c; c = c->next) {
		if (c->self > *m)
			*m = c->self;
		max_self(c, m);
	}
}

static struct weft_unit tree_units[2]; /* total, self: from the root's largest child */

static void print_tree(const struct weft_tnode *n, int depth, int fmt, int *first)
{
	/* children by total time */
	size_t k = 0;
	for (const struct weft_tnode *c = n->child; c; c = c->next)
		k++;
	const struct weft_tnode **v = malloc((k + 1) * sizeof(*v));
	if (!v)
		return;
	k = 0;
	for (const struct weft_tnode *c = n->child; c; c = c->next)
		v[k++] = c;
	for (size_t i = 1; i < k; i++) /* insertion sort: child lists are short */
		for (size_t j = i; j > 0 && v[j]->total > v[j - 1]->total; j--) {
			const struct weft_tnode *t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	for (size_t i = 0; i < k; i++) {
		const struct weft_tnode *c = v[i];
		char a[32], b[32];
		if (fmt == 0)
			printf("%s  %s  %9llu  %*s%s\n", fmt_in(c->total, tree_units[0], a, sizeof(a)),
			       fmt_in(c->self, tree_units[1], b, sizeof(b)), (unsigned long long)c->calls, depth * 2, "",
			       shown_name(c->name));
		else if (fmt == 1) {
			printf("%d,%llu,%llu,%llu,", depth, (unsigned long long)c->total, (unsigned long long)c->self,
			       (unsigned long long)c->calls);
			weft_csv_str(c->name);
			putchar('\n');
		} else {
			printf("%s{\"depth\":%d,\"total_ns\":%llu,\"self_ns\":%llu,\"calls\":%llu,\"name\":",
			       *first ? "" : ",\n", depth, (unsigned long long)c->total, (unsigned long long)c->self,
			       (unsigned long long)c->calls);
			weft_json_str(c->name);
			printf("}");
			*first = 0;
		}
		print_tree(c, depth + 1, fmt, first);
	}
	free(v);
}

int cmd_report(int argc, char **argv)
{
	static const struct option opts[] = {
		{"sort", required_argument, 0, 's'}, {"threads", no_argument, 0, 'T'},
		{"processes", no_argument, 0, 'P'},
		{"tree", no_argument, 0, 'G'}, {"format", required_argument, 0, 'f'},
		{"limit", required_argument, 0, 'n'}, {"jobs", required_argument, 0, 'j'},
		{"full-names", no_argument, 0, 'F'}, {"memory", no_argument, 0, 'm'},
		{"leaks", no_argument, 0, 'K'}, {"counters", no_argument, 0, 'C'},
		{"gpu", no_argument, 0, 'U'}, {"mpi", no_argument, 0, 'M'},
		{"time", required_argument, 0, 'W'}, {"unit", required_argument, 0, 'u'},
		{"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
	static const char *keys[] = {"total", "self", "calls", "avg", "max", "name"};
	int per_thread = 0, tree = 0, fmt = 0, jobs = 2, c, memory = 0, leaks = 0, counters = 0, gpu = 0, mpi = 0;
	const char *sort_name = NULL;
	long limit = -1;
	struct weft_window_req win;
	int by_time = 0;
	sort_key = 0;
	full_names = 0;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "s:f:n:j:mh", opts, NULL)) != -1) {
		switch (c) {
		case 'W':
			if (weft_cli_parse_time("report", optarg, &win))
				return WEFT_EXIT_USAGE;
			by_time = 1;
			break;
		case 'u':
			if (weft_unit_force(optarg)) {
				weft_cli_error("report", "--unit takes ns, us, ms or s, not '%s'", optarg);
				return WEFT_EXIT_USAGE;
			}
			break;
		case 'm': memory = 1; break;
		case 'K': leaks = 1; break;
		case 'C': counters = 1; break;
		case 'U': gpu = 1; break;
		case 'M': mpi = 1; break;
		case 's':
			sort_name = optarg;
			for (sort_key = 0; sort_key < 6 && strcmp(keys[sort_key], optarg); sort_key++)
				;
			break;
		case 'T': per_thread = WEFT_PROFILE_THREADS; break;
		case 'P': per_thread = WEFT_PROFILE_PROCESSES; break;
		case 'G': tree = 1; break;
		case 'F': full_names = 1; break;
		case 'f':
			if ((fmt = weft_cli_table_format("report", optarg)) < 0)
				return WEFT_EXIT_USAGE;
			break;
		case 'n': {
			long long v;
			if (weft_cli_parse_int(optarg, 1, LONG_MAX, &v)) {
				weft_cli_error("report", "--limit takes a positive number, not '%s'", optarg);
				return WEFT_EXIT_USAGE;
			}
			limit = (long)v;
			break;
		}
		case 'j': {
			long long v;
			if (weft_cli_parse_int(optarg, 1, 16, &v)) {
				weft_cli_error("report", "--jobs takes 1 to 16, not '%s'", optarg);
				return WEFT_EXIT_USAGE;
			}
			jobs = (int)v;
			break;
		}
		case 'h': help(stdout); return WEFT_EXIT_OK;
		default:
			weft_cli_error("report", "unknown option '%s' (see 'weft report --help')", argv[optind - 1]);
			return WEFT_EXIT_USAGE;
		}
	}
	if (sort_name && memory && weft_report_memory_sort(sort_name)) {
		weft_cli_error("report", "unknown sort key '%s' for --memory (valid: %s)", sort_name,
			       weft_report_memory_sort_keys());
		return WEFT_EXIT_USAGE;
	}
	if (!sort_name && memory)
		weft_report_memory_sort("bytes");
	if (sort_name && !memory && sort_key == 6) {
		weft_cli_error("report", "unknown sort key '%s' (valid: total, self, calls, avg, max, name)", sort_name);
		return WEFT_EXIT_USAGE;
	}
	if (leaks && !memory) {
		weft_cli_error("report", "--leaks goes with --memory");
		return WEFT_EXIT_USAGE;
	}
	if (memory && (tree || per_thread)) {
		weft_cli_error("report", "--memory reports per process and heap; --tree, --threads and --processes do not apply");
		return WEFT_EXIT_USAGE;
	}
	if (counters && (memory || tree || per_thread || sort_name)) {
		weft_cli_error("report", "--counters reports per name, sorted by the first counter; --memory, --tree, "
			       "--threads, --processes and --sort do not apply");
		return WEFT_EXIT_USAGE;
	}
	if (gpu && (counters || memory || tree || per_thread || sort_name)) {
		weft_cli_error("report", "--gpu reports per process, kernels by device time; --counters, --memory, "
			       "--tree, --threads, --processes and --sort do not apply");
		return WEFT_EXIT_USAGE;
	}
	if (mpi && (gpu || counters || memory || tree || per_thread || sort_name)) {
		weft_cli_error("report", "--mpi reports per rank and MPI function; --gpu, --counters, --memory, "
			       "--tree, --threads, --processes and --sort do not apply");
		return WEFT_EXIT_USAGE;
	}
	if (optind == argc) { /* like perf report and perf.data */
		static char def[] = "weft.data";
		argv[argc++] = def;
	}
	/* a rank of `mpirun -np N weft report`: --mpi splits the ranks of the trace between the
	 * job's (report-mpi.c); any other report is made by rank 0 alone */
	struct weft_report_job job;
	int in_job = weft_report_mpi_job(&job, argv[optind], mpi);
	if (in_job < 0)
		return WEFT_EXIT_OK;
	weft_trace_defer_symbols = mpi; /* MPI slices are named: no function address is looked up */
	struct weft_trace *t;
	char err[512]; /* several directories: one trace (a job's hosts) */
	if (weft_trace_open_window((const char *const *)argv + optind, (size_t)(argc - optind), by_time ? &win : NULL,
				   &t, err, sizeof(err))) {
		if (in_job && job.j.rank) { /* rank 0 says it, with the rank, where it takes the reason */
			if (!weft_report_mpi_job_failed(&job, err))
				weft_cli_error("report", "rank %u of %u: %s", job.j.rank, job.j.size, err);
		} else {
			if (in_job) /* the other ranks' parts, should they come */
				weft_convert_job_cleanup(&job.j);
			weft_cli_error("report", "%s", err);
		}
		return WEFT_EXIT_FAIL;
	}
	for (size_t i = 0; i < t->nwarnings; i++)
		weft_cli_error("report", "warning: %s", t->warnings[i]);
	if (t->window.active) { /* the totals are the window's: said where a reader looks */
		char w[128];
		weft_cli_window_text(t, w, sizeof(w));
		if (fmt == 0)
			printf("Window: %s (totals for the window; slices open at its start count from their "
			       "begin, those open at its end up to it)\n\n", w);
		else
			weft_cli_error("report", "totals for the window %s", w);
	}
	if (mpi) {
		int rc = weft_report_mpi(t, fmt, limit, in_job ? &job : NULL);
		weft_trace_free(t);
		return rc;
	}
	if (gpu) {
		int rc = weft_report_gpu(t, fmt, limit, full_names);
		weft_trace_free(t);
		return rc;
	}
	if (counters) {
		int rc = weft_report_counters(t, fmt, limit);
		weft_trace_free(t);
		return rc;
	}
	if (memory) {
		int rc = weft_report_memory(t, fmt, limit, leaks, full_names);
		weft_trace_free(t);
		return rc;
	}
	struct weft_profile pr;
	if (weft_profile_build(t, per_thread, tree, jobs, &pr)) {
		weft_cli_error("report", "out of memory reading %s: no report (it would be incomplete)", argv[optind]);
		weft_trace_free(t);
		return WEFT_EXIT_FAIL;
	}
	if (pr.bad_chunks)
		weft_cli_warn_undecoded("report", pr.bad_chunks, pr.bad_why, NULL);
	int first = 1;
	if (tree) {
		if (fmt == 0) {
			uint64_t mt = 0, ms = 0;
			for (const struct weft_tnode *c = pr.root->child; c; c = c->next) {
				mt = c->total > mt ? c->total : mt;
				ms = c->self > ms ? c->self : ms;
			}
			max_self(pr.root, &ms);
			tree_units[0] = weft_unit_for(mt);
			tree_units[1] = weft_unit_for(ms);
			char h1[32], h2[32];
			printf("%s  %s  %9s  Call tree\n", col("Total", tree_units[0], h1, sizeof(h1)),
			       col("Self", tree_units[1], h2, sizeof(h2)), "Calls");
		}
		else if (fmt == 1)
			printf("depth,total_ns,self_ns,calls,name\n");
		else
			printf("[");
		print_tree(pr.root, 0, fmt, &first);
		if (fmt == 2)
			printf("]\n");
	} else {
		if (pr.nrows)
			qsort(pr.rows, pr.nrows, sizeof(*pr.rows), cmp);
		if (fmt == 1)
			printf("%sfunction,calls,total_ns,self_ns,avg_ns,max_ns\n",
			       per_thread == WEFT_PROFILE_THREADS ? "pid,tid," : per_thread ? "pid," : "");
		else if (fmt == 2)
			printf("[");
		long shown = 0;
		struct weft_unit units[4];
		uint32_t cur_tid = UINT32_MAX;
		int cur_pid = -1;
		for (size_t i = 0; i < pr.nrows; i++) {
			const struct weft_fstat *r = &pr.rows[i];
			if (r->tid != cur_tid || r->pid != cur_pid) {
				cur_tid = r->tid;
				cur_pid = r->pid;
				shown = 0;
				if (fmt == 0) {
					if (per_thread == WEFT_PROFILE_THREADS)
						printf("%s# process %d, thread %u\n", i ? "\n" : "", r->pid, r->tid);
					else if (per_thread)
						printf("%s# process %d\n", i ? "\n" : "", r->pid);
					/* units per column, from the rows this table shows */
					uint64_t mx[4] = {0, 0, 0, 0};
					long rows = 0;
					for (size_t k = i; k < pr.nrows && pr.rows[k].pid == r->pid && pr.rows[k].tid == r->tid &&
							   (limit <= 0 || rows < limit); k++, rows++) {
						const struct weft_fstat *q = &pr.rows[k];
						uint64_t v[4] = {q->total, q->self, q->total / q->calls, q->max};
						for (int m = 0; m < 4; m++)
							mx[m] = v[m] > mx[m] ? v[m] : mx[m];
					}
					char h[4][32];
					static const char *heads[4] = {"Total", "Self", "Average", "Maximum"};
					for (int m = 0; m < 4; m++) {
						units[m] = weft_unit_for(mx[m]);
						col(heads[m], units[m], h[m], sizeof(h[m]));
					}
					printf("%s  %s  %9s  %s  %s  Function\n", h[0], h[1], "Calls", h[2], h[3]);
					printf("%s  %s  %9s  %s  %s  ========\n", "============", "============", "=========",
					       "============", "============");
				}
			}
			if (limit > 0 && shown >= limit)
				continue;
			shown++;
			uint64_t avg = r->total / r->calls;
			char a[32], b[32], d[32], e[32];
			if (fmt == 0)
				printf("%s  %s  %9llu  %s  %s  %s\n", fmt_in(r->total, units[0], a, sizeof(a)),
				       fmt_in(r->self, units[1], b, sizeof(b)), (unsigned long long)r->calls,
				       fmt_in(avg, units[2], d, sizeof(d)), fmt_in(r->max, units[3], e, sizeof(e)),
				       shown_name(r->name));
			else if (fmt == 1) {
				if (per_thread == WEFT_PROFILE_THREADS)
					printf("%d,%u,", r->pid, r->tid);
				else if (per_thread)
					printf("%d,", r->pid);
				weft_csv_str(r->name);
				printf(",%llu,%llu,%llu,%llu,%llu\n", (unsigned long long)r->calls,
				       (unsigned long long)r->total, (unsigned long long)r->self,
				       (unsigned long long)avg, (unsigned long long)r->max);
			} else {
				printf("%s{", first ? "" : ",\n");
				first = 0;
				if (per_thread == WEFT_PROFILE_THREADS)
					printf("\"pid\":%d,\"tid\":%u,", r->pid, r->tid);
				else if (per_thread)
					printf("\"pid\":%d,", r->pid);
				printf("\"function\":");
				weft_json_str(r->name);
				printf(",\"calls\":%llu,\"total_ns\":%llu,\"self_ns\":%llu,\"avg_ns\":%llu,\"max_ns\":%llu}",
				       (unsigned long long)r->calls, (unsigned long long)r->total,
				       (unsigned long long)r->self, (unsigned long long)avg, (unsigned long long)r->max);
			}
		}
		if (fmt == 2)
			printf("]\n");
	}
	weft_profile_free(&pr);
	weft_trace_free(t);
	return WEFT_EXIT_OK;
}
