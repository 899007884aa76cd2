/*
 * cmd-record.c - `weft record [OPTIONS] -- PROGRAM [ARGS]`: runs an unmodified program with
 * libweft-preload.so injected (LD_PRELOAD, ahead of any the user set), so every process it
 * forks or execs records into the same trace directory. Exits with the program's status
 * (128+N if a signal N killed it). Ctrl-C reaches the program (same process group) while
 * weft waits it out; SIGTERM and SIGHUP sent to weft are passed on. Afterwards the trace is
 * converted to DIR/trace.pftrace and one line says what was recorded.
 */
#include "tool/cmd.h"
#include "export/export.h"
#include "lib/internal.h" /* weft_glob_check */
#include <errno.h>
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
		"      --options OPTS      further WEFT_OPTIONS, key=value:key=value\n"
		"  -q, --quiet             no summary line\n"
		"  -h, --help              this text\n\n"
		"Exit status: the program's (128+N if signal N ended it); 1 if weft failed, 2 usage,\n"
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

static const char *find_preload(char *out, size_t n)
{
	char exe[PATH_MAX - 64];
	ssize_t l = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (l <= 0)
		return NULL;
	exe[l] = 0;
	char *slash = strrchr(exe, '/');
	if (!slash)
		return NULL;
	*slash = 0;
#ifndef WEFT_PRELOAD_REL
#define WEFT_PRELOAD_REL "../lib/weft"
#endif
	/* the build tree has it beside the executable; an install in LIBDIR/weft, found relative
	 * to BINDIR, so a relocated install prefix still works */
	const char *cands[] = {"%s/libweft-preload.so", "%s/" WEFT_PRELOAD_REL "/libweft-preload.so",
			       "%s/../lib/weft/libweft-preload.so"};
	for (size_t i = 0; i < sizeof(cands) / sizeof(cands[0]); i++) {
		snprintf(out, n, cands[i], exe);
		if (access(out, R_OK) == 0)
			return out;
	}
	return NULL;
}

/* DIR exists: move it to DIR.old (removing an older DIR.old's weft files), like perf. */
static int prepare_dir(const char *dir)
{
	struct stat st;
	if (stat(dir, &st) == 0) {
		char old[PATH_MAX + 8], cmd[PATH_MAX * 4];
		snprintf(old, sizeof(old), "%s.old", dir);
		if (stat(old, &st) == 0) {
			snprintf(cmd, sizeof(cmd), "rm -f '%s'/*.wmeta '%s'/*.wevents '%s'/trace.pftrace", old, old, old);
			if (system(cmd) != 0 || rmdir(old) != 0)
				return -ENOTEMPTY;
		}
		if (rename(dir, old))
			return -errno;
	}
	if (mkdir(dir, 0755))
		return -errno;
	return 0;
}

