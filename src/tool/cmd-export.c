/*
 * cmd-export.c - `weft export [DIR] -o FILE.db`: the trace as a SQLite database
 * (src/export/sqlite.c; schema in docs/sqlite.md) for SQL and scripts: processes, threads,
 * slices, counters, every allocation's life joined to its slices, accesses, runs, and views in
 * the shape Heimdallr's scripts query. The file is written under a fresh name beside FILE and
 * renamed over it only when complete; a device or FIFO gets a copy; a file of the trace being
 * read is never replaced (outfile.c). `--otf2 -o DIR` writes an OTF2 archive instead
 * (src/export/otf2.c, docs/otf2.md) into a fresh sibling directory renamed to DIR when complete
 * (outdir.c); DIR may be new, empty, or an archive weft wrote.
 */
#include "tool/cmd.h"
#include "export/export.h"
#include "format/format.h"
#include "tool/outdir.h"
#include "tool/outfile.h"
#include "tool/timewin.h"
#include <dirent.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

/* The trace DIR (within win, where given), its warnings said; the window's text in window
 * ("" for the whole trace). NULL, said in one line, when it cannot be read. */
static struct weft_trace *open_trace(const char *dir, const struct weft_window_req *win, char *window, size_t n)
{
	struct weft_trace *t;
	char err[512];
	window[0] = 0;
	if (weft_trace_open_window(&dir, 1, win, &t, err, sizeof(err))) {
		weft_cli_error("export", "%s", err);
		return NULL;
	}
	for (size_t i = 0; i < t->nwarnings; i++)
		weft_cli_error("export", "warning: %s", t->warnings[i]);
	if (t->window.active)
		weft_cli_window_text(t, window, n);
	return t;
}

static void help(FILE *f)
{
	fprintf(f, "usage: weft export [OPTIONS] [DIR] -o FILE.db   (default DIR weft.data)\n"
		   "       weft export --otf2 [OPTIONS] [DIR] -o ARCHIVE\n"
		   "Write the trace DIR as a SQLite database (schema: docs/sqlite.md), or with --otf2 as\n"
		   "an OTF2 archive (docs/otf2.md: Vampir, Scalasca; open ARCHIVE/traces.otf2).\n\n"
		   "  -o, --output FILE   the database (required; replaced when the export succeeds; a\n"
		   "                      device or FIFO is written through, a symlink followed)\n"
		   "      --otf2          an OTF2 archive: -o names a new or empty directory, or an\n"
		   "                      archive weft wrote (replaced when the export succeeds)\n"
		   "      --time FROM:TO  only this window, in seconds from the trace's start (2.5:3.5,\n"
		   "                      2500ms:3500ms, :5s, 10s:); meta says window_from_ns/_to_ns\n"
		   "  -q, --quiet         no summary line\n"
		   "  -h, --help          this text\n\n"
		   "Tables: processes, threads, slices (depth, parent), counters, allocations (one row per\n"
		   "block: alloc and free times, threads and slices), accesses, runs, meta; views allocs\n"
		   "and access as Heimdallr names them. Exit status: 0, 1 unreadable or unwritable, 2 usage.\n");
}

/* An archive weft wrote: the anchor file, its definitions and its directory of locations, no
 * more, the anchor naming weft as its creator. */
static int otf2_is_ours(const char *path)
{
	DIR *d = opendir(path);
	if (!d)
		return 0;
	struct dirent *e;
	int ok = 1, anchor = 0;
	while (ok && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		anchor |= !strcmp(e->d_name, "traces.otf2");
		ok = !strcmp(e->d_name, "traces.otf2") || !strcmp(e->d_name, "traces.def") || !strcmp(e->d_name, "traces");
	}
	closedir(d);
	if (!ok || !anchor)
		return 0;
	char f[4096 + 32], buf[8192];
	snprintf(f, sizeof(f), "%s/traces.otf2", path);
	FILE *a = fopen(f, "rb");
	if (!a)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf), a);
	fclose(a);
	static const char creator[] = "weft";
	for (size_t i = 0; i + sizeof(creator) <= n; i++) /* the creator string, NUL-terminated */
		if (!memcmp(buf + i, creator, sizeof(creator)) && (i == 0 || buf[i - 1] == '\0' || (unsigned char)buf[i - 1] < 32))
			return 1;
	return 0;
}

