/*
 * cmd-overhead.c - `weft overhead -n N [--modes LIST] -- PROGRAM [ARGS]`: what tracing costs a
 * program, measured the way one would by hand (a dry run against instrumented repetitions) in
 * one command. PROGRAM runs N times in each mode: `dry` (untraced: plain fork and exec),
 * `functions` (traced as `weft record` traces it: libweft-preload.so in LD_PRELOAD and
 * WEFT_OPTIONS output= a temporary trace directory, removed after each run, no conversion) and
 * `memory` (the same with the allocation interposer, memory=1). The runs of all modes are
 * interleaved in a shuffled order (seeded, so reproducible), so a machine that slows down or
 * warms up part way affects every mode alike. Each run is timed with CLOCK_MONOTONIC around
 * fork..wait4, and wait4's rusage gives the child's user and system CPU time and max RSS. Per
 * mode it prints median, min, max, mean and stdev of each, and each mode's overhead against
 * `dry` (of the medians). The first run that fails (non-zero exit, signal) ends the
 * measurement: it is reported, the runs before it are shown, and the exit status is 1.
 */
#include "tool/cmd.h"
#include "tool/outfile.h"
#include "tool/textout.h"
#include <sqlite3.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void help(FILE *f)
{
	fprintf(f,
		"usage: weft overhead -n N [OPTIONS] -- PROGRAM [ARGS...]\n"
		"Run PROGRAM N times in each mode, the runs of all modes interleaved in a shuffled order,\n"
		"and compare user and system CPU time, wall time and max RSS against the untraced runs.\n\n"
		"  -n, --runs N          runs per mode (at least 1)\n"
		"      --modes LIST      comma list of modes (default dry,functions,memory):\n"
		"                        dry        untraced\n"
		"                        functions  traced like 'weft record' (into a temporary trace\n"
		"                                   directory in $TMPDIR or /tmp, removed after each run)\n"
		"                        memory     the same, with every allocation recorded (--memory)\n"
		"                        access     and memory accesses sampled (--memory --mem-access;\n"
		"                                   not in the default list)\n"
		"  -f, --format FMT      text (default: medians and stdev), csv or json (also min, max, mean)\n"
		"      --seed S          seed of the shuffle (default 1; the same seed, the same order)\n"
		"      --timeout SECS    a run still going after SECS seconds is killed (SIGKILL) and\n"
		"                        counts as failed (default: none)\n"
		"      --db FILE         also append every run to the runs table of this SQLite file (the\n"
		"                        table of 'weft export': prog, mode, run, utime_ns, stime_ns,\n"
		"                        wtime_ns, max_rss in bytes; created if missing)\n"
		"  -h, --help            this text\n\n"
		"PROGRAM's stdin is /dev/null and its stdout and stderr go to /dev/null. Overheads are\n"
		"of the medians: wall time, user+sys CPU time and max RSS. Max RSS counts what weft itself\n"
		"had resident when it forked (the same in every mode).\n\n"
		"SIGTERM, SIGINT or SIGHUP sent to weft ends the run going on (the signal is passed on),\n"
		"removes its trace directory, and weft then dies of that signal (exit 128+N).\n\n"
		"Exit status: 0 measured; 1 if a run failed or timed out (reported; the runs before it\n"
		"are shown) or weft failed, 2 usage, 127 if the program could not be run.\n");
}

struct mode {
	const char *name, *options; /* options: NULL = untraced, else added to WEFT_OPTIONS */
};
static const struct mode modes[] = {{"dry", NULL}, {"functions", ""}, {"memory", ":memory=1"},
				    {"access", ":memory=1:mem_access=auto"}};
#define NMODES (sizeof(modes) / sizeof(modes[0]))

/* the metrics printed, then CPU (user+sys, for the overhead only) */
enum { USER, SYS, WALL, RSS, NPRINTED, CPU = NPRINTED, NMETRICS };
static const char *const metric_names[] = {"user_s", "sys_s", "wall_s", "maxrss_kib"};

