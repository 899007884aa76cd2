/*
 * cmd-estimate.c - `weft estimate DIR`: what the trace of a short run says a long one will cost
 * (like Score-P's scorep-score). Per function, slice, instant, counter, memory, sched, sampler
 * or GPU name: events, bytes on disk and their share, time per call; the rate of the run, the
 * size projected for --for, the buffer memory per process, and a -N filter that leaves out the
 * short functions that make most of the bytes, printed ready to paste into `weft record`.
 * The numbers come from analysis/estimate.c; docs/estimate.md explains each of them.
 */
#include "tool/cmd.h"
#include "tool/textout.h"
#include "analysis/estimate.h"
#include "lib/internal.h" /* weft_config_apply: the recording's chunk size and writers */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Room for the -N patterns: weft record joins them into an option of 1024 bytes ("a,-b,..."). */
#define FILTER_ROOM 1000

static void help(FILE *f)
{
	fprintf(f, "usage: weft estimate [OPTIONS] [DIR]   (default weft.data)\n"
		   "What recording costs, from the trace of a short run: per function or slice name\n"
		   "(and per kind: instants, counters, memory, sched, sampler, GPU) the events, the bytes on\n"
		   "disk and their share of the trace, the time per call; the size the run writes per\n"
		   "second and for --for, the buffer memory it needs, and a filter to paste into\n"
		   "`weft record`. docs/estimate.md explains the numbers.\n\n"
		   "      --for T              project a run of T (e.g. 90s, 30m, 8h, 2d; default 1h)\n"
		   "      --max-ns-per-call T  the filter suggests functions and slices whose calls take\n"
		   "                           at most T on average (default 1us; 500, 500ns, 2us)\n"
		   "      --min-share PCT      ... and that make at least PCT%% of the trace's bytes\n"
		   "                           (default 1)\n"
		   "  -f, --format FMT         text (default), csv (the rows) or json (everything)\n"
		   "  -n, --limit N            at most N rows in the text table (default 30; 0: all)\n"
		   "  -h, --help               this text\n\n"
		   "Exit status: 0, 1 unreadable, 2 usage.\n");
}

/* A duration with a unit: ns, us, ms, s, m/min, h, d; a bare number in `bare` units (ns). */
static int parse_time(const char *s, double bare, uint64_t *ns)
{
	static const struct { const char *u; double ns; } units[] = {
		{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"m", 60e9}, {"min", 60e9},
		{"h", 3600e9}, {"d", 86400e9},
	};
	char *end;
	double v = strtod(s, &end);
	if (end == s || !isfinite(v) || v < 0 || *s == '-' || *s == '+')
		return -1;
	double mul = 0;
	if (!*end)
		mul = bare;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]) && !mul; i++)
		if (!strcmp(end, units[i].u))
			mul = units[i].ns;
	if (!mul || v * mul >= 1.8e19)
		return -1;
	*ns = (uint64_t)(v * mul + 0.5);
	return 0;
}

/* "1.5 MiB" */
static const char *human(double bytes, char *buf, size_t n)
{
	static const char *const u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
	int k = 0;
	while (bytes >= 1024 && k < 5) {
		bytes /= 1024;
		k++;
	}
	if (k == 0)
		snprintf(buf, n, "%.0f B", bytes);
	else
		snprintf(buf, n, "%.*f %s", bytes < 10 ? 2 : bytes < 100 ? 1 : 0, bytes, u[k]);
	return buf;
}

