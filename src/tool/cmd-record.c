/*
 * cmd-record.c - `weft record [OPTIONS] -- PROGRAM [ARGS]`: runs an unmodified program with
 * libweft-preload.so injected (LD_PRELOAD, ahead of any the user set), so every process it
 * forks or execs records into the same trace directory. Exits with the program's status, or
 * dies of the signal that killed it (after converting; cli.c). Ctrl-C reaches the program (same process group) while
 * weft waits it out; SIGTERM and SIGHUP sent to weft are passed on. Afterwards the trace is
 * converted to DIR/trace.pftrace and one line says what was recorded.
 *
 * Started by a job launcher (`mpirun -np 4 weft record -o D -- ./app`, srun, mpiexec), each
 * rank's recorder joins the job's shared D instead (tracedir.c) and the last of them to end
 * converts it. A recorder that cannot join still runs its program, untraced: a rank that never
 * starts would leave the others waiting in MPI_Init for it.
 */
#include "tool/progress.h"
#include "tool/cmd.h"
#include "tool/outfile.h"
#include "tool/tracedir.h"
#include "tool/record-control.h"
#include "tool/record-trigger.h"
#include "export/export.h"
#include "lib/internal.h" /* weft_glob_check */
#include "collect/counters.h"
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void help(FILE *f)
{
	fprintf(f,
		"usage: weft record [OPTIONS] -- PROGRAM [ARGS...]\n"
		"Run PROGRAM with tracing injected; record it and every process it starts.\n"
		"Code built with -finstrument-functions has every function entry and exit recorded.\n\n"
		"  -o, --output DIR        trace directory (default weft.data; an old one is moved to DIR.old)\n"
		"      --no-convert        do not write DIR/trace.pftrace at the end\n"
		"      --open[=PORT]       then show DIR/trace.pftrace in the Perfetto UI, as weft open\n"
		"                          does (served once on 127.0.0.1:PORT, default 9001)\n"
		"      --host NAME         record as host NAME (default: the hostname)\n"
		"  -b, --buffer-size SIZE  most buffer memory per process (default 256M, used as needed)\n"
		"      --writers N         writer threads per process (default 1)\n"
		"  -z, --compression L     zstd level, 0 = none (default 1)\n"
		"  -F, --filter PATTERN    record only functions and slices whose name matches (repeatable)\n"
		"  -N, --notrace PATTERN   leave out functions and slices whose name matches (repeatable)\n"
		"                          PATTERN: a glob (fib*, is_?dd) or /regex/ (POSIX extended,\n"
		"                          unanchored: /^is_(even|odd)$/); C++ names as mangled\n"
		"  -L, --libs PATTERNS     record functions only of these files, e.g. 'app,libcore*' or\n"
		"                          '-libm*' (comma list of basename patterns, '-' excludes)\n"
		"  -D, --depth N           record functions only up to call depth N\n"
		"  -t, --time-filter T     leave out function calls shorter than T (e.g. 5us) that\n"
		"                          made no recorded call themselves\n"
		"  -m, --memory[=OPTS]     record every allocation (malloc & co., anonymous mmap), each\n"
		"                          charged to the innermost slice; OPTS, comma-separated:\n"
		"                          threshold:SIZE  only blocks of at least SIZE (e.g. 4K)\n"
		"                          sample:SIZE     a Poisson sample, one per SIZE bytes on\n"
		"                                          average (e.g. 64K); totals are scaled back\n"
		"                          stacks          each allocation's call stack (frame pointers:\n"
		"                                          build with -fno-omit-frame-pointer), which the\n"
		"                                          reports and heap profile show instead of slices\n"
		"      --mem-access[=SRC]  sample memory accesses: pagefault (the first touch of each page,\n"
		"                          any Linux; the default), pebs or ibs (said unavailable where\n"
		"                          missing); joined to allocations by weft export\n"
		"      --mem-access-period N  one sample per N events (default: every page fault;\n"
		"                          1009 PEBS loads, 10007 PEBS stores, 65536 IBS ops)\n"
		"      --watch SPEC[,SPEC] record every write to these bytes with hardware watchpoints\n"
		"                          (at most 4 in all; repeatable). SPEC: SYMBOL (a variable of the\n"
		"                          program) or 0xADDR, then :LEN (1, 2, 4 or 8; default 8, or the\n"
		"                          variable's size) and :w (writes, the default) or :rw (reads\n"
		"                          too). Each hit stops the thread in the kernel: watch what is\n"
		"                          written rarely. Said unavailable where a self-test at start\n"
		"                          sees watchpoints not fire (some virtual machines)\n"
		"      --sched             scheduling on the timeline: as root every task's switches,\n"
		"                          wakeups, new tasks and renames on every CPU (kernel\n"
		"                          tracepoints), so Perfetto shows Running/Runnable/Sleeping\n"
		"                          under each thread; without root the program's own context\n"
		"                          switches, as on/off-CPU slices\n"
		"      --sched-threads SPEC  threads reading the per-CPU rings, each pinned to the\n"
		"                          CPUs it reads: N (1 to 16, every N-th CPU; default 1),\n"
		"                          cpu, core, package, numa (one per CPU, core, package,\n"
		"                          node) or CPU lists separated by '/' (0-3,8/4-7)\n"
		"      --cpu-mem           sample the CPU time and RSS of every process every 10 ms (see\n"
		"                          --sample-period): counter tracks, and every slice longer than\n"
		"                          the period gets cpu.user_ns, cpu.sys_ns, mem.rss_bytes args\n"
		"      --cpu-mem=exact:PATTERN  the same, and the slices whose names match PATTERN (globs\n"
		"                          or /regex/, comma-separated) get their thread's own CPU time\n"
		"                          and the RSS read exactly at their begin and end\n"
		"      --power             sample CPU frequency (every --sample-period), RAPL and NVIDIA\n"
		"                          GPU power, SM clock and utilization (every --power-period,\n"
		"                          default 1s); what the machine lacks is said unavailable in\n"
		"                          weft info\n"
		"      --sample-period T   cpu-mem and CPU frequency period (default 10ms)\n"
		"      --power-period T    RAPL and NVIDIA GPU period (default 1s)\n"
		"      --gpu               CUDA kernels, copies and memsets on one track per GPU and\n"
		"                          stream, with their resources and an arrow from the CUDA call\n"
		"                          that launched them; CUDA calls as slices; device memory as\n"
		"                          a heap per GPU; GPU power, SM clock and utilization (NVML,\n"
		"                          every --power-period). Through CUPTI, loaded at run time\n"
		"                          (CUDA_HOME, /usr/local/cuda; --options cupti_lib=PATH)\n"
		"      --mpi=on|off        MPI calls as slices and messages as arrows (Open MPI, MPICH;\n"
		"                          C and Fortran): on by default where the program loads MPI\n"
		"      --counters LIST     read these counters at every slice's begin and end (perf's\n"
		"                          names, comma-separated: instructions, cycles, cache-misses,\n"
		"                          branch-misses, task-clock, page-faults, context-switches,\n"
		"                          cpu-migrations, ...); weft report --counters shows them\n"
		"      --python[=MODES]    record every Python function call (CPython 3.11: a frame-\n"
		"                          evaluation hook, 3.12+: sys.monitoring; installed at start-up\n"
		"                          through a sitecustomize module weft puts first on\n"
		"                          PYTHONPATH), nested with the native functions on each\n"
		"                          thread; -F/-N select by qualified name. `import weft` works\n"
		"                          in the program with or without it.\n"
		"                          MODES, comma-separated: calls (the default), and with it\n"
		"                          c-calls          the C functions Python calls too (len,\n"
		"                                           list.append, math.sqrt: category python-c)\n"
		"                                           in every thread\n"
		"                          tasks            each asyncio Task as an async slice from its\n"
		"                                           creation to its end, named after its coroutine\n"
		"      --flight-recorder[=SIZE[,AGE][,noexit]]\n"
		"                          keep only the last SIZE (default 64M) of events per process in\n"
		"                          memory, at least AGE of time where SIZE allows; nothing is\n"
		"                          written until a snapshot (weft_snapshot(), the program's exit\n"
		"                          unless noexit) writes DIR/snapshot-N\n"
		"      --switch-output=SIZE|TIME\n"
		"                          write the trace as consecutive parts DIR/part-N, each a trace\n"
		"                          directory (the slices open at its start re-emitted): a new\n"
		"                          part every SIZE (K/M/G) of compressed events or TIME (s/m/h)\n"
		"      --switch-max-files=N keep only the last N parts\n"
		"      --delay MS          start recording MS ms after the program starts (perf's -D; -D\n"
		"                          here is --depth); -1: disabled until an enable command\n"
		"      --control SPEC      commands while it runs: fifo:CTL[,ACK] (FIFOs, made if missing)\n"
		"                          or fd:N[,M]; one per line: enable, disable, snapshot [REASON],\n"
		"                          stop, ping; each answered on ACK with 'ack' once every traced\n"
		"                          process applied it ('error: WHY' if not). From another shell:\n"
		"                          weft enable|disable|snapshot|stop DIR (docs/control.md)\n"
		WEFT_RECORD_TRIGGER_HELP
		"      --options OPTS      further WEFT_OPTIONS, key=value:key=value\n"
		"  -q, --quiet             no summary line, no hints\n"
		"  -h, --help              this text\n\n"
		"Under a job launcher (mpirun -np N weft record -o DIR -- ./app, mpiexec, srun) the\n"
		"ranks share DIR: each writes files named HOST-rRANK-PID, and the last to end writes\n"
		"DIR/trace.pftrace. Hosts without a shared DIR: weft convert D1 D2 ... -o FILE.\n\n"
		"Exit status: the program's (weft dies of the signal that ended it); 1 if weft failed, 2 usage,\n"
		"127 if the program could not be run.\n");
}

