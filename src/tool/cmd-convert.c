/*
 * cmd-convert.c - `weft convert DIR... -o FILE`: the trace directory (or several, loaded as one
 * trace: a job's hosts without a shared filesystem) to a Perfetto .pftrace or a Chrome .json
 * (chosen by the extension or --format); --ranks keeps some ranks of a job. Damage in the input is reported as
 * warnings and everything readable is converted; the summary line says what was written.
 */
#include "tool/cmd.h"
#include "analysis/memory.h"
#include "lib/internal.h" /* weft_parse_size */
#include "export/export.h"
#include "format/format.h"
#include "tool/convert-job.h"
#include "tool/outfile.h"
#include "tool/progress.h"
#include "tool/timewin.h"
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <unistd.h>
#include <sys/stat.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* events past which the .pftrace is more than the Perfetto UI in a browser loads */

static void help(FILE *f)
{
	fprintf(f,
		"usage: weft convert [OPTIONS] DIR... -o FILE\n"
		"Convert the trace directory DIR (as written by libweft) to FILE; several\n"
		"directories (a job's hosts, a workflow's runs) become one trace.\n\n"
		"  -o, --output FILE        output file (required); .json selects Chrome JSON,\n"
		"                           anything else Perfetto protobuf (.pftrace); - is stdout.\n"
		"                           Replaced only once complete; a device or FIFO is written\n"
		"                           through, a symlink followed; never a file of the trace\n"
		"  -f, --format FMT         pftrace or json, overriding the extension\n"
		"      --json-style STYLE   be (B/E event pairs, default) or x (complete X events)\n"
		"  -j, --jobs N             threads to use (default: one per core)\n"
		"      --ranks LIST         only these ranks of a job, e.g. 0-63 or 0,2,8-11\n"
		"      --time FROM:TO       only this window, in seconds from the trace's start\n"
		"                           (2.5:3.5, 2500ms:3500ms, :5s, 10s:), read through the\n"
		"                           chunks' time index; slices open at FROM keep their\n"
		"                           real begin, those open at TO end there\n"
		"  -q, --quiet              no summary line\n"
		"      --compress=deflate|none  .pftrace packets zlib-compressed in batches (default\n"
		"                         deflate; Perfetto inflates them), or plain\n"
		"      --large-alloc SIZE   allocations of at least SIZE (default 1M) are also\n"
		"                           \"large allocation\" instants in a .pftrace\n"
		"      --machines           a .pftrace with a Perfetto machine per host (machine_id;\n"
		"                           times still aligned; trace_processor draws no arrows\n"
		"                           between machines), instead of one timeline\n"
		"  -h, --help               this text\n\n"
		"Open a .pftrace by dragging it onto https://ui.perfetto.dev.\n"
		"Exit status: 0 converted (warnings may say what was damaged), 1 failed, 2 usage.\n");
}

/* --ranks LIST: "A", "A-B", comma-separated. Fills a sorted-free list of ranges. */
struct rank_set {
	size_t n;
	uint32_t lo[64], hi[64];
};
static int parse_ranks(const char *s, struct rank_set *rs)
{
	rs->n = 0;
	while (*s) {
		char *end;
		if (*s < '0' || *s > '9' || rs->n == 64)
			return -1;
		unsigned long a = strtoul(s, &end, 10), b = a;
		if (*end == '-') {
			s = end + 1;
			if (*s < '0' || *s > '9')
				return -1;
			b = strtoul(s, &end, 10);
		}
		if (b < a || b >= WEFT_RANK_NONE)
			return -1;
		rs->lo[rs->n] = (uint32_t)a;
		rs->hi[rs->n++] = (uint32_t)b;
		s = end;
		if (*s == ',' && s[1])
			s++;
		else if (*s)
			return -1;
	}
	return rs->n ? 0 : -1;
}

static int rank_wanted(const struct weft_proc *p, void *arg)
{
	const struct rank_set *rs = arg;
	uint32_t r = weft_proc_rank(p);
	for (size_t i = 0; r != WEFT_RANK_NONE && i < rs->n; i++)
		if (r >= rs->lo[i] && r <= rs->hi[i])
			return 1;
	return 0;
}

/* A conversion run as a job (convert-job.c): rank 0's signal handler removes the parts and
 * F's temporary, so that a job ended by its launcher leaves nothing behind. */