struct stats {
	double median, min, max, mean, stdev;
};

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Sorts v (n > 0) in place. Stdev is the sample's (n-1), 0 for one run. */
static struct stats stats_of(double *v, int n)
{
	struct stats s = {0};
	qsort(v, (size_t)n, sizeof(*v), by_value);
	s.min = v[0];
	s.max = v[n - 1];
	s.median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	for (int i = 0; i < n; i++)
		s.mean += v[i] / n;
	for (int i = 0; n > 1 && i < n; i++)
		s.stdev += (v[i] - s.mean) * (v[i] - s.mean) / (n - 1);
	s.stdev = sqrt(s.stdev);
	return s;
}

/* splitmix64: a small generator whose sequence for a seed is the same everywhere. */
static uint64_t next_random(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	remove(path);
	return 0;
}

/* The run going on, for the signal handlers (written by run_once around fork and wait4): a
 * stop signal (SIGTERM, SIGINT, SIGHUP) is passed on to it and remembered, the timer
 * (--timeout) kills it. */
static volatile pid_t running_pid;
static volatile sig_atomic_t stop_signal, timed_out;
static double timeout_s;

static void on_stop(int sig)
{
	stop_signal = sig;
	if (running_pid > 0)
		kill(running_pid, sig);
}

static void on_timer(int sig)
{
	(void)sig;
	if (running_pid > 0) {
		timed_out = 1;
		kill(running_pid, SIGKILL);
	}
}

static void arm_timer(double s)
{
	struct itimerval it = {{0, 0}, {(time_t)s, (suseconds_t)((s - (double)(time_t)s) * 1e6)}};
	if (s > 0 && !it.it_value.tv_sec && !it.it_value.tv_usec)
		it.it_value.tv_usec = 1;
	setitimer(ITIMER_REAL, &it, NULL);
}

/* What one run measured; returns the wait status, or with why set -1 (weft failed) or -2
 * (the program could not be run). */
