/*
 * cmd-plot.c - `weft plot memory|heap|mpi [OPTIONS] [DIR] -o FILE.png`: pictures of a trace's
 * memory (src/export/plot.c, plot-heap.c): the address x time picture of allocations and
 * sampled accesses, or one heap's live bytes over time stacked by allocating slice (--lines: a
 * line per heap); or of an MPI job (plot-mpi.c): its communication matrix and time per rank.
 */
#include "tool/cmd.h"
#include "export/plot.h"
#include "tool/outfile.h"
#include "tool/timewin.h"
#include <getopt.h>
#include <limits.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void help(FILE *f)
{
	fprintf(f, "usage: weft plot memory|heap|mpi [OPTIONS] [DIR] -o FILE.png   (default DIR weft.data)\n"
		   "memory: address x time: allocations as rectangles coloured and labelled by the slice\n"
		   "        that made them, sampled accesses (weft record --mem-access) as dots; empty\n"
		   "        address ranges squeezed out (each gap marked with its size)\n"
		   "heap:   one heap's live bytes over time (default the C heap, malloc), as a stacked area\n"
		   "        per allocating slice: each block counts for the innermost slice open on its\n"
		   "        thread when it was allocated ([outside any slice] outside any), from its allocation to\n"
		   "        its free; the top edge is the heap's live bytes (sampled traces: estimated, as\n"
		   "        in the trace's heap counter). The slices with the highest own peaks get a band\n"
		   "        each, the rest are summed as 'other'. Each pixel column shows the moment\n"
		   "        within it with the most live bytes, so no peak is lost\n"
		   "mpi:    an MPI job: the bytes each rank sent each other as a heat map (row: from,\n"
		   "        column: to; log scale), and each rank's time as a bar: in MPI waiting (red),\n"
		   "        in MPI otherwise (orange), outside MPI (green), as 'weft report --mpi' counts\n\n"
		   "  -o, --output FILE     the PNG (required; written whole or not at all; a device or\n"
		   "                        FIFO is written through, a symlink followed; never a file\n"
		   "                        of the trace)\n"
		   "  -p, --pid PID         the process (default: the first)\n"
		   "      --time FROM:TO    a window from the process's first memory event, in seconds\n"
		   "                        or with a unit (ns, us, ms, s, m, h), e.g. 0:5ms, 2ms: (to\n"
		   "                        the end), :0.5\n"
		   "      --addr LO:HI      an address range, hex (memory only)\n"
		   "      --size WxH        pixels (default 1600x900)\n"
		   "      --heap NAME       heap: the heap (malloc, mmap or the program's name; default malloc)\n"
		   "      --top N           heap: slices drawn apart, 1 to 20 (default 8)\n"
		   "      --lines           heap: instead, live bytes of every heap, a line each\n"
		   "      --describe        print what was drawn where (JSON lines): memory: each\n"
		   "                        allocation's rectangle; heap: the plot frame and each band;\n"
		   "                        mpi: the frames, each matrix cell and each rank's bar\n"
		   "  -h, --help            this text\n\n"
		   "Exit status: 0, 1 unreadable/nothing to draw/unwritable, 2 usage.\n");
}

/* --time FROM:TO: the parser of convert, report and export (timewin.c), with the same
 * messages; 0, or -1 after a usage error */
static int plot_time(const char *arg, struct weft_plot_opts *o)
{
	struct weft_window_req w;
	if (weft_cli_parse_time_from("plot", arg, "the process's first memory event", &w))
		return -1;
	if (w.to_set && !w.to_ns) { /* t_to 0 means "to the end" in weft_plot_opts */
		weft_cli_error("plot", "--time %s: the window's end must come after its start", arg);
		return -1;
	}
	o->t_from = w.from_set ? w.from_ns : 0;
	o->t_to = w.to_set ? w.to_ns : 0;
	o->has_time = 1;
	return 0;
}

/* --size WxH: each side a whole number, W 400 to 10000, H 300 to 10000 */
static int plot_size(const char *arg, struct weft_plot_opts *o)
{
	char w[16];
	const char *x = strchr(arg, 'x');
	long long a, b;
	if (!x || (size_t)(x - arg) >= sizeof(w))
		return -1;
	snprintf(w, sizeof(w), "%.*s", (int)(x - arg), arg);
	if (weft_cli_parse_int(w, 400, 10000, &a) || weft_cli_parse_int(x + 1, 300, 10000, &b))
		return -1;
	o->width = (int)a;
	o->height = (int)b;
	return 0;
}

/* --addr LO:HI: two 64-bit hexadecimal addresses, LO < HI */
static int plot_addr(const char *arg, struct weft_plot_opts *o)
{
	char lo_s[24];
	const char *colon = strchr(arg, ':');
	unsigned long long lo, hi;
	if (!colon || (size_t)(colon - arg) >= sizeof(lo_s))
		return -1;
	snprintf(lo_s, sizeof(lo_s), "%.*s", (int)(colon - arg), arg);
	if (weft_cli_parse_hex(lo_s, &lo) || weft_cli_parse_hex(colon + 1, &hi) || hi <= lo)
		return -1;
	o->a_lo = lo;
	o->a_hi = hi;
	return 0;
}