static int export_otf2(const char *dir, const char *outp, const struct weft_window_req *win, int quiet)
{
#ifndef WEFT_HAVE_OTF2
	(void)dir, (void)outp, (void)win, (void)quiet, (void)otf2_is_ours;
	weft_cli_error("export", "OTF2 unavailable: this weft was built without libotf2 (install libotf2-trace-dev and "
				 "rebuild)");
	return WEFT_EXIT_FAIL;
#else
	if (!outp || !*outp || !strcmp(outp, "-")) {
		weft_cli_error("export", "missing -o DIR (the OTF2 archive's directory; not stdout)");
		return WEFT_EXIT_USAGE;
	}
	struct weft_outdir out;
	int orc = weft_outdir_open(&out, "export", outp, otf2_is_ours);
	if (orc)
		return orc;
	char err[512], window[128];
	struct weft_trace *t = open_trace(dir, win, window, sizeof(window));
	if (!t) {
		weft_outdir_abort(&out);
		return WEFT_EXIT_FAIL;
	}
	struct weft_export_summary s;
	int rc = weft_export_otf2(t, out.tmp, &s, err, sizeof(err));
	weft_trace_free(t);
	if (rc) {
		weft_cli_error("export", "%s", err);
		weft_outdir_abort(&out);
		return WEFT_EXIT_FAIL;
	}
	if (weft_outdir_commit(&out))
		return WEFT_EXIT_FAIL;
	if (s.bad_chunks)
		weft_cli_warn_undecoded("export", s.bad_chunks, s.bad_why, outp);
	if (!quiet) {
		char extra[160] = "";
		if (s.unmapped)
			snprintf(extra, sizeof(extra), ", %llu MPI messages left out (partner not in the trace)",
				 (unsigned long long)s.unmapped);
		weft_cli_error("export", "wrote %s/traces.otf2: %llu OTF2 events on %llu locations, %.1f MB, from %llu events, "
					 "%llu dropped%s%s%s",
			       out.path, (unsigned long long)s.records, (unsigned long long)s.locations, (double)s.bytes / 1e6,
			       (unsigned long long)s.events, (unsigned long long)s.dropped, extra, *window ? "; window " : "",
			       window);
	}
	return WEFT_EXIT_OK;
#endif
}

int cmd_export(int argc, char **argv)
{
	static const struct option opts[] = {{"output", required_argument, 0, 'o'}, {"quiet", no_argument, 0, 'q'},
					     {"time", required_argument, 0, 'T'}, {"otf2", no_argument, 0, '2'},
					     {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
	const char *outp = NULL;
	struct weft_window_req win;
	int quiet = 0, c, by_time = 0, otf2 = 0;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "o:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'o': outp = optarg; break;
		case 'q': quiet = 1; break;
		case '2': otf2 = 1; break;
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
	if (otf2)
		return export_otf2(optind < argc ? argv[optind] : "weft.data", outp, by_time ? &win : NULL, quiet);
	if (!outp || !*outp || !strcmp(outp, "-")) {
		weft_cli_error("export", "missing -o FILE.db (a SQLite file; not stdout)");
		return WEFT_EXIT_USAGE;
	}
	const char *dir = optind < argc ? argv[optind] : "weft.data";
	struct weft_outfile out;
	int orc = weft_outfile_open(&out, "export", outp, dir, WEFT_OUT_NAMED);
	if (orc)
		return orc;
	char err[512], window[128];
	struct weft_trace *t = open_trace(dir, by_time ? &win : NULL, window, sizeof(window));
	if (!t) {
		weft_outfile_abort(&out);
		return WEFT_EXIT_FAIL;
	}
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
