/*
 * cmd-record.c - `weft record [OPTIONS] -- PROGRAM [ARGS]`: runs an unmodified program with
 * libweft-preload.so injected (LD_PRELOAD, ahead of any the user set), so every process it
 * forks or execs records into the same trace directory. Exits with the program's status, or
 * dies of the signal that killed it (after converting; cli.c). Ctrl-C reaches the program (same process group) while
 * weft waits it out; SIGTERM, SIGHUP, SIGUSR1, ... sent to weft are passed on. Afterwards the trace is
 * converted to DIR/trace.pftrace and one line says what was recorded.
 *
 * This file: the command line, the trace directory, the end (conversion and the summary line);
 * the help and the checks of option values are record-options.c's, the program's start and
 * wait record-launch.c's (tool/record.h).
 *
 * Started by a job launcher (`mpirun -np 4 weft record -o D -- ./app`, srun, mpiexec), each
 * rank's recorder joins the job's shared D instead (tracedir.c) and the last of them to end
 * converts it. A recorder that cannot join still runs its program, untraced: a rank that never
 * starts would leave the others waiting in MPI_Init for it.
 */
#include "tool/drops.h"
#include "tool/job-endings.h"
#include "tool/progress.h"
#include "tool/cmd.h"
#include "tool/record.h"
#include "tool/outfile.h"
#include "tool/tracedir.h"
#include "tool/record-control.h"
#include "tool/record-trigger.h"
#include "export/export.h"
#include "lib/internal.h" /* weft_glob_check */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

