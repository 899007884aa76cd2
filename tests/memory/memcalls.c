/* memcalls.c - one malloc and one free, one anonymous mapping the program makes and unmaps, and
 * one file mapping it unmaps (a munmap that frees nothing weft recorded): the report's calls
 * line must say 1 allocation and 1 free for malloc, whatever the munmaps. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

void *volatile memcalls_sink;

int main(int argc, char **argv)
{
	(void)argc;
	memcalls_sink = malloc(100);
	free(memcalls_sink);
	void *a = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (a == MAP_FAILED || munmap(a, 4096))
		return 1;
	int fd = open(argv[0], O_RDONLY); /* a file mapping: not an allocation */
	void *f = fd < 0 ? MAP_FAILED : mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
	if (f == MAP_FAILED || munmap(f, 4096))
		return 1;
	close(fd);
	return 0;
}