int cmd_record(int argc, char **argv)
{
	static const struct option opts[] = {
		{"output", required_argument, 0, 'o'}, {"no-convert", no_argument, 0, 'n'},
		{"buffer-size", required_argument, 0, 'b'}, {"writers", required_argument, 0, 'w'},
		{"compression", required_argument, 0, 'z'}, {"depth", required_argument, 0, 'D'},
		{"time-filter", required_argument, 0, 't'}, {"options", required_argument, 0, 'O'},
		{"filter", required_argument, 0, 'F'}, {"notrace", required_argument, 0, 'N'},
		{"libs", required_argument, 0, 'L'},
		{"quiet", no_argument, 0, 'q'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
	char names[1024] = "", why[128];
	const char *outdir = "weft.data";
	char extra[2048] = "";
	int convert = 1, quiet = 0, c;
	optind = 1;
	opterr = 0;
#define ADD(...) snprintf(extra + strlen(extra), sizeof(extra) - strlen(extra), __VA_ARGS__)
	while ((c = getopt_long(argc, argv, "+o:b:z:D:t:F:N:L:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'o': outdir = optarg; break;
		case 'n': convert = 0; break;
		case 'b': ADD(":buffer_size=%s", optarg); break;
		case 'w': ADD(":writers=%s", optarg); break;
		case 'z': ADD(":compression=%s", optarg); break;
		case 'D': ADD(":func_depth=%s", optarg); break;
		case 't': ADD(":func_min=%s", optarg); break;
		case 'O': ADD(":%s", optarg); break;
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
		case 'q': quiet = 1; break;
		case 'h': help(stdout); return WEFT_EXIT_OK;
		default:
			weft_cli_error("record", "unknown option '%s' (see 'weft record --help')", argv[optind - 1]);
			return WEFT_EXIT_USAGE;
		}
	}
	if (names[0]) /* the same selection for functions and explicit slices */
		ADD(":func_filter=%s:filter=%s", names, names);
#undef ADD
	if (optind < argc && !strcmp(argv[optind], "--"))
		optind++;
	if (optind >= argc) {
		weft_cli_error("record", "no program given (usage: weft record [OPTIONS] -- PROGRAM [ARGS])");
		return WEFT_EXIT_USAGE;
	}
	char preload[PATH_MAX];
	if (!find_preload(preload, sizeof(preload))) {
		weft_cli_error("record", "libweft-preload.so not found next to the weft executable");
		return WEFT_EXIT_FAIL;
	}
	int rc = prepare_dir(outdir);
	char dir[PATH_MAX];
	if (rc || !realpath(outdir, dir)) {
		weft_cli_error("record", "cannot create %s: %s", outdir, strerror(rc ? -rc : errno));
		return WEFT_EXIT_FAIL;
	}
	/* environment for the whole process tree */
	char options[8192], ld[PATH_MAX * 2];
	snprintf(options, sizeof(options), "output=%s%s", dir, extra);
	const char *old_ld = getenv("LD_PRELOAD");
	snprintf(ld, sizeof(ld), "%s%s%s", preload, old_ld && *old_ld ? ":" : "", old_ld ? old_ld : "");

	int pipefd[2];
	if (pipe2(pipefd, O_CLOEXEC)) {
		weft_cli_error("record", "pipe: %s", strerror(errno));
		return WEFT_EXIT_FAIL;
	}
	/* forward() is installed before fork with these signals blocked, so one that comes while
	 * the child starts waits until `child` is set; the child puts the defaults back before it
	 * unblocks them */
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
	for (size_t i = 0; i < npassed; i++)
		sigaction(passed_on[i], &sa, NULL);
	child = fork();
	if (child < 0) {
		sigprocmask(SIG_SETMASK, &old_mask, NULL);
		weft_cli_error("record", "fork: %s", strerror(errno));
		return WEFT_EXIT_FAIL;
	}
	if (child == 0) {
		for (size_t i = 0; i < npassed; i++)
			signal(passed_on[i], SIG_DFL);
		sigprocmask(SIG_SETMASK, &old_mask, NULL);
		setenv("LD_PRELOAD", ld, 1);
		setenv("WEFT_OPTIONS", options, 1);
		setenv("WEFT_SESSION", dir, 1);
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
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	/* the program is gone: a signal now ends the conversion, the recorded data stays */
	for (size_t i = 0; i < npassed; i++)
		signal(passed_on[i], SIG_DFL);
	child = 0;
	if (got == (ssize_t)sizeof(exec_errno)) {
		weft_cli_error("record", "cannot run '%s': %s", argv[optind], strerror(exec_errno));
		return 127;
	}
	int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	if (!convert && quiet)
		return code;

	struct weft_trace *t;
	char err[512];
	if (weft_trace_open(dir, &t, err, sizeof(err))) {
		weft_cli_error("record", "%s", err);
		return code ? code : WEFT_EXIT_FAIL;
	}
	for (size_t i = 0; i < t->nwarnings; i++)
		weft_cli_error("record", "warning: %s", t->warnings[i]);
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
		FILE *f = fopen(out, "wb");
		struct weft_export_summary s;
		if (!f || weft_export_pftrace(t, f, 2, &s, err, sizeof(err))) {
			weft_cli_error("record", "cannot write %s: %s", out, f ? err : strerror(errno));
			if (f)
				fclose(f);
			weft_trace_free(t);
			return code ? code : WEFT_EXIT_FAIL;
		}
		fclose(f);
		if (s.bad_chunks)
			weft_cli_warn_undecoded("record", s.bad_chunks, s.bad_why, out);
	}
	if (!quiet) {
		fprintf(stderr, "weft: record: %llu events, %llu dropped, %zu process%s, %.1f MB on disk",
			(unsigned long long)events, (unsigned long long)dropped, t->nprocs,
			t->nprocs == 1 ? "" : "es", (double)stored / 1e6);
		if (convert)
			fprintf(stderr, "; open %s in https://ui.perfetto.dev", out);
		fprintf(stderr, "\n");
	}
	weft_trace_free(t);
	return code;
}
