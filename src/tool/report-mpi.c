/*
 * report-mpi.c - `weft report --mpi`: for a trace of an MPI job (libweft-mpi.so's slices,
 * category `mpi`), what analysis/mpi.c computes, as text, CSV or JSON. The text has a header
 * line (ranks, hosts, calls, messages matched, collective instances), one row per rank (span,
 * time in MPI, outside, wait, share of the span in MPI), one row per MPI function over all
 * ranks (calls, total, bytes, wait), the imbalance line (compute time max / mean, the slowest
 * and fastest rank) and the bytes each rank sent each other: a matrix up to 16 ranks, else the
 * pairs by bytes. CSV: one row per rank and function it called; JSON: everything.
 */
#include "tool/cmd.h"
#include "tool/report-mpi.h"
#include "tool/textout.h"
#include "analysis/mpi.h"
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define U(x) ((unsigned long long)(x))

static void col(const char *what, struct weft_unit u)
{
	char t[32];
	snprintf(t, sizeof(t), "%s (%s)", what, u.name);
	printf("  %12s", t);
}

static void num(uint64_t ns, struct weft_unit u)
{
	printf("  %12.*f", u.decimals, (double)ns / u.div);
}

static size_t nhosts(const struct weft_mpi *m)
{
	size_t n = 0;
	for (size_t r = 0; r < m->nranks; r++) {
		const struct weft_mpi_rank *a = &m->ranks[r];
		if (!a->present)
			continue;
		size_t k = 0;
		for (; k < r; k++)
			if (m->ranks[k].present && !strcmp(m->ranks[k].host ? m->ranks[k].host : "",
							    a->host ? a->host : ""))
				break;
		n += k == r;
	}
	return n;
}

static uint64_t span(const struct weft_mpi_rank *r)
{
	return r->last_ns > r->first_ns ? r->last_ns - r->first_ns : 0;
}

/* Totals over ranks per function, by total time. */
struct frow {
	const char *name;
	struct weft_mpi_fstat s;
};
static int by_total(const void *a, const void *b)
{
	const struct frow *x = a, *y = b;
	if (x->s.total_ns != y->s.total_ns)
		return x->s.total_ns > y->s.total_ns ? -1 : 1;
	return strcmp(x->name, y->name);
}
static struct frow *fn_totals(const struct weft_mpi *m, size_t *n)
{
	struct frow *f = calloc(m->nfns + 1, sizeof(*f));
	if (!f)
		weft_oom("the MPI report");
	for (size_t i = 0; i < m->nfns; i++)
		f[i].name = m->fns[i];
	for (size_t r = 0; r < m->nranks; r++)
		for (size_t i = 0; i < m->ranks[r].nfn && i < m->nfns; i++) {
			const struct weft_mpi_fstat *s = &m->ranks[r].fn[i];
			f[i].s.calls += s->calls;
			f[i].s.total_ns += s->total_ns;
			f[i].s.bytes += s->bytes;
			f[i].s.wait_ns += s->wait_ns;
		}
	size_t k = 0;
	for (size_t i = 0; i < m->nfns; i++)
		if (f[i].s.calls)
			f[k++] = f[i];
	qsort(f, k, sizeof(*f), by_total);
	*n = k;
	return f;
}

static int by_bytes(const void *a, const void *b)
{
	const struct weft_mpi_pair *x = a, *y = b;
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	if (x->src != y->src)
		return x->src < y->src ? -1 : 1;
	return x->dst < y->dst ? -1 : x->dst > y->dst;
}

static uint64_t pair_bytes(const struct weft_mpi *m, uint32_t s, uint32_t d)
{
	size_t lo = 0, hi = m->npairs; /* pairs are sorted by (src, dst) */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct weft_mpi_pair *p = &m->pairs[mid];
		if (p->src < s || (p->src == s && p->dst < d))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < m->npairs && m->pairs[lo].src == s && m->pairs[lo].dst == d ? m->pairs[lo].bytes : 0;
}

/* A receive whose size is known only when it completes: its bytes are on the completing call
 * (MPI_Wait*, MPI_Test*: mpi/complete.c), none on its own row. */
