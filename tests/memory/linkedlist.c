/* linkedlist.c - the program of issue 18's first access probe: build_list mallocs 200,000
 * 56-byte nodes into a list. The heap grows as it goes (brk), so most of the page faults
 * build_list takes are inside malloc (it writes the new top chunk's header in the next page
 * before it returns the block), the rest in the program's own writes to a fresh node. With
 * argument "threads", four threads then build a list of 50,000 each at once (glibc gives them
 * arenas of their own, mmap'd and grown by mprotect). Built with -finstrument-functions. Transparent huge
 * pages are off for it: one fault per 4 KiB page, whatever the machine's setting.
 * The four threads free their lists only once all four are built: a thread that started after
 * another had ended would be given that one's arena (glibc reuses the arenas of threads that
 * ended), whose freed nodes (fastbins, never returned to the system) are already paged in - its
 * build_list would take no fault at all (on a loaded machine, where the threads ran one after
 * another). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#define NODES 200000
#define NOINLINE __attribute__((noinline))

struct node {
	struct node *next;
	long payload[6]; /* 56 bytes in all */
};

NOINLINE struct node *build_list(int n)
{
	struct node *head = NULL;
	for (int i = 0; i < n; i++) {
		struct node *x = malloc(sizeof(*x));
		if (!x)
			abort();
		x->next = head;
		for (int k = 0; k < 6; k++)
			x->payload[k] = i + k;
		head = x;
	}
	return head;
}

NOINLINE long walk_list(const struct node *x)
{
	long sum = 0;
	for (; x; x = x->next)
		sum += x->payload[0];
	return sum;
}

NOINLINE void free_list(struct node *x)
{
	while (x) {
		struct node *next = x->next;
		free(x);
		x = next;
	}
}

static pthread_barrier_t built; /* the four threads' lists, all built */
static int threaded;

static void *one_list(void *arg)
{
	int n = (int)(long)arg;
	struct node *l = build_list(n);
	if (threaded)
		pthread_barrier_wait(&built);
	long s = walk_list(l);
	free_list(l);
	return (void *)s;
}

int main(int argc, char **argv)
{
	prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
	one_list((void *)(long)NODES);
	if (argc > 1 && !strcmp(argv[1], "threads")) {
		pthread_t t[4];
		pthread_barrier_init(&built, NULL, 4);
		threaded = 1;
		for (int i = 0; i < 4; i++)
			pthread_create(&t[i], NULL, one_list, (void *)(long)(NODES / 4));
		for (int i = 0; i < 4; i++)
			pthread_join(t[i], NULL);
	}
	printf("built\n");
	return 0;
}
