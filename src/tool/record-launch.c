/*
 * record-launch.c - how `weft record` runs the program (record.h): libweft-preload.so injected
 * with LD_PRELOAD, ahead of any the user set (and libweft-mpi.so after it), the runtime's
 * settings in WEFT_OPTIONS and WEFT_SESSION, the weft Python package on PYTHONPATH, CUDA's
 * injection pointed at the preload under --gpu; so every process the program forks or execs
 * records into the same trace directory. Ctrl-C reaches the program (same process group)
 * while weft waits it out; SIGTERM, SIGHUP, SIGUSR1, SIGUSR2 and SIGALRM sent to weft are passed
 * on. A setuid or setgid
 * program is found out beforehand: the loader ignores LD_PRELOAD for it.
 */
#include "tool/cmd.h"
#include "tool/record.h"
#include "tool/record-control.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

int weft_record_python_path(int python, char *out, size_t n)
{
	char pydir[PATH_MAX];
	const char *old_pp = getenv("PYTHONPATH");
	out[0] = 0;
	if (find_python_dir(pydir, sizeof(pydir)))
		snprintf(out, n, "%s%s%s%s%s", python ? pydir : "", python ? "/weft_bootstrap:" : "",
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
		return -1;
	}
	return 0;
}

/* Does running this file change the process's user or group (setuid/setgid to someone else)?
 * Then the kernel sets AT_SECURE and the loader ignores LD_PRELOAD: nothing can be traced. */
static int changes_id(const struct stat *st)
{
	return ((st->st_mode & S_ISUID) && st->st_uid != geteuid()) ||
	       ((st->st_mode & S_ISGID) && st->st_gid != getegid());
}

/* The program's file as execvp would find it: 0 and its status in *st, or the errno execvp
 * would fail with (ENOENT: nowhere; EACCES: not an executable file). */
static int find_program(const char *prog, struct stat *st)
{
	if (!*prog)
		return ENOENT;
	if (strchr(prog, '/')) {
		if (stat(prog, st))
			return errno;
		return S_ISREG(st->st_mode) && !access(prog, X_OK) ? 0 : EACCES;
	}
	char path[PATH_MAX];
	const char *p = getenv("PATH");
	if (!p)
		p = "/usr/local/bin:/usr/bin:/bin";
	int why = ENOENT;
	while (*p) {
		const char *c = strchrnul(p, ':');
		if (c > p) /* (an empty entry: the current directory) */
			snprintf(path, sizeof(path), "%.*s/%s", (int)(c - p), p, prog);
		else
			snprintf(path, sizeof(path), "./%s", prog);
		if (!stat(path, st)) {
			if (S_ISREG(st->st_mode) && !access(path, X_OK))
				return 0;
			why = EACCES;
		}
		p = *c ? c + 1 : c;
	}
	return why;
}

int weft_record_is_setid(const char *prog)
{
	struct stat st;
	return !find_program(prog, &st) && changes_id(&st);
}

int weft_record_runnable(const char *prog)
{
	struct stat st;
	return find_program(prog, &st);
}

/* The program's environment: the runtime injected, its settings (in the child, or in the
 * process that becomes the program, before exec) */
static void program_env(const struct weft_record_launch *l, const char *ld)
{
	const char *preload = l->preload;
	setenv("LD_PRELOAD", ld, 1);
	setenv("WEFT_OPTIONS", l->options, 1);
	setenv("WEFT_SESSION", l->dir, 1);
	if (l->job_id) /* the runtime names the job as this recorder did (hydra gives no id) */
		setenv("WEFT_JOB_ID", l->job_id, 1);
	if (l->pypath[0])
		setenv("PYTHONPATH", l->pypath, 1);
	/* CUDA's driver calls InitializeInjection of this library at cuInit (the runtime,
	 * already preloaded, starts the collector there if it has not yet); one the user
	 * set is left alone */
	if (l->gpu && !getenv("CUDA_INJECTION64_PATH"))
		setenv("CUDA_INJECTION64_PATH", preload, 1);
	int python = l->python;
	if (python)
		setenv("WEFT_PYTHON", (python & PY_C_CALLS) && (python & PY_TASKS) ? "calls,c-calls,tasks"
				      : python & PY_C_CALLS ? "calls,c-calls"
				      : python & PY_TASKS ? "calls,tasks" : "calls", 1);
}

int weft_record_launch(struct weft_record_launch *l, char **argv, int *status)
{
	char ld[PATH_MAX * 3];
	const char *preload = l->preload;
	const char *old_ld = getenv("LD_PRELOAD");
	/* libweft-mpi.so after the runtime it records through: its MPI_X wrappers come before
	 * the MPI library's; a program without MPI never calls them */
	char mpilib[PATH_MAX];
	if (weft_cli_find_file("libweft-mpi.so", mpilib, sizeof(mpilib)))
		snprintf(ld, sizeof(ld), "%s:%s%s%s", preload, mpilib, old_ld && *old_ld ? ":" : "",
			 old_ld ? old_ld : "");
	else
		snprintf(ld, sizeof(ld), "%s%s%s", preload, old_ld && *old_ld ? ":" : "", old_ld ? old_ld : "");

	struct weft_detached dt;
	int detached = l->detach ? weft_record_detach(l->detach, &dt) : -1;
	if (detached == 1) { /* the supervisor: the program is this process's grandparent */
		l->supervising = 1;
		l->pmi_fd = dt.pmi_fd;
		*status = -1;
		weft_rctl_wait(dt.pid, dt.pidfd, status);
		close(dt.pidfd);
		return 0;
	}
	if (detached == 0) { /* this process becomes the program, as the launcher started it */
		program_env(l, ld);
		execvp(argv[0], argv);
		weft_cli_error("record", "cannot run '%s': %s", argv[0], strerror(errno));
		fflush(stderr);
		_exit(127); /* (not exit: weft's handlers are the supervisor's) */
	}

	int pipefd[2];
	if (pipe2(pipefd, O_CLOEXEC)) {
		weft_cli_error("record", "pipe: %s", strerror(errno));
		return WEFT_EXIT_FAIL;
	}
	/* forward() is installed before fork with these signals blocked, so one that comes while
	 * the child starts waits until `child` is set; the child puts back what weft was started
	 * with (SIG_DFL, or SIG_IGN from nohup or a shell's background job) before it unblocks
	 * them, so the program inherits the dispositions it would have untraced */
	static const int passed_on[] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGALRM};
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
		program_env(l, ld);
		execvp(argv[0], argv);
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
	*status = 0;
	weft_rctl_wait(child, -1, status); /* serving the control channel (record-control.c) */
	/* the program is gone: a signal now ends the conversion, the recorded data stays */
	for (size_t i = 0; i < npassed; i++)
		sigaction(passed_on[i], &inherited[i], NULL);
	child = 0;
	if (got == (ssize_t)sizeof(exec_errno)) {
		weft_cli_error("record", "cannot run '%s': %s", argv[0], strerror(exec_errno));
		return 127;
	}
	return 0;
}