/* A duration the way --for takes it: "2.5 ms", "40.1 s", "8 h", "90 min", "2 d". */
static const char *human_time(uint64_t ns, char *buf, size_t n)
{
	if (ns >= 86400000000000ull && ns % 86400000000000ull == 0)
		snprintf(buf, n, "%llu d", (unsigned long long)(ns / 86400000000000ull));
	else if (ns >= 3600000000000ull && ns % 3600000000000ull == 0)
		snprintf(buf, n, "%llu h", (unsigned long long)(ns / 3600000000000ull));
	else if (ns >= 60000000000ull && ns % 60000000000ull == 0)
		snprintf(buf, n, "%llu min", (unsigned long long)(ns / 60000000000ull));
	else if (ns >= 1000000000ull)
		snprintf(buf, n, "%.3f s", (double)ns / 1e9);
	else if (ns >= 1000000)
		snprintf(buf, n, "%.3f ms", (double)ns / 1e6);
	else if (ns >= 1000)
		snprintf(buf, n, "%.3f us", (double)ns / 1e3);
	else
		snprintf(buf, n, "%llu ns", (unsigned long long)ns);
	return buf;
}

/* The -N pattern that matches exactly the row's function or slice: its name, or for a C++
 * function its mangled symbol (-N matches that), glob characters escaped; ',' and ':', which
 * weft record's option string cannot hold, matched by '?'. NULL where -N cannot name it (a
 * demangled name without its symbol). */
static const char *pattern_of(const struct weft_est_row *r, char *buf, size_t n)
{
	const char *name = r->symbol ? r->symbol : r->name;
	if ((!r->symbol && r->kind == WEFT_EST_FUNCTION && (strstr(name, "::") || strchr(name, '('))) || !*name)
		return NULL;
	size_t o = 0;
	for (const char *s = name; *s; s++) {
		if (o + 3 >= n)
			return NULL;
		if (*s == ',' || *s == ':') {
			buf[o++] = '?';
			continue;
		}
		if (*s == '*' || *s == '?' || *s == '[' || *s == '\\' || (*s == '/' && s == name))
			buf[o++] = '\\';
		buf[o++] = *s;
	}
	buf[o] = 0;
	return buf;
}

/* name quoted for a POSIX shell: 'it'\''s' */
static void shell_quote(const char *s, char *out, size_t n)
{
	size_t o = 0;
	if (n < 3)
		return;
	out[o++] = '\'';
	for (; *s && o + 6 < n; s++) {
		if (*s == '\'') {
			memcpy(out + o, "'\\''", 4);
			o += 4;
		} else {
			out[o++] = *s;
		}
	}
	out[o++] = '\'';
	out[o] = 0;
}

struct filter {
	uint64_t max_ns;
	double min_share;
	uint64_t file_bytes;
	const struct weft_est_row *pick_base; /* e.rows: keep_row's index */
	uint8_t *pick;      /* per row: 1 suggested, 2 qualifies but -N cannot name it, 3 no room */
	size_t npick, nunnamed, nroom;
	uint64_t bytes, events;
	char args[8192];    /* "-N 'f' -N 'g'": FILTER_ROOM bytes of patterns, quoted */
};

static int qualifies(const struct weft_est_row *r, const struct filter *f)
{
	if (!weft_est_kind_filterable(r->kind) || !r->slices || !f->file_bytes)
		return 0;
	return r->dur_ns / r->slices <= f->max_ns && 100.0 * (double)r->bytes / (double)f->file_bytes >= f->min_share;
}

static void choose(const struct weft_estimate *e, struct filter *f)
{
	size_t used = 0;
	f->args[0] = 0;
	for (size_t i = 0; i < e->nrows; i++) { /* rows come by bytes: the largest first */
		const struct weft_est_row *r = &e->rows[i];
		if (!qualifies(r, f))
			continue;
		char pat[1024], q[4200];
		if (!pattern_of(r, pat, sizeof(pat))) {
			f->pick[i] = 2;
			f->nunnamed++;
			continue;
		}
		if (used + strlen(pat) + 2 > FILTER_ROOM) {
			f->pick[i] = 3;
			f->nroom++;
			continue;
		}
		used += strlen(pat) + 2;
		shell_quote(pat, q, sizeof(q));
		size_t l = strlen(f->args);
		snprintf(f->args + l, sizeof(f->args) - l, "%s-N %s", l ? " " : "", q);
		f->pick[i] = 1;
		f->npick++;
		f->bytes += r->bytes;
		f->events += r->events;
	}
}