/* Signals aimed at weft record reach the program. One the terminal sends (Ctrl-C, Ctrl-\,
 * hangup: si_code SI_KERNEL) went to the whole foreground process group, so the program has it
 * already and passing it on would deliver it twice; one sent with kill(2) to this process is
 * passed on. Installed in the parent only after fork, so the child never runs it. */
static pid_t child;
static void forward(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (child > 0 && (!si || si->si_code != SI_KERNEL))
		kill(child, sig);
}

const char *weft_cli_find_preload(char *out, size_t n)
{
	return weft_cli_find_file("libweft-preload.so", out, n);
}

/* The directory holding the `weft` Python package: BUILD/python in the build tree, the
 * dist-packages directory it was installed into otherwise (found relative to the weft
 * executable, as libweft-preload.so is). NULL when there is none (built without python3-dev). */
static const char *find_python_dir(char *out, size_t n)
{
	char f[PATH_MAX];
	if (weft_cli_find_file("python/weft/__init__.py", f, sizeof(f))) {
		snprintf(out, n, "%.*s", (int)(strlen(f) - strlen("/weft/__init__.py")), f);
		return out;
	}
#ifdef WEFT_PYTHON_REL
	char exe[PATH_MAX - 128];
	ssize_t l = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash = l > 0 ? (exe[l] = 0, strrchr(exe, '/')) : NULL;
	if (slash) {
		*slash = 0;
		snprintf(f, sizeof(f), "%s/%s/weft/__init__.py", exe, WEFT_PYTHON_REL);
		if (access(f, R_OK) == 0 && realpath(f, out) && strlen(out) < n) {
			out[strlen(out) - strlen("/weft/__init__.py")] = 0;
			return out;
		}
	}
#endif
	return NULL;
}

