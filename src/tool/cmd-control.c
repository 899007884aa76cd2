/*
 * cmd-control.c - `weft snapshot DIR [REASON]`, `weft enable DIR`, `weft disable DIR`, `weft
 * stop DIR`: the control commands of docs/control.md, sent from another shell to the `weft
 * record` writing DIR through its control socket, DIR/.control.PID (record-control.c; one per
 * recorder: the ranks of a job sharing DIR each have theirs, and every one is told). Exits 0
 * once every recorder answered `ack` (the command took effect in every process it traces); 1
 * with one line when nothing records DIR or a recorder answered an error.
 */
#include "tool/cmd.h"
#include "tool/record-control.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static void usage(FILE *f, const char *cmd)
{
	if (!strcmp(cmd, "snapshot"))
		fprintf(f, "usage: weft snapshot DIR [REASON]\n"
			"Ask the weft record writing DIR for a snapshot now (in every process it traces),\n"
			"with REASON on its marker. Exit 0 once taken, 1 if nothing records DIR or it failed.\n");
	else
		fprintf(f, "usage: weft %s DIR\n"
			"%s\nthe weft record writing DIR, in every process it traces (docs/control.md).\n"
			"Exit 0 once done, 1 if nothing records DIR or it failed.\n", cmd,
			!strcmp(cmd, "enable") ? "Enable recording in" : !strcmp(cmd, "disable") ?
			"Disable recording (events are counted, not recorded) in" :
			"Finish the trace (the program runs on untraced) of");
}

int weft_rctl_connect(const char *dir, const char *name)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int dirfd = -1;
	if (strlen(dir) + 1 + strlen(name) < sizeof(a.sun_path)) {
		memcpy(a.sun_path, dir, strlen(dir));
		a.sun_path[strlen(dir)] = '/';
		memcpy(a.sun_path + strlen(dir) + 1, name, strlen(name) + 1);
	} else {
		dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (dirfd < 0)
			return -errno;
		snprintf(a.sun_path, sizeof(a.sun_path), "/proc/self/fd/%d/%s", dirfd, name);
	}
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int rc = fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) ? -errno : 0;
	if (dirfd >= 0)
		close(dirfd);
	if (rc && fd >= 0)
		close(fd);
	return rc ? rc : fd;
}

/* Sends line to the recorder listening on DIR/name; its answer in reply. 0 when it answered,
 * -errno when it cannot be reached. */
static int ask(const char *dir, const char *name, const char *line, char *reply, size_t n)
{
	int fd = weft_rctl_connect(dir, name);
	int rc = fd < 0 ? fd : 0;
	size_t len = strlen(line), got = 0;
	if (!rc && send(fd, line, len, MSG_NOSIGNAL) != (ssize_t)len)
		rc = -EPIPE;
	while (!rc && got + 1 < n) {
		ssize_t r = read(fd, reply + got, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 || reply[got] == '\n')
			break;
		got++;
	}
	if (!rc && !got)
		rc = -ECONNRESET; /* it ended (its program ended) before answering */
	if (!rc)
		reply[got] = 0;
	if (fd >= 0)
		close(fd);
	return rc;
}

int cmd_control(int argc, char **argv)
{
	const char *cmd = argv[0];
	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		usage(stdout, cmd);
		return WEFT_EXIT_OK;
	}
	int snap = !strcmp(cmd, "snapshot");
	if (argc < 2 || argc > (snap ? 3 : 2) || argv[1][0] == '-') {
		usage(stderr, cmd);
		return WEFT_EXIT_USAGE;
	}
	const char *dir = argv[1];
	char line[1100];
	snprintf(line, sizeof(line), "cmd %s%s%s\n", cmd, snap && argc == 3 ? " " : "", snap && argc == 3 ? argv[2] : "");
	for (char *p = line + 4; p[1]; p++) /* one line: a REASON's newlines become spaces */
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	DIR *d = opendir(dir);
	struct dirent *e;
	int asked = 0, failed = 0;
	while (d && (e = readdir(d))) {
		if (strncmp(e->d_name, WEFT_CONTROL_PREFIX, strlen(WEFT_CONTROL_PREFIX)))
			continue;
		char reply[1200];
		int rc = ask(dir, e->d_name, line, reply, sizeof(reply));
		if (rc == -ECONNREFUSED || rc == -ENOENT)
			continue; /* left by a recorder that was killed */
		if (rc) {
			weft_cli_error(cmd, "%s/%s: %s", dir, e->d_name, strerror(-rc));
			failed = 1;
			continue;
		}
		asked++;
		if (strcmp(reply, "ack")) {
			weft_cli_error(cmd, "%s", !strncmp(reply, "error: ", 7) ? reply + 7 : reply);
			failed = 1;
		}
	}
	if (d)
		closedir(d);
	if (!asked && !failed) {
		weft_cli_error(cmd, "nothing records %s", dir);
		return WEFT_EXIT_FAIL;
	}
	return failed ? WEFT_EXIT_FAIL : WEFT_EXIT_OK;
}
