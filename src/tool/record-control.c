/*
 * record-control.c - weft record's run-time control (docs/control.md), perf's interface:
 * --delay MS (tracing starts MS ms after the program; -1: disabled until an `enable`) and
 * --control=fifo:CTL[,ACK] or fd:N[,M], commands one per line - enable, disable, snapshot
 * [REASON], stop, ping - each answered on ACK with `ack` once it took effect in every traced
 * process of the run (`error: WHY` when it did not, or was refused).
 *
 * How a command reaches every process: weft record listens on a unix socket in the trace
 * directory, DIR/.control.PID (mode 0600, and the peer's uid checked with SO_PEERCRED: only
 * the recording user, or root, gets in), named to the runtime by control=. Each process image
 * connects before its trace starts (`hello PID`, answered with the state: enabled, disabled or
 * stopped, so a fork child or an exec'd program starts as the rest of the run is) and keeps
 * the connection on a thread of weft's (src/lib/control.c). A command is sent to every
 * connected process; the ack is written once each has answered or gone (EOF: it exited or
 * exec'd - the new image says hello with the new state). `weft snapshot|enable|disable|stop
 * DIR` (cmd-control.c) connects to the same socket and says `cmd LINE`; it gets the ack line.
 * One command runs at a time; the others wait, in order of arrival per source.
 *
 * Everything here runs in weft record's one thread, a poll loop that also waits for the
 * program (a pidfd), so the recorder never blocks on a process or a client.
 */
#include "tool/record-control.h"
#include "tool/record-procs.h"
#include "tool/cmd.h"
#include "tool/record.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { ST_ENABLED = 0, ST_DISABLED = 1, ST_STOPPED = 2 };
static const char *const state_name[] = {"enabled", "disabled", "stopped"};
enum { K_NEW = 0, K_RUNTIME = 1, K_CLIENT = 2 };
#define LINE_MAX_ 1100

struct conn {
	int fd;
	int kind;
	int pid;
	int pending; /* a runtime that has not answered the command in flight */
	int queued;  /* a client whose command waits for the one in flight */
	int bye;     /* a runtime that said `bye`: its process is ending, not exec'ing */
	size_t len;
	char buf[LINE_MAX_];
	char cmd[LINE_MAX_]; /* a client's command line */
};

/* The one recorder's state: written and read by its poll loop only. */
static struct {
	long delay_ms;   /* --delay: 0 none, -1 until enable, else ms */
	int has_delay;
	char ctl_path[PATH_MAX], ack_path[PATH_MAX]; /* --control=fifo: */
	int ctl_fd, ack_fd;                         /* the FIFOs or --control=fd: descriptors */
	struct stat made[2];                        /* the FIFOs weft made (st_ino 0: the user's),
						     * removed at the end (weft_rctl_close) */
	size_t ctl_len;
	char ctl_buf[LINE_MAX_ * 4];
	int listen_fd;
	char sock[PATH_MAX];
	int state;
	struct conn *conns;
	size_t nconns;
	/* the command in flight */
	int busy;
	char verb[16];
	struct conn *client; /* who asked: a client, or NULL (the FIFO, or the delay) */
	int from_ctl;
	int waiting, nproc, nerr, first_err;
	char *out;       /* `top`: the processes' lines, each as "@PID LINE", sent with the ack */
	size_t out_len, out_cap;
	pid_t watched;   /* a supervisor's program (not its child), and the wait status its */
	int watched_bye; /* runtime said it is ending with (`bye STATUS`), -1 none */
} R = {.ctl_fd = -1, .ack_fd = -1, .listen_fd = -1, .watched_bye = -1};

