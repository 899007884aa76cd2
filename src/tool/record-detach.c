/*
 * record-detach.c - a rank's recorder out of the launcher's reach (record.h). Under mpirun
 * (Hydra, Open MPI) a rank's `weft record` would sit between the launcher and the program:
 * when one rank fails, the launcher kills every rank still running, the recorders with them,
 * mid-conversion (no trace, stale files, the job's status 9 where untraced it is 1); Ctrl-C
 * reaches recorder and program alike. So there the recorder's own process becomes the
 * program (exec: the launcher waits for, signals and kills the program itself, as untraced,
 * and the program's end closes the launcher's PMI channel exactly when it would untraced),
 * after forking the supervisor: in a session of its own (out of the launcher's killpg and the
 * terminal's Ctrl-C), not a child of the program (a double fork: a program that waits for
 * every child never waits for it), keeping only the descriptors weft opened for itself
 * (close-on-exec), stdout and stderr (the launcher's pipes) and Hydra's PMI socket. It serves the control socket, waits for the program's end (a
 * pidfd), records the rank's ending in the job's directory, and converts when last.
 *
 * The program's wait status belongs to its parent, the launcher; the supervisor reads it
 * from /proc/PID/stat while the program is a zombie, which it stays until the launcher has
 * read its stderr to the end: the supervisor holds a copy of that until it has read the
 * status. (A launcher that reaps first leaves it "not seen".)
 */
#include "tool/cmd.h"
#include "tool/record.h"
#include "tool/tracedir.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

int weft_record_may_detach(const struct weft_job *job)
{
	/* a Slurm step ends every process of the step with its tasks (proctrack): a
	 * supervisor there would be killed before it converts; the recorder stays the parent */
	if (getenv("SLURM_STEP_ID") || getenv("WEFT_NO_DETACH"))
		return 0;
	return !strcmp(job->launcher, "hydra") || !strcmp(job->launcher, "openmpi");
}

/* Everything the program was meant to inherit (the launcher's pipes, its PMI socket): not
 * close-on-exec. The supervisor keeps what weft opened for itself, stderr for its lines, and
 * copies of stdout and Hydra's PMI socket (PMI_FD) until weft_record_let_go. Returns the
 * PMI socket's copy, or -1. */
static int drop_inherited(void)
{
	const char *pmi = getenv("PMI_FD");
	int pmi_fd = pmi && *pmi ? atoi(pmi) : -1;
	if (pmi_fd <= 2 || fcntl(pmi_fd, F_GETFD) < 0)
		pmi_fd = -1;
	int shut[256], nshut;
	do { /* in rounds of 256, until a scan finds none left */
		nshut = 0;
		DIR *d = opendir("/proc/self/fd");
		struct dirent *e;
		while (d && (e = readdir(d)) && nshut < (int)(sizeof(shut) / sizeof(shut[0]))) {
			int fd = atoi(e->d_name);
			if (fd > 2 && fd != dirfd(d) && fd != pmi_fd && !(fcntl(fd, F_GETFD) & FD_CLOEXEC))
				shut[nshut++] = fd;
		}
		if (d)
			closedir(d);
		for (int i = 0; i < nshut; i++)
			close(shut[i]);
	} while (nshut > 0);
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null >= 0) {
		dup2(null, 0);
		close(null);
	}
	return pmi_fd;
}

/* Hydra ends every rank still running (SIGKILL to its process group) once one rank's PMI
 * connection closes before MPI_Finalize, or once mpiexec hears of one rank's bad end (the
 * proxy reaps a rank when its stdout closed); untraced, each rank's close as it dies. Traced,
 * a rank that ends on a signal first finishes its trace, and the rank that finished first
 * would get the others killed in the middle of theirs (Ctrl-C: the job's status 2|9, half
 * the trace). So the supervisor keeps copies of both, open until no other rank of this host
 * runs, for at most WEFT_PMI_HOLD_MS: ranks ending together all finish; a rank that failed
 * alone gets the others ended that much later than untraced. */
#define WEFT_PMI_HOLD_MS 2000
void weft_record_let_go(struct weft_jobdir *jd, int fd)
{
	if (fd >= 0)
		for (int waited = 0; waited < WEFT_PMI_HOLD_MS && weft_jobdir_running_here(jd) > 0; waited += 10)
			usleep(10000);
	if (fd >= 0)
		close(fd);
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC); /* stdout's copy: the launcher's end */
	if (null >= 0) {
		dup2(null, 1);
		close(null);
	}
}

int weft_record_detach(struct weft_jobdir *jd, struct weft_detached *out)
{
	pid_t self = getpid();
	int pidfd = (int)syscall(SYS_pidfd_open, self, 0); /* (close-on-exec: the program drops it) */
	int ready[2];
	if (pidfd < 0)
		return -1;
	if (pipe2(ready, O_CLOEXEC)) {
		close(pidfd);
		return -1;
	}
	pid_t k = fork();
	if (k < 0) {
		close(pidfd);
		close(ready[0]);
		close(ready[1]);
		return -1;
	}
	if (k == 0) {
		setsid();
		pid_t k2 = fork();
		if (k2 != 0) /* the middle one goes at once: the supervisor is nobody's child */
			_exit(k2 > 0 ? 0 : 1);
		close(ready[0]);
		/* the registration is the supervisor's before the program starts: a run file
		 * is told stale by its process's end, and the program's comes first */
		char ok = weft_jobdir_handover(jd, getpid()) ? 0 : 1;
		ssize_t w = write(ready[1], &ok, 1);
		(void)w;
		close(ready[1]);
		signal(SIGPIPE, SIG_IGN); /* stderr's reader may be gone (a killed launcher) */
		signal(SIGINT, SIG_IGN);
		signal(SIGQUIT, SIG_IGN);
		signal(SIGHUP, SIG_IGN);
		out->pmi_fd = drop_inherited();
		out->pid = self;
		out->pidfd = pidfd;
		return 1;
	}
	close(ready[1]);
	int st = 0;
	while (waitpid(k, &st, 0) < 0 && errno == EINTR)
		;
	char ok = 0;
	while (read(ready[0], &ok, 1) < 0 && errno == EINTR)
		;
	close(ready[0]);
	close(pidfd);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		return -1; /* no supervisor: the recorder stays the program's parent */
	/* (ok 0: the registration kept the program's pid; it still counts as running until the
	 * supervisor leaves, as the program's pid is alive until then or the supervisor's
	 * leave comes before anyone reads it stale) */
	weft_jobdir_close(jd); /* the supervisor's now */
	return 0;
}

int weft_record_zombie_status(pid_t pid)
{
	char path[64], buf[4096];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "re");
	size_t got = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	if (f)
		fclose(f);
	buf[got] = 0;
	char *p = strrchr(buf, ')'); /* past the command name, which may hold anything */
	if (!p || p[1] != ' ' || p[2] != 'Z')
		return -1;
	/* fields from 3 (state) on; the 52nd is exit_code, the wait status (Linux 3.5) */
	int field = 2;
	for (p++; *p && field < 52; p++)
		if (*p == ' ')
			field++;
	return field == 52 && *p ? atoi(p) : -1;
}