/* --python[=MODES]: MODES a comma-separated list of calls, c-calls, tasks (calls is implied by
 * the others; no value means calls). Adds the bits to *modes; -1 for an unknown word. */
enum { PY_CALLS = 1, PY_C_CALLS = 2, PY_TASKS = 4 };
static int python_modes(const char *arg, int *modes)
{
	int m = PY_CALLS;
	for (const char *w = arg; w && *w;) {
		size_t n = strcspn(w, ",");
		if (n == 5 && !strncmp(w, "calls", n))
			;
		else if (n == 7 && !strncmp(w, "c-calls", n))
			m |= PY_C_CALLS;
		else if (n == 5 && !strncmp(w, "tasks", n))
			m |= PY_TASKS;
		else
			return -1;
		w += n + (w[n] == ',');
	}
	*modes |= m;
	return 0;
}

/* Did the program record any Python call (a site in category "python")? */
static int python_calls_recorded(const struct weft_trace *t)
{
	for (size_t i = 0; i < t->nprocs; i++)
		for (size_t k = 0; k < t->procs[i].nsites; k++)
			if (t->procs[i].sites[k].defined && t->procs[i].sites[k].cat &&
			    !strcmp(t->procs[i].sites[k].cat, "python"))
				return 1;
	return 0;
}

/* Does running this file change the process's user or group (setuid/setgid to someone else)?
 * Then the kernel sets AT_SECURE and the loader ignores LD_PRELOAD: nothing can be traced. */
static int changes_id(const struct stat *st)
{
	return ((st->st_mode & S_ISUID) && st->st_uid != geteuid()) ||
	       ((st->st_mode & S_ISGID) && st->st_gid != getegid());
}

/* The program's file as execvp would find it; 1 if running it changes ids. */
static int is_setid(const char *prog)
{
	char path[PATH_MAX];
	struct stat st;
	if (strchr(prog, '/'))
		return !stat(prog, &st) && changes_id(&st);
	const char *p = getenv("PATH");
	if (!p)
		p = "/usr/local/bin:/usr/bin:/bin";
	while (*p) {
		const char *c = strchrnul(p, ':');
		snprintf(path, sizeof(path), "%.*s/%s", (int)(c - p), p, prog);
		if (!stat(path, &st) && S_ISREG(st.st_mode) && !access(path, X_OK))
			return changes_id(&st);
		p = *c ? c + 1 : c;
	}
	return 0;
}

/* A value for one of the options record passes on: checked here, so a bad one is a usage
 * error before anything runs. */
static int check_option(const char *flag, const char *key, const char *val)
{
	static struct weft_config scratch;
	weft_config_defaults(&scratch);
	if (weft_config_set(&scratch, key, val, 0) == 0)
		return 0;
	weft_cli_error("record", "bad value '%s' for %s: expected %s", val, flag, weft_config_valid(key));
	return -1;
}

/* Options record passes on to the runtime as WEFT_OPTIONS keys. */
struct passed_option {
	int opt;
	const char *flag, *key;
};
static const struct passed_option *passed_option(int opt)
{
	static const struct passed_option table[] = {
		{'b', "-b/--buffer-size", "buffer_size"}, {'w', "--writers", "writers"},
		{'z', "-z/--compression", "compression"}, {'D', "-D/--depth", "func_depth"},
		{'t', "-t/--time-filter", "func_min"}, {'R', "--mem-access-period", "mem_access_period"},
		{'T', "--sched-threads", "sched_threads"},
		{'Q', "--sample-period", "sample_period"}, {'U', "--power-period", "power_period"},
	};
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (table[i].opt == opt)
			return &table[i];
	return &table[0];
}