int weft_rctl_option(int opt, const char *arg)
{
	if (opt == 'y') {
		long long v;
		if (weft_cli_parse_int(arg, -1, 86400000L, &v)) {
			weft_cli_error("record", "bad --delay '%s': expected milliseconds (0 to 86400000), or -1: "
				       "disabled until an enable command", arg);
			return WEFT_EXIT_USAGE;
		}
		R.delay_ms = (long)v;
		R.has_delay = v != 0;
		return 0;
	}
	/* --control=fifo:CTL[,ACK] | fd:N[,M] */
	if (!strncmp(arg, "fifo:", 5) && arg[5] && arg[5] != ',') {
		const char *comma = strchr(arg + 5, ',');
		size_t l = comma ? (size_t)(comma - arg - 5) : strlen(arg + 5);
		if (l < sizeof(R.ctl_path) && (!comma || (comma[1] && strlen(comma + 1) < sizeof(R.ack_path)))) {
			snprintf(R.ctl_path, sizeof(R.ctl_path), "%.*s", (int)l, arg + 5);
			snprintf(R.ack_path, sizeof(R.ack_path), "%s", comma ? comma + 1 : "");
			return 0;
		}
	} else if (!strncmp(arg, "fd:", 3)) {
		char nbuf[32];
		const char *comma = strchr(arg + 3, ',');
		size_t l = comma ? (size_t)(comma - arg - 3) : strlen(arg + 3);
		long long n = -1, m = -1;
		snprintf(nbuf, sizeof(nbuf), "%.*s", (int)(l < sizeof(nbuf) ? l : 0), arg + 3);
		int ok = !weft_cli_parse_int(nbuf, 0, INT_MAX - 1, &n) &&
			 (!comma || !weft_cli_parse_int(comma + 1, 0, INT_MAX - 1, &m));
		if (ok) {
			if (fcntl((int)n, F_GETFD) < 0 || (m >= 0 && fcntl((int)m, F_GETFD) < 0)) {
				weft_cli_error("record", "--control=%s: descriptor %lld is not open", arg,
					       fcntl((int)n, F_GETFD) < 0 ? n : m);
				return WEFT_EXIT_USAGE;
			}
			R.ctl_fd = (int)n;
			R.ack_fd = (int)m;
			return 0;
		}
	}
	weft_cli_error("record", "bad --control '%s': expected fifo:CTL[,ACK] or fd:N[,M]", arg);
	return WEFT_EXIT_USAGE;
}

/* A FIFO of --control: made (mode 0600) when missing, opened read-write (an open that does
 * not wait for the other end, and no EOF when a writer closes). The descriptor or -1; *made
 * the FIFO's identity when weft made it (it goes at the end), zeroed when it was there. */
static int open_fifo(const char *path, struct stat *made)
{
	struct stat st;
	memset(made, 0, sizeof(*made));
	int fresh = 0;
	if (stat(path, &st)) {
		if (errno != ENOENT || mkfifo(path, 0600)) {
			weft_cli_error("record", "--control: cannot make the FIFO %s: %s", path, strerror(errno));
			return -1;
		}
		fresh = 1;
	}
	if (!stat(path, &st) && !S_ISFIFO(st.st_mode)) {
		weft_cli_error("record", "--control: %s is not a FIFO", path);
		return -1;
	}
	if (fresh)
		*made = st;
	int fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		weft_cli_error("record", "--control: cannot open %s: %s", path, strerror(errno));
	return fd;
}

/* The socket's address; one too long for sun_path goes through the directory's descriptor. */
static int sock_addr(const char *dir, const char *name, struct sockaddr_un *a, int *dirfd)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	*dirfd = -1;
	if ((size_t)snprintf(a->sun_path, sizeof(a->sun_path), "%s/%s", dir, name) < sizeof(a->sun_path))
		return 0;
	*dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (*dirfd < 0)
		return -errno;
	snprintf(a->sun_path, sizeof(a->sun_path), "/proc/self/fd/%d/%s", *dirfd, name);
	return 0;
}

