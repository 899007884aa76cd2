/*
 * record-flight.c - `weft record --flight-recorder[=SIZE[,AGE][,noexit]]`: the option, passed to
 * the runtime as flight= (src/lib/flight.c keeps the last SIZE of events of each process in
 * memory and writes DIR/snapshot-N when asked), and what record says at the end: DIR itself
 * holds no trace then, only the snapshots.
 */
#include "cmd.h"
#include "../lib/internal.h"
#include <dirent.h>
#include <stdio.h>
#include <string.h>

int weft_record_flight_option(const char *arg, char *extra, size_t n)
{
	static struct weft_config scratch;
	const char *v = arg && *arg ? arg : "64M";
	weft_config_defaults(&scratch);
	if (strchr(v, ':') || weft_config_set(&scratch, "flight", v, 0) || !scratch.flight_size) {
		weft_cli_error("record", "bad --flight-recorder '%s': expected SIZE[,AGE][,noexit] (SIZE 1M to 64G, "
			       "default 64M; AGE a duration such as 30s)", v);
		return WEFT_EXIT_USAGE;
	}
	size_t l = strlen(extra);
	snprintf(extra + l, n - l, ":flight=%s", v);
	return 0;
}

int weft_record_flight_end(const char *dir, int quiet, int code)
{
	int snaps = 0;
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d)))
		snaps += !strncmp(e->d_name, "snapshot-", 9);
	if (d)
		closedir(d);
	if (!quiet)
		fprintf(stderr, "weft: record: flight recorder: %d snapshot%s in %s%s\n", snaps, snaps == 1 ? "" : "s",
			dir, snaps ? " (snapshot-N: each a trace directory)" : "");
	return code;
}
