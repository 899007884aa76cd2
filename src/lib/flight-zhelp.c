/*
 * flight-zhelp.c - a second compressor for a snapshot's frames.
 *
 * The ring keeps frames packed, not compressed (the writers' path stays short); a snapshot
 * compresses the ones it writes. At the program's exit that is a serial tail after its last
 * event - 17 ms for fib(30)'s 16M ring here, where a normal recording had compressed the same
 * chunks on the writer's core during the run. With this helper a snapshot compresses two
 * frames at a time: flight-snap.c gives every other whole frame to the helper's thread while it
 * compresses the one before, and writes both in order. zstd's output does not depend on which
 * thread made it, so the snapshot's bytes are the same.
 *
 * Only outside a signal handler (a thread is made and joined per snapshot; its context and
 * buffer are allocated at the first and kept), on a machine with two CPUs or more, and for a
 * ring of FL_ZHELP_MIN or more (a smaller one's window compresses in a few ms, and the
 * helper's 2-3 MB would be a large share of its memory bound).
 */
#include "flight.h"
#include <errno.h>
#include <signal.h>
#include <unistd.h>

#define FL_ZHELP_MIN (8u << 20)

static pthread_mutex_t zh_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t zh_cond = PTHREAD_COND_INITIALIZER;
static pthread_t zh_thread;
static ZSTD_CCtx *zh_cctx;
static uint8_t *zh_buf;
static size_t zh_cap;
/* the job, under zh_lock: 0 none, 1 given, 2 done (zh_z its size, 0 where it did not shrink) */
static int zh_state, zh_quit, zh_running;
static const void *zh_src;
static size_t zh_n, zh_z;

static void *zh_main(void *arg)
{
	(void)arg;
	weft_in_runtime = 1;
	pthread_setname_np(pthread_self(), "weft-snapzip");
	weft_endwatch_own_thread();
	pthread_mutex_lock(&zh_lock);
	for (;;) {
		while (zh_state != 1 && !zh_quit)
			pthread_cond_wait(&zh_cond, &zh_lock);
		if (zh_quit)
			break;
		const void *src = zh_src;
		size_t n = zh_n;
		pthread_mutex_unlock(&zh_lock);
		size_t z = ZSTD_compressCCtx(zh_cctx, zh_buf, zh_cap, src, n, weft_cfg.compression);
		pthread_mutex_lock(&zh_lock);
		zh_z = ZSTD_isError(z) || z >= n ? 0 : z;
		zh_state = 2;
		pthread_cond_broadcast(&zh_cond);
	}
	pthread_mutex_unlock(&zh_lock);
	return NULL;
}

int fl_zhelp_start(void)
{
	static long cpus;
	if (!cpus)
		cpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (weft_g.in_signal || weft_fatal_thread || !weft_cfg.compression || fl_ring_size < FL_ZHELP_MIN || cpus < 2)
		return 0;
	if (!zh_cctx && !(zh_cctx = ZSTD_createCCtx()))
		return 0;
	if (!zh_buf) {
		if (!(zh_buf = malloc(fl_zcap)))
			return 0;
		zh_cap = fl_zcap;
	}
	zh_state = zh_quit = 0;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old); /* signals stay with the program's threads */
	int rc = pthread_create(&zh_thread, NULL, zh_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	zh_running = rc == 0;
	return zh_running;
}

int fl_zhelp_give(const void *src, size_t n)
{
	if (!zh_running || n > fl_packcap)
		return 0;
	pthread_mutex_lock(&zh_lock);
	zh_src = src;
	zh_n = n;
	zh_state = 1;
	pthread_cond_broadcast(&zh_cond);
	pthread_mutex_unlock(&zh_lock);
	return 1;
}

size_t fl_zhelp_take(const uint8_t **out)
{
	pthread_mutex_lock(&zh_lock);
	while (zh_state != 2)
		pthread_cond_wait(&zh_cond, &zh_lock);
	zh_state = 0;
	size_t z = zh_z;
	pthread_mutex_unlock(&zh_lock);
	*out = zh_buf;
	return z;
}

void fl_zhelp_stop(void)
{
	if (!zh_running)
		return;
	pthread_mutex_lock(&zh_lock);
	zh_quit = 1;
	pthread_cond_broadcast(&zh_cond);
	pthread_mutex_unlock(&zh_lock);
	pthread_join(zh_thread, NULL);
	zh_running = 0;
}

void fl_zhelp_atfork_child(void)
{
	pthread_mutex_init(&zh_lock, NULL);
	pthread_cond_init(&zh_cond, NULL);
	zh_running = 0; /* (a parent's helper does not exist here) */
	zh_state = 0;
}

void fl_zhelp_free(void)
{
	fl_zhelp_stop();
	ZSTD_freeCCtx(zh_cctx);
	free(zh_buf);
	zh_cctx = NULL;
	zh_buf = NULL;
	zh_cap = 0;
}