struct sample {
	double v[NMETRICS];
};
static int run_once(char **argv, const struct mode *m, const char *preload, struct sample *out,
		    char *why, size_t whylen)
{
	char dir[PATH_MAX] = "", options[8192], ld[PATH_MAX * 2];
	if (m->options) {
		const char *tmp = getenv("TMPDIR");
		snprintf(dir, sizeof(dir), "%s/weft-overhead-XXXXXX", tmp && *tmp ? tmp : "/tmp");
		if (!mkdtemp(dir)) {
			snprintf(why, whylen, "cannot create a trace directory %s: %s", dir, strerror(errno));
			return -1;
		}
		/* as weft record: the user's WEFT_OPTIONS first, the preload ahead of any other */
		const char *user = getenv("WEFT_OPTIONS"), *old_ld = getenv("LD_PRELOAD");
		snprintf(options, sizeof(options), "%s%soutput=%s%s", user && *user ? user : "",
			 user && *user ? ":" : "", dir, m->options);
		snprintf(ld, sizeof(ld), "%s%s%s", preload, old_ld && *old_ld ? ":" : "", old_ld ? old_ld : "");
	}
	int pipefd[2];
	if (pipe2(pipefd, O_CLOEXEC)) {
		snprintf(why, whylen, "pipe: %s", strerror(errno));
		return -1;
	}
	/* like system(3): Ctrl-\ ends the program (a failed run), not weft; SIGINT, SIGTERM and
	 * SIGHUP are passed on to the run and end weft once it is cleaned up (on_stop) */
	struct sigaction ign = {.sa_handler = SIG_IGN}, old_quit;
	sigaction(SIGQUIT, &ign, &old_quit);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	running_pid = 0;
	timed_out = 0;
	pid_t pid = stop_signal ? -1 : fork();
	if (pid == 0) {
		sigaction(SIGQUIT, &old_quit, NULL);
		int null = open("/dev/null", O_RDWR);
		if (null >= 0) {
			dup2(null, 0), dup2(null, 1), dup2(null, 2);
			if (null > 2)
				close(null);
		}
		if (m->options) {
			setenv("LD_PRELOAD", ld, 1);
			setenv("WEFT_OPTIONS", options, 1);
			setenv("WEFT_SESSION", dir, 1);
		}
		execvp(argv[0], argv);
		int e = errno;
		ssize_t w = write(pipefd[1], &e, sizeof(e));
		(void)w;
		_exit(127);
	}
	int e = stop_signal ? EINTR : errno, status = 0, exec_errno = 0;
	if (pid > 0) {
		running_pid = pid;
		if (stop_signal) /* arrived between fork and here */
			kill(pid, stop_signal);
		if (timeout_s > 0)
			arm_timer(timeout_s);
	}
	close(pipefd[1]);
	struct rusage ru;
	ssize_t got = pid > 0 ? read(pipefd[0], &exec_errno, sizeof(exec_errno)) : 0;
	while (pid > 0 && wait4(pid, &status, 0, &ru) < 0 && errno == EINTR)
		;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	arm_timer(0);
	running_pid = 0;
	sigaction(SIGQUIT, &old_quit, NULL);
	close(pipefd[0]);
	if (dir[0])
		nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	if (pid < 0) {
		snprintf(why, whylen, "fork: %s", strerror(e));
		return -1;
	}
	if (got == (ssize_t)sizeof(exec_errno)) {
		snprintf(why, whylen, "cannot run '%s': %s", argv[0], strerror(exec_errno));
		return -2;
	}
	out->v[USER] = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6;
	out->v[SYS] = (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
	out->v[CPU] = out->v[USER] + out->v[SYS];
	out->v[WALL] = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	out->v[RSS] = (double)ru.ru_maxrss; /* KiB */
	return status;
}

/* One mode's results: runs, stats per metric, overhead against dry's medians (have_* = 0
 * where there is nothing to compare: no runs, no dry runs, a dry median of 0 for the %). */
struct result {
	const struct mode *mode;
	int runs;
	struct stats s[NMETRICS];
	int have_abs, have_pct[NMETRICS];
	double abs[NMETRICS], pct[NMETRICS];
};

/* s with spaces after it up to `width` characters (UTF-8 counted as characters) */
static void pad(const char *s, int width)
{
	int n = 0;
	for (const char *p = s; *p; p++)
		n += ((unsigned char)*p & 0xc0) != 0x80;
	printf("%s%*s", s, width > n ? width - n : 0, "");
}

static void print_text(char **argv, int n, uint64_t seed, const struct result *r, int nr)
{
	printf("weft overhead: %s, %d run%s per mode, interleaved (seed %llu); medians ± stdev\n", argv[0], n,
	       n == 1 ? "" : "s", (unsigned long long)seed);
	printf("%-10s %4s  ", "mode", "runs");
	const char *heads[] = {"wall s", "user s", "sys s", "max RSS MiB", "wall vs dry", "user+sys vs dry",
			       "RSS vs dry"};
	const int widths[] = {16, 16, 16, 16, 19, 19, 0};
	for (int i = 0; i < 7; i++)
		pad(heads[i], widths[i]);
	printf("\n");
	for (int i = 0; i < nr; i++) {
		char cell[64];
		printf("%-10s %4d  ", r[i].mode->name, r[i].runs);
		const int order[] = {WALL, USER, SYS, RSS};
		for (int k = 0; k < 4; k++) {
			const struct stats *s = &r[i].s[order[k]];
			double scale = order[k] == RSS ? 1.0 / 1024 : 1;
			if (!r[i].runs)
				snprintf(cell, sizeof(cell), "-");
			else
				snprintf(cell, sizeof(cell), order[k] == RSS ? "%.1f ± %.1f" : "%.3f ± %.3f",
					 s->median * scale, s->stdev * scale);
			pad(cell, widths[k]);
		}
		const int over[] = {WALL, CPU, RSS};
		for (int k = 0; k < 3; k++) {
			int m = over[k];
			if (!r[i].have_abs || !strcmp(r[i].mode->name, "dry"))
				snprintf(cell, sizeof(cell), "-");
			else if (m == RSS)
				snprintf(cell, sizeof(cell), "%+.1f MiB", r[i].abs[m] / 1024);
			else
				snprintf(cell, sizeof(cell), "%+.3f s", r[i].abs[m]);
			if (r[i].have_abs && r[i].have_pct[m] && strcmp(r[i].mode->name, "dry"))
				snprintf(cell + strlen(cell), sizeof(cell) - strlen(cell), " (%+.0f%%)", r[i].pct[m]);
			pad(cell, k < 2 ? widths[4 + k] : 0);
		}
		printf("\n");
	}
}

/* A number for CSV and JSON: empty (CSV) or null (JSON) where there is none. */
static void number(int have, double v, int metric, int json)
{
	if (!have)
		printf("%s", json ? "null" : "");
	else
		printf(metric == RSS ? "%.1f" : "%.6f", v);
}

static void print_machine(const struct result *r, int nr, int json)
{
	if (!json)
		printf("mode,runs,metric,median,min,max,mean,stdev,overhead_abs,overhead_pct\n");
	else
		printf("[");
	for (int i = 0; i < nr; i++) {
		if (json) {
			printf("%s\n  {\"mode\": ", i ? "," : "");
			weft_json_str(r[i].mode->name);
			printf(", \"runs\": %d, \"metrics\": {", r[i].runs);
		}
		for (int m = 0; m < NPRINTED; m++) {
			const struct stats *s = &r[i].s[m];
			const double v[] = {s->median, s->min, s->max, s->mean, s->stdev};
			static const char *const keys[] = {"median", "min", "max", "mean", "stdev"};
			if (json) {
				printf("%s\n    ", m ? "," : "");
				weft_json_str(metric_names[m]);
				printf(": {");
			} else {
				weft_csv_str(r[i].mode->name);
				printf(",%d,", r[i].runs);
				weft_csv_str(metric_names[m]);
			}
			for (int k = 0; k < 5; k++) {
				printf(json ? "%s\"%s\": " : ",", k ? ", " : "", keys[k]);
				number(r[i].runs > 0, v[k], m, json);
			}
			printf(json ? ", \"overhead_abs\": " : ",");
			number(r[i].have_abs, r[i].abs[m], m, json);
			printf(json ? ", \"overhead_pct\": " : ",");
			if (r[i].have_abs && r[i].have_pct[m])
				printf("%.2f", r[i].pct[m]);
			else
				printf("%s", json ? "null" : "");
			printf(json ? "}" : "\n");
		}
		if (json)
			printf("}}");
	}
	if (json)
		printf("\n]\n");
}

/* --modes: a comma list of known names, each once, into sel (indexes into modes[]). */
static int parse_modes(const char *arg, int *sel, int *nsel)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", arg);
	char *save = NULL;
	*nsel = 0;
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		size_t k = 0;
		while (k < NMODES && strcmp(tok, modes[k].name))
			k++;
		if (k == NMODES) {
			weft_cli_error("overhead", "unknown mode '%s' (valid: dry, functions, memory, access)", tok);
			return -1;
		}
		for (int i = 0; i < *nsel; i++)
			if (sel[i] == (int)k) {
				weft_cli_error("overhead", "mode '%s' given twice", tok);
				return -1;
			}
		sel[(*nsel)++] = (int)k;
	}
	if (!*nsel)
		weft_cli_error("overhead", "--modes needs at least one of dry, functions, memory, access");
	return *nsel ? 0 : -1;
}

