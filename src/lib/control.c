/*
 * control.c - the runtime's end of weft record's control channel (docs/control.md). weft
 * record listens on a unix socket in its trace directory and names it in control=. Before a
 * process image starts its trace it connects, says `hello PID` and reads the recorder's state
 * (`state enabled|disabled|stopped`), so it starts as the rest of the run is, before any event
 * of its own. Once the trace runs, a thread of weft's ("weft-control": every signal blocked,
 * weft_in_runtime set, no records of its own) blocks reading commands from that socket -
 * `enable`, `disable`, `snapshot [REASON]`, `stop`, `ping` - applies each and answers `ok` or
 * `err ERRNO` (`top`: the lines of docs/top.md first, from live.c); weft record writes its `ack` once every process has answered. The hot path is
 * untouched: disabling re-evaluates the call sites (registry.c) as a filter change does.
 *
 * A fork child starts with its parent's state and connection; its fork handler closes the
 * parent's socket, says hello again (taking the recorder's state as of now, before the child
 * runs any code of its own) and starts its own thread. An exec closes the socket (CLOEXEC)
 * and the new image connects anew. No socket (no weft record, or it ended): no control.
 */
#include "internal.h"
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* The connection: written by hello (under weft_g.lock, or in the fork child before any other
 * thread exists), read by the control thread it then starts. Kept as one of weft's own files
 * (fdfile.c: a high number, its inode checked before each use), so a program that closes
 * every descriptor and opens its own under that number never has weft read or write there. */
static int ctl_fd = -1;
static struct weft_file ctl_file;
static int stop_pending; /* hello said `stopped` in a fork child whose trace runs */
/* 1 from pthread_create until the control thread runs its own code (set by the creator,
 * cleared by the thread): a fork waits for it (atfork_prepare), so that the child never
 * inherits a lock that the thread's start-up held in the parent's allocator (ASan's is not
 * fork-safe: both of the child's new threads then hung in it, 1 run in ~300 under load). */
static _Atomic int thread_starting;

void weft_control_pause(int paused)
{
	atomic_store(&weft_g.paused, paused);
	if (weft_g.on_pause)
		weft_g.on_pause(paused);
	weft_registry_reevaluate();
}

/* Connects to path (a socket path too long for sun_path is reached through the directory's
 * descriptor, /proc/self/fd/N/NAME). The socket, or -errno. */
static int connect_to(const char *path)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int dirfd = -1;
	if (strlen(path) < sizeof(a.sun_path)) {
		snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	} else {
		const char *slash = strrchr(path, '/');
		char dir[sizeof(weft_cfg.control)];
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
		dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (dirfd < 0 || snprintf(a.sun_path, sizeof(a.sun_path), "/proc/self/fd/%d/%s", dirfd, slash + 1) >=
					 (int)sizeof(a.sun_path)) {
			if (dirfd >= 0)
				close(dirfd);
			close(fd);
			return -ENAMETOOLONG;
		}
	}
	int rc = connect(fd, (struct sockaddr *)&a, sizeof(a));
	int e = errno;
	if (dirfd >= 0)
		close(dirfd);
	if (rc) {
		close(fd);
		return -e;
	}
	return fd;
}

/* One line from fd into buf (without its newline): its length, or -1 at EOF or error. Reads
 * a byte at a time: commands are rare and short, and nothing past the line is consumed. */