static int keep_row(const struct weft_est_row *r, void *ud)
{
	const struct filter *f = ud;
	return f->pick[r - f->pick_base] != 1;
}

/* What the printers show: the estimate and what the command works out from it. */
struct view {
	const char *dir;
	const struct weft_estimate *e;
	struct filter f;
	uint64_t span, for_ns, proj, proj_f; /* projections: all rows, without the filter's */
	double rate;                         /* chunk bytes per second */
	long limit;
	struct weft_est_buffer *bufs, *bufs_f; /* per process: as recorded, and filtered */
	uint64_t *chunk, *limit_b;             /* per process: chunk_size, buffer_size (-b) */
	unsigned *writers;
	size_t worst;                          /* the process that needs the most buffer */
	struct { uint64_t rows, events, bytes; } kinds[WEFT_EST_NKINDS];
};

static void compute(struct view *v)
{
	const struct weft_estimate *e = v->e;
	v->f.file_bytes = e->file_bytes;
	v->f.pick = calloc(e->nrows + 1, 1);
	if (!v->f.pick)
		weft_oom("estimating");
	v->f.pick_base = e->rows;
	choose(e, &v->f);
	v->span = e->last_ns > e->first_ns ? e->last_ns - e->first_ns : 0;
	v->rate = v->span ? (double)e->chunk_bytes * 1e9 / (double)v->span : 0;
	v->proj = weft_estimate_project(e, v->for_ns, NULL, NULL);
	v->proj_f = weft_estimate_project(e, v->for_ns, keep_row, &v->f);
	uint64_t fraw = 0;
	for (size_t i = 0; i < e->nrows; i++)
		if (v->f.pick[i] == 1)
			fraw += e->rows[i].raw_bytes;
	double kept = e->raw_bytes ? (double)(e->raw_bytes - fraw) / (double)e->raw_bytes : 1.0;
	/* the buffer: per process, from its own recording options */
	v->bufs = calloc(e->nprocs + 1, sizeof(*v->bufs));
	v->bufs_f = calloc(e->nprocs + 1, sizeof(*v->bufs_f));
	v->chunk = calloc(e->nprocs + 1, sizeof(*v->chunk));
	v->limit_b = calloc(e->nprocs + 1, sizeof(*v->limit_b));
	v->writers = calloc(e->nprocs + 1, sizeof(*v->writers));
	if (!v->bufs || !v->bufs_f || !v->chunk || !v->limit_b || !v->writers)
		weft_oom("estimating");
	for (size_t i = 0; i < e->nprocs; i++) {
		struct weft_config cfg;
		weft_config_defaults(&cfg);
		if (e->procs[i].options)
			weft_config_apply(&cfg, e->procs[i].options, 0);
		v->chunk[i] = cfg.chunk_size;
		v->limit_b[i] = cfg.buffer_size;
		v->writers[i] = (unsigned)cfg.writers;
		weft_estimate_buffer(&e->procs[i], v->chunk[i], v->writers[i], v->for_ns, 1.0, &v->bufs[i]);
		weft_estimate_buffer(&e->procs[i], v->chunk[i], v->writers[i], v->for_ns, kept, &v->bufs_f[i]);
		if (v->bufs[i].need > v->bufs[v->worst].need)
			v->worst = i;
	}
	for (size_t i = 0; i < e->nrows; i++) {
		v->kinds[e->rows[i].kind].rows++;
		v->kinds[e->rows[i].kind].events += e->rows[i].events;
		v->kinds[e->rows[i].kind].bytes += e->rows[i].bytes;
	}
}

static void view_free(struct view *v)
{
	free(v->bufs);
	free(v->bufs_f);
	free(v->chunk);
	free(v->limit_b);
	free(v->writers);
	free(v->f.pick);
}