int weft_rctl_setup(const char *dir, char *opts, size_t n)
{
	atexit(weft_rctl_close);
	if (R.has_delay)
		R.state = ST_DISABLED;
	if (R.ctl_path[0]) {
		if ((R.ctl_fd = open_fifo(R.ctl_path, &R.made[0])) < 0)
			return WEFT_EXIT_FAIL;
		if (R.ack_path[0] && (R.ack_fd = open_fifo(R.ack_path, &R.made[1])) < 0)
			return WEFT_EXIT_FAIL;
	} else if (R.ctl_fd >= 0) { /* fd: the program does not inherit them */
		fcntl(R.ctl_fd, F_SETFD, FD_CLOEXEC);
		fcntl(R.ctl_fd, F_SETFL, fcntl(R.ctl_fd, F_GETFL) | O_NONBLOCK);
		if (R.ack_fd >= 0)
			fcntl(R.ack_fd, F_SETFD, FD_CLOEXEC);
	}
	if (R.ack_fd >= 0) /* an ACK nobody reads never stops the recorder */
		fcntl(R.ack_fd, F_SETFL, fcntl(R.ack_fd, F_GETFL) | O_NONBLOCK);
	char name[64];
	snprintf(name, sizeof(name), WEFT_CONTROL_PREFIX "%d", (int)getpid());
	snprintf(R.sock, sizeof(R.sock), "%s/%s", dir, name);
	struct sockaddr_un a;
	int dirfd = -1, fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int rc = fd < 0 ? -errno : sock_addr(dir, name, &a, &dirfd);
	if (!rc) {
		unlink(R.sock);
		mode_t old = umask(0177); /* made 0600: only this user opens it */
		rc = bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 128) ? -errno : 0;
		umask(old);
		if (dirfd >= 0)
			close(dirfd);
	}
	if (rc) {
		weft_cli_error("record", "control socket %s: %s", R.sock, strerror(-rc));
		R.sock[0] = 0;
		if (fd >= 0)
			close(fd);
		return WEFT_EXIT_FAIL;
	}
	R.listen_fd = fd;
	size_t l = strlen(opts);
	snprintf(opts + l, n - l, ":control=%s", R.sock);
	return 0;
}

void weft_rctl_close(void)
{
	if (R.sock[0])
		unlink(R.sock);
	R.sock[0] = 0;
	/* the FIFOs weft made, if they are still those (not ones the user made there since) */
	const char *paths[2] = {R.ctl_path, R.ack_path};
	for (int i = 0; i < 2; i++) {
		struct stat st;
		if (R.made[i].st_ino && !lstat(paths[i], &st) && S_ISFIFO(st.st_mode) &&
		    st.st_ino == R.made[i].st_ino && st.st_dev == R.made[i].st_dev)
			unlink(paths[i]);
		R.made[i].st_ino = 0;
	}
}

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void send_line(int fd, const char *s)
{
	size_t n = strlen(s);
	while (n) {
		ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return; /* the peer is gone: its EOF comes to the loop */
		s += w;
		n -= (size_t)w;
	}
}

static void write_ack(const char *s)
{
	if (R.ack_fd < 0)
		return;
	ssize_t w = write(R.ack_fd, s, strlen(s));
	(void)w; /* a full ACK pipe nobody reads: the line is lost, the recorder goes on */
}