/* --memory[=threshold:SIZE,sample:SIZE] as WEFT_OPTIONS keys appended to out. */
static int memory_options(const char *arg, char *out, size_t n)
{
	size_t l = strlen(out);
	snprintf(out + l, n - l, ":memory=1");
	if (!arg || !*arg)
		return 0;
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", arg);
	char *save = NULL;
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "stacks")) {
			l = strlen(out);
			snprintf(out + l, n - l, ":memory_stacks=1");
			continue;
		}
		char *colon = strchr(tok, ':');
		const char *key = NULL;
		if (colon) {
			*colon = 0;
			key = !strcmp(tok, "threshold") ? "memory_threshold" : !strcmp(tok, "sample") ? "memory_sample" : NULL;
		}
		if (!key) {
			weft_cli_error("record", "bad --memory option '%s': expected stacks, threshold:SIZE or sample:SIZE", tok);
			return -1;
		}
		if (check_option("--memory", key, colon + 1))
			return -1;
		l = strlen(out);
		snprintf(out + l, n - l, ":%s=%s", key, colon + 1);
	}
	return 0;
}

/* --counters=LIST: every name known (else a usage error) and countable here (else a failure),
 * each refusal one line naming what this machine has. */
static int counters_check(const char *list)
{
	const struct weft_ctr_def *d[WEFT_CTR_MAX];
	char why[600], avail[512];
	int n = weft_ctr_parse(list, d, why, sizeof(why));
	if (n < 0) {
		weft_cli_error("record", "--counters: %s", why);
		return WEFT_EXIT_USAGE;
	}
	for (int i = 0; i < n; i++) {
		int rc = weft_ctr_probe(d[i]);
		if (!rc)
			continue;
		weft_ctr_available(avail, sizeof(avail));
		if (d[i]->type == PERF_TYPE_HARDWARE && (rc == -ENOENT || rc == -EOPNOTSUPP || rc == -ENODEV))
			weft_cli_error("record", "--counters: no hardware PMU here (%s unavailable); available: %s",
				       d[i]->name, avail);
		else
			weft_cli_error("record", "--counters: %s unavailable (perf_event_open: %s); available: %s",
				       d[i]->name, strerror(-rc), avail);
		return WEFT_EXIT_FAIL;
	}
	return 0;
}

