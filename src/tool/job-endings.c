/*
 * job-endings.c - one line for how a job ended (job-endings.h). A rank's done file in DIR,
 * .weft-done-PID@HOST, holds "RANK WORDS\n"; the line groups the ranks by their words, each
 * group's ranks as ranges ("0-2,5"), the groups in the order of their first rank.
 */
#include "tool/job-endings.h"
#include "tool/tracedir.h"
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

void weft_job_ending_words(int status, char *out, size_t n)
{
	if (status < 0)
		snprintf(out, n, "ended (status not seen)");
	else if (WIFEXITED(status))
		snprintf(out, n, "exit status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status)) {
		const char *abbrev = sigabbrev_np(WTERMSIG(status));
		char num[16];
		snprintf(num, sizeof(num), "%d", WTERMSIG(status));
		/* (SIGKILL: no handler of weft's ran, the events still in memory are gone) */
		snprintf(out, n, "killed by SIG%s%s", abbrev ? abbrev : num,
			 WCOREDUMP(status) ? " (core dumped)" : WTERMSIG(status) == SIGKILL ? " (its unwritten events lost)" : "");
	} else
		snprintf(out, n, "ended (status %#x)", (unsigned)status);
}

struct ending {
	long rank;
	char words[80];
};

static int by_words_then_rank(const void *a, const void *b)
{
	const struct ending *x = a, *y = b;
	int c = strcmp(x->words, y->words);
	return c ? c : (x->rank > y->rank) - (x->rank < y->rank);
}

/* appends s to out at *len; "..." (and nothing more) once it does not fit */
static void put(char *out, size_t n, size_t *len, const char *s)
{
	size_t l = strlen(s);
	if (*len >= n)
		return;
	if (*len + l + 4 > n) { /* (4: room for "..." is always kept) */
		snprintf(out + *len, n - *len, "...");
		*len = n;
		return;
	}
	memcpy(out + *len, s, l + 1);
	*len += l;
}

/* the ranks below size missing from e[0..ne) (sorted by rank), as ranges */
static void put_missing(const struct ending *e, size_t ne, unsigned size, char *out, size_t n, size_t *len)
{
	char *seen = calloc(size ? size : 1, 1);
	unsigned missing = 0;
	if (!seen)
		return;
	for (size_t i = 0; i < ne; i++)
		if (e[i].rank >= 0 && (unsigned long)e[i].rank < size)
			seen[e[i].rank] = 1;
	for (unsigned r = 0; r < size; r++)
		missing += !seen[r];
	if (missing) {
		char buf[64];
		put(out, n, len, *len ? ", " : "");
		put(out, n, len, missing > 1 ? "ranks " : "rank ");
		for (unsigned r = 0, k = 0; r < size; r++) {
			if (seen[r] || (r > 0 && !seen[r - 1]))
				continue;
			unsigned end = r;
			while (end + 1 < size && !seen[end + 1])
				end++;
			if (end > r)
				snprintf(buf, sizeof(buf), "%s%u-%u", k++ ? "," : "", r, end);
			else
				snprintf(buf, sizeof(buf), "%s%u", k++ ? "," : "", r);
			put(out, n, len, buf);
		}
		put(out, n, len, " not run under weft");
	}
	free(seen);
}

void weft_jobdir_endings(const char *dir, const char *host, unsigned size, char *out, size_t n)
{
	out[0] = 0;
	struct ending *e = NULL;
	size_t ne = 0, cap = 0, gone = 0;
	DIR *d = opendir(dir);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (!strncmp(de->d_name, ".weft-run-", 10)) { /* a recorder killed before it could say */
			gone += weft_jobdir_run_gone(de->d_name, host);
			continue;
		}
		if (strncmp(de->d_name, ".weft-done-", 11))
			continue;
		char path[4096], line[128];
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		FILE *f = fopen(path, "re");
		char *end;
		long rank;
		if (!f)
			continue;
		if (fgets(line, sizeof(line), f) && (rank = strtol(line, &end, 10)) >= 0 && end != line && *end == ' ') {
			if (ne == cap) {
				struct ending *ng = realloc(e, (cap = cap ? 2 * cap : 64) * sizeof(*e));
				if (!ng) {
					fclose(f);
					break;
				}
				e = ng;
			}
			e[ne].rank = rank;
			snprintf(e[ne].words, sizeof(e[ne].words), "%.*s", (int)strcspn(end + 1, "\n"), end + 1);
			ne++;
		}
		fclose(f);
	}
	if (d)
		closedir(d);
	qsort(e, ne, sizeof(*e), by_words_then_rank);
	/* the groups, in the order of their first (lowest) rank */
	size_t len = 0, ngroups = 0;
	size_t *first = malloc((ne + 1) * sizeof(*first));
	for (size_t i = 0; first && i < ne; i++)
		if (!i || strcmp(e[i].words, e[i - 1].words))
			first[ngroups++] = i;
	for (size_t g = 0; first && g < ngroups; g++) /* insertion sort by first rank: few groups */
		for (size_t h = g; h > 0 && e[first[h]].rank < e[first[h - 1]].rank; h--) {
			size_t t = first[h];
			first[h] = first[h - 1];
			first[h - 1] = t;
		}
	for (size_t g = 0; first && g < ngroups && len < n; g++) {
		size_t i = first[g], j = i;
		while (j < ne && !strcmp(e[j].words, e[i].words))
			j++;
		char buf[64];
		put(out, n, &len, g ? ", " : "");
		put(out, n, &len, j - i > 1 ? "ranks " : "rank ");
		for (size_t k = i; k < j;) {
			size_t r = k;
			while (r + 1 < j && e[r + 1].rank == e[r].rank + 1)
				r++;
			if (r > k)
				snprintf(buf, sizeof(buf), "%s%ld-%ld", k > i ? "," : "", e[k].rank, e[r].rank);
			else
				snprintf(buf, sizeof(buf), "%s%ld", k > i ? "," : "", e[k].rank);
			put(out, n, &len, buf);
			k = r + 1;
		}
		put(out, n, &len, " ");
		put(out, n, &len, e[i].words);
	}
	if (gone && len < n) {
		char buf[96];
		snprintf(buf, sizeof(buf), "%s%zu recorder%s gone without a word (killed)", len ? ", " : "", gone,
			 gone == 1 ? "" : "s");
		put(out, n, &len, buf);
	}
	put_missing(e, ne, size, out, n, &len);
	free(first);
	free(e);
}
