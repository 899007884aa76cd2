/* fdreader FILE: a program that, as daemons do, closes every descriptor above 2 at start
 * (close_range), then opens FILE (it gets descriptor 3) and reads it a byte at a time through an
 * instrumented function, one call per line: prints the descriptor, the lines and their sum.
 * Whatever weft opened before main (perf events, /proc files) had a number the program's file
 * may now have: a read of weft's through it would take the program's bytes. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

__attribute__((noinline)) static int read_line(int fd, char *b, int n)
{
	int i = 0;
	while (i < n - 1 && read(fd, b + i, 1) == 1)
		if (b[i++] == '\n')
			break;
	b[i] = 0;
	return i;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	syscall(SYS_close_range, 3u, ~0u, 0u);
	int fd = open(argv[1], O_RDONLY);
	char b[64];
	long sum = 0, lines = 0;
	while (read_line(fd, b, (int)sizeof(b)) > 0) {
		sum += atol(b);
		lines++;
	}
	printf("fd %d lines %ld sum %ld\n", fd, lines, sum);
	return 0;
}