static int read_line(int fd, char *buf, size_t n)
{
	if (ctl_file.fd == fd && weft_file_fd(&ctl_file) != fd)
		return -1; /* the program closed it */
	size_t l = 0;
	for (;;) {
		char c;
		ssize_t r = read(fd, &c, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		if (c == '\n')
			break;
		if (l + 1 < n)
			buf[l++] = c;
	}
	buf[l] = 0;
	return (int)l;
}

static int write_all(int fd, const char *s, size_t n)
{
	if (ctl_file.fd == fd && weft_file_fd(&ctl_file) != fd)
		return -1; /* the program closed it */
	while (n) {
		ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		s += w;
		n -= (size_t)w;
	}
	return 0;
}

int weft_control_hello(void)
{
	/* a fork child's own connection first, then its copy of its parent's closed: the parent's
	 * stays open until this one exists, so that a recorder waiting for the processes its
	 * program left running (record-control.c's linger) never sees none in between */
	int fd = connect_to(weft_cfg.control);
	if (ctl_fd >= 0) { /* a fork child's copy of its parent's */
		close(ctl_fd);
		ctl_fd = -1;
		ctl_file.fd = -1;
	}
	if (fd < 0)
		return 0; /* no recorder listens: no control */
	/* a recorder that does not answer (stopped in a debugger) must not hang the program for
	 * ever: after 30 s it runs on, without control */
	struct timeval tv = {30, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	char line[64];
	snprintf(line, sizeof(line), "hello %d\n", (int)getpid());
	if (write_all(fd, line, strlen(line)) || read_line(fd, line, sizeof(line)) < 0 ||
	    strncmp(line, "state ", 6)) {
		close(fd);
		return 0;
	}
	tv.tv_sec = 0;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (weft_file_own(&ctl_file, fd, weft_cfg.control)) {
		close(fd);
		return 0;
	}
	ctl_fd = ctl_file.fd;
	int paused = !strcmp(line + 6, "disabled");
	atomic_store(&weft_g.paused, paused);
	if (weft_g.on_pause)
		weft_g.on_pause(paused);
	return !strcmp(line + 6, "stopped");
}

/* "WORD N\n" to the recorder, formatted by hand: this runs in exit handlers and fatal
 * signals' (async-signal-safe), never blocking. word: 3 to 8 letters. */
static void say(const char *word, unsigned v)
{
	int fd = ctl_fd;
	struct stat st; /* still weft's socket, not a file of the program's under its number */
	if (fd < 0 || getpid() != weft_g.pid || fstat(fd, &st) || st.st_dev != ctl_file.dev || st.st_ino != ctl_file.ino)
		return;
	char line[32], digits[12];
	unsigned n = 0, l = 0;
	while (*word && l < 8)
		line[l++] = *word++;
	line[l++] = ' ';
	do
		digits[n++] = (char)('0' + v % 10);
	while ((v /= 10) && n < sizeof(digits));
	while (n)
		line[l++] = digits[--n];
	line[l++] = '\n';
	send(fd, line, l, MSG_NOSIGNAL | MSG_DONTWAIT);
}

void weft_control_bye(int wait_status)
{
	say("bye", (unsigned)wait_status & 0xffff);
}

void weft_control_spawned(int pid)
{
	if (pid > 0)
		say("spawn", (unsigned)pid);
}

/* One command: 0 or -errno. */
static int apply(const char *cmd)
{
	if (!strcmp(cmd, "enable")) { /* (a process whose trace ended records nothing either way) */
		if (atomic_load(&weft_g.run) == WEFT_RUN_ON)
			weft_control_pause(0);
		return 0;
	}
	if (!strcmp(cmd, "disable")) {
		weft_control_pause(1);
		return 0;
	}
	if (!strcmp(cmd, "stop")) {
		/* the trace is finished here; the registry then counts events as after stop. As a
		 * program thread would call it: weft_stop's last flushes are skipped inside the
		 * runtime */
		weft_in_runtime--;
		int rc = weft_stop();
		weft_in_runtime++;
		atomic_store(&weft_g.paused, 0);
		return rc;
	}
	if (!strcmp(cmd, "ping"))
		return 0;
	if (!strncmp(cmd, "snapshot", 8) && (!cmd[8] || cmd[8] == ' ')) {
		const char *reason = cmd[8] ? cmd + 9 : NULL;
		weft_in_runtime--; /* as weft_snapshot() in a program thread */
		int rc = weft_snapshot_take(reason && *reason ? reason : NULL, WEFT_SNAP_COMMAND);
		weft_in_runtime++;
		return rc;
	}
	return -EINVAL;
}

static void *control_main(void *arg)
{
	int fd = (int)(intptr_t)arg;
	weft_in_runtime++; /* for the whole thread: nothing it does is the program's */
	weft_endwatch_own_thread();
	atomic_store(&thread_starting, 0);
	pthread_setname_np(pthread_self(), "weft-control");
	if (stop_pending) {
		stop_pending = 0;
		apply("stop");
	}
	char cmd[1024], reply[32];
	while (read_line(fd, cmd, sizeof(cmd)) >= 0) {
		if (!strcmp(cmd, "top")) { /* weft top: docs/top.md's lines, then the usual answer */
			char *text;
			size_t len;
			int rc = weft_live_report(&text, &len);
			if (!rc && write_all(fd, text, len))
				rc = -EPIPE;
			free(text);
			if (rc == -EPIPE)
				break;
			snprintf(reply, sizeof(reply), rc ? "err %d\n" : "ok\n", -rc);
			if (write_all(fd, reply, strlen(reply)))
				break;
			continue;
		}
		int rc = apply(cmd);
		if (rc < 0)
			snprintf(reply, sizeof(reply), "err %d\n", -rc);
		else
			snprintf(reply, sizeof(reply), "ok\n");
		if (write_all(fd, reply, strlen(reply)))
			break;
	}
	/* the recorder ended (or this process forked and exec'd, closing the socket): nothing
	 * more comes. The descriptor stays open while a fork handler might close it. */
	return NULL;
}

/* Fork: not while the control thread is being started (see thread_starting). */
static void atfork_prepare(void)
{
	while (atomic_load(&thread_starting))
		sched_yield();
}

/* A fork child: the parent's socket is the parent's. Hello again, then a thread of its own. */
static void atfork_child(void)
{
	if (ctl_fd < 0 || !weft_cfg.control[0])
		return;
	if (weft_control_hello() && atomic_load(&weft_g.run) == WEFT_RUN_ON)
		stop_pending = 1;
	if (atomic_load(&weft_g.run) == WEFT_RUN_ON)
		weft_registry_reevaluate();
	weft_control_start();
}

void weft_control_start(void)
{
	static int hooked;
	if (!hooked) {
		hooked = 1;
		static const struct weft_fork_hooks h = {atfork_prepare, NULL, atfork_child};
		weft_fork_hooks_add(&h);
	}
	if (ctl_fd < 0)
		return;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old); /* signals are the program's */
	pthread_t th;
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&at, 256 << 10); /* weft_stop and a snapshot run on it */
	atomic_store(&thread_starting, 1);
	if (pthread_create(&th, &at, control_main, (void *)(intptr_t)ctl_fd)) {
		atomic_store(&thread_starting, 0);
		close(ctl_fd);
		ctl_fd = -1;
	}
	pthread_attr_destroy(&at);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}