static int completed_later(const char *fn)
{
	static const char *const names[] = {"MPI_Irecv", "MPI_Imrecv", "MPI_Recv_init", "MPI_Precv_init"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(fn, names[i]))
			return 1;
	return 0;
}

static void text(const struct weft_mpi *m, long limit)
{
	struct weft_mpi_imbalance im = weft_mpi_imbalance(m);
	printf("# MPI: %zu ranks on %zu host%s, %llu calls, %llu messages matched, %llu flow ends unmatched, "
	       "%llu collective instances (%llu incomplete)\n", m->npresent, nhosts(m), nhosts(m) == 1 ? "" : "s",
	       U(m->calls), U(m->messages), U(m->unmatched_flows), U(m->collectives), U(m->incomplete_collectives));
	if (m->any_by_pid)
		printf("# ranks marked * had no rank in the trace: numbered after the others in pid order\n");
	/* one unit for the rank table's times, from its largest (the spans): columns that are
	 * parts of one another read in the same unit; --unit fixes it */
	uint64_t mx = 0;
	for (size_t r = 0; r < m->nranks; r++)
		if (m->ranks[r].present && span(&m->ranks[r]) > mx)
			mx = span(&m->ranks[r]);
	struct weft_unit u = weft_unit_for(mx);
	static const char *heads[4] = {"Span", "In MPI", "Outside", "Wait"};
	printf("\n%6s  %-16s  %8s", "Rank", "Host", "Pid");
	for (int k = 0; k < 4; k++)
		col(heads[k], u);
	printf("  %6s  Process\n", "MPI %");
	for (size_t r = 0; r < m->nranks; r++) {
		const struct weft_mpi_rank *a = &m->ranks[r];
		if (!a->present)
			continue;
		char rk[32];
		snprintf(rk, sizeof(rk), "%zu%s", r, a->by_pid ? "*" : "");
		printf("%6s  %-16s  %8d", rk, a->host ? a->host : "?", a->pid);
		uint64_t v[4] = {span(a), a->mpi_ns, weft_mpi_compute_ns(a), a->wait_ns};
		for (int k = 0; k < 4; k++)
			num(v[k], u);
		printf("  %6.1f  %s\n", span(a) ? 100.0 * (double)a->mpi_ns / (double)span(a) : 0.0,
		       a->name ? a->name : "?");
	}
	uint64_t ws = 0;
	for (size_t r = 0; r < m->nranks; r++)
		if (m->ranks[r].present && m->ranks[r].weft_ns > ws)
			ws = m->ranks[r].weft_ns;
	if (ws)
		printf("(Outside leaves out weft's own clock sync after MPI_Init and before MPI_Finalize: up to %.*f %s "
		       "a rank)\n", u.decimals, (double)ws / u.div, u.name);
	size_t nf;
	struct frow *f = fn_totals(m, &nf);
	if (limit > 0 && (size_t)limit < nf)
		nf = (size_t)limit;
	uint64_t mt = 0; /* (a call's wait is part of its time) */
	for (size_t i = 0; i < nf; i++)
		mt = f[i].s.total_ns > mt ? f[i].s.total_ns : mt;
	struct weft_unit ut = weft_unit_for(mt);
	printf("\n%9s", "Calls");
	col("Total", ut);
	printf("  %14s", "Bytes");
	col("Wait", ut);
	printf("  Function (all ranks)\n");
	int later = 0;
	for (size_t i = 0; i < nf; i++) {
		printf("%9llu", U(f[i].s.calls));
		num(f[i].s.total_ns, ut);
		if (!f[i].s.bytes && completed_later(f[i].name)) {
			printf("  %14s", "-");
			later = 1;
		} else {
			printf("  %14llu", U(f[i].s.bytes));
		}
		num(f[i].s.wait_ns, ut);
		printf("  %s\n", f[i].name);
	}
	free(f);
	if (later)
		printf("(-: a nonblocking receive's bytes are counted on the call that completed it, MPI_Wait* or "
		       "MPI_Test*)\n");
	struct weft_unit ui = u;
	printf("\nimbalance: compute time (outside MPI) max/mean %.3f: slowest rank %u (%.*f %s), fastest rank %u "
	       "(%.*f %s), mean %.*f %s\n", im.ratio, im.slowest, ui.decimals, (double)im.max_ns / ui.div, ui.name,
	       im.fastest, ui.decimals, (double)im.min_ns / ui.div, ui.name, ui.decimals, (double)im.mean_ns / ui.div,
	       ui.name);
	if (!m->npairs) {
		printf("\nbytes sent: no sending call with a peer\n");
		return;
	}
	if (m->nranks <= 16) {
		printf("\nbytes sent (row: from rank, column: to rank)\n%6s", "");
		for (size_t d = 0; d < m->nranks; d++)
			printf("  %12zu", d);
		printf("\n");
		for (size_t s = 0; s < m->nranks; s++) {
			printf("%6zu", s);
			for (size_t d = 0; d < m->nranks; d++)
				printf("  %12llu", U(pair_bytes(m, (uint32_t)s, (uint32_t)d)));
			printf("\n");
		}
		return;
	}
	struct weft_mpi_pair *p = malloc(m->npairs * sizeof(*p));
	if (!p)
		weft_oom("the MPI report");
	memcpy(p, m->pairs, m->npairs * sizeof(*p));
	qsort(p, m->npairs, sizeof(*p), by_bytes);
	size_t n = limit > 0 && (size_t)limit < m->npairs ? (size_t)limit : m->npairs < 20 ? m->npairs : 20;
	printf("\nbytes sent: the %zu largest of %zu pairs\n%6s  %6s  %14s  %9s\n", n, m->npairs, "From", "To",
	       "Bytes", "Messages");
	for (size_t i = 0; i < n; i++)
		printf("%6u  %6u  %14llu  %9llu\n", p[i].src, p[i].dst, U(p[i].bytes), U(p[i].messages));
	free(p);
}