/* The library's log, for the runtime files the CLI shares (config.c). */
void weft_log(int level, const char *fmt, ...)
{
	(void)level;
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "weft: record: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static const char *env_get(const char *name) { return getenv(name); }

int cmd_record(int argc, char **argv)
{
	static const struct option opts[] = {
		{"output", required_argument, 0, 'o'}, {"no-convert", no_argument, 0, 'n'},
		{"buffer-size", required_argument, 0, 'b'}, {"writers", required_argument, 0, 'w'},
		{"compression", required_argument, 0, 'z'}, {"depth", required_argument, 0, 'D'},
		{"time-filter", required_argument, 0, 't'}, {"options", required_argument, 0, 'O'},
		{"filter", required_argument, 0, 'F'}, {"notrace", required_argument, 0, 'N'},
		{"libs", required_argument, 0, 'L'}, {"memory", optional_argument, 0, 'm'},
		{"mem-access", optional_argument, 0, 'A'}, {"watch", required_argument, 0, 'W'},
		{"mem-access-period", required_argument, 0, 'R'},
		{"python", optional_argument, 0, 'P'},
		{"sched", no_argument, 0, 'S'}, {"sched-threads", required_argument, 0, 'T'},
		{"cpu-mem", optional_argument, 0, 'C'}, {"power", no_argument, 0, 'E'},
		{"sample-period", required_argument, 0, 'Q'}, {"power-period", required_argument, 0, 'U'},
		{"counters", required_argument, 0, 'K'}, {"gpu", no_argument, 0, 'G'},
		{"host", required_argument, 0, 'H'},
		{"mpi", required_argument, 0, 'I'}, {"flight-recorder", optional_argument, 0, 'Y'},
		{"switch-output", required_argument, 0, 'X'}, {"switch-max-files", required_argument, 0, 'J'},
		{"delay", required_argument, 0, 'y'}, {"control", required_argument, 0, 'c'},
		WEFT_RECORD_TRIGGER_OPTIONS
		{"open", optional_argument, 0, 0x4f50},
		{"quiet", no_argument, 0, 'q'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
	char names[1024] = "", why[256];
	const char *host = NULL;
	const char *outdir = "weft.data";
	char extra[2048] = "", watch[1024] = "";
	int convert = 1, quiet = 0, python = 0, gpu = 0, open_port = 0, c;
	optind = 1;
	opterr = 0;
#define ADD(...) snprintf(extra + strlen(extra), sizeof(extra) - strlen(extra), __VA_ARGS__)
	while ((c = getopt_long(argc, argv, "+o:b:z:D:t:F:N:L:mqh", opts, NULL)) != -1) {
		switch (c) {
		case 'o': outdir = optarg; break;
		case 'n': convert = 0; break;
		case 'b':
		case 'w':
		case 'z':
		case 'D':
		case 'R':
		case 'Q':
		case 'U':
		case 'T':
		case 't': {
			const struct passed_option *po = passed_option(c);
			if (check_option(po->flag, po->key, optarg))
				return WEFT_EXIT_USAGE;
			ADD(":%s=%s", po->key, optarg);
			break;
		}
		case 'O': {
			static struct weft_config scratch;
			weft_config_defaults(&scratch);
			if (weft_config_apply(&scratch, optarg, 1)) {
				weft_cli_error("record", "bad --options '%s' (see above)", optarg);
				return WEFT_EXIT_USAGE;
			}
			ADD(":%s", optarg);
			break;
		}
		case 'F':
		case 'N':
			if (strpbrk(optarg, ",:")) {
				weft_cli_error("record", "-%c takes one pattern without ',' or ':', not '%s'", c, optarg);
				return WEFT_EXIT_USAGE;
			}
			if (weft_glob_check(optarg, why, sizeof(why))) {
				weft_cli_error("record", "-%c: bad regex %s: %s", c, optarg, why);
				return WEFT_EXIT_USAGE;
			}
			snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s%s", names[0] ? "," : "",
				 c == 'N' ? "-" : "", optarg);
			break;
		case 'L':
			if (strchr(optarg, ':') || weft_glob_list_check(optarg)) {
				weft_cli_error("record", "-L takes a comma list of globs or /regex/, not '%s'", optarg);
				return WEFT_EXIT_USAGE;
			}
			ADD(":func_libs=%s", optarg);
			break;
		case 'm':
			if (memory_options(optarg, extra, sizeof(extra)))
				return WEFT_EXIT_USAGE;
			break;
		case 'A': {
			const char *src = optarg && *optarg ? optarg : "auto";
			if (check_option("--mem-access", "mem_access", src))
				return WEFT_EXIT_USAGE;
			ADD(":mem_access=%s", src);
			break;
		}
		case 'W': {
			/* ':' separates WEFT_OPTIONS keys: the runtime takes '/' between a spec's fields */
			char list[1024];
			struct weft_watch_spec w[WEFT_MAX_WATCH];
			snprintf(list, sizeof(list), "%s%s%s", watch, watch[0] ? "," : "", optarg);
			for (char *x = list; *x; x++)
				if (*x == ':')
					*x = '/';
			if (strlen(watch) + strlen(optarg) + 2 >= sizeof(watch) ||
			    weft_watch_parse(list, w, why, sizeof(why)) < 0) {
				weft_cli_error("record", "bad --watch '%s': %s", optarg,
					       strlen(watch) + strlen(optarg) + 2 >= sizeof(watch) ? "too long" : why);
				return WEFT_EXIT_USAGE;
			}
			snprintf(watch, sizeof(watch), "%s", list);
			break;
		}
		case 'P':
			if (python_modes(optarg, &python) < 0) {
				weft_cli_error("record", "bad --python mode '%s': expected a comma-separated list of "
					       "calls, c-calls, tasks", optarg);
				return WEFT_EXIT_USAGE;
			}
			break;
		case 'S': ADD(":sched=1"); break;
		case 'C':
			if (optarg) { /* exact:PATTERN - the matching slices read at begin and end */
				const char *pat = !strncmp(optarg, "exact:", 6) ? optarg + 6 : NULL;
				if (!pat || !*pat || strchr(pat, ':') || weft_glob_list_check(pat) ||
				    strlen(pat) >= 1024) {
					weft_cli_error("record", "bad --cpu-mem '%s': expected exact:PATTERN (comma-separated "
						       "globs or /regex/ of slice names, without ':')", optarg);
					return WEFT_EXIT_USAGE;
				}
				ADD(":cpu_mem_exact=%s", pat);
			}
			if (!strstr(extra, ":cpu_mem=1"))
				ADD(":cpu_mem=1");
			break;
		case 'E': ADD(":power=1"); break;
		case 'G': ADD(":gpu=1"); gpu = 1; break;
		case 'I': /* --mpi=on|off: libweft-mpi.so records or passes MPI calls through */
			if (strcmp(optarg, "on") && strcmp(optarg, "off")) {
				weft_cli_error("record", "bad --mpi value '%s': expected on or off", optarg);
				return WEFT_EXIT_USAGE;
			}
			ADD(":mpi=%d", strcmp(optarg, "off") ? 1 : 0);
			break;
		case 'K': {
			int rc = counters_check(optarg);
			if (rc)
				return rc;
			ADD(":counters=%s", optarg);
			break;
		}
		case 'H':
			if (!*optarg || strchr(optarg, ':') || check_option("--host", "host", optarg))
				return WEFT_EXIT_USAGE;
			host = optarg;
			ADD(":host=%s", optarg);
			break;
		case 'Y': if (weft_record_flight_option(optarg, extra, sizeof(extra))) return WEFT_EXIT_USAGE; break;
		case 'X': case 'J':
			if (weft_record_switch_option(c == 'X' ? "switch_output" : "switch_max_files", optarg, extra,
						      sizeof(extra)))
				return WEFT_EXIT_USAGE;
			break;
		case 'y':
		case 'c':
			if (weft_rctl_option(c, optarg))
				return WEFT_EXIT_USAGE;
			break;
		case WEFT_RECOPT_SNAPSHOT_SIGNAL ... WEFT_RECOPT_AFTER:
			if (weft_record_trigger_option(c, optarg, extra, sizeof(extra)))
				return WEFT_EXIT_USAGE;
			break;
		case 0x4f50: /* --open[=PORT] */
			if ((open_port = optarg ? weft_open_port("record", optarg) : 9001) < 0)
				return WEFT_EXIT_USAGE;
			break;
		case 'q': quiet = 1; break;
		case 'h': help(stdout); return WEFT_EXIT_OK;
		default:
			weft_cli_error("record", "unknown option '%s' (see 'weft record --help')", argv[optind - 1]);
			return WEFT_EXIT_USAGE;
		}
	}
	if (names[0]) /* the same selection for functions and explicit slices */
		ADD(":func_filter=%s:filter=%s", names, names);
	if (watch[0])
		ADD(":watch=%s", watch);
#undef ADD
	if (open_port && (!convert || strstr(extra, ":flight=") || strstr(extra, ":switch_output="))) {
		weft_cli_error("record", "--open shows DIR/trace.pftrace: not with --no-convert, --flight-recorder "
			       "or --switch-output");
		return WEFT_EXIT_USAGE;
	}
	if (optind < argc && !strcmp(argv[optind], "--"))
		optind++;
	if (optind >= argc) {
		weft_cli_error("record", "no program given (usage: weft record [OPTIONS] -- PROGRAM [ARGS])");
		return WEFT_EXIT_USAGE;
	}
	char preload[PATH_MAX];
	if (!weft_cli_find_preload(preload, sizeof(preload))) {
		weft_cli_error("record", "libweft-preload.so not found next to the weft executable");
		return WEFT_EXIT_FAIL;
	}
	/* the weft Python package for the program (import weft), and with --python the start-up
	 * hook's directory before it */
	char pydir[PATH_MAX], pypath[PATH_MAX * 3];
	const char *old_pp = getenv("PYTHONPATH");
	pypath[0] = 0;
	if (find_python_dir(pydir, sizeof(pydir)))
		snprintf(pypath, sizeof(pypath), "%s%s%s%s%s", python ? pydir : "", python ? "/weft_bootstrap:" : "",
			 pydir, old_pp && *old_pp ? ":" : "", old_pp && *old_pp ? old_pp : "");
	else if (python) {
		char exe[PATH_MAX];
		ssize_t l = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		char *slash = l > 0 ? (exe[l] = 0, strrchr(exe, '/')) : NULL;
		if (slash)
			*slash = 0;
		weft_cli_error("record", "--python: this weft was built without its Python module (no weft "
			       "package in %s/python, none installed): install python3-dev, then run `make build` (or "
			       "`make demo`, `make install`)", slash ? exe : ".");
		return WEFT_EXIT_FAIL;
	}
	/* a task of a parallel job: its recorder shares DIR with the job's others */
	struct weft_job job;
	struct weft_jobdir jd = {.fd = -1};
	char hostname[256];
	if (host)
		snprintf(hostname, sizeof(hostname), "%s", host);
	else if (gethostname(hostname, sizeof(hostname) - 1))
		snprintf(hostname, sizeof(hostname), "localhost");
	hostname[sizeof(hostname) - 1] = 0;
	weft_job_detect(&job, env_get);
	char dirwhy[PATH_MAX * 2 + 100];
	int rc = job.known ? weft_jobdir_join(&jd, outdir, &job, hostname, dirwhy, sizeof(dirwhy))
			   : weft_tracedir_prepare(outdir, dirwhy, sizeof(dirwhy));
	char dir[PATH_MAX];
	if (rc || !realpath(outdir, dir)) {
		weft_cli_error("record", "%s", rc ? dirwhy : strerror(errno));
		if (job.known) {
			weft_cli_error("record", "rank %u: running %s untraced, so that the job's other ranks do not "
				       "wait for it", (unsigned)job.rank, argv[optind]);
			execvp(argv[optind], argv + optind);
			weft_cli_error("record", "cannot run '%s': %s", argv[optind], strerror(errno));
			return 127;
		}
		return WEFT_EXIT_FAIL;
	}
	int setid = is_setid(argv[optind]);
	/* environment for the whole process tree: the user's WEFT_OPTIONS first, then record's
	 * own settings, so the command line wins */
	char options[8192], ld[PATH_MAX * 3];
	const char *user = getenv("WEFT_OPTIONS");
	snprintf(options, sizeof(options), "%s%soutput=%s%s", user && *user ? user : "", user && *user ? ":" : "",
		 dir, extra);
	if (weft_rctl_setup(dir, options, sizeof(options))) /* the control socket, --control */
		return WEFT_EXIT_FAIL;
	const char *old_ld = getenv("LD_PRELOAD");
	/* libweft-mpi.so after the runtime it records through: its MPI_X wrappers come before
	 * the MPI library's; a program without MPI never calls them */
	char mpilib[PATH_MAX];
	if (weft_cli_find_file("libweft-mpi.so", mpilib, sizeof(mpilib)))
		snprintf(ld, sizeof(ld), "%s:%s%s%s", preload, mpilib, old_ld && *old_ld ? ":" : "",
			 old_ld ? old_ld : "");
	else
		snprintf(ld, sizeof(ld), "%s%s%s", preload, old_ld && *old_ld ? ":" : "", old_ld ? old_ld : "");

	int pipefd[2];
	if (pipe2(pipefd, O_CLOEXEC)) {
		weft_cli_error("record", "pipe: %s", strerror(errno));
		return WEFT_EXIT_FAIL;
	}
	/* forward() is installed before fork with these signals blocked, so one that comes while
	 * the child starts waits until `child` is set; the child puts back what weft was started
	 * with (SIG_DFL, or SIG_IGN from nohup or a shell's background job) before it unblocks
	 * them, so the program inherits the dispositions it would have untraced */
	static const int passed_on[] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP};
	const size_t npassed = sizeof(passed_on) / sizeof(passed_on[0]);
	sigset_t block, old_mask;
	sigemptyset(&block);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = forward;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	for (size_t i = 0; i < npassed; i++)
		sigaddset(&block, passed_on[i]);
	sigprocmask(SIG_BLOCK, &block, &old_mask);
	struct sigaction inherited[sizeof(passed_on) / sizeof(passed_on[0])];
	for (size_t i = 0; i < npassed; i++)
		sigaction(passed_on[i], &sa, &inherited[i]);
	child = fork();
	if (child < 0) {
		sigprocmask(SIG_SETMASK, &old_mask, NULL);
		weft_cli_error("record", "fork: %s", strerror(errno));
		return WEFT_EXIT_FAIL;
	}
	if (child == 0) {
		for (size_t i = 0; i < npassed; i++)
			sigaction(passed_on[i], &inherited[i], NULL);
		sigprocmask(SIG_SETMASK, &old_mask, NULL);
		setenv("LD_PRELOAD", ld, 1);
		setenv("WEFT_OPTIONS", options, 1);
		setenv("WEFT_SESSION", dir, 1);
		if (job.known) /* the runtime names the job as this recorder did (hydra gives no id) */
			setenv("WEFT_JOB_ID", job.id, 1);
		if (pypath[0])
			setenv("PYTHONPATH", pypath, 1);
		/* CUDA's driver calls InitializeInjection of this library at cuInit (the runtime,
		 * already preloaded, starts the collector there if it has not yet); one the user
		 * set is left alone */
		if (gpu && !getenv("CUDA_INJECTION64_PATH"))
			setenv("CUDA_INJECTION64_PATH", preload, 1);
		if (python)
			setenv("WEFT_PYTHON", (python & PY_C_CALLS) && (python & PY_TASKS) ? "calls,c-calls,tasks"
					      : python & PY_C_CALLS ? "calls,c-calls"
					      : python & PY_TASKS ? "calls,tasks" : "calls", 1);
		execvp(argv[optind], argv + optind);
		int e = errno;
		ssize_t w = write(pipefd[1], &e, sizeof(e));
		(void)w;
		_exit(127);
	}
	sigprocmask(SIG_SETMASK, &old_mask, NULL);
	close(pipefd[1]);
	int exec_errno = 0;
	ssize_t got = read(pipefd[0], &exec_errno, sizeof(exec_errno));
	close(pipefd[0]);
	int status = 0;
	weft_rctl_wait(child, &status); /* serving the control channel (record-control.c) */
	/* the program is gone: a signal now ends the conversion, the recorded data stays */
	for (size_t i = 0; i < npassed; i++)
		sigaction(passed_on[i], &inherited[i], NULL);
	child = 0;
	if (got == (ssize_t)sizeof(exec_errno)) {
		weft_cli_error("record", "cannot run '%s': %s", argv[optind], strerror(exec_errno));
		return 127;
	}
	int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	if (WIFSIGNALED(status)) {
		weft_cli_program_signal(WTERMSIG(status));
		weft_cli_error("record", "program killed by SIG%s%s", sigabbrev_np(WTERMSIG(status)) ?
			       sigabbrev_np(WTERMSIG(status)) : "?", WCOREDUMP(status) ? " (core dumped)" : "");
	}
	if (setid) {
		weft_cli_error("record", "%s is setuid/setgid: the loader ignores LD_PRELOAD for it, so nothing "
			       "was traced", argv[optind]);
		rmdir(dir); /* empty, unless a child it ran was traced */
		return code;
	}
	if (job.known) { /* only the job's last recorder here converts, once every rank ended */
		int last = weft_jobdir_leave(&jd);
		if (!last || !convert) {
			weft_jobdir_close(&jd);
			return code;
		}
		if (!quiet)
			fprintf(stderr, "weft: record: job %s: rank %u ended last of %u here; converting the job's trace\n",
				job.id, (unsigned)job.rank, jd.expect);
	}
	if (!convert && quiet)
		return code;
	if (strstr(extra, ":flight=") || strstr(extra, ":switch_output=")) /* DIR: snapshots or parts only */
		return weft_record_flight_end(dir, quiet, convert, code);

	struct weft_trace *t;
	char err[512];
	struct weft_progress *pr = convert && !quiet ? weft_progress_start("record") : NULL; /* a terminal's, after 1 s */
	int orc = weft_trace_open(dir, &t, err, sizeof(err));
	size_t said = orc ? 1 : t->nwarnings;
	for (size_t i = 0; !orc && i < t->nprocs; i++)
		said += t->procs[i].nnotes;
	if (said) { /* the lines below on lines of their own */
		weft_progress_stop(pr);
		pr = NULL;
	}
	if (orc) {
		weft_cli_error("record", "%s", err);
		return code ? code : WEFT_EXIT_FAIL;
	}
	for (size_t i = 0; i < t->nwarnings; i++)
		weft_cli_error("record", "warning: %s", t->warnings[i]);
	for (size_t i = 0; i < t->nprocs; i++) /* weft_note()s */
		for (size_t k = 0; k < t->procs[i].nnotes; k++)
			weft_cli_error("record", "%d %s: %s", t->procs[i].pid, t->procs[i].name, t->procs[i].notes[k]);
	uint64_t events = 0, dropped = 0, stored = 0;
	for (size_t i = 0; i < t->nprocs; i++) {
		stored += t->procs[i].bytes_stored;
		dropped += weft_proc_dropped(&t->procs[i]);
		for (size_t k = 0; k < t->procs[i].nthreads; k++)
			events += t->procs[i].threads[k].events;
	}
	char out[PATH_MAX + 32] = "";
	if (convert) {
		snprintf(out, sizeof(out), "%s/trace.pftrace", dir);
		struct weft_outfile of; /* written whole, then renamed (outfile.c) */
		int xrc = weft_outfile_open(&of, "record", out, dir, WEFT_OUT_PFTRACE_OK);
		FILE *f = xrc ? NULL : fdopen(of.fd, "wb");
		struct weft_export_summary s;
		if (f) {
			of.fd = -1; /* f's now */
			if (!pr && !quiet)
				pr = weft_progress_start("record");
			weft_progress_total(pr, events);
			xrc = weft_export_pftrace(t, f, 0, WEFT_PFTRACE_DEFLATE, &s, err, sizeof(err));
			if (fclose(f) && !xrc)
				xrc = snprintf(err, sizeof(err), "%s", strerror(errno));
			if (xrc)
				weft_cli_error("record", "cannot write %s: %s", out, err);
		} else if (!xrc) {
			weft_cli_error("record", "cannot write %s: %s", out, strerror(errno));
			xrc = -1;
		}
		weft_progress_stop(pr);
		pr = NULL;
		if (xrc || weft_outfile_commit(&of)) {
			weft_outfile_abort(&of);
			weft_trace_free(t);
			return code ? code : WEFT_EXIT_FAIL;
		}
		if (s.bad_chunks)
			weft_cli_warn_undecoded("record", s.bad_chunks, s.bad_why, out);
		size_t funcs = 0; /* the conversion named every function address it met */
		for (size_t i = 0; i < t->nprocs; i++)
			funcs += t->procs[i].nfuncs;
		if (python && !python_calls_recorded(t))
			weft_cli_error("record", "--python: no Python calls were recorded: is %s CPython 3 (and not "
				       "run with -S, -I or -E, which skip weft's start-up hook)?", argv[optind]);
		else if (python)
			; /* Python calls are what was asked for: native functions are a bonus */
		else if (quiet)
			; /* -q: no hints */
		else if (!funcs && !events && !strstr(extra, ":memory=1") && !strstr(extra, ":mem_access=") && !watch[0] &&
			 !strstr(extra, ":sched=1") &&
			 !strstr(extra, ":cpu_mem=1") && !strstr(extra, ":power=1") && !strstr(extra, ":gpu=1")) {
			const char *base = strrchr(argv[optind], '/') ? strrchr(argv[optind], '/') + 1 : argv[optind];
			if (!strncmp(base, "python", 6))
				weft_cli_error("record", "no native function events: add --python to record every "
					       "Python call (weft.trace/weft.scope events are recorded either way)");
			else
				weft_cli_error("record", "no function events were recorded: was %s built with "
					       "-finstrument-functions? (only weft.h events are traced otherwise)",
					       argv[optind]);
		}
		else if (!funcs && !strstr(extra, ":memory_stacks=1") && strstr(extra, ":memory=1"))
			weft_cli_error("record", "no function events: allocations are charged to weft.h slices "
				      "only (build with -finstrument-functions to see functions)");
	}
	weft_progress_stop(pr); /* (not converting) */
	if (convert) /* each DIR/snapshot-N the flight recorder wrote */
		weft_record_convert_snapshots(dir, quiet);
	if (!quiet) {
		/* every file the run left in DIR, the converted trace included */
		uint64_t total = 0, pf = 0;
		DIR *d = opendir(dir);
		struct dirent *e;
		while (d && (e = readdir(d))) {
			char p[PATH_MAX + 300];
			struct stat st;
			snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
			if (!lstat(p, &st) && S_ISREG(st.st_mode)) {
				total += (uint64_t)st.st_size;
				if (!strcmp(e->d_name, "trace.pftrace"))
					pf = (uint64_t)st.st_size;
			}
		}
		if (d)
			closedir(d);
		(void)stored;
		fprintf(stderr, "weft: record: %llu events, %llu dropped, %zu process%s, %.1f MB on disk",
			(unsigned long long)events, (unsigned long long)dropped, t->nprocs,
			t->nprocs == 1 ? "" : "es", (double)total / 1e6);
		if (convert)
			fprintf(stderr, " (%.1f MB trace.pftrace); open %s in https://ui.perfetto.dev", (double)pf / 1e6, out);
		fprintf(stderr, "\n");
	}
	weft_trace_free(t);
	weft_jobdir_close(&jd);
	return open_port ? weft_record_open(dir, open_port, quiet, code) : code;
}