/* --db: every run as a row of the runs table (Heimdallr's shape, as weft export writes it). */
static int save_runs(const char *path, const char *prog, const int *order, const struct sample *samples, int total)
{
	sqlite3 *h = NULL;
	sqlite3_stmt *st = NULL;
	int counts[NMODES] = {0}, ok = sqlite3_open(path, &h) == SQLITE_OK &&
		sqlite3_exec(h, "CREATE TABLE IF NOT EXISTS runs(id INTEGER PRIMARY KEY, prog TEXT, mode TEXT, run INTEGER,"
			     " utime_ns INTEGER, stime_ns INTEGER, wtime_ns INTEGER, max_rss INTEGER); BEGIN;",
			     NULL, NULL, NULL) == SQLITE_OK &&
		sqlite3_prepare_v2(h, "INSERT INTO runs(prog, mode, run, utime_ns, stime_ns, wtime_ns, max_rss)"
				   " VALUES(?,?,?,?,?,?,?)", -1, &st, NULL) == SQLITE_OK;
	for (int i = 0; ok && i < total; i++) {
		const struct sample *s = &samples[i];
		sqlite3_bind_text(st, 1, prog, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, modes[order[i]].name, -1, SQLITE_STATIC);
		sqlite3_bind_int(st, 3, counts[order[i]]++);
		sqlite3_bind_int64(st, 4, llround(s->v[USER] * 1e9));
		sqlite3_bind_int64(st, 5, llround(s->v[SYS] * 1e9));
		sqlite3_bind_int64(st, 6, llround(s->v[WALL] * 1e9));
		sqlite3_bind_int64(st, 7, llround(s->v[RSS] * 1024));
		ok = sqlite3_step(st) == SQLITE_DONE;
		sqlite3_reset(st);
	}
	ok = ok && sqlite3_exec(h, "COMMIT;", NULL, NULL, NULL) == SQLITE_OK;
	if (!ok)
		weft_cli_error("overhead", "cannot write the runs to %s: %s", path, h ? sqlite3_errmsg(h) : "out of memory");
	sqlite3_finalize(st);
	sqlite3_close(h);
	return ok ? 0 : -1;
}