static double share(const struct view *v, uint64_t bytes)
{
	return v->e->file_bytes ? 100.0 * (double)bytes / (double)v->e->file_bytes : 0.0;
}

static void print_csv(const struct view *v)
{
	printf("kind,name,events,records,bytes,share_pct,raw_bytes,calls,ns_per_call,suggested\n");
	for (size_t i = 0; i < v->e->nrows; i++) {
		const struct weft_est_row *r = &v->e->rows[i];
		printf("%s,", weft_est_kind_name(r->kind));
		weft_csv_str(r->name);
		printf(",%llu,%llu,%llu,%.4f,%llu,%llu,", (unsigned long long)r->events,
		       (unsigned long long)r->records, (unsigned long long)r->bytes,
		       share(v, r->bytes),
		       (unsigned long long)r->raw_bytes, (unsigned long long)r->slices);
		if (r->slices)
			printf("%llu", (unsigned long long)(r->dur_ns / r->slices));
		printf(",%d\n", v->f.pick[i] == 1);
	}
}

static void print_json(const struct view *v)
{
	printf("{\"trace\":");
	weft_json_str(v->dir);
	printf(",\"span_ns\":%llu,\"events\":%llu,\"records\":%llu,\"raw_bytes\":%llu,\"file_bytes\":%llu,"
	       "\"chunk_bytes\":%llu,\"chunks\":%llu,\"meta_bytes\":%llu,\"header_bytes\":%llu,"
	       "\"unread_bytes\":%llu,\"bad_chunks\":%llu,\"bad_chunk_bytes\":%llu,",
	       (unsigned long long)v->span, (unsigned long long)v->e->events, (unsigned long long)v->e->records,
	       (unsigned long long)v->e->raw_bytes, (unsigned long long)v->e->file_bytes,
	       (unsigned long long)v->e->chunk_bytes, (unsigned long long)v->e->chunks, (unsigned long long)v->e->meta_bytes,
	       (unsigned long long)v->e->header_bytes, (unsigned long long)v->e->unread_bytes,
	       (unsigned long long)v->e->bad_chunks, (unsigned long long)v->e->bad_chunk_bytes);
	printf("\"bytes_per_s\":%.3f,\"for_ns\":%llu,\"projected_bytes\":%llu,\"processes\":[", v->rate,
	       (unsigned long long)v->for_ns, (unsigned long long)v->proj);
	for (size_t i = 0; i < v->e->nprocs; i++) {
		const struct weft_est_buffer *b = &v->bufs[i];
		printf("%s{\"pid\":%d,\"threads\":%u,\"raw_bytes\":%llu,\"chunk_bytes\":%llu,\"raw_bytes_per_s\":%.3f,"
		       "\"writer_bytes_per_s\":%.3f,\"chunk_size\":%llu,\"writers\":%u,\"buffer_size\":%llu,"
		       "\"buffer_needed\":%llu,\"writers_behind\":%s,\"writers_needed\":%u,"
		       "\"buffer_needed_filtered\":%llu}",
		       i ? "," : "", v->e->procs[i].pid, v->e->procs[i].threads, (unsigned long long)v->e->procs[i].raw_bytes,
		       (unsigned long long)v->e->procs[i].chunk_bytes, b->rate, b->pace, (unsigned long long)v->chunk[i],
		       v->writers[i], (unsigned long long)v->limit_b[i], (unsigned long long)b->need,
		       b->behind ? "true" : "false", b->writers_needed, (unsigned long long)v->bufs_f[i].need);
	}
	printf("],\"kinds\":[");
	int firstk = 1;
	for (unsigned k = 0; k < WEFT_EST_NKINDS; k++) {
		if (!v->kinds[k].rows)
			continue;
		printf("%s{\"kind\":\"%s\",\"names\":%llu,\"events\":%llu,\"bytes\":%llu}", firstk ? "" : ",",
		       weft_est_kind_name(k), (unsigned long long)v->kinds[k].rows, (unsigned long long)v->kinds[k].events,
		       (unsigned long long)v->kinds[k].bytes);
		firstk = 0;
	}
	printf("],\"filter\":{\"max_ns_per_call\":%llu,\"min_share_pct\":%g,\"args\":",
	       (unsigned long long)v->f.max_ns, v->f.min_share);
	weft_json_str(v->f.args);
	printf(",\"names\":[");
	int first = 1;
	for (size_t i = 0; i < v->e->nrows; i++)
		if (v->f.pick[i] == 1) {
			printf("%s", first ? "" : ",");
			weft_json_str(v->e->rows[i].name);
			first = 0;
		}
	printf("],\"not_nameable\":%zu,\"no_room\":%zu,\"bytes\":%llu,\"events\":%llu,\"projected_bytes\":%llu},"
	       "\"rows\":[",
	       v->f.nunnamed, v->f.nroom, (unsigned long long)v->f.bytes, (unsigned long long)v->f.events,
	       (unsigned long long)v->proj_f);
	for (size_t i = 0; i < v->e->nrows; i++) {
		const struct weft_est_row *r = &v->e->rows[i];
		printf("%s{\"kind\":\"%s\",\"name\":", i ? ",\n" : "\n", weft_est_kind_name(r->kind));
		weft_json_str(r->name);
		if (r->symbol) {
			printf(",\"symbol\":");
			weft_json_str(r->symbol);
		}
		printf(",\"events\":%llu,\"records\":%llu,\"bytes\":%llu,\"share_pct\":%.4f,\"raw_bytes\":%llu,"
		       "\"packed_bytes\":%llu,\"calls\":%llu,\"ns_per_call\":",
		       (unsigned long long)r->events, (unsigned long long)r->records, (unsigned long long)r->bytes,
		       share(v, r->bytes),
		       (unsigned long long)r->raw_bytes, (unsigned long long)r->packed_bytes,
		       (unsigned long long)r->slices);
		if (r->slices)
			printf("%llu", (unsigned long long)(r->dur_ns / r->slices));
		else
			printf("null");
		printf(",\"suggested\":%s}", v->f.pick[i] == 1 ? "true" : "false");
	}
	printf("]}\n");
}

