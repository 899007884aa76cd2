/*
 * record-trigger.c - weft record's snapshot triggers and policy (issue 20): the options that
 * say when a snapshot is taken, checked here (a bad one is a usage error before the program
 * runs) and passed to the runtime as WEFT_OPTIONS keys (config.c: snapshot_signal=, trigger=,
 * max_snapshots=, min_interval=, after=), and the conversion of the snapshot directories the
 * run left (DIR/snapshot-N, written by the flight recorder) once the program has ended.
 */
#include "tool/record-trigger.h"
#include "tool/cmd.h"
#include "tool/outfile.h"
#include "export/export.h"
#include "lib/internal.h"
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int check(const char *flag, const char *key, const char *val)
{
	static struct weft_config scratch;
	weft_config_defaults(&scratch);
	if (!strchr(val, ':') && weft_config_set(&scratch, key, val, 0) == 0)
		return 0;
	weft_cli_error("record", "bad value '%s' for %s: expected %s", val, flag, weft_config_valid(key));
	return -1;
}

int weft_record_trigger_option(int c, const char *arg, char *extra, size_t n)
{
	static char triggers[1024]; /* every --trigger so far: the last trigger= key has them all */
	size_t l = strlen(extra);
	switch (c) {
	case WEFT_RECOPT_SNAPSHOT_SIGNAL:
		if (check("--snapshot-signal", "snapshot_signal", arg))
			return -1;
		snprintf(extra + l, n - l, ":snapshot_signal=%s", arg);
		return 0;
	case WEFT_RECOPT_TRIGGER: {
		struct weft_trigger_spec t[WEFT_MAX_TRIGGERS];
		char list[sizeof(triggers)], why[300];
		if (strpbrk(arg, ",:")) {
			weft_cli_error("record", "--trigger takes one PATTERN>DURATION without ',' or ':', not '%s'", arg);
			return -1;
		}
		if ((size_t)snprintf(list, sizeof(list), "%s%s%s", triggers, triggers[0] ? "," : "", arg) >= sizeof(list) ||
		    weft_trigger_parse(list, t, why, sizeof(why)) < 0) {
			weft_cli_error("record", "bad --trigger '%s': %s", arg,
				       strlen(triggers) + strlen(arg) + 2 > sizeof(list) ? "too long" : why);
			return -1;
		}
		snprintf(triggers, sizeof(triggers), "%s", list);
		snprintf(extra + l, n - l, ":trigger=%s", triggers);
		return 0;
	}
	case WEFT_RECOPT_MAX_SNAPSHOTS:
		if (check("--max-snapshots", "max_snapshots", arg))
			return -1;
		snprintf(extra + l, n - l, ":max_snapshots=%s", arg);
		return 0;
	case WEFT_RECOPT_MIN_INTERVAL:
		if (check("--min-interval", "min_interval", arg))
			return -1;
		snprintf(extra + l, n - l, ":min_interval=%s", arg);
		return 0;
	case WEFT_RECOPT_AFTER:
		if (check("--after", "after", arg))
			return -1;
		snprintf(extra + l, n - l, ":after=%s", arg);
		return 0;
	default:
		return -1;
	}
}

/* "snapshot-N", N a positive decimal number: a finished snapshot (the flight recorder writes
 * under another name and renames) */
static int snapshot_name(const char *name)
{
	if (strncmp(name, "snapshot-", 9) || !name[9] || name[9] == '0')
		return 0;
	for (const char *c = name + 9; *c; c++)
		if (*c < '0' || *c > '9')
			return 0;
	return 1;
}

static int convert_one(const char *sdir)
{
	struct weft_trace *t;
	char err[512], out[PATH_MAX + 32];
	if (weft_trace_open(sdir, &t, err, sizeof(err))) {
		weft_cli_error("record", "%s: %s", sdir, err);
		return -1;
	}
	snprintf(out, sizeof(out), "%s/trace.pftrace", sdir);
	struct weft_outfile of;
	int rc = weft_outfile_open(&of, "record", out, sdir, WEFT_OUT_PFTRACE_OK);
	FILE *f = rc ? NULL : fdopen(of.fd, "wb");
	struct weft_export_summary s;
	if (f) {
		of.fd = -1;
		rc = weft_export_pftrace(t, f, 2, WEFT_PFTRACE_DEFLATE, &s, err, sizeof(err));
		if (fclose(f) && !rc)
			rc = snprintf(err, sizeof(err), "%s", strerror(errno));
		if (rc)
			weft_cli_error("record", "cannot write %s: %s", out, err);
	} else if (!rc) {
		weft_cli_error("record", "cannot write %s: %s", out, strerror(errno));
		rc = -1;
	}
	if (rc || weft_outfile_commit(&of)) {
		weft_outfile_abort(&of);
		weft_trace_free(t);
		return -1;
	}
	if (s.bad_chunks)
		weft_cli_warn_undecoded("record", s.bad_chunks, s.bad_why, out);
	weft_trace_free(t);
	return 0;
}

int weft_record_convert_snapshots(const char *dir, int quiet)
{
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	int done = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		char p[PATH_MAX];
		struct stat st;
		if (!snapshot_name(e->d_name) || (size_t)snprintf(p, sizeof(p), "%s/%s", dir, e->d_name) >= sizeof(p) ||
		    lstat(p, &st) || !S_ISDIR(st.st_mode))
			continue;
		if (!convert_one(p))
			done++;
	}
	closedir(d);
	if (done && !quiet)
		fprintf(stderr, "weft: record: %d snapshot%s converted (%s/snapshot-N/trace.pftrace)\n", done,
			done == 1 ? "" : "s", dir);
	return done;
}