/* The command in flight is done: its answer to whoever asked. */
static void finish(const char *error)
{
	char line[LINE_MAX_ + 64];
	if (error)
		snprintf(line, sizeof(line), "error: %s\n", error);
	else if (R.nerr)
		snprintf(line, sizeof(line), "error: %s: %s (in %d of %d processes)\n", R.verb,
			 strerror(R.first_err), R.nerr, R.nproc);
	else
		snprintf(line, sizeof(line), "ack\n");
	if (R.client && R.out_len && !error) { /* top's lines: the client reads them all, waiting */
		int fl = fcntl(R.client->fd, F_GETFL);
		struct timeval tv = {5, 0};
		fcntl(R.client->fd, F_SETFL, fl & ~O_NONBLOCK);
		setsockopt(R.client->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		R.out[R.out_len] = 0;
		send_line(R.client->fd, R.out);
		fcntl(R.client->fd, F_SETFL, fl);
	}
	R.out_len = 0;
	if (R.client) {
		send_line(R.client->fd, line);
		R.client->queued = 0;
	} else if (R.from_ctl) {
		write_ack(line);
	}
	if ((error || R.nerr) && !R.client) /* the FIFO's user (or the delay) also sees it here */
		weft_cli_error("record", "%.*s", (int)strlen(line) - 1, line);
	R.busy = 0;
	R.client = NULL;
	R.from_ctl = 0;
}

/* Starts a command line from a client (c) or the FIFO (c NULL, from_ctl) or the delay. */
static void start(const char *line, struct conn *c, int from_ctl)
{
	char cmd[LINE_MAX_];
	snprintf(cmd, sizeof(cmd), "%s", line);
	size_t l = strlen(cmd);
	while (l && (cmd[l - 1] == '\r' || cmd[l - 1] == ' ' || cmd[l - 1] == '\t'))
		cmd[--l] = 0;
	const char *p = cmd + strspn(cmd, " \t");
	size_t vl = strcspn(p, " \t");
	R.busy = 1;
	R.client = c;
	R.from_ctl = from_ctl;
	R.nerr = R.nproc = R.waiting = 0;
	snprintf(R.verb, sizeof(R.verb), "%.*s", (int)(vl < 15 ? vl : 15), p);
	const char *arg = p + vl + strspn(p + vl, " \t");
	char err[LINE_MAX_ + 100];
	int known = !strcmp(R.verb, "enable") || !strcmp(R.verb, "disable") || !strcmp(R.verb, "stop") ||
		    !strcmp(R.verb, "ping") || !strcmp(R.verb, "snapshot") || !strcmp(R.verb, "top");
	if (!known || (*arg && strcmp(R.verb, "snapshot"))) {
		snprintf(err, sizeof(err), "unknown command '%s' (expected enable, disable, snapshot [REASON], "
			 "stop or ping)", p);
		finish(err);
		return;
	}
	if (R.state == ST_STOPPED && strcmp(R.verb, "ping") && strcmp(R.verb, "stop") && strcmp(R.verb, "top")) {
		snprintf(err, sizeof(err), "%s: the trace is stopped (a stop command ended it)", R.verb);
		finish(err);
		return;
	}
	if (!strcmp(R.verb, "enable") || !strcmp(R.verb, "disable") || !strcmp(R.verb, "stop")) {
		R.state = !strcmp(R.verb, "enable") ? ST_ENABLED : !strcmp(R.verb, "disable") ? ST_DISABLED : ST_STOPPED;
		if (c || from_ctl)
			R.has_delay = 0; /* a command given: the delay's enable is off */
	}
	char msg[LINE_MAX_ + 16];
	snprintf(msg, sizeof(msg), "%s%s%s\n", R.verb, *arg ? " " : "", arg);
	for (size_t i = 0; i < R.nconns; i++)
		if (R.conns[i].kind == K_RUNTIME) {
			R.conns[i].pending = 1;
			R.waiting++;
			R.nproc++;
			send_line(R.conns[i].fd, msg);
		}
	if (!R.waiting)
		finish(NULL);
}

/* The next waiting command: the FIFO's next line, else a client's (in connection order). */
static void next_command(void)
{
	while (!R.busy) {
		char *nl = memchr(R.ctl_buf, '\n', R.ctl_len);
		if (nl) {
			char line[LINE_MAX_];
			size_t used = (size_t)(nl - R.ctl_buf) + 1, l = used - 1 < sizeof(line) - 1 ? used - 1 : sizeof(line) - 1;
			memcpy(line, R.ctl_buf, l);
			line[l] = 0;
			memmove(R.ctl_buf, nl + 1, R.ctl_len - used);
			R.ctl_len -= used;
			if (line[strspn(line, " \t\r")])
				start(line, NULL, 1);
			continue;
		}
		size_t i;
		for (i = 0; i < R.nconns && !(R.conns[i].kind == K_CLIENT && R.conns[i].queued); i++)
			;
		if (i == R.nconns)
			return;
		start(R.conns[i].cmd, &R.conns[i], 0);
	}
}

static void drop(size_t i)
{
	struct conn *c = &R.conns[i];
	if (c->kind == K_RUNTIME && !c->bye && c->pid > 0)
		weft_rec_exec_note(c->pid);
	if (c->pending && --R.waiting == 0 && R.busy) {
		c->pending = 0;
		finish(NULL);
	}
	if (R.client == c)
		R.client = NULL; /* it left before its answer */
	close(c->fd);
	if (R.client == &R.conns[R.nconns - 1])
		R.client = c;
	R.conns[i] = R.conns[--R.nconns];
}

/* One line from a connection. */
static void on_line(struct conn *c, const char *line)
{
	if (c->kind == K_NEW && !strncmp(line, "hello ", 6)) {
		c->kind = K_RUNTIME;
		c->pid = atoi(line + 6);
		weft_rec_exec_forget(c->pid);
		char s[32];
		snprintf(s, sizeof(s), "state %s\n", state_name[R.state]);
		send_line(c->fd, s);
	} else if (c->kind == K_NEW && !strncmp(line, "cmd ", 4)) {
		c->kind = K_CLIENT;
		snprintf(c->cmd, sizeof(c->cmd), "%s", line + 4);
		c->queued = 1;
	} else if (c->kind == K_RUNTIME && !strncmp(line, "spawn ", 6)) {
		int pid = atoi(line + 6); /* waited for like an exec, unless it said hello already */
		size_t i = 0;
		while (i < R.nconns && !(R.conns[i].kind == K_RUNTIME && R.conns[i].pid == pid))
			i++;
		if (pid > 0 && i == R.nconns)
			weft_rec_exec_note(pid);
	} else if (c->kind == K_RUNTIME && !strncmp(line, "bye ", 4)) {
		c->bye = 1;
		if (R.watched && c->pid == R.watched)
			R.watched_bye = atoi(line + 4);
	} else if (c->kind == K_RUNTIME && c->pending && R.busy && !strcmp(R.verb, "top") && strcmp(line, "ok") &&
		   strncmp(line, "err ", 4)) {
		size_t l = strlen(line);
		if (R.out_len + l + 32 >= R.out_cap) {
			size_t nc = (R.out_cap + l + 32) * 2;
			char *n = realloc(R.out, nc);
			if (!n)
				return;
			R.out = n;
			R.out_cap = nc;
		}
		R.out_len += (size_t)snprintf(R.out + R.out_len, R.out_cap - R.out_len, "@%d %s\n", c->pid, line);
	} else if (c->kind == K_RUNTIME && c->pending) {
		c->pending = 0;
		if (!strncmp(line, "err ", 4)) {
			int e = atoi(line + 4);
			if (!R.nerr++)
				R.first_err = e;
		}
		if (--R.waiting == 0 && R.busy)
			finish(NULL);
	}
}

static void on_accept(void)
{
	for (;;) {
		int fd = accept4(R.listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0)
			return;
		struct ucred cr;
		socklen_t cl = sizeof(cr);
		/* the recording user (or root) only: the socket's mode says so too */
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) || (cr.uid != getuid() && cr.uid != 0)) {
			close(fd);
			continue;
		}
		struct conn *n = realloc(R.conns, (R.nconns + 1) * sizeof(*n));
		if (!n) {
			close(fd);
			return;
		}
		if (R.client) /* realloc moved them */
			R.client = n + (R.client - R.conns);
		R.conns = n;
		memset(&R.conns[R.nconns], 0, sizeof(R.conns[0]));
		R.conns[R.nconns++].fd = fd;
	}
}