static void print_text(const struct view *v)
{
	char h1[64], h2[64], h3[64], h4[64], h5[64];
	printf("%s: %llu events in %s, %zu process%s; %s on disk\n\n", v->dir, (unsigned long long)v->e->events,
	       human_time(v->span, h1, sizeof(h1)), v->e->nprocs, v->e->nprocs == 1 ? "" : "es",
	       human((double)v->e->file_bytes, h2, sizeof(h2)));
	printf("%12s  %12s  %6s  %10s  %12s  %-8s  %s\n", "Events", "Bytes", "Share", "Calls", "Time/call",
	       "Kind", "Name");
	printf("%12s  %12s  %6s  %10s  %12s  %-8s  %s\n", "============", "============", "======", "==========",
	       "============", "========", "====");
	for (size_t i = 0; i < v->e->nrows && (!v->limit || (long)i < v->limit); i++) {
		const struct weft_est_row *r = &v->e->rows[i];
		char tc[32] = "-", calls[32] = "-";
		if (r->slices) {
			human_time(r->dur_ns / r->slices, tc, sizeof(tc));
			snprintf(calls, sizeof(calls), "%llu", (unsigned long long)r->slices);
		}
		printf("%12llu  %12llu  %5.1f%%  %10s  %12s  %-8s  %s%s\n", (unsigned long long)r->events,
		       (unsigned long long)r->bytes,
		       share(v, r->bytes), calls, tc,
		       weft_est_kind_name(r->kind), r->name, v->f.pick[i] == 1 ? "  [filter]" : "");
	}
	if (v->limit && v->e->nrows > (size_t)v->limit)
		printf("  ... %zu more rows (-n 0: all)\n", v->e->nrows - (size_t)v->limit);
	printf("\nBy kind:");
	for (unsigned k = 0; k < WEFT_EST_NKINDS; k++)
		if (v->kinds[k].rows)
			printf("  %s %llu events %.1f%%", weft_est_kind_name(k), (unsigned long long)v->kinds[k].events,
			       share(v, v->kinds[k].bytes));
	printf("\nOn disk: %llu bytes = %llu in %llu chunks (the rows) + %llu metadata + %llu file headers",
	       (unsigned long long)v->e->file_bytes, (unsigned long long)v->e->chunk_bytes, (unsigned long long)v->e->chunks,
	       (unsigned long long)v->e->meta_bytes, (unsigned long long)v->e->header_bytes);
	if (v->e->unread_bytes)
		printf(" + %llu unread (a cut or damaged file)", (unsigned long long)v->e->unread_bytes);
	if (v->e->bad_chunk_bytes)
		printf(" + %llu in chunks not decoded", (unsigned long long)v->e->bad_chunk_bytes);
	printf("\n");
	if (!v->span) {
		printf("Rate: unknown (the trace spans no time): no projection\n");
	} else {
		printf("Rate: %s/s of events over %s\n", human(v->rate, h1, sizeof(h1)), human_time(v->span, h2, sizeof(h2)));
		printf("Projected for %s: %s (%llu bytes)\n", human_time(v->for_ns, h3, sizeof(h3)),
		       human((double)v->proj, h4, sizeof(h4)), (unsigned long long)v->proj);
	}
	if (v->e->nprocs && v->span) {
		const struct weft_est_buffer *b = &v->bufs[v->worst];
		printf("Buffer memory%s: %s (%u thread%s + %u writer%s, chunks of %s; the threads fill %s/s",
		       v->e->nprocs > 1 ? " (the process that needs most)" : "", human((double)b->need, h1, sizeof(h1)),
		       v->e->procs[v->worst].threads, v->e->procs[v->worst].threads == 1 ? "" : "s", v->writers[v->worst],
		       v->writers[v->worst] == 1 ? "" : "s", human((double)v->chunk[v->worst], h2, sizeof(h2)),
		       human(b->rate, h3, sizeof(h3)));
		if (b->pace > 0)
			printf(", a writer empties %s/s)\n", human(b->pace, h4, sizeof(h4)));
		else
			printf(", writer pace unknown: %s)\n", v->e->procs[v->worst].has_pace ? "under 4 chunks written"
											 : "no clean stop");
		if (b->behind)
			printf("  the writers cannot keep up: the backlog grows for the whole run; use --writers %u "
			       "or the filter\n", b->writers_needed);
		if (b->need > v->limit_b[v->worst])
			printf("  more than -b %s: events would be dropped (record with -b %s)\n",
			       human((double)v->limit_b[v->worst], h4, sizeof(h4)), human((double)b->need, h5, sizeof(h5)));
	}
	printf("\nSuggested filter (calls of at most %s on average, each at least %g%% of the bytes):\n",
	       human_time(v->f.max_ns, h1, sizeof(h1)), v->f.min_share);
	if (!v->f.npick) {
		printf("  none: no function or slice is that short and that large\n");
	} else {
		printf("  weft record %s -- PROGRAM\n", v->f.args);
		printf("  leaves out %llu events, %.1f%% of the bytes; projected for %s: %s\n",
		       (unsigned long long)v->f.events,
		       share(v, v->f.bytes),
		       human_time(v->for_ns, h2, sizeof(h2)), human((double)v->proj_f, h3, sizeof(h3)));
	}
	if (v->f.nunnamed)
		printf("  %zu more qualify but have no symbol to name them by (-N matches C++ names mangled)\n",
		       v->f.nunnamed);
	if (v->f.nroom)
		printf("  %zu more qualify but do not fit weft record's option string\n", v->f.nroom);
}

