/*
 * trigger-spec.c - the trigger= option's syntax, shared by the runtime and `weft record`, which
 * checks a --trigger before anything runs: PATTERN>DURATION, comma-separated. PATTERN is a
 * glob or /regex/ of slice names (glob.c, as in filter=); DURATION like 20ms or 1.5s. A slice
 * whose name matches and that lasts longer than DURATION requests a snapshot at its end.
 */
#include "internal.h"
#include <errno.h>
#include <stdio.h>
#include <string.h>

int weft_trigger_parse(const char *list, struct weft_trigger_spec *out, char *why, size_t n)
{
	int count = 0;
	const char *p = list;
	if (!*p)
		return 0;
	for (;;) {
		const char *end = strchrnul(p, ',');
		char spec[300], err[160];
		if (end == p || (size_t)(end - p) >= sizeof(spec)) {
			snprintf(why, n, end == p ? "an empty trigger" : "a trigger longer than %zu bytes", sizeof(spec) - 1);
			return -EINVAL;
		}
		if (count == WEFT_MAX_TRIGGERS) {
			snprintf(why, n, "at most %d triggers", WEFT_MAX_TRIGGERS);
			return -EINVAL;
		}
		memcpy(spec, p, (size_t)(end - p));
		spec[end - p] = 0;
		char *gt = strrchr(spec, '>');
		if (!gt || gt == spec || !gt[1]) {
			snprintf(why, n, "'%s' is not PATTERN>DURATION", spec);
			return -EINVAL;
		}
		*gt = 0;
		struct weft_trigger_spec *t = &out[count];
		if (strlen(spec) >= sizeof(t->pattern) || weft_glob_check(spec, err, sizeof(err))) {
			snprintf(why, n, "bad pattern '%s': %s", spec, strlen(spec) >= sizeof(t->pattern) ? "too long" : err);
			return -EINVAL;
		}
		if (weft_parse_duration(gt + 1, &t->min_ns)) {
			snprintf(why, n, "bad duration '%s' (expected such as 20ms, 500us, 1.5s)", gt + 1);
			return -EINVAL;
		}
		memcpy(t->pattern, spec, strlen(spec) + 1);
		count++;
		if (!*end)
			return count;
		p = end + 1;
	}
}
