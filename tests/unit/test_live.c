/* weft top's in-process view (src/lib/live.c) against running threads: while two threads nest
 * "inner" scopes in "outer" ones as fast as they can and a third sits inside "waiting" (its
 * only event, in a chunk no writer has seen), weft_live_report is asked again and again, as the
 * control thread does for weft top. Each answer must parse (docs/top.md's lines), show every
 * thread, the waiting thread's stack exactly, the busy threads' stacks as outer [> inner], and
 * once counting runs, inner's calls growing. The buffers block (overflow=block): a drop would
 * lose ends, and the stacks with them. Built with the sanitizers' suites, this is the
 * race check of the writer's walk against the query's copies (TSan runs no preloaded tests).
 * The control socket named does not exist, so no recorder answers but the process keeps its
 * stacks as under weft record (the writer's stack-only walk until the first question). */
#include "reexec.h"
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <weft.h>
#include "lib/internal.h"

static _Atomic int stop_flag;
static _Atomic int started;
static _Atomic unsigned long inner_calls;
static __thread volatile unsigned long sink;

static void *busy(void *arg)
{
	(void)arg;
	atomic_fetch_add(&started, 1);
	while (!atomic_load(&stop_flag)) {
		WEFT_SCOPE("outer");
		for (int k = 0; k < 50; k++) {
			WEFT_SCOPE("inner");
			sink += (unsigned long)k;
			atomic_fetch_add_explicit(&inner_calls, 1, memory_order_relaxed);
		}
	}
	return NULL;
}

static pthread_mutex_t wait_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wait_cond = PTHREAD_COND_INITIALIZER;
static _Atomic int waiter_tid;

static void *waiter(void *arg)
{
	(void)arg;
	WEFT_SCOPE("waiting");
	atomic_store(&waiter_tid, (int)gettid());
	atomic_fetch_add(&started, 1);
	pthread_mutex_lock(&wait_lock);
	while (!atomic_load(&stop_flag))
		pthread_cond_wait(&wait_cond, &wait_lock);
	pthread_mutex_unlock(&wait_lock);
	return NULL;
}

struct parsed {
	int threads, waiter_seen, waiter_ok, busy_stacks, bad_stacks;
	unsigned long long inner_calls;
};

/* The name of key in the answer's N lines, or NULL. */
static const char *name_of(const char *text, const char *key, char *buf, size_t n)
{
	char pat[40];
	snprintf(pat, sizeof(pat), "\nN %s ", key);
	const char *p = strstr(text, pat);
	if (!p)
		return NULL;
	p += strlen(pat);
	size_t l = strcspn(p, "\n");
	snprintf(buf, n, "%.*s", (int)l, p);
	return buf;
}

static void parse(const char *text, struct parsed *o)
{
	memset(o, 0, sizeof(*o));
	assert_true(!strncmp(text, "P ", 2));
	int wt = atomic_load(&waiter_tid);
	const char *l = text;
	int cur_tid = -1, depth_seen = 0;
	char first[64] = "";
	while (*l) {
		const char *nl = strchr(l, '\n');
		assert_non_null(nl);
		char line[1100];
		snprintf(line, sizeof(line), "%.*s", (int)(nl - l), l);
		int tid, alive;
		unsigned serial, depth;
		unsigned long long ev, calls, dr, mpi, lag, open_ns, self;
		char key[32], nb[256];
		if (sscanf(line, "T %d %u %d %llu %llu %llu %llu %u %llu", &tid, &serial, &alive, &ev, &calls, &dr, &mpi,
			   &depth, &lag) == 9) {
			o->threads++;
			cur_tid = tid;
			depth_seen = 0;
			if (tid == wt)
				o->waiter_seen = 1;
		} else if (sscanf(line, "S %d %31s %llu", &tid, key, &open_ns) == 3) {
			assert_int_equal(tid, cur_tid);
			const char *nm = name_of(text, key, nb, sizeof(nb));
			assert_non_null(nm);
			if (tid == wt) {
				o->waiter_ok = !depth_seen && !strcmp(nm, "waiting");
			} else if (!depth_seen) {
				snprintf(first, sizeof(first), "%s", nm);
				if (!strcmp(nm, "outer"))
					o->busy_stacks++;
				else
					o->bad_stacks++;
			} else if (depth_seen == 1 ? strcmp(nm, "inner") : 1) {
				o->bad_stacks++;
			}
			depth_seen++;
		} else if (sscanf(line, "E %d %31s %llu %llu", &tid, key, &calls, &self) == 4) {
			const char *nm = name_of(text, key, nb, sizeof(nb));
			if (nm && !strcmp(nm, "inner"))
				o->inner_calls += calls;
		} else {
			assert_true(line[0] == 'P' || line[0] == 'N');
		}
		l = nl + 1;
	}
}

static void live_view(void **s)
{
	(void)s;
	pthread_t th[3];
	assert_int_equal(pthread_create(&th[0], NULL, busy, NULL), 0);
	assert_int_equal(pthread_create(&th[1], NULL, busy, NULL), 0);
	assert_int_equal(pthread_create(&th[2], NULL, waiter, NULL), 0);
	while (atomic_load(&started) < 3)
		usleep(1000);
	usleep(50000); /* the writer walks some chunks before anyone asks: the stack-only walk */
	unsigned long long last_inner = 0, first_inner = 0;
	int busy_seen = 0;
	for (int q = 0; q < 40; q++) {
		char *text;
		size_t len;
		assert_int_equal(weft_live_report(&text, &len), 0);
		assert_non_null(text);
		assert_int_equal(strlen(text), len);
		struct parsed p;
		parse(text, &p);
		assert_true(p.threads >= 3);
		assert_true(p.waiter_seen);
		assert_true(p.waiter_ok);
		if (p.bad_stacks)
			fprintf(stderr, "answer %d:\n%s", q, text);
		assert_int_equal(p.bad_stacks, 0);
		free(text);
		busy_seen += p.busy_stacks;
		assert_true(p.inner_calls >= last_inner); /* counts only grow */
		if (!q)
			first_inner = p.inner_calls;
		last_inner = p.inner_calls;
		usleep(10000);
	}
	assert_true(busy_seen > 0);
	assert_true(last_inner > first_inner); /* inner's calls grew while they ran */
	atomic_store(&stop_flag, 1);
	pthread_mutex_lock(&wait_lock);
	pthread_cond_broadcast(&wait_cond);
	pthread_mutex_unlock(&wait_lock);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(weft_stop(), 0);
}

int main(int argc, char **argv)
{
	(void)argc;
	const char *dir = getenv("WEFT_LIVE_DIR");
	if (!dir) {
		static char tmp[] = "/tmp/weft-live-XXXXXX";
		if (!mkdtemp(tmp))
			return 1;
		char opts[256];
		snprintf(opts, sizeof(opts), "output=%s/t.data:chunk_size=64K:buffer_size=8M:overflow=block:control=%s/no-recorder.sock", tmp, tmp);
		setenv("WEFT_OPTIONS", opts, 1);
		setenv("WEFT_LIVE_DIR", tmp, 1);
		return weft_test_reexec(argv, tmp);
	}
	const struct CMUnitTest tests[] = {cmocka_unit_test(live_view)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