/* Reads what connection i has; 0, or -1 when it was dropped. */
static int on_readable(size_t i)
{
	struct conn *c = &R.conns[i];
	ssize_t r = read(c->fd, c->buf + c->len, sizeof(c->buf) - 1 - c->len);
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (r <= 0) {
		drop(i);
		return -1;
	}
	c->len += (size_t)r;
	char *nl;
	while ((nl = memchr(c->buf, '\n', c->len))) {
		*nl = 0;
		on_line(c, c->buf);
		size_t used = (size_t)(nl - c->buf) + 1;
		memmove(c->buf, nl + 1, c->len - used);
		c->len -= used;
	}
	if (c->len == sizeof(c->buf) - 1) { /* a line too long: not one of ours */
		drop(i);
		return -1;
	}
	return 0;
}

static void on_ctl(void)
{
	ssize_t r = read(R.ctl_fd, R.ctl_buf + R.ctl_len, sizeof(R.ctl_buf) - R.ctl_len);
	if (r == 0) { /* fd: its writer closed it: no more commands */
		R.ctl_fd = -1;
		return;
	}
	if (r > 0)
		R.ctl_len += (size_t)r;
	if (R.ctl_len == sizeof(R.ctl_buf) && !memchr(R.ctl_buf, '\n', R.ctl_len))
		R.ctl_len = 0; /* no line in 4K: dropped */
}

