/*
 * glob.c - shell-style matching ('*', '?', '[...]') for categories= and filter=, via fnmatch(3),
 * and the list semantics: "a,b,-c" enables what a or b match, except what c matches.
 */
#include "internal.h"
#include <fnmatch.h>
#include <string.h>

int weft_glob_match(const char *pat, const char *s)
{
	return fnmatch(pat, s, 0) == 0;
}

/* Returns 1 if s is selected by the comma list. A list with no positive glob selects
 * everything not excluded; an empty list selects `empty_means`. */
int weft_glob_list_match(const char *list, const char *s, int empty_means)
{
	if (!list || !*list)
		return empty_means;
	int positives = 0, hit = 0;
	const char *p = list;
	while (*p) {
		const char *e = strchr(p, ',');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		char g[256];
		if (n && n < sizeof(g)) {
			memcpy(g, p, n);
			g[n] = 0;
			if (g[0] == '-') {
				if (weft_glob_match(g + 1, s))
					return 0;
			} else {
				positives++;
				if (weft_glob_match(g, s))
					hit = 1;
			}
		}
		p += n;
		if (*p == ',')
			p++;
	}
	return positives ? hit : 1;
}