/* The functions' indices by name: the order of a rank's rows in CSV and JSON. */
static const struct weft_mpi *byname_m;
static int by_name(const void *a, const void *b)
{
	return strcmp(byname_m->fns[*(const size_t *)a], byname_m->fns[*(const size_t *)b]);
}
static size_t *names_sorted(const struct weft_mpi *m)
{
	size_t *ix = malloc((m->nfns + 1) * sizeof(*ix));
	if (!ix)
		weft_oom("the MPI report");
	for (size_t i = 0; i < m->nfns; i++)
		ix[i] = i;
	byname_m = m;
	qsort(ix, m->nfns, sizeof(*ix), by_name);
	return ix;
}

static void csv(const struct weft_mpi *m)
{
	size_t *ix = names_sorted(m);
	printf("rank,host,function,calls,total_ns,bytes,wait_ns\n");
	for (size_t r = 0; r < m->nranks; r++) {
		const struct weft_mpi_rank *a = &m->ranks[r];
		if (!a->present)
			continue;
		for (size_t k = 0; k < m->nfns; k++) {
			size_t i = ix[k];
			const struct weft_mpi_fstat *s = i < a->nfn ? &a->fn[i] : NULL;
			if (!s || !s->calls)
				continue;
			printf("%zu,", r);
			weft_csv_str(a->host ? a->host : "");
			putchar(',');
			weft_csv_str(m->fns[i]);
			printf(",%llu,%llu,%llu,%llu\n", U(s->calls), U(s->total_ns), U(s->bytes), U(s->wait_ns));
		}
	}
	free(ix);
}

static void fstat_json(const char *name, const struct weft_mpi_fstat *s)
{
	printf("{\"function\":");
	weft_json_str(name);
	printf(",\"calls\":%llu,\"total_ns\":%llu,\"bytes\":%llu,\"wait_ns\":%llu}", U(s->calls), U(s->total_ns),
	       U(s->bytes), U(s->wait_ns));
}

