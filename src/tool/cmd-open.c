/*
 * cmd-open.c - `weft open [TRACE]`: shows a trace in the Perfetto UI (ui.perfetto.dev) by serving
 * it once from 127.0.0.1 (open-serve.c). TRACE is a .pftrace or .json file, served as it is, or a
 * trace directory (default weft.data), whose trace.pftrace is served, converted first as
 * `weft convert DIR -o DIR/trace.pftrace` does when there is none. weft_record_open() is the
 * same for `weft record --open`, after recording.
 */
#include "tool/cmd.h"
#include "tool/open-serve.h"
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void help(FILE *f)
{
	fprintf(f,
		"usage: weft open [OPTIONS] [TRACE]\n"
		"Show TRACE in the Perfetto UI: serve it once on 127.0.0.1:9001, print the URL\n"
		"https://ui.perfetto.dev/#!/?url=http://127.0.0.1:9001/NAME and open it in the browser\n"
		"(xdg-open, where $DISPLAY or $WAYLAND_DISPLAY says there is a desktop). Ends once the\n"
		"UI has fetched the file, or on Ctrl-C. Nothing leaves the machine: the browser reads\n"
		"the file from 127.0.0.1 and the UI loads it in the page.\n\n"
		"TRACE: a .pftrace or .json file, served as it is, or a trace directory (default\n"
		"weft.data): its trace.pftrace, converted first (as weft convert) if there is none.\n\n"
		"  -p, --port N         port on 127.0.0.1 (default 9001, the only one ui.perfetto.dev\n"
		"                       may fetch from; another needs a tunnel to 9001 or --origin)\n"
		"      --origin URL     the UI (default https://ui.perfetto.dev): the URL printed,\n"
		"                       and the only web origin allowed to read the file\n"
		"  -n, --no-browser     print the URL only\n"
		"  -q, --quiet          only the URL\n"
		"  -h, --help           this text\n\n"
		"Remote machine: ssh -L 9001:127.0.0.1:9001 HOST, run weft open there, and open\n"
		"the URL in the local browser.\n"
		"Exit status: 0 the UI fetched the trace, 1 failed (no trace, port in use, conversion\n"
		"failed), 2 usage, 130 interrupted (Ctrl-C) before the fetch.\n");
}

/* --port N: 1..65535, or -1 after saying why */
int weft_open_port(const char *cmd, const char *arg)
{
	long long v;
	if (weft_cli_parse_int(arg, 1, 65535, &v)) {
		weft_cli_error(cmd, "--port takes a port number from 1 to 65535, not '%s'", arg);
		return -1;
	}
	return (int)v;
}

/* the file to serve for TRACE into out; a directory without trace.pftrace converted first.
 * 0, or an exit status after saying why */
static int trace_file(const char *trace, int quiet, char *out, size_t n)
{
	struct stat st;
	if (stat(trace, &st)) {
		weft_cli_error("open", "no trace at %s: name a .pftrace, a .json or a trace directory (weft "
			       "record writes weft.data)", trace);
		return WEFT_EXIT_FAIL;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(out, n, "%s", trace);
		return 0;
	}
	if ((size_t)snprintf(out, n, "%s/trace.pftrace", trace) >= n) {
		weft_cli_error("open", "path too long: %s", trace);
		return WEFT_EXIT_FAIL;
	}
	if (!stat(out, &st))
		return 0;
	char *args[] = {"convert", (char *)trace, "-o", out, quiet ? "-q" : NULL, NULL};
	int rc = cmd_convert(quiet ? 5 : 4, args);
	return rc ? rc : 0;
}

int cmd_open(int argc, char **argv)
{
	static const struct option opts[] = {{"port", required_argument, 0, 'p'}, {"origin", required_argument, 0, 'O'},
					     {"no-browser", no_argument, 0, 'n'}, {"quiet", no_argument, 0, 'q'},
					     {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
	struct weft_open_opts o = {.port = WEFT_OPEN_PORT, .origin = WEFT_OPEN_ORIGIN, .browser = 1};
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "p:nqh", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if ((o.port = weft_open_port("open", optarg)) < 0)
				return WEFT_EXIT_USAGE;
			break;
		case 'O':
			if (strncmp(optarg, "http://", 7) && strncmp(optarg, "https://", 8)) {
				weft_cli_error("open", "--origin takes an http:// or https:// URL, not '%s'", optarg);
				return WEFT_EXIT_USAGE;
			}
			o.origin = optarg;
			break;
		case 'n': o.browser = 0; break;
		case 'q': o.quiet = 1; break;
		case 'h': help(stdout); return WEFT_EXIT_OK;
		default:
			weft_cli_error("open", "unknown option '%s' (see 'weft open --help')", argv[optind - 1]);
			return WEFT_EXIT_USAGE;
		}
	}
	if (argc - optind > 1) {
		weft_cli_error("open", "one trace at a time (see 'weft open --help')");
		return WEFT_EXIT_USAGE;
	}
	char file[PATH_MAX + 32];
	int rc = trace_file(optind < argc ? argv[optind] : "weft.data", o.quiet, file, sizeof(file));
	return rc ? rc : weft_open_serve("open", file, &o);
}

int weft_record_open(const char *dir, int port, int quiet, int code)
{
	char file[PATH_MAX + 32];
	struct weft_open_opts o = {.port = port, .origin = WEFT_OPEN_ORIGIN, .browser = 1, .quiet = quiet};
	snprintf(file, sizeof(file), "%s/trace.pftrace", dir);
	int rc = weft_open_serve("record", file, &o);
	return code ? code : rc;
}
