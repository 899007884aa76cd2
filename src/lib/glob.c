/*
 * glob.c - name patterns for categories=, filter=, func_filter= and func_libs=, and the list
 * semantics: "a,b,-c" selects what a or b match, except what c matches.
 *
 * A pattern is a shell glob ('*', '?', '[...]', via fnmatch(3)), or, written between slashes
 * as in "/^is_(even|odd)$/", a POSIX extended regular expression that may match anywhere in the
 * name (anchor it with ^ and $). Patterns are matched when a call site or function is first
 * seen, never on the hot path; a regex is compiled per match, which costs microseconds, and
 * lists are checked when they are set, so a bad regex is an option error and not a silent
 * mismatch later.
 */
#include "internal.h"
#include <errno.h>
#include <fnmatch.h>
#include <regex.h>
#include <stdio.h>
#include <string.h>

static int is_regex(const char *pat, size_t n)
{
	return n >= 2 && pat[0] == '/' && pat[n - 1] == '/';
}

/* Compiles the regex between the slashes of pat (n bytes). 0 or a regcomp error code. */
static int compile(regex_t *re, const char *pat, size_t n)
{
	char buf[256];
	if (n - 2 >= sizeof(buf))
		return REG_ESPACE;
	memcpy(buf, pat + 1, n - 2);
	buf[n - 2] = 0;
	return regcomp(re, buf, REG_EXTENDED | REG_NOSUB);
}

int weft_glob_match(const char *pat, const char *s)
{
	size_t n = strlen(pat);
	if (!is_regex(pat, n))
		return fnmatch(pat, s, 0) == 0;
	regex_t re;
	if (compile(&re, pat, n))
		return 0;
	int hit = regexec(&re, s, 0, NULL, 0) == 0;
	regfree(&re);
	return hit;
}

int weft_glob_check(const char *pat, char *err, size_t errlen)
{
	size_t n = strlen(pat);
	if (!is_regex(pat, n))
		return 0;
	regex_t re;
	int rc = compile(&re, pat, n);
	if (!rc) {
		regfree(&re);
		return 0;
	}
	if (err && errlen)
		regerror(rc, &re, err, errlen);
	return -EINVAL;
}

/* Calls fn on each pattern of the comma list (without its '-'); stops at the first nonzero. */
static int each(const char *list, int (*fn)(const char *g, int neg, void *arg), void *arg)
{
	const char *p = list;
	while (*p) {
		const char *e = strchr(p, ',');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		char g[256];
		if (n && n < sizeof(g)) {
			memcpy(g, p, n);
			g[n] = 0;
			int rc = fn(g[0] == '-' ? g + 1 : g, g[0] == '-', arg);
			if (rc)
				return rc;
		} else if (n) {
			return -ENAMETOOLONG;
		}
		p += n;
		if (*p == ',')
			p++;
	}
	return 0;
}

struct list_state {
	const char *s;
	int positives, hit;
};

static int match_one(const char *g, int neg, void *arg)
{
	struct list_state *st = arg;
	if (neg)
		return weft_glob_match(g, st->s) ? 1 : 0; /* excluded: stop */
	st->positives++;
	if (weft_glob_match(g, st->s))
		st->hit = 1;
	return 0;
}

/* Returns 1 if s is selected by the comma list. A list with no positive pattern selects
 * everything not excluded; an empty list selects `empty_means`. */
int weft_glob_list_match(const char *list, const char *s, int empty_means)
{
	if (!list || !*list)
		return empty_means;
	struct list_state st = {s, 0, 0};
	if (each(list, match_one, &st))
		return 0;
	return st.positives ? st.hit : 1;
}

static int check_one(const char *g, int neg, void *arg)
{
	(void)neg;
	(void)arg;
	return weft_glob_check(g, NULL, 0);
}

int weft_glob_list_check(const char *list)
{
	return list ? each(list, check_one, NULL) : 0;
}