static void json(const struct weft_mpi *m)
{
	struct weft_mpi_imbalance im = weft_mpi_imbalance(m);
	size_t *ix = names_sorted(m);
	printf("{\"calls\":%llu,\"messages\":%llu,\"unmatched_flows\":%llu,\"collectives\":%llu,"
	       "\"incomplete_collectives\":%llu,\"pending_peak\":%llu,\"pending_end\":%llu,\"hosts\":%zu,\"ranks\":[",
	       U(m->calls), U(m->messages), U(m->unmatched_flows), U(m->collectives), U(m->incomplete_collectives),
	       U(m->pending_peak), U(m->pending_end), nhosts(m));
	int first = 1;
	for (size_t r = 0; r < m->nranks; r++) {
		const struct weft_mpi_rank *a = &m->ranks[r];
		if (!a->present)
			continue;
		printf("%s\n{\"rank\":%zu,\"by_pid\":%s,\"host\":", first ? "" : ",", r, a->by_pid ? "true" : "false");
		first = 0;
		weft_json_str(a->host ? a->host : "");
		printf(",\"pid\":%d,\"process\":", a->pid);
		weft_json_str(a->name ? a->name : "");
		printf(",\"first_ns\":%llu,\"last_ns\":%llu,\"span_ns\":%llu,\"mpi_ns\":%llu,\"outside_ns\":%llu,"
		       "\"weft_sync_ns\":%llu,\"wait_ns\":%llu,\"calls\":%llu,\"functions\":[", U(a->first_ns), U(a->last_ns),
		       U(span(a)), U(a->mpi_ns), U(weft_mpi_compute_ns(a)), U(a->weft_ns), U(a->wait_ns), U(a->calls));
		int f1 = 1;
		for (size_t k = 0; k < m->nfns; k++) {
			size_t i = ix[k];
			if (i >= a->nfn || !a->fn[i].calls)
				continue;
			printf("%s", f1 ? "" : ",");
			f1 = 0;
			fstat_json(m->fns[i], &a->fn[i]);
		}
		printf("]}");
	}
	free(ix);
	size_t nf;
	struct frow *f = fn_totals(m, &nf);
	printf("],\n\"functions\":[");
	for (size_t i = 0; i < nf; i++) {
		printf("%s", i ? "," : "");
		fstat_json(f[i].name, &f[i].s);
	}
	free(f);
	printf("],\n\"imbalance\":{\"ratio\":%.6f,\"max_ns\":%llu,\"mean_ns\":%llu,\"min_ns\":%llu,\"slowest_rank\":%u,"
	       "\"fastest_rank\":%u},\n\"matrix\":[", im.ratio, U(im.max_ns), U(im.mean_ns), U(im.min_ns), im.slowest,
	       im.fastest);
	for (size_t i = 0; i < m->npairs; i++)
		printf("%s{\"from\":%u,\"to\":%u,\"bytes\":%llu,\"messages\":%llu}", i ? "," : "", m->pairs[i].src,
		       m->pairs[i].dst, U(m->pairs[i].bytes), U(m->pairs[i].messages));
	printf("]}\n");
}

/* ---- as a job ---- */

int weft_report_mpi_job(struct weft_report_job *job, const char *dir, int mpi)
{
	memset(job, 0, sizeof(*job));
	snprintf(job->base, sizeof(job->base), "%s/.weft-report-mpi", dir);
	if (!weft_convert_job_detect(&job->j, job->base))
		return 0;
	if (mpi && !access(dir, W_OK))
		return 1;
	if (job->j.rank)
		return -1;
	if (mpi)
		weft_cli_error("report", "%s is not writable, where the ranks of this job would meet: rank 0 of %u "
			       "makes the report alone", dir, job->j.size);
	return 0;
}

int weft_report_mpi_job_failed(struct weft_report_job *job, const char *why)
{
	return weft_convert_job_part_done(&job->j, NULL, 0, why, 0, 0) == 1;
}

