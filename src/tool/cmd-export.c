/*
 * cmd-export.c - `weft export [DIR] -o FILE.db`: the trace as a SQLite database
 * (src/export/sqlite.c; schema in docs/sqlite.md) for SQL and scripts: processes, threads,
 * slices, counters, every allocation's life joined to its slices, accesses, runs, and views in
 * the shape Heimdallr's scripts query. The file is written under a fresh name beside FILE and
 * renamed over it only when complete; a device or FIFO gets a copy; a file of the trace being
 * read is never replaced (outfile.c).
 */
#include "tool/cmd.h"
#include "export/export.h"
#include "format/format.h"
#include "tool/outfile.h"
#include "tool/timewin.h"
#include <getopt.h>
#include <stdio.h>
#include <string.h>

static void help(FILE *f)
{
	fprintf(f, "usage: weft export [OPTIONS] [DIR] -o FILE.db   (default DIR weft.data)\n"
		   "Write the trace DIR as a SQLite database (schema: docs/sqlite.md).\n\n"
		   "  -o, --output FILE   the database (required; replaced when the export succeeds; a\n"
		   "                      device or FIFO is written through, a symlink followed)\n"
		   "      --time FROM:TO  only this window, in seconds from the trace's start (2.5:3.5,\n"
		   "                      2500ms:3500ms, :5s, 10s:); meta says window_from_ns/_to_ns\n"
		   "  -q, --quiet         no summary line\n"
		   "  -h, --help          this text\n\n"
		   "Tables: processes, threads, slices (depth, parent), counters, allocations (one row per\n"
		   "block: alloc and free times, threads and slices), accesses, runs, meta; views allocs\n"
		   "and access as Heimdallr names them. Exit status: 0, 1 unreadable or unwritable, 2 usage.\n");
}

int cmd_export(int argc, char **argv)
{
	static const struct option opts[] = {{"output", required_argument, 0, 'o'}, {"quiet", no_argument, 0, 'q'},
					     {"time", required_argument, 0, 'T'},
					     {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
	const char *outp = NULL;
	struct weft_window_req win;
	int quiet = 0, c, by_time = 0;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "o:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'o': outp = optarg; break;
		case 'q': quiet = 1; break;
		case 'T':
			if (weft_cli_parse_time("export", optarg, &win))
				return WEFT_EXIT_USAGE;
			by_time = 1;
			break;
		case 'h': help(stdout); return WEFT_EXIT_OK;
		default:
			weft_cli_error("export", "unknown option '%s' (see 'weft export --help')", argv[optind - 1]);
			return WEFT_EXIT_USAGE;
		}
	}
	if (optind < argc - 1) {
		weft_cli_error("export", "one trace directory expected (usage: weft export [DIR] -o FILE.db)");
		return WEFT_EXIT_USAGE;
	}
	if (!outp || !*outp || !strcmp(outp, "-")) {
		weft_cli_error("export", "missing -o FILE.db (a SQLite file; not stdout)");
		return WEFT_EXIT_USAGE;
	}
	const char *dir = optind < argc ? argv[optind] : "weft.data";
	struct weft_outfile out;
	int orc = weft_outfile_open(&out, "export", outp, dir, WEFT_OUT_NAMED);
	if (orc)
		return orc;
	struct weft_trace *t;
	char err[512];
	if (weft_trace_open_window(&dir, 1, by_time ? &win : NULL, &t, err, sizeof(err))) {
		weft_cli_error("export", "%s", err);
		weft_outfile_abort(&out);
		return WEFT_EXIT_FAIL;
	}
	for (size_t i = 0; i < t->nwarnings; i++)
		weft_cli_error("export", "warning: %s", t->warnings[i]);
	char window[128] = "";
	if (t->window.active)
		weft_cli_window_text(t, window, sizeof(window));
	struct weft_export_summary s;
	int rc = weft_export_sqlite(t, out.tmp, &s, err, sizeof(err));
	weft_trace_free(t);
	if (rc) {
		weft_cli_error("export", "%s", err);
		weft_outfile_abort(&out);
		return WEFT_EXIT_FAIL;
	}
	if (weft_outfile_commit(&out))
		return WEFT_EXIT_FAIL;
	if (s.bad_chunks)
		weft_cli_warn_undecoded("export", s.bad_chunks, s.bad_why, outp);
	if (!quiet)
		weft_cli_error("export", "wrote %s: %llu rows from %llu events, %llu dropped%s%s", outp,
			       (unsigned long long)s.bytes, (unsigned long long)s.events, (unsigned long long)s.dropped,
			       *window ? "; window " : "", window);
	return WEFT_EXIT_OK;
}
