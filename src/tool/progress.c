/*
 * progress.c - the progress line (progress.h). A thread wakes every 50 ms; past the delay it
 * writes "weft: CMD: reading the trace" or "weft: CMD: converting, N% (X of Y M events)",
 * counting what the exporters report in weft_export_progress, with \r and an erase to end of
 * line, so the line is replaced in place; stop erases it before the command's own last line.
 * A conversion that outlasted the delay shows the line at least once, even if it ended
 * between two looks.
 */
#include "tool/progress.h"
#include "export/export.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

struct weft_progress {
	const char *cmd;
	pthread_t th;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int stop;          /* under lock: set by weft_progress_stop */
	_Atomic uint64_t total; /* set once the trace is read (0: reading) */
	uint64_t base;     /* weft_export_progress when started */
};

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void *line_main(void *arg)
{
	struct weft_progress *pr = arg;
	const char *d = getenv("WEFT_PROGRESS_DELAY_MS");
	uint64_t start = now_ms(), delay = d && *d ? strtoull(d, NULL, 10) : 1000, last = 0;
	int shown = 0;
	pthread_mutex_lock(&pr->lock);
	for (;;) {
		uint64_t t = now_ms();
		/* past the delay: every 250 ms, and once at least (a conversion that ended between two
		 * looks still says it lasted that long) */
		if (t - start >= delay && (!shown || (!pr->stop && t - last >= 250))) {
			uint64_t total = atomic_load(&pr->total);
			uint64_t done = atomic_load_explicit(&weft_export_progress, memory_order_relaxed) - pr->base;
			if (!total)
				fprintf(stderr, "\rweft: %s: reading the trace\033[K", pr->cmd);
			else
				fprintf(stderr, "\rweft: %s: converting, %u%% (%.1f of %.1f M events)\033[K", pr->cmd,
					(unsigned)(done >= total ? 99 : done * 100 / total),
					(double)(done > total ? total : done) / 1e6, (double)total / 1e6);
			fflush(stderr);
			shown = 1;
			last = t;
		}
		if (pr->stop)
			break;
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 50 * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&pr->cond, &pr->lock, &ts);
	}
	pthread_mutex_unlock(&pr->lock);
	if (shown) {
		fprintf(stderr, "\r\033[K");
		fflush(stderr);
	}
	return NULL;
}

struct weft_progress *weft_progress_start(const char *cmd)
{
	if (!isatty(STDERR_FILENO))
		return NULL;
	struct weft_progress *pr = calloc(1, sizeof(*pr));
	if (!pr)
		return NULL;
	pr->cmd = cmd;
	pr->base = atomic_load(&weft_export_progress);
	pthread_mutex_init(&pr->lock, NULL);
	pthread_cond_init(&pr->cond, NULL);
	if (pthread_create(&pr->th, NULL, line_main, pr)) {
		free(pr);
		return NULL;
	}
	return pr;
}

void weft_progress_total(struct weft_progress *pr, uint64_t total)
{
	if (pr)
		atomic_store(&pr->total, total ? total : 1);
}

void weft_progress_stop(struct weft_progress *pr)
{
	if (!pr)
		return;
	pthread_mutex_lock(&pr->lock);
	pr->stop = 1;
	pthread_cond_signal(&pr->cond);
	pthread_mutex_unlock(&pr->lock);
	pthread_join(pr->th, NULL);
	pthread_mutex_destroy(&pr->lock);
	pthread_cond_destroy(&pr->cond);
	free(pr);
}