int cmd_estimate(int argc, char **argv)
{
	static const struct option opts[] = {
		{"for", required_argument, 0, 'D'}, {"max-ns-per-call", required_argument, 0, 'M'},
		{"min-share", required_argument, 0, 'S'}, {"format", required_argument, 0, 'f'},
		{"limit", required_argument, 0, 'n'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
	int fmt = 0, c;
	long limit = 30;
	uint64_t for_ns = 3600000000000ull;
	struct filter f = {.max_ns = 1000, .min_share = 1};
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "f:n:h", opts, NULL)) != -1) {
		char *end;
		switch (c) {
		case 'D':
			if (parse_time(optarg, 1e9, &for_ns) || !for_ns) {
				weft_cli_error("estimate", "--for takes a duration such as 90s, 30m, 8h or 2d, not '%s'", optarg);
				return WEFT_EXIT_USAGE;
			}
			break;
		case 'M':
			if (parse_time(optarg, 1, &f.max_ns)) {
				weft_cli_error("estimate", "--max-ns-per-call takes nanoseconds or a duration such as 2us, not '%s'",
					       optarg);
				return WEFT_EXIT_USAGE;
			}
			break;
		case 'S':
			f.min_share = strtod(optarg, &end);
			if (end == optarg || *end || !(f.min_share >= 0 && f.min_share <= 100)) {
				weft_cli_error("estimate", "--min-share takes a percentage from 0 to 100, not '%s'", optarg);
				return WEFT_EXIT_USAGE;
			}
			break;
		case 'f':
			if ((fmt = weft_cli_table_format("estimate", optarg)) < 0)
				return WEFT_EXIT_USAGE;
			break;
		case 'n':
		{
			long long v;
			if (weft_cli_parse_int(optarg, 0, LONG_MAX, &v)) {
				weft_cli_error("estimate", "--limit takes a number of rows (0: all), not '%s'", optarg);
				return WEFT_EXIT_USAGE;
			}
			limit = (long)v;
			break;
		}
		case 'h': help(stdout); return WEFT_EXIT_OK;
		default:
			weft_cli_error("estimate", "unknown option '%s' (see 'weft estimate --help')", argv[optind - 1]);
			return WEFT_EXIT_USAGE;
		}
	}
	if (argc - optind > 1) {
		weft_cli_error("estimate", "one trace directory, not %d", argc - optind);
		return WEFT_EXIT_USAGE;
	}
	const char *dir = optind < argc ? argv[optind] : "weft.data";
	struct weft_trace *t;
	char err[512];
	if (weft_trace_open(dir, &t, err, sizeof(err))) {
		weft_cli_error("estimate", "%s", err);
		return WEFT_EXIT_FAIL;
	}
	for (size_t i = 0; i < t->nwarnings; i++)
		weft_cli_error("estimate", "warning: %s", t->warnings[i]);
	struct weft_estimate e;
	int rc = weft_estimate_build(t, &e);
	if (!rc && (rc = weft_estimate_files(&e, dir)) != 0)
		weft_estimate_free(&e);
	if (rc) {
		weft_cli_error("estimate", "%s: %s", dir, rc == -ENOMEM ? "out of memory (no estimate: it would be incomplete)"
									: strerror(-rc));
		weft_trace_free(t);
		return WEFT_EXIT_FAIL;
	}
	if (e.bad_chunks)
		weft_cli_warn_undecoded("estimate", e.bad_chunks, e.bad_why, NULL);
	struct view v = {.dir = dir, .e = &e, .f = f, .for_ns = for_ns, .limit = limit};
	compute(&v);
	if (fmt == 1)
		print_csv(&v);
	else if (fmt == 2)
		print_json(&v);
	else
		print_text(&v);
	view_free(&v);
	weft_estimate_free(&e);
	weft_trace_free(t);
	return WEFT_EXIT_OK;
}