/* Traced processes still running after the linger: their pids (the first few), and how many. */
static int lingering[16];
static size_t nlingering;

/* Connections of traced processes (and new ones, not yet said which), and whether one waits
 * to be accepted. */
static size_t runtimes(void)
{
	size_t n = 0;
	for (size_t i = 0; i < R.nconns; i++)
		n += R.conns[i].kind != K_CLIENT;
	struct pollfd one = {.fd = R.listen_fd, .events = POLLIN};
	return n + (R.listen_fd >= 0 && poll(&one, 1, 0) == 1 && (one.revents & POLLIN));
}

/* Once the program ended, a traced process it started may still be finishing its trace (a
 * pool's helper that ends a moment later, a background job): its connection closes when it
 * ends. Served (its lines read, new processes accepted) for up to ms, then those still
 * connected are remembered for weft_rctl_lingering. */
static void linger(long long ms)
{
	long long until = now_ms() + ms;
	struct pollfd *pf = NULL;
	while (runtimes() || weft_rec_execs_pending()) {
		long long left = until - now_ms();
		if (left <= 0)
			break;
		struct pollfd *np = realloc(pf, (R.nconns + 1) * sizeof(*pf));
		if (!np)
			break;
		pf = np;
		size_t nc = R.nconns;
		pf[0] = (struct pollfd){.fd = R.listen_fd, .events = POLLIN};
		for (size_t i = 0; i < nc; i++)
			pf[1 + i] = (struct pollfd){.fd = R.conns[i].fd, .events = POLLIN};
		/* (an exec'ing process is looked at again every 20 ms: it may have died meanwhile) */
		int rc = poll(pf, nc + 1, weft_rec_execs(NULL, 0) && left > 20 ? 20 : (int)left);
		if (rc < 0 && errno != EINTR)
			break;
		if (rc <= 0)
			continue;
		for (size_t i = nc; i-- > 0;) /* (from the last: a drop moves the last into the hole) */
			if (pf[1 + i].revents & (POLLIN | POLLHUP | POLLERR))
				on_readable(i);
		if (pf[0].revents & POLLIN)
			on_accept();
	}
	free(pf);
	weft_rec_execs_pending(); /* (the ones dropped in the last round, looked at) */
	nlingering = 0;
	for (size_t i = 0; i < R.nconns; i++) /* (a dead pid's: a copy a child of it still holds) */
		if (R.conns[i].kind == K_RUNTIME && weft_rec_proc_alive(R.conns[i].pid) &&
		    nlingering++ < sizeof(lingering) / sizeof(lingering[0]))
			lingering[nlingering - 1] = R.conns[i].pid;
	int ex[16];
	size_t nex = weft_rec_execs(ex, 16);
	for (size_t i = 0; i < nex; i++)
		if (nlingering++ < sizeof(lingering) / sizeof(lingering[0]))
			lingering[nlingering - 1] = ex[i < 16 ? i : 15];
}

size_t weft_rctl_lingering(int *pids, size_t max)
{
	for (size_t i = 0; i < max && i < nlingering && i < sizeof(lingering) / sizeof(lingering[0]); i++)
		pids[i] = lingering[i];
	return nlingering;
}

/* How long the traced processes the program leaves behind are waited for: WEFT_RECORD_LINGER
 * seconds (a fraction allowed), 1 by default. */
