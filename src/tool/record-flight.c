/*
 * record-flight.c - `weft record --flight-recorder[=SIZE[,AGE][,noexit]]`: the option, passed to
 * the runtime as flight= (src/lib/flight.c keeps the last SIZE of events of each process in
 * memory and writes DIR/snapshot-N when asked), and what record says at the end: DIR itself
 * holds no trace then, only the snapshots. --switch-output=SIZE|TIME and --switch-max-files=N
 * (switch_output=, switch_max_files=: src/lib/flight-switch.c) use the same ring: the trace is
 * written as consecutive parts DIR/part-N.
 */
#include "cmd.h"
#include "record-trigger.h"
#include "tracedir.h"
#include "../format/reader.h"
#include "../lib/internal.h"
#include <limits.h>
#include <stdio.h>
#include <string.h>

int weft_record_flight_option(const char *arg, char *extra, size_t n)
{
	static struct weft_config scratch;
	/* --flight-recorder alone is the default size; an empty one written out (=, =,30s, =64M,)
	 * is a mistake, which the runtime's parser (strtok skips empty fields) took as the default */
	if (arg && (!*arg || *arg == ',' || strstr(arg, ",,") || arg[strlen(arg) - 1] == ',')) {
		weft_cli_error("record", "bad --flight-recorder '%s': an empty SIZE or field; expected SIZE[,AGE][,noexit] "
			       "(SIZE 1M to 64G; --flight-recorder alone: 64M)", arg);
		return WEFT_EXIT_USAGE;
	}
	const char *v = arg ? arg : "64M";
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

int weft_record_switch_option(const char *key, const char *arg, char *extra, size_t n)
{
	static struct weft_config scratch;
	weft_config_defaults(&scratch);
	int output = !strcmp(key, "switch_output");
	/* switch_output=0 is the runtime's "off"; on the command line leaving the option out is
	 * off, and --switch-output=0 would make DIR hold neither a trace nor any part */
	if (!arg || strchr(arg, ':') || weft_config_set(&scratch, key, arg, 0) ||
	    (output && !scratch.switch_bytes && !scratch.switch_ns)) {
		if (output)
			weft_cli_error("record", "bad --switch-output '%s': expected a size from 256K to 16G (K/M/G) "
				       "or a time from 1ms (s, m, h), the length of each part", arg ? arg : "");
		else
			weft_cli_error("record", "bad --switch-max-files '%s': expected %s", arg ? arg : "",
				       weft_config_valid(key));
		return WEFT_EXIT_USAGE;
	}
	size_t l = strlen(extra);
	snprintf(extra + l, n - l, ":%s=%s", key, arg);
	return 0;
}

/* A window a fatal signal could not write: the runtime's one line, said on stderr. */
static void say_not_written(const char *name, const char *line, void *dir)
{
	fprintf(stderr, "weft: record: flight recorder: %s (%s/%s)\n", line, (const char *)dir, name);
}

/* How many events a full ring holds, as this run's last snapshot measured it (its RING record:
 * the frames' bytes against their events), and whether a snapshot that size is more than the
 * Perfetto UI loads. */
static void say_ring(const char *dir, unsigned last)
{
	char p[PATH_MAX + 64], err[256];
	snprintf(p, sizeof(p), "%s/snapshot-%u", dir, last);
	struct weft_trace *t = NULL;
	if (weft_trace_open(p, &t, err, sizeof(err)))
		return;
	for (size_t i = 0; i < t->nprocs; i++) {
		const struct weft_proc *q = &t->procs[i];
		if (!q->has_ring || !q->ring[1] || !q->ring[2])
			continue;
		double each = (double)q->ring[1] / (double)q->ring[2];
		double full = (double)q->ring[0] / each, ui = (double)weft_cli_ui_events();
		fprintf(stderr, "weft: record: flight recorder: a full %.0f MiB ring holds about %.2f M events of this "
			"program (%.1f B each in the ring)%s\n", (double)q->ring[0] / 1048576.0, full / 1e6, each,
			ui > 0 && full > ui ? "; more than the Perfetto UI loads: a smaller ring, or weft convert "
						"--time A:B on a snapshot" : "");
		break;
	}
	weft_trace_free(t);
}

int weft_record_flight_end(const char *dir, int quiet, int convert, int code)
{
	if (convert) /* each DIR/snapshot-N, to DIR/snapshot-N/trace.pftrace */
		weft_record_convert_snapshots(dir, quiet);
	struct weft_tracedir_subdirs s[2]; /* snapshot-N, part-N */
	weft_tracedir_subdirs(dir, s);
	unsigned snaps = s[0].n, parts = s[1].n;
	weft_tracedir_not_written(dir, say_not_written, (void *)dir); /* the runtime's word (lib/fatal.c) */
	if (!quiet && parts)
		fprintf(stderr, "weft: record: %u part%s in %s (part-N: each a trace directory)\n", parts,
			parts == 1 ? "" : "s", dir);
	else if (!quiet)
		fprintf(stderr, "weft: record: flight recorder: %u snapshot%s in %s%s\n", snaps, snaps == 1 ? "" : "s",
			dir, snaps ? " (snapshot-N: each a trace directory)" : "");
	if (!quiet && !parts && snaps)
		say_ring(dir, s[0].hi);
	return code;
}
