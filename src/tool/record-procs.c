/*
 * record-procs.c - the traced processes weft record waits for by pid (record-procs.h): those
 * whose control connection closed without `bye`, until their new image says hello, they end,
 * or /proc shows an image the runtime never starts in. Read from /proc/PID/stat and maps.
 */
#include "tool/record-procs.h"
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int execing[64];
static size_t nexecing;

void weft_rec_exec_forget(int pid)
{
	for (size_t i = 0; i < nexecing; i++)
		if (execing[i] == pid) {
			execing[i] = execing[--nexecing];
			return;
		}
}

void weft_rec_exec_note(int pid)
{
	weft_rec_exec_forget(pid);
	if (nexecing == sizeof(execing) / sizeof(execing[0])) /* (full: the oldest goes) */
		memmove(execing, execing + 1, --nexecing * sizeof(execing[0]));
	execing[nexecing++] = pid;
}

static int proc_open(int pid, const char *what)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/%s", pid, what);
	return open(path, O_RDONLY | O_CLOEXEC);
}

int weft_rec_proc_alive(int pid)
{
	char buf[256];
	int fd = proc_open(pid, "stat");
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	const char *e = strrchr(buf, ')'); /* the state after the command's name */
	return e && e[1] == ' ' && e[2] != 'Z' && e[2] != 'X';
}

/* 1 when pid's image is one weft's runtime will never start in: a static one (neither the
 * dynamic loader nor the preload mapped: a Go program, a static tool). */
static int untraceable(int pid)
{
	char buf[4096];
	int fd = proc_open(pid, "maps");
	if (fd < 0)
		return 0;
	int loader = 0, any = 0;
	size_t keep = 0;
	ssize_t n;
	while (!loader && (n = read(fd, buf + keep, sizeof(buf) - 1 - keep)) > 0) {
		any = 1;
		buf[keep + (size_t)n] = 0;
		loader = strstr(buf, "/ld-linux") || strstr(buf, "/ld-musl") || strstr(buf, "libweft-preload");
		size_t len = keep + (size_t)n; /* (a name cut at the read's end: its tail kept) */
		keep = len > 64 ? 64 : len;
		memmove(buf, buf + len - keep, keep);
	}
	close(fd);
	return any && !loader;
}

size_t weft_rec_execs_pending(void)
{
	for (size_t i = nexecing; i-- > 0;)
		if (!weft_rec_proc_alive(execing[i]) || untraceable(execing[i]))
			execing[i] = execing[--nexecing];
	return nexecing;
}

size_t weft_rec_execs(int *pids, size_t max)
{
	for (size_t i = 0; i < max && i < nexecing; i++)
		pids[i] = execing[i];
	return nexecing;
}
