/* test_job_endings.c - the one line for how a job's ranks ended (src/tool/job-endings.c):
 * wait statuses in words, done files grouped by ending with rank ranges in rank order, ranks
 * that never registered, unreadable or foreign done files skipped, and a line that does not
 * fit cut with "..." (never past its buffer). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "tool/job-endings.h"

static char dir[64];

static void done(int pid, const char *host, const char *text)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/.weft-done-%d@%s", dir, pid, host);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int setup(void **s)
{
	(void)s;
	snprintf(dir, sizeof(dir), "/tmp/weft-endings-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **s)
{
	(void)s;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void words(void **s)
{
	(void)s;
	char w[96];
	weft_job_ending_words(3 << 8, w, sizeof(w));
	assert_string_equal(w, "exit status 3");
	weft_job_ending_words(SIGINT, w, sizeof(w));
	assert_string_equal(w, "killed by SIGINT");
	weft_job_ending_words(SIGKILL, w, sizeof(w));
	assert_string_equal(w, "killed by SIGKILL (its unwritten events lost)");
	weft_job_ending_words(SIGSEGV | 0x80, w, sizeof(w));
	assert_string_equal(w, "killed by SIGSEGV (core dumped)");
	weft_job_ending_words(-1, w, sizeof(w));
	assert_string_equal(w, "ended (status not seen)");
}

static void grouped_in_rank_order(void **s)
{
	(void)s;
	char out[512];
	weft_jobdir_endings(dir, "h", 0, out, sizeof(out));
	assert_string_equal(out, "");
	done(10, "h", "3 killed by SIGKILL\n");
	done(11, "h", "0 exit status 0\n");
	done(12, "h", "1 exit status 0\n");
	done(13, "h", "2 exit status 0\n");
	done(14, "h", "5 exit status 0\n");
	done(15, "other", "4 exit status 1\n"); /* another host sharing the directory: counted */
	done(16, "h", "");                       /* a recorder's that could not write its line */
	done(17, "h", "x garbage\n");
	weft_jobdir_endings(dir, "h", 0, out, sizeof(out));
	assert_string_equal(out, "ranks 0-2,5 exit status 0, rank 3 killed by SIGKILL, rank 4 exit status 1");
	/* with the job's size: the ranks without a done file */
	weft_jobdir_endings(dir, "h", 9, out, sizeof(out));
	assert_string_equal(out, "ranks 0-2,5 exit status 0, rank 3 killed by SIGKILL, rank 4 exit status 1, "
				 "ranks 6-8 not run under weft");
}

static void cut_to_fit(void **s)
{
	(void)s;
	for (int r = 0; r < 200; r += 2) { /* 100 groups of one rank each */
		char line[64];
		snprintf(line, sizeof(line), "%d exit status %d\n", r, r + 1);
		done(1000 + r, "h", line);
	}
	char out[64];
	memset(out, 'Z', sizeof(out));
	weft_jobdir_endings(dir, "h", 0, out, 40);
	assert_true(strlen(out) < 40);
	assert_int_equal(out[40], 'Z'); /* nothing written past n */
	assert_string_equal(out, "rank 0 exit status 1, rank 2 ..."); /* (whole words, or "...") */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(words),
		cmocka_unit_test_setup_teardown(grouped_in_rank_order, setup, teardown),
		cmocka_unit_test_setup_teardown(cut_to_fit, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