int cmd_plot(int argc, char **argv)
{
	static const struct option opts[] = {
		{"output", required_argument, 0, 'o'}, {"pid", required_argument, 0, 'p'},
		{"time", required_argument, 0, 'T'}, {"addr", required_argument, 0, 'A'},
		{"size", required_argument, 0, 'S'}, {"describe", no_argument, 0, 'D'},
		{"heap", required_argument, 0, 'H'}, {"top", required_argument, 0, 'N'},
		{"lines", no_argument, 0, 'L'},
		{"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
	struct weft_plot_opts o = {.width = 1600, .height = 900};
	int c, lines = 0;
	if (argc < 2 || (strcmp(argv[1], "memory") && strcmp(argv[1], "heap") && strcmp(argv[1], "mpi"))) {
		if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
			help(stdout);
			return WEFT_EXIT_OK;
		}
		weft_cli_error("plot", "which picture? 'weft plot memory', 'weft plot heap' or 'weft plot mpi' (see 'weft plot --help')");
		return WEFT_EXIT_USAGE;
	}
	const char *what = argv[1];
	argc--;
	argv++;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "o:p:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o': o.out = optarg; break;
		case 'p': {
			long long v;
			if (weft_cli_parse_int(optarg, 1, INT_MAX, &v)) {
				weft_cli_error("plot", "--pid takes a process id (a number from 1), not '%s'", optarg);
				return WEFT_EXIT_USAGE;
			}
			o.pid = (int)v;
			break;
		}
		case 'D': o.describe = 1; break;
		case 'H': o.heap = optarg; break;
		case 'L': lines = 1; break;
		case 'N': {
			long long n;
			if (weft_cli_parse_int(optarg, 1, 20, &n)) {
				weft_cli_error("plot", "--top takes a number from 1 to 20, not '%s'", optarg);
				return WEFT_EXIT_USAGE;
			}
			o.top = (int)n;
			break;
		}
		case 'S':
			if (plot_size(optarg, &o)) {
				weft_cli_error("plot", "--size takes WxH from 400x300 to 10000x10000, not '%s'", optarg);
				return WEFT_EXIT_USAGE;
			}
			break;
		case 'T':
			if (plot_time(optarg, &o))
				return WEFT_EXIT_USAGE;
			break;
		case 'A':
			if (plot_addr(optarg, &o)) {
				weft_cli_error("plot", "--addr takes LO:HI in hex (64 bits at most) with LO < HI, not '%s'",
					       optarg);
				return WEFT_EXIT_USAGE;
			}
			break;
		case 'h': help(stdout); return WEFT_EXIT_OK;
		default:
			weft_cli_error("plot", "unknown option '%s' (see 'weft plot --help')", argv[optind - 1]);
			return WEFT_EXIT_USAGE;
		}
	}
	if (!o.out) {
		weft_cli_error("plot", "missing -o FILE.png");
		return WEFT_EXIT_USAGE;
	}
	if (optind < argc - 1) {
		weft_cli_error("plot", "one trace directory expected");
		return WEFT_EXIT_USAGE;
	}
	if (strcmp(what, "heap") && (o.heap || o.top || lines)) {
		weft_cli_error("plot", "--heap, --top and --lines are for 'weft plot heap'");
		return WEFT_EXIT_USAGE;
	}
	if (lines && (o.heap || o.top)) {
		weft_cli_error("plot", "--lines draws every heap: no --heap or --top with it");
		return WEFT_EXIT_USAGE;
	}
	if (!strcmp(what, "mpi") && (o.pid || o.has_time || o.a_hi)) {
		weft_cli_error("plot", "--pid, --time and --addr are not for 'weft plot mpi' (it draws every rank)");
		return WEFT_EXIT_USAGE;
	}
	const char *dir = optind < argc ? argv[optind] : "weft.data";
	struct weft_outfile out; /* never a file of the trace, never replacing a device (outfile.c) */
	int orc = weft_outfile_open(&out, "plot", o.out, dir, WEFT_OUT_NAMED);
	if (orc)
		return orc;
	o.out = out.tmp;
	struct weft_trace *t;
	char err[512];
	if (weft_trace_open(dir, &t, err, sizeof(err))) {
		weft_cli_error("plot", "%s", err);
		weft_outfile_abort(&out);
		return WEFT_EXIT_FAIL;
	}
	for (size_t i = 0; i < t->nwarnings; i++) /* (as every reading command says them) */
		weft_cli_error("plot", "warning: %s", t->warnings[i]);
	int rc = !strcmp(what, "mpi") ? weft_plot_mpi(t, &o, err, sizeof(err))
		 : !strcmp(what, "memory") ? weft_plot_memory(t, &o, err, sizeof(err))
		 : lines ? weft_plot_heap_lines(t, &o, err, sizeof(err)) : weft_plot_heap(t, &o, err, sizeof(err));
	weft_trace_free(t);
	if (rc) {
		weft_cli_error("plot", "%s", err);
		weft_outfile_abort(&out);
		return WEFT_EXIT_FAIL;
	}
	return weft_outfile_commit(&out);
}
