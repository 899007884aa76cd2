/*
 * sysprobe - steps for the system sampler's tests (test_system.py), run in order:
 *   spin MS           a slice "spin" that burns MS ms of CPU on this thread; prints
 *                     "spin_cpu_ns N", the thread CPU time measured inside the slice
 *   alloc MIB         a slice "alloc" that allocates and touches MIB MiB, kept to the end
 *   set PATH VALUE    writes VALUE into PATH (a fixture file), then waits until the sampler
 *                     has read PATH three times (inotify IN_ACCESS): a sample surely saw it
 *   wait PATH         waits until the sampler has read PATH three times (its first value seen)
 *   nvml LIB N        waits until the sampler has asked the stub NVML LIB (tests/programs/
 *                     nvml_stub.c) for GPU 0's power N times
 * It traces itself (libweft, WEFT_OPTIONS) or runs under weft record.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>
#include "weft.h"

static double now_ms(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* value NULL: only the wait */
static void set_and_wait(const char *path, const char *value)
{
	int in = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (in < 0 || inotify_add_watch(in, path, IN_ACCESS) < 0) {
		perror(path);
		exit(1);
	}
	char buf[4096];
	while (read(in, buf, sizeof(buf)) > 0) /* nothing from before the write */
		;
	if (value) {
		int fd = open(path, O_WRONLY | O_CLOEXEC);
		char line[64];
		int n = snprintf(line, sizeof(line), "%s\n", value);
		/* one write at offset 0 of a file as long as every value written to it: no moment
		 * at which a reader finds it empty */
		if (fd < 0 || pwrite(fd, line, (size_t)n, 0) != n) {
			perror(path);
			exit(1);
		}
		close(fd);
	}
	int seen = 0;
	while (seen < 3) {
		ssize_t r = read(in, buf, sizeof(buf));
		if (r <= 0) {
			usleep(1000);
			continue;
		}
		for (ssize_t o = 0; o < r;) {
			const struct inotify_event *e = (const struct inotify_event *)(buf + o);
			seen += (e->mask & IN_ACCESS) != 0;
			o += (ssize_t)(sizeof(*e) + e->len);
		}
	}
	close(in);
}

static char *volatile kept; /* the alloc step's block, reachable to the end (not a leak) */

int main(int argc, char **argv)
{
	weft_start();
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "spin") && i + 1 < argc) {
			double ms = atof(argv[++i]), t0 = now_ms(CLOCK_THREAD_CPUTIME_ID);
			volatile unsigned long x = 0;
			double in0, in1;
			{
				WEFT_SCOPE("spin");
				in0 = now_ms(CLOCK_THREAD_CPUTIME_ID);
				while ((in1 = now_ms(CLOCK_THREAD_CPUTIME_ID)) - t0 < ms)
					for (int k = 0; k < 10000; k++)
						x += (unsigned long)k;
			}
			/* the thread CPU time spent inside the slice (cpu_mem_exact= compares with it) */
			printf("spin_cpu_ns %.0f\n", (in1 - in0) * 1e6);
			fflush(stdout);
		} else if (!strcmp(argv[i], "alloc") && i + 1 < argc) {
			size_t n = (size_t)atol(argv[++i]) << 20;
			WEFT_SCOPE("alloc");
			char *p = malloc(n);
			for (size_t k = 0; p && k < n; k += 4096)
				p[k] = 1;
			printf("%p\n", (void *)p); /* kept: the RSS at exit has it */
			kept = p;
		} else if (!strcmp(argv[i], "set") && i + 2 < argc) {
			set_and_wait(argv[i + 1], argv[i + 2]);
			i += 2;
		} else if (!strcmp(argv[i], "wait") && i + 1 < argc) {
			set_and_wait(argv[++i], NULL);
		} else if (!strcmp(argv[i], "nvml") && i + 2 < argc) {
			unsigned want = (unsigned)atoi(argv[i + 2]);
			for (;;) {
				void *h = dlopen(argv[i + 1], RTLD_NOW | RTLD_NOLOAD);
				unsigned (*calls)(unsigned) = h ? (unsigned (*)(unsigned))dlsym(h, "nvml_stub_power_calls") : NULL;
				unsigned got = calls ? calls(0) : 0;
				if (h)
					dlclose(h);
				if (got >= want)
					break;
				usleep(1000);
			}
			i += 2;
		} else {
			fprintf(stderr, "sysprobe: bad step '%s'\n", argv[i]);
			return 2;
		}
	}
	return 0;
}