/* Rank 0's: a launcher that ends the job leaves no part behind. */
static struct weft_convert_job *signal_job;
static void job_signal(int sig)
{
	if (signal_job)
		weft_convert_job_cleanup(signal_job);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Rank R > 0: its share's state, as a part for rank 0. */
static int report_part(const struct weft_trace *t, struct weft_report_job *job)
{
	char err[512] = "";
	struct weft_convert_job *j = &job->j;
	struct weft_mpi_acc *a = weft_mpi_begin(t, j->rank, j->size, err, sizeof(err));
	FILE *f = a ? weft_convert_job_part_open(j) : NULL;
	int rc = a && f ? weft_mpi_save(a, f) : -1;
	if (a && !f)
		snprintf(err, sizeof(err), "cannot write its part %.300s.tmp: %s", j->part, strerror(errno));
	else if (rc)
		snprintf(err, sizeof(err), "writing its part %.300s.tmp failed", j->part);
	weft_mpi_acc_free(a);
	int said = weft_convert_job_part_done(j, f, !rc, err, 0, 0);
	if (said < 0 || (rc && !said)) /* (else rank 0 said it) */
		weft_cli_error("report", "rank %u of %u: %s", j->rank, j->size, err[0] ? err : "its part failed");
	return said || rc ? WEFT_EXIT_FAIL : WEFT_EXIT_OK;
}

/* Rank 0: another rank's part, merged. */
static int take_part(void *ud, unsigned rank, const char *part, const char *sum, char *why, size_t n)
{
	(void)sum;
	FILE *f = fopen(part, "re");
	if (!f) {
		snprintf(why, n, "reading rank %u's part %s: %s", rank, part, strerror(errno));
		return -1;
	}
	char err[256];
	int rc = weft_mpi_load(ud, f, err, sizeof(err));
	fclose(f);
	if (rc)
		snprintf(why, n, "rank %u's part %s: %s", rank, part, err);
	return rc ? -1 : 0;
}

/* The analysis: alone, or as rank 0 of a job. NULL with the line said. */
static struct weft_mpi *analyze(const struct weft_trace *t, struct weft_report_job *job)
{
	struct weft_mpi *m;
	char err[1200];
	if (!job) {
		if (!weft_mpi_analyze(t, &m, err, sizeof(err)))
			return m;
		weft_mpi_free(m);
		weft_cli_error("report", "%s", err);
		return NULL;
	}
	signal_job = &job->j;
	signal(SIGTERM, job_signal);
	signal(SIGINT, job_signal);
	signal(SIGHUP, job_signal);
	struct weft_mpi_acc *a = weft_mpi_begin(t, 0, job->j.size, err, sizeof(err));
	if (!a) {
		weft_convert_job_cleanup(&job->j);
		weft_cli_error("report", "%s", err);
		return NULL;
	}
	if (weft_convert_job_each(&job->j, take_part, a, err, sizeof(err))) {
		weft_mpi_acc_free(a);
		weft_cli_error("report", "%s", err);
		return NULL;
	}
	fprintf(stderr, "weft: report: (the ranks of the trace analysed by %u ranks)\n", job->j.size);
	return weft_mpi_end(a);
}

int weft_report_mpi(const struct weft_trace *t, int fmt, long limit, struct weft_report_job *job)
{
	if (job && job->j.rank)
		return report_part(t, job);
	struct weft_mpi *m = analyze(t, job);
	if (!m)
		return WEFT_EXIT_FAIL;
	if (m->st.bad_chunks)
		weft_cli_warn_undecoded("report", m->st.bad_chunks, m->st.bad_why, NULL);
	if (m->st.oom) {
		weft_mpi_free(m);
		weft_cli_error("report", "out of memory: no report (it would be incomplete)");
		return WEFT_EXIT_FAIL;
	}
	if (!m->calls) {
		weft_mpi_free(m);
		/* the MPI wrappers ran and counted calls, but no call's events were written (ranks
		 * killed with SIGKILL, events files lost): not a program without MPI */
		size_t ranks = 0;
		unsigned long long counted = 0;
		for (size_t i = 0; i < t->nprocs; i++)
			if (t->procs[i].has_mpi && t->procs[i].mpi_calls) {
				ranks++;
				counted += t->procs[i].mpi_calls;
			}
		if (ranks)
			weft_cli_error("report", "--mpi: none of the %llu MPI calls that %zu %s recorded is in the trace "
				       "(their events were never written, or their files are gone: killed with SIGKILL?)",
				       counted, ranks, ranks > 1 ? "ranks" : "rank");
		else
			weft_cli_error("report", "--mpi: this trace has no MPI calls (record an MPI program with weft "
				       "record; libweft-mpi.so writes them)");
		return WEFT_EXIT_FAIL;
	}
	if (fmt == 1)
		csv(m);
	else if (fmt == 2)
		json(m);
	else
		text(m, limit);
	weft_mpi_free(m);
	return WEFT_EXIT_OK;
}
