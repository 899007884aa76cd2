/* The runtime's fork order for the collectors' handlers (weft_fork_hooks_add, session.c): a
 * collector's lock that another thread takes all the time is held by the forking thread across
 * every fork (prepare, newest collector first), released in the parent (oldest first), and in
 * the child each collector's handler runs once the child's own trace runs (its pid, its
 * writers) and inside the runtime, in the order the collectors were added. With handlers of
 * pthread_atfork's own order, a child handler ran before the trace was restarted, or a lock
 * came into the child held. 200 forks from a process whose other thread takes the lock. */
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
#include <sys/wait.h>
#include <weft.h>
#include "lib/internal.h"

#define FORKS 200

static pthread_mutex_t collector_lock = PTHREAD_MUTEX_INITIALIZER; /* collector a's */
static unsigned long guarded[2];                                   /* under collector_lock: equal */
static char order[16];                                             /* the forking thread's notes */
static int norder;
static _Atomic int quit;

static void note(char c)
{
	if (norder < (int)sizeof(order) - 1)
		order[norder++] = c;
}

static void a_prepare(void)
{
	note('a');
	pthread_mutex_lock(&collector_lock);
}
static void a_parent(void)
{
	note('A');
	pthread_mutex_unlock(&collector_lock);
}
static int child_saw_trace; /* the child's trace ran when a's child handler did */
static void a_child(void)
{
	note('1');
	child_saw_trace = weft_g.pid == getpid() && atomic_load(&weft_g.run) == WEFT_RUN_ON && weft_in_runtime > 0;
	pthread_mutex_init(&collector_lock, NULL);
}
static void b_prepare(void) { note('b'); }
static void b_parent(void) { note('B'); }
static void b_child(void) { note('2'); }

static void *taker(void *arg)
{
	(void)arg;
	while (!atomic_load(&quit)) {
		pthread_mutex_lock(&collector_lock);
		guarded[0]++;
		for (volatile int i = 0; i < 50; i++)
			;
		guarded[1]++;
		pthread_mutex_unlock(&collector_lock);
	}
	return NULL;
}

static void forks_keep_order_and_locks(void **s)
{
	(void)s;
	WEFT_INSTANT("start"); /* the trace runs */
	assert_int_equal(atomic_load(&weft_g.run), WEFT_RUN_ON);
	static const struct weft_fork_hooks a = {a_prepare, a_parent, a_child}, b = {b_prepare, b_parent, b_child};
	assert_int_equal(weft_fork_hooks_add(&a), 0);
	assert_int_equal(weft_fork_hooks_add(&b), 0);
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, taker, NULL), 0);
	for (int i = 0; i < FORKS; i++) {
		norder = 0;
		memset(order, 0, sizeof(order));
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			/* prepare ran newest first, then the children's oldest first; the lock is free
			 * and what it guards whole */
			int ok = !strcmp(order, "ba12") && child_saw_trace && pthread_mutex_trylock(&collector_lock) == 0 &&
				 guarded[0] == guarded[1];
			_exit(ok ? 0 : 1);
		}
		int st = -1;
		assert_int_equal(waitpid(pid, &st, 0), pid);
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 0);
		assert_string_equal(order, "baAB");
	}
	atomic_store(&quit, 1);
	pthread_join(th, NULL);
}

/* The options are read when the library loads: set them, in a fresh directory, and start
 * over; the directory is removed after the run. */
int main(int argc, char **argv)
{
	(void)argc;
	const char *dir = getenv("WEFT_FORKHOOKS_DIR");
	if (!dir) {
		static char tmp[] = "/tmp/weft-forkhooks-XXXXXX";
		if (!mkdtemp(tmp))
			return 1;
		char opts[256];
		snprintf(opts, sizeof(opts), "output=%s/t.data", tmp);
		setenv("WEFT_OPTIONS", opts, 1);
		setenv("WEFT_FORKHOOKS_DIR", tmp, 1);
		/* ThreadSanitizer kills a child of a threaded process that starts threads (the child's
		 * writers) unless told not to; it checks the rest */
		const char *tsan = getenv("TSAN_OPTIONS");
		char topts[512];
		snprintf(topts, sizeof(topts), "die_after_fork=0%s%s", tsan ? ":" : "", tsan ? tsan : "");
		setenv("TSAN_OPTIONS", topts, 1);
		return weft_test_reexec(argv, tmp);
	}
	const struct CMUnitTest tests[] = {cmocka_unit_test(forks_keep_order_and_locks)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