static struct weft_convert_job job;
static char job_tmp[PATH_MAX];
static void job_signal(int sig)
{
	weft_convert_job_cleanup(&job);
	if (job_tmp[0])
		unlink(job_tmp);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Rank R > 0 of a conversion run as a job: its part of the .pftrace, beside F. */
static int convert_part(const struct weft_trace *t, int jobs, int deflate)
{
	char err[512] = "";
	struct weft_export_summary s = {0};
	FILE *f = weft_convert_job_part_open(&job);
	int rc = f ? weft_export_pftrace_part(t, f, jobs, deflate, job.rank, job.size, &s, err, sizeof(err)) : -errno;
	if (!f)
		snprintf(err, sizeof(err), "cannot write its part %.300s.tmp: %s", job.part, strerror(-rc));
	int said = weft_convert_job_part_done(&job, f, !rc, err, s.events, s.dropped);
	if (said < 0 || (rc && !said)) /* (else rank 0 said it) */
		weft_cli_error("convert", "rank %u of %u: %s", job.rank, job.size, err[0] ? err : "its part failed");
	return said || rc ? WEFT_EXIT_FAIL : WEFT_EXIT_OK;
}

int cmd_convert(int argc, char **argv)
{
	static const struct option opts[] = {
		{"output", required_argument, 0, 'o'}, {"format", required_argument, 0, 'f'},
		{"json-style", required_argument, 0, 's'}, {"jobs", required_argument, 0, 'j'},
		{"compress", required_argument, 0, 'c'}, {"large-alloc", required_argument, 0, 'L'},
		{"ranks", required_argument, 0, 'r'}, {"time", required_argument, 0, 'T'},
		{"quiet", no_argument, 0, 'q'}, {"help", no_argument, 0, 'h'}, {"machines", no_argument, 0, 'M'},
		{0, 0, 0, 0}};
	const char *outp = NULL, *fmt = NULL;
	struct rank_set ranks = {0};
	int by_rank = 0, by_time = 0;
	struct weft_window_req win;
	int style = WEFT_JSON_BE, jobs = 0, quiet = 0, deflate = WEFT_PFTRACE_DEFLATE, machines = 0, c, rc;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "o:f:j:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			if (!strcmp(optarg, "none")) {
				deflate = 0;
			} else if (!strcmp(optarg, "deflate")) {
				deflate = WEFT_PFTRACE_DEFLATE;
			} else {
				weft_cli_error("convert", "unknown --compress '%s' (valid: deflate, none)", optarg);
				return WEFT_EXIT_USAGE;
			}
			break;
		case 'L': {
			uint64_t v;
			if (weft_parse_size(optarg, &v) || !v) {
				weft_cli_error("convert", "--large-alloc takes a size such as 64K or 1M, not '%s'", optarg);
				return WEFT_EXIT_USAGE;
			}
			weft_mem_large_alloc = v;
			break;
		}
		case 'o': outp = optarg; break;
		case 'f':
			if (strcmp(optarg, "pftrace") && strcmp(optarg, "json")) {
				weft_cli_error("convert", "unknown format '%s' (valid: pftrace, json)", optarg);
				return WEFT_EXIT_USAGE;
			}
			fmt = optarg;
			break;
		case 's':
			if (!strcmp(optarg, "be"))
				style = WEFT_JSON_BE;
			else if (!strcmp(optarg, "x"))
				style = WEFT_JSON_X;
			else {
				weft_cli_error("convert", "unknown --json-style '%s' (valid: be, x)", optarg);
				return WEFT_EXIT_USAGE;
			}
			break;
		case 'j':
		{
			long long v;
			if (weft_cli_parse_int(optarg, 1, 16, &v)) {
				weft_cli_error("convert", "--jobs takes 1 to 16, not '%s'", optarg);
				return WEFT_EXIT_USAGE;
			}
			jobs = (int)v;
			break;
		}
		case 'r':
			if (parse_ranks(optarg, &ranks)) {
				weft_cli_error("convert", "--ranks takes ranks and ranges such as 0-63 or 0,2,8-11, not '%s'",
					       optarg);
				return WEFT_EXIT_USAGE;
			}
			by_rank = 1;
			break;
		case 'T':
			if (weft_cli_parse_time("convert", optarg, &win))
				return WEFT_EXIT_USAGE;
			by_time = 1;
			break;
		case 'q': quiet = 1; break;
		case 'M': machines = 1; break;
		case 'h': help(stdout); return WEFT_EXIT_OK;
		default:
			weft_cli_error("convert", "unknown option '%s' (see 'weft convert --help')", argv[optind - 1]);
			return WEFT_EXIT_USAGE;
		}
	}
	/* getopt stops at the first directory; -o may follow them */
	const char *dirs[256];
	size_t ndirs = 0;
	while (optind < argc) {
		if (!strcmp(argv[optind], "-o") || !strcmp(argv[optind], "--output")) {
			if (optind + 1 >= argc) {
				weft_cli_error("convert", "-o needs a file");
				return WEFT_EXIT_USAGE;
			}
			outp = argv[optind + 1];
			optind += 2;
			continue;
		}
		if (!strncmp(argv[optind], "--output=", 9)) {
			outp = argv[optind++] + 9;
			continue;
		}
		if (ndirs == sizeof(dirs) / sizeof(dirs[0])) {
			weft_cli_error("convert", "at most %zu trace directories", ndirs);
			return WEFT_EXIT_USAGE;
		}
		dirs[ndirs++] = argv[optind++];
	}
	if (!outp) {
		weft_cli_error("convert", "missing -o FILE (.pftrace or .json; - for stdout)");
		return WEFT_EXIT_USAGE;
	}
	if (!ndirs)
		dirs[ndirs++] = "weft.data"; /* like perf and perf.data */
	const char *dir = dirs[0];
	int to_stdout = !strcmp(outp, "-");
	/* never a file of the trace (its trace.pftrace may be converted again), never replacing a
	 * device, FIFO or symlink; a regular file is replaced only once complete (outfile.c) */
	if (!fmt) {
		const char *dot = strrchr(outp, '.');
		fmt = dot && !strcmp(dot, ".json") ? "json" : "pftrace";
	}
	/* a rank of `mpirun -np N weft convert`: a part each (a .pftrace to a file; else rank 0
	 * converts alone and the others have nothing to do) */
	int in_job = weft_convert_job_detect(&job, outp);
	if (in_job && (to_stdout || strcmp(fmt, "pftrace"))) {
		if (job.rank)
			return WEFT_EXIT_OK;
		in_job = 0;
	}
	if (in_job && !jobs) { /* the host's cores shared by its ranks */
		long cores = sysconf(_SC_NPROCESSORS_ONLN);
		jobs = cores > 0 && (unsigned)cores > job.local_size ? (int)(cores / job.local_size) : 1;
		jobs = jobs > 16 ? 16 : jobs;
	}
	struct weft_outfile out = {.fd = -1};
	for (size_t i = 1; i < ndirs && !to_stdout; i++) { /* never a file of any of the traces */
		struct weft_outfile probe = {.fd = -1};
		if ((rc = weft_outfile_open(&probe, "convert", outp, dirs[i],
					    !strcmp(fmt, "pftrace") ? WEFT_OUT_PFTRACE_OK : 0)))
			return rc;
		weft_outfile_abort(&probe);
	}
	if (!to_stdout && !(in_job && job.rank) &&
	    (rc = weft_outfile_open(&out, "convert", outp, dir, !strcmp(fmt, "pftrace") ? WEFT_OUT_PFTRACE_OK : 0)))
		return rc;
	if (in_job && !job.rank) {
		snprintf(job_tmp, sizeof(job_tmp), "%s", out.tmp);
		signal(SIGTERM, job_signal);
		signal(SIGINT, job_signal);
		signal(SIGHUP, job_signal);
	}
	struct weft_trace *t;
	char err[512];
	struct weft_progress *pr = quiet ? NULL : weft_progress_start("convert"); /* a terminal's, after 1 s */
	weft_trace_defer_symbols = in_job; /* each rank names the functions of its share only */
	weft_trace_rank_subset = by_rank; /* the ranks left out are the ones not asked for */
	rc = weft_trace_open_window(dirs, ndirs, by_time ? &win : NULL, &t, err, sizeof(err));
	if (rc || t->nwarnings) { /* said on a line of their own */
		weft_progress_stop(pr);
		pr = NULL;
	}
	if (rc) {
		weft_outfile_abort(&out);
		if (!(in_job && job.rank && weft_convert_job_part_done(&job, NULL, 0, err, 0, 0) == 1))
			weft_cli_error("convert", "%s", err); /* (a rank whose reason rank 0 took: said there) */
		return WEFT_EXIT_FAIL;
	}
	if (by_rank && !weft_trace_keep(t, rank_wanted, &ranks)) {
		weft_cli_error("convert", "no process of the trace has one of the ranks asked for");
		weft_progress_stop(pr);
		weft_trace_free(t);
		weft_outfile_abort(&out);
		return WEFT_EXIT_FAIL;
	}
	if (in_job && job.rank) { /* its part only; rank 0 says the rest */
		weft_progress_stop(pr);
		t->machines = machines;
		rc = convert_part(t, jobs, deflate);
		weft_trace_free(t);
		return rc;
	}
	for (size_t i = 0; i < t->nwarnings; i++)
		weft_cli_error("convert", "warning: %s", t->warnings[i]);
	if (!pr && !quiet)
		pr = weft_progress_start("convert");
	weft_progress_total(pr, weft_trace_events(t));
	t->machines = machines;
	FILE *f = to_stdout ? stdout : fdopen(out.fd, "wb");
	if (!f) {
		weft_progress_stop(pr);
		weft_cli_error("convert", "cannot write %s: %s", outp, strerror(errno));
		weft_outfile_abort(&out);
		weft_trace_free(t);
		return WEFT_EXIT_FAIL;
	}
	out.fd = -1; /* f's now */
	static char obuf[1 << 20];
	setvbuf(f, obuf, _IOFBF, sizeof(obuf));
	struct weft_export_summary s;
	if (!strcmp(fmt, "json")) {
		rc = weft_export_json(t, f, style, jobs, &s, err, sizeof(err));
	} else if (in_job) /* rank 0: its part, then the others' as they come */
		rc = weft_export_pftrace_part(t, f, jobs, deflate, 0, job.size, &s, err, sizeof(err)) ||
		     weft_convert_job_gather(&job, f, &s.events, &s.dropped, err, sizeof(err));
	else
		rc = weft_export_pftrace(t, f, jobs, deflate, &s, err, sizeof(err));
	char window[128] = "";
	if (t->window.active)
		weft_cli_window_text(t, window, sizeof(window));
	if (fclose(f) && !rc) {
		rc = -errno;
		snprintf(err, sizeof(err), "writing %s failed: %s", outp, strerror(errno));
	}
	weft_progress_stop(pr);
	weft_trace_free(t);
	if (rc) {
		weft_cli_error("convert", "%s", err);
		weft_outfile_abort(&out);
		if (in_job)
			weft_convert_job_cleanup(&job);
		return WEFT_EXIT_FAIL;
	}
	if (!to_stdout && weft_outfile_commit(&out))
		return WEFT_EXIT_FAIL;
	if (in_job)
		signal(SIGTERM, SIG_DFL), signal(SIGINT, SIG_DFL), signal(SIGHUP, SIG_DFL);
	if (s.bad_chunks) /* even with -q */
		weft_cli_warn_undecoded("convert", s.bad_chunks, s.bad_why, NULL);
	if (!quiet) {
		fprintf(stderr, "weft: convert: wrote %s: %llu events, %llu dropped", to_stdout ? "stdout" : outp,
			(unsigned long long)s.events, (unsigned long long)s.dropped);
		if (in_job)
			fprintf(stderr, " (converted by %u ranks)", job.size);
		if (s.unterminated)
			fprintf(stderr, ", %llu slices unterminated (closed at %s end)",
				(unsigned long long)s.unterminated, *window ? "the window's" : "trace");
		if (s.unmatched_end)
			fprintf(stderr, ", %llu ends without a begin skipped", (unsigned long long)s.unmatched_end);
		if (*window)
			fprintf(stderr, "; window %s", window);
		fprintf(stderr, "\n");
	}
	if (!quiet && strcmp(fmt, "json"))
		weft_cli_warn_deep("convert", s.deep);
	unsigned long long ui = weft_cli_ui_events();
	if (!quiet && strcmp(fmt, "json") && ui && s.events > ui)
		weft_cli_error("convert", "warning: %llu events: more than the Perfetto UI in a browser loads "
			       "(about %.3g M); convert a window of it with --time A:B (weft info shows the span)",
			       (unsigned long long)s.events, (double)ui / 1e6);
	return WEFT_EXIT_OK;
}