const char *weft_cli_find_preload(char *out, size_t n)
{
	return weft_cli_find_file("libweft-preload.so", out, n);
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
	const char *func_filter = NULL; /* -D or -t as given: native function events only */
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
			const struct weft_record_passed *po = weft_record_passed_option(c);
			if (weft_record_check_option(po->flag, po->key, optarg))
				return WEFT_EXIT_USAGE;
			ADD(":%s=%s", po->key, optarg);
			if (c == 'D' || c == 't')
				func_filter = c == 'D' ? "-D/--depth" : "-t/--time-filter";
			break;
		}
		case 'O':
			if (weft_record_check_options(optarg))
				return WEFT_EXIT_USAGE;
			ADD(":%s", optarg);
			break;
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
			if (weft_record_memory_options(optarg, extra, sizeof(extra)))
				return WEFT_EXIT_USAGE;
			break;
		case 'A': {
			const char *src = optarg && *optarg ? optarg : "auto";
			if (weft_record_check_option("--mem-access", "mem_access", src))
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
			if (weft_record_python_modes(optarg, &python) < 0) {
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
			int rc = weft_record_counters_check(optarg);
			if (rc)
				return rc;
			ADD(":counters=%s", optarg);
			break;
		}
		case 'H':
			if (!*optarg || strchr(optarg, ':') || weft_record_check_option("--host", "host", optarg))
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
		case 'h': weft_record_help(stdout); return WEFT_EXIT_OK;
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
	if (python && func_filter)
		weft_cli_error("record", "%s applies to native function events (-finstrument-functions), not to "
			       "Python calls: --python records every call", func_filter);
	char preload[PATH_MAX];
	if (!weft_cli_find_preload(preload, sizeof(preload))) {
		weft_cli_error("record", "libweft-preload.so not found next to the weft executable");
		return WEFT_EXIT_FAIL;
	}
	/* the weft Python package for the program (import weft), and with --python the start-up
	 * hook's directory before it */
	char pypath[PATH_MAX * 3];
	if (weft_record_python_path(python, pypath, sizeof(pypath)))
		return WEFT_EXIT_FAIL;
	/* a program that cannot be run leaves the output alone (a typo must not move a trace aside) */
	struct weft_job job;
	weft_job_detect(&job, env_get);
	int runnable = weft_record_runnable(argv[optind]);
	if (runnable && !job.known) {
		weft_cli_error("record", "cannot run '%s': %s", argv[optind], strerror(runnable));
		return 127;
	}
	/* a task of a parallel job: its recorder shares DIR with the job's others */
	struct weft_jobdir jd = {.fd = -1};
	char hostname[256];
	if (host)
		snprintf(hostname, sizeof(hostname), "%s", host);
	else if (gethostname(hostname, sizeof(hostname) - 1))
		snprintf(hostname, sizeof(hostname), "localhost");
	hostname[sizeof(hostname) - 1] = 0;
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
	int setid = weft_record_is_setid(argv[optind]);
	/* environment for the whole process tree: the user's WEFT_OPTIONS first, then record's
	 * own settings, so the command line wins */
	char options[8192];
	const char *user = getenv("WEFT_OPTIONS");
	snprintf(options, sizeof(options), "%s%soutput=%s%s", user && *user ? user : "", user && *user ? ":" : "",
		 dir, extra);
	if (weft_rctl_setup(dir, options, sizeof(options))) /* the control socket, --control */
		return WEFT_EXIT_FAIL;
	/* the program, with the runtime injected, waited out (record-launch.c) */
	struct weft_record_launch launch = {.preload = preload, .options = options, .dir = dir,
					    .job_id = job.known ? job.id : NULL, .pypath = pypath, .gpu = gpu,
					    .python = python, .pmi_fd = -1,
					    .detach = job.known && weft_record_may_detach(&job) ? &jd : NULL};
	int status = 0;
	if ((rc = weft_record_launch(&launch, argv + optind, &status)))
		return rc;
	/* a rank's supervisor (record-detach.c): the launcher has the program's status already,
	 * this only says it, in the job's ending line */
	int code = status < 0 ? 0 : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	if (status >= 0 && WIFSIGNALED(status) && !launch.supervising) { /* (a supervisor's: in that line) */
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
		char ending[128], words[96];
		weft_job_ending_words(status, words, sizeof(words));
		snprintf(ending, sizeof(ending), "%u %s\n", (unsigned)job.rank, words);
		int last = weft_jobdir_leave(&jd, ending);
		if (launch.supervising)
			weft_record_let_go(&jd, launch.pmi_fd);
		/* none runs, fewer ended than started: ranks that run without weft (an MPMD part),
		 * or ones not started yet; 2 s without another is taken to mean the former */
		for (int waited = 0; last == 2 && convert && waited < 2000; waited += 100)
			usleep(100000);
		int partial = last == 2;
		if (partial)
			last = convert && weft_jobdir_claim(&jd);
		if (!last || !convert) {
			weft_jobdir_close(&jd);
			return code;
		}
		if (!quiet) {
			char how[1024];
			weft_jobdir_endings(dir, jd.host, partial ? job.size : 0, how, sizeof(how));
			fprintf(stderr, "weft: record: job %s: %s; rank %u ended last of %u here; converting the job's "
				"trace\n", job.id, how, (unsigned)job.rank, jd.expect);
		}
	}
	int late[4];
	size_t nlate = weft_rctl_lingering(late, 4);
	if (nlate && convert) { /* converted now, their traces are cut where they are */
		char pids[64] = "";
		for (size_t i = 0, o = 0; i < nlate && i < 4 && o < sizeof(pids); i++)
			o += (size_t)snprintf(pids + o, sizeof(pids) - o, "%s%d", i ? ", " : "", late[i]);
		weft_cli_error("record", "warning: %zu traced process%s still running after the program ended (pid%s %s%s): "
			       "converted with what they recorded so far; `weft convert %s` again once they end",
			       nlate, nlate > 1 ? "es" : "", nlate > 1 ? "s" : "", pids, nlate > 4 ? ", ..." : "", dir);
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
	for (size_t i = 0, said = 0; i < t->nprocs && said < 4; i++) { /* why events were dropped */
		char hint[512];
		weft_drops_hint(&t->procs[i], hint, sizeof(hint));
		if (*hint && ++said)
			weft_cli_error("record", "%d %s: %llu events dropped: %s", t->procs[i].pid, t->procs[i].name,
				       (unsigned long long)t->procs[i].fin[1], hint);
	}
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
		if (!quiet)
			weft_cli_warn_deep("record", s.deep);
		size_t funcs = 0; /* the conversion named every function address it met */
		uint64_t disabled = 0; /* emitted while recording was disabled (--delay, disable) */
		for (size_t i = 0; i < t->nprocs; i++) {
			funcs += t->procs[i].nfuncs;
			disabled += t->procs[i].disabled;
		}
		if (python && !python_calls_recorded(t))
			weft_cli_error("record", "--python: no Python calls were recorded: is %s CPython 3 (and not "
				       "run with -S, -I or -E, which skip weft's start-up hook)?", argv[optind]);
		else if (python)
			; /* Python calls are what was asked for: native functions are a bonus */
		else if (quiet)
			; /* -q: no hints */
		else if (!events && disabled) /* the program did emit: it was not recorded */
			weft_cli_error("record", "nothing was recorded: all %llu events came while recording was "
				       "disabled (--delay, the disable command; weft enable DIR turns it on)",
				       (unsigned long long)disabled);
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