static long long linger_ms(void)
{
	const char *v = getenv("WEFT_RECORD_LINGER");
	char *end;
	double s = v && *v ? strtod(v, &end) : 1.0;
	if (v && *v && (*end || !(s >= 0) || s > 86400))
		s = 1.0;
	return (long long)(s * 1000);
}

void weft_rctl_wait(pid_t child, int given_pidfd, int *status)
{
	int own = given_pidfd < 0; /* our child: waitpid tells its status */
	int pidfd = own ? (int)syscall(SYS_pidfd_open, child, 0) : given_pidfd;
	R.watched = own ? 0 : child;
	long long enable_at = R.has_delay && R.delay_ms > 0 ? now_ms() + R.delay_ms : -1;
	struct pollfd *pf = NULL;
	int reaped = 0;
	for (;;) {
		if (enable_at >= 0 && R.has_delay && !R.busy && now_ms() >= enable_at) {
			enable_at = -1;
			start("enable", NULL, 0);
		}
		next_command();
		struct pollfd *np = realloc(pf, (R.nconns + 3) * sizeof(*pf));
		if (np)
			pf = np;
		if (!pf)
			break;
		size_t n = 0;
		pf[n++] = (struct pollfd){.fd = pidfd, .events = POLLIN};
		pf[n++] = (struct pollfd){.fd = R.listen_fd, .events = POLLIN};
		pf[n++] = (struct pollfd){.fd = R.busy ? -1 : R.ctl_fd, .events = POLLIN};
		size_t base = n, nc = R.nconns;
		for (size_t i = 0; i < nc; i++)
			pf[n++] = (struct pollfd){.fd = R.conns[i].fd, .events = POLLIN};
		int timeout = pidfd < 0 ? 100 : -1;
		if (enable_at >= 0 && R.has_delay && !R.busy) { /* (busy: it waits for the command) */
			long long left = enable_at - now_ms();
			if (left < 0)
				left = 0;
			if (timeout < 0 || left < timeout)
				timeout = (int)left;
		}
		int rc = poll(pf, n, timeout);
		if (rc < 0 && errno != EINTR)
			break;
		if (!own && rc > 0 && (pf[0].revents & POLLIN)) { /* (its last lines first) */
			for (size_t i = nc; i-- > 0;)
				if (pf[base + i].revents & (POLLIN | POLLHUP | POLLERR))
					on_readable(i);
			*status = weft_record_zombie_status(child);
			if (*status < 0)
				*status = R.watched_bye;
			reaped = 1;
			break;
		}
		pid_t w = !own || (pidfd >= 0 && !(pf[0].revents & POLLIN)) ? 0 : waitpid(child, status, WNOHANG);
		if (w == child) {
			reaped = 1;
			break;
		}
		if (rc <= 0)
			continue;
		if (pf[1].revents & POLLIN)
			on_accept();
		if (pf[2].revents & (POLLIN | POLLHUP))
			on_ctl();
		/* from the last, as a drop moves the last connection into the hole */
		for (size_t i = nc; i-- > 0;)
			if (pf[base + i].revents & (POLLIN | POLLHUP | POLLERR))
				on_readable(i);
	}
	free(pf);
	while (!reaped && own && waitpid(child, status, 0) < 0 && errno == EINTR)
		; /* (out of memory, or poll failed: no control, the program is waited for) */
	if (!reaped && !own) {
		struct pollfd one = {.fd = pidfd, .events = POLLIN};
		while (poll(&one, 1, -1) < 0 && errno == EINTR)
			;
		*status = weft_record_zombie_status(child);
		if (*status < 0)
			*status = R.watched_bye;
	}
	if (pidfd >= 0)
		close(pidfd);
	if (own)
		linger(linger_ms());
	if (R.busy) /* the program ended before every process answered */
		finish("the program ended before the command took effect everywhere");
	for (size_t i = 0; i < R.nconns; i++)
		close(R.conns[i].fd);
	R.nconns = 0;
	if (R.listen_fd >= 0)
		close(R.listen_fd);
	R.listen_fd = -1;
	weft_rctl_close();
}