int cmd_overhead(int argc, char **argv)
{
	static const struct option opts[] = {
		{"runs", required_argument, 0, 'n'}, {"modes", required_argument, 0, 'M'},
		{"format", required_argument, 0, 'f'}, {"seed", required_argument, 0, 'S'},
		{"db", required_argument, 0, 'B'}, {"timeout", required_argument, 0, 'T'},
		{"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
	int sel[NMODES] = {0, 1, 2}, nsel = 3, fmt = 0, n = 0, c; /* the default: all but access */
	uint64_t seed = 1;
	const char *db = NULL;
	char *end;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+n:f:h", opts, NULL)) != -1) {
		switch (c) {
		case 'n': {
			long long v;
			if (weft_cli_parse_int(optarg, 1, 1000000, &v)) {
				weft_cli_error("overhead", "-n takes a number of runs from 1 to 1000000, not '%s'", optarg);
				return WEFT_EXIT_USAGE;
			}
			n = (int)v;
			break;
		}
		case 'M':
			if (parse_modes(optarg, sel, &nsel))
				return WEFT_EXIT_USAGE;
			break;
		case 'B': db = optarg; break;
		case 'T':
			errno = 0;
			timeout_s = strtod(optarg, &end);
			if (*end || end == optarg || errno || !(timeout_s > 0) || timeout_s > 1e6) {
				weft_cli_error("overhead", "--timeout takes seconds (more than 0), not '%s'", optarg);
				return WEFT_EXIT_USAGE;
			}
			break;
		case 'f':
			if ((fmt = weft_cli_table_format("overhead", optarg)) < 0)
				return WEFT_EXIT_USAGE;
			break;
		case 'S':
			errno = 0;
			seed = strtoull(optarg, &end, 0);
			if (*end || end == optarg || errno || optarg[0] < '0' || optarg[0] > '9') {
				weft_cli_error("overhead", "--seed takes a non-negative integer, not '%s'", optarg);
				return WEFT_EXIT_USAGE;
			}
			break;
		case 'h': help(stdout); return WEFT_EXIT_OK;
		default:
			weft_cli_error("overhead", "unknown option '%s' (see 'weft overhead --help')", argv[optind - 1]);
			return WEFT_EXIT_USAGE;
		}
	}
	if (optind < argc && !strcmp(argv[optind], "--"))
		optind++;
	if (!n || optind >= argc) {
		weft_cli_error("overhead", "%s (usage: weft overhead -n N [OPTIONS] -- PROGRAM [ARGS])",
			       !n ? "missing -n N" : "no program given");
		return WEFT_EXIT_USAGE;
	}
	struct weft_outfile dbf; /* updated in place: a regular file (or a new one), never a device */
	int orc = db ? weft_outfile_open(&dbf, "overhead", db, NULL, WEFT_OUT_REGULAR_ONLY) : 0;
	if (orc)
		return orc;
	char preload[PATH_MAX] = "";
	for (int i = 0; i < nsel; i++)
		if (modes[sel[i]].options && !weft_cli_find_preload(preload, sizeof(preload))) {
			weft_cli_error("overhead", "libweft-preload.so not found next to the weft executable");
			return WEFT_EXIT_FAIL;
		}

	/* the order: every mode n times, shuffled (Fisher-Yates) */
	int total = n * nsel, *order = malloc(sizeof(int) * (size_t)total);
	struct sample *samples = malloc(sizeof(*samples) * (size_t)total);
	double *values = malloc(sizeof(double) * (size_t)n);
	if (!order || !samples || !values) {
		weft_cli_error("overhead", "out of memory");
		return WEFT_EXIT_FAIL;
	}
	for (int i = 0; i < total; i++)
		order[i] = sel[i % nsel];
	uint64_t state = seed;
	for (int i = total - 1; i > 0; i--) {
		int j = (int)(next_random(&state) % (uint64_t)(i + 1)), t = order[i];
		order[i] = order[j], order[j] = t;
	}

	int done[NMODES] = {0}, code = WEFT_EXIT_OK;
	stop_signal = 0;
	struct sigaction stop = {.sa_handler = on_stop}, timer = {.sa_handler = on_timer}, old_stop[3], old_timer;
	const int stops[3] = {SIGTERM, SIGINT, SIGHUP};
	for (int k = 0; k < 3; k++)
		sigaction(stops[k], &stop, &old_stop[k]);
	sigaction(SIGALRM, &timer, &old_timer);
	for (int i = 0; i < total; i++) {
		const struct mode *m = &modes[order[i]];
		char why[PATH_MAX + 128];
		int status = run_once(argv + optind, m, preload, &samples[i], why, sizeof(why));
		if (stop_signal) { /* the run is ended and its directory removed: die of the signal */
			int sig = stop_signal;
			weft_cli_error("overhead", "stopped by SIG%s at run %d of %d; nothing left behind",
				       sigabbrev_np(sig) ? sigabbrev_np(sig) : "?", i + 1, total);
			free(order), free(samples), free(values);
			signal(sig, SIG_DFL);
			raise(sig);
			return 128 + sig;
		}
		if (status < 0) {
			weft_cli_error("overhead", "%s", why);
			free(order), free(samples), free(values);
			return status == -2 ? 127 : WEFT_EXIT_FAIL;
		}
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
			done[order[i]]++;
			continue;
		}
		if (timed_out)
			snprintf(why, sizeof(why), "timed out after %g s (killed)", timeout_s);
		else if (WIFSIGNALED(status))
			snprintf(why, sizeof(why), "killed by SIG%s", sigabbrev_np(WTERMSIG(status)) ?
				 sigabbrev_np(WTERMSIG(status)) : "?");
		else
			snprintf(why, sizeof(why), "exited with status %d", WEXITSTATUS(status));
		weft_cli_error("overhead", "run %d of %d (%s, run %d of %d) %s; stopped there", i + 1, total,
			       m->name, done[order[i]] + 1, n, why);
		total = i; /* what ran before it */
		code = WEFT_EXIT_FAIL;
	}

	for (int k = 0; k < 3; k++)
		sigaction(stops[k], &old_stop[k], NULL);
	sigaction(SIGALRM, &old_timer, NULL);

	struct result r[NMODES];
	memset(r, 0, sizeof(r));
	const struct result *dry = NULL;
	for (int k = 0; k < nsel; k++) {
		r[k].mode = &modes[sel[k]];
		for (int m = 0; m < NMETRICS; m++) {
			int cnt = 0;
			for (int i = 0; i < total; i++)
				if (order[i] == sel[k])
					values[cnt++] = samples[i].v[m];
			r[k].runs = cnt;
			if (cnt)
				r[k].s[m] = stats_of(values, cnt);
		}
		if (sel[k] == 0 && r[k].runs)
			dry = &r[k];
	}
	for (int k = 0; k < nsel; k++) {
		r[k].have_abs = dry && r[k].runs;
		for (int m = 0; r[k].have_abs && m < NMETRICS; m++) {
			r[k].abs[m] = r[k].s[m].median - dry->s[m].median;
			r[k].have_pct[m] = dry->s[m].median > 0;
			r[k].pct[m] = r[k].have_pct[m] ? 100 * r[k].abs[m] / dry->s[m].median : 0;
		}
	}
	if (fmt == 0)
		print_text(argv + optind, n, seed, r, nsel);
	else
		print_machine(r, nsel, fmt == 2);
	if (db && save_runs(dbf.path, argv[optind], order, samples, total))
		code = WEFT_EXIT_FAIL;
	free(order), free(samples), free(values);
	return code;
}
