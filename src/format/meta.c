/*
 * meta.c - a process's metadata file, record by record, into its weft_proc: call sites,
 * tracks, threads, clock calibration, symbols, totals. A truncated record ends the file with a
 * warning; a record of a newer minor version is skipped.
 */
#include "reader.h"
#include "reader-internal.h"
#include "format.h"
#include "symbols.h"
#include "pack.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

static size_t bounded_len(const char *s, size_t n)
{
	const char *z = memchr(s, 0, n);
	return z ? (size_t)(z - s) : n;
}

int weft_rd_check_header(struct weft_trace *t, const char *name, const unsigned char *d, size_t n,
			const char *magic, char *err, size_t errlen)
{
	struct weft_file_header h;
	if (n < sizeof(h)) {
		weft_trace_warn(t, "%s: shorter than its header (%zu bytes); skipped", name, n);
		return 1;
	}
	memcpy(&h, d, sizeof(h));
	if (memcmp(h.magic, magic, 8)) {
		weft_trace_warn(t, "%s: not a weft file (bad magic); skipped", name);
		return 1;
	}
	if (h.major > WEFT_FMT_MAJOR) {
		snprintf(err, errlen, "%s: trace format %u.%u is newer than this weft reads (%u.x); "
			 "use a newer weft", name, h.major, h.minor, WEFT_FMT_MAJOR);
		return -1;
	}
	return 0;
}

/* A process's map text is appended to plainly while its metadata file is read (maps_open
 * brings back what an earlier file of the same process left compressed), then compressed
 * (maps_close): 30-60 KB of text per rank becomes a few KB, what a 4,096-rank job's reader
 * can hold. Where compression fails the text stays plain; weft_proc_maps reads either. */
static void ix_funcs_add(void *ud, uint64_t a)
{
	struct weft_proc *p = ud;
	if (p->nix_funcs == p->ix_funcs_cap) {
		p->ix_funcs_cap = p->ix_funcs_cap ? p->ix_funcs_cap * 2 : 256;
		p->ix_funcs = weft_rd_xrealloc(p->ix_funcs, p->ix_funcs_cap * sizeof(*p->ix_funcs));
	}
	p->ix_funcs[p->nix_funcs++] = a;
}

/* A CHUNK_INDEX record's listing of its chunk's function addresses (1.13, funcset.h), tail
 * bytes after the entry e: decoded into p->ix_funcs, returned as (first << 32 | count). A
 * malformed listing is dropped and e's flag cleared: that chunk is scanned, as one without. */
static uint64_t index_funcs(struct weft_proc *p, struct weft_index_rec *e, const unsigned char *tail, size_t len)
{
	if (!(e->flags & WEFT_IX_FUNCS))
		return 0;
	size_t at = p->nix_funcs;
	long n = weft_funcset_decode(tail, len, NULL, NULL);
	if (n < 0 || at + (size_t)n > UINT32_MAX) {
		e->flags &= ~WEFT_IX_FUNCS;
		return 0;
	}
	weft_funcset_decode(tail, len, ix_funcs_add, p);
	return (uint64_t)at << 32 | (uint64_t)n;
}

static void maps_open(struct weft_proc *p)
{
	if (!p->maps_z)
		return;
	char *text = weft_proc_maps(p);
	if (!text)
		weft_oom("reading the trace");
	free(p->maps_z);
	p->maps_z = NULL;
	p->maps_zlen = 0;
	p->maps = text;
}

static void maps_close(struct weft_proc *p)
{
	if (!p->maps || !p->maps_len)
		return;
	size_t bound = ZSTD_compressBound(p->maps_len);
	void *z = malloc(bound);
	size_t got = z ? ZSTD_compress(z, bound, p->maps, p->maps_len, 1) : 0;
	if (!z || ZSTD_isError(got) || got >= p->maps_len) {
		free(z);
		return;
	}
	void *fit = realloc(z, got);
	p->maps_z = fit ? fit : z;
	p->maps_zlen = got;
	free(p->maps);
	p->maps = NULL;
}

/* A MAPS_Z record: its lines decompressed onto the process's map text, as a MAPS record's.
 * The records of a file are blocks of one zstd stream (*dctx, made at the first): a record that
 * does not decode loses its lines and those of the records continuing its stream, said once. */
static void maps_z_record(struct weft_trace *t, const char *name, struct weft_proc *p, const unsigned char *r,
			  size_t len, ZSTD_DCtx **dctx, int *broken)
{
	uint64_t raw;
	uint32_t flags;
	if (len < 24)
		return;
	memcpy(&raw, r + 8, 8);
	memcpy(&flags, r + 16, 4);
	if (!(flags & 1))
		*broken = 0; /* a stream begins */
	else if (*broken)
		return;
	const char *why = NULL;
	if (!*dctx && !(*dctx = ZSTD_createDCtx()))
		why = "no memory";
	else if (!raw || raw > (64u << 20)) /* damage must not size the buffer */
		why = "its length is damaged";
	if (!why) {
		if (!(flags & 1))
			ZSTD_DCtx_reset(*dctx, ZSTD_reset_session_only);
		p->maps = weft_rd_xrealloc(p->maps, p->maps_len + raw + 2);
		ZSTD_inBuffer in = {r + 24, len - 24, 0};
		ZSTD_outBuffer out = {p->maps + p->maps_len, raw, 0};
		size_t rc = 0;
		while (in.pos < in.size && out.pos < out.size && !ZSTD_isError(rc = ZSTD_decompressStream(*dctx, &out, &in)))
			;
		uint32_t sum;
		memcpy(&sum, r + 20, 4);
		if (ZSTD_isError(rc))
			why = ZSTD_getErrorName(rc);
		else if (out.pos != raw || in.pos != in.size)
			why = out.pos != raw ? "fewer bytes than it says" : "more bytes than it says";
		else if (weft_sum32(p->maps + p->maps_len, raw) != sum)
			why = "checksum mismatch";
		else {
			p->maps_len += raw;
			p->maps[p->maps_len++] = '\n';
		}
		p->maps[p->maps_len] = 0;
	}
	if (why) {
		*broken = 1;
		weft_trace_warn(t, "%s: a compressed MAPS record does not decode (%s); its lines and those after it "
				"in its stream are lost (functions there are left unnamed)", name, why);
	}
}

char *weft_proc_maps(const struct weft_proc *p)
{
	if (!p->maps_len)
		return NULL;
	char *text = malloc(p->maps_len + 1);
	if (!text)
		return NULL;
	if (p->maps) {
		memcpy(text, p->maps, p->maps_len);
	} else {
		size_t got = p->maps_z ? ZSTD_decompress(text, p->maps_len, p->maps_z, p->maps_zlen) : 0;
		if (ZSTD_isError(got) || got != p->maps_len) {
			free(text);
			return NULL;
		}
	}
	text[p->maps_len] = 0;
	return text;
}

void weft_rd_parse_meta(struct weft_trace *t, const char *name, const unsigned char *d, size_t n,
		       const char *stem, int pid)
{
	struct weft_proc *p = weft_rd_proc_get(t, stem, pid);
	p->has_meta = 1;
	maps_open(p);
	ZSTD_DCtx *dctx = NULL; /* the file's MAPS_Z stream */
	int zbroken = 0;
	size_t off = sizeof(struct weft_file_header);
	while (off < n) {
		struct weft_meta_rec_header h;
		if (n - off < sizeof(h)) {
			weft_trace_warn(t, "%s: truncated metadata record at offset %zu; the rest is ignored", name, off);
			break;
		}
		memcpy(&h, d + off, sizeof(h));
		off += sizeof(h);
		if (h.len > n - off) {
			weft_trace_warn(t, "%s: truncated metadata record at offset %zu; the rest is ignored", name,
			     off - sizeof(h));
			break;
		}
		const unsigned char *r = d + off;
		size_t len = h.len;
		off += len;
		switch (h.type) {
		case WEFT_M_PROCESS: {
			if (len < 16)
				break;
			uint32_t ids[2];
			memcpy(ids, r, 8);
			memcpy(&p->start_ns, r + 8, 8);
			p->ppid = (int)ids[1];
			const char *s = (const char *)r + 16;
			size_t rem = len - 16, l = bounded_len(s, rem);
			free(p->host);
			p->host = weft_rd_xstrndup(s, l);
			s += l + (l < rem);
			rem -= l + (l < rem);
			for (int i = 0; i < p->argc; i++)
				free(p->argv[i]);
			p->argc = 0;
			while (rem > 0 && *s) {
				l = bounded_len(s, rem);
				p->argv = weft_rd_xrealloc(p->argv, (size_t)(p->argc + 1) * sizeof(char *));
				p->argv[p->argc++] = weft_rd_xstrndup(s, l);
				s += l + (l < rem);
				rem -= l + (l < rem);
			}
			break;
		}
		case WEFT_M_OPTIONS:
			free(p->options);
			p->options = weft_rd_xstrndup((const char *)r, bounded_len((const char *)r, len));
			break;
		case WEFT_M_CLOCK:
			if (len >= 24) {
				p->clock = weft_rd_xrealloc(p->clock, (p->nclock + 1) * sizeof(*p->clock));
				memcpy(&p->clock[p->nclock++], r, 24);
			}
			break;
		case WEFT_M_CLOCK_SOURCE:
			if (len >= 16) {
				uint32_t k;
				memcpy(&k, r, 4);
				p->clock_kind = (int)k;
				p->clock_said = 1;
				memcpy(&p->nominal_hz, r + 8, 8);
			}
			break;
		case WEFT_M_SITE: {
			if (len < 8)
				break;
			uint32_t id;
			memcpy(&id, r, 4);
			struct weft_site_def *s = id <= t->site_id_max ? weft_rd_site_slot(p, id) : NULL;
			if (!s) {
				weft_trace_warn(t, "%s: call site id %u is beyond what the metadata can define; the site is ignored",
						name, id);
				break;
			}
			const char *str = (const char *)r + 8;
			size_t rem = len - 8, l1 = bounded_len(str, rem);
			size_t r2 = rem - l1 - (l1 < rem), l2 = bounded_len(str + l1 + 1, r2 > 0 ? r2 : 0);
			size_t r3 = r2 - l2 - (l2 < r2);
			free(s->name);
			free(s->cat);
			free(s->unit);
			s->name = weft_rd_xstrndup(str, l1);
			s->cat = r2 ? weft_rd_xstrndup(str + l1 + 1, l2) : weft_rd_xstrndup("", 0);
			s->unit = r3 ? weft_rd_xstrndup(str + l1 + 1 + l2 + 1, bounded_len(str + l1 + l2 + 2, r3)) : weft_rd_xstrndup("", 0);
			s->id = id;
			s->kind = r[4];
			s->is_double = r[5] & 1;
			s->defined = 1;
			break;
		}
		case WEFT_M_SOURCE: {
			if (len < 9)
				break;
			uint32_t w[2];
			memcpy(w, r, 8);
			struct weft_site_def *s = w[0] <= t->site_id_max ? weft_rd_site_slot(p, w[0]) : NULL;
			if (!s) {
				weft_trace_warn(t, "%s: call site id %u is beyond what the metadata can define; the site is ignored",
						name, w[0]);
				break;
			}
			free(s->file);
			s->file = weft_rd_xstrndup((const char *)r + 8, bounded_len((const char *)r + 8, len - 8));
			s->line = w[1];
			break;
		}
		case WEFT_M_TRACK: {
			if (len < 4)
				break;
			uint32_t id;
			memcpy(&id, r, 4);
			if (id == 0 || id > 65535)
				break;
			if (id >= p->ntracks) {
				p->tracks = weft_rd_xrealloc(p->tracks, (id + 1) * sizeof(char *));
				memset(p->tracks + p->ntracks, 0, (id + 1 - p->ntracks) * sizeof(char *));
				p->ntracks = id + 1;
			}
			free(p->tracks[id]);
			p->tracks[id] = weft_rd_xstrndup((const char *)r + 4, bounded_len((const char *)r + 4, len - 4));
			break;
		}
		case WEFT_M_THREAD: {
			if (len < 4)
				break;
			uint32_t tid;
			memcpy(&tid, r, 4);
			size_t nl = bounded_len((const char *)r + 4, len - 4);
			uint64_t serial = 0; /* after the name (format 1.2); 0 in older traces */
			if (len >= 4 + nl + 1 + 8)
				memcpy(&serial, r + 4 + nl + 1, 8);
			struct weft_thread_data *th = weft_rd_thread_get(p, tid, (uint32_t)serial);
			free(th->name);
			th->name = weft_rd_xstrndup((const char *)r + 4, nl);
			uint32_t flags = 0; /* after the serial (format 1.6); absent before */
			if (len >= 4 + nl + 1 + 8 + 4)
				memcpy(&flags, r + 4 + nl + 1 + 8, 4);
			th->weft_own = (flags & WEFT_THREAD_OWN) != 0;
			break;
		}
		case WEFT_M_THREAD_END: {
			if (len < 32)
				break;
			uint64_t v[4];
			memcpy(v, r, 32);
			struct weft_thread_data *th = weft_rd_thread_get(p, (uint32_t)v[0], (uint32_t)v[1]);
			th->ended = 1;
			if (v[3] > th->seq_end)
				th->seq_end = v[3];
			if (v[2] > th->dropped)
				th->dropped = v[2];
			break;
		}
		case WEFT_M_JOB:
			if (len >= 16) {
				p->has_job = 1;
				memcpy(&p->job_rank, r, 4);
				memcpy(&p->job_size, r + 4, 4);
				memcpy(&p->job_local_rank, r + 8, 4);
				memcpy(&p->job_local_size, r + 12, 4);
				const char *id = (const char *)r + 16;
				size_t l1 = bounded_len(id, len - 16);
				free(p->job_id);
				free(p->job_launcher);
				p->job_id = weft_rd_xstrndup(id, l1);
				p->job_launcher = l1 < len - 16 ? weft_rd_xstrndup(id + l1 + 1, bounded_len(id + l1 + 1, len - 16 - l1 - 1))
								 : weft_rd_xstrndup("", 0);
			}
			break;
		case WEFT_M_MPI:
			if (len >= 48) {
				p->has_mpi = 1;
				memcpy(&p->mpi_rank, r, 4);
				memcpy(&p->mpi_size, r + 4, 4);
				memcpy(&p->mpi_flavor, r + 8, 4);
				memcpy(&p->mpi_flags, r + 12, 4);
				memcpy(&p->mpi_calls, r + 16, 8);
				memcpy(&p->mpi_sent, r + 24, 8);
				memcpy(&p->mpi_received, r + 32, 8);
				memcpy(&p->mpi_undrawn, r + 40, 8);
				free(p->mpi_library);
				p->mpi_library = weft_rd_xstrndup((const char *)r + 48, bounded_len((const char *)r + 48, len - 48));
			}
			break;
		case WEFT_M_CHUNK_INDEX: /* matched to its chunk once all are read (finish) */
			if (len < sizeof(struct weft_index_rec))
				break;
			if (p->nindex == p->index_cap) {
				p->index_cap = p->index_cap ? p->index_cap * 2 : 16;
				p->index = weft_rd_xrealloc(p->index, p->index_cap * sizeof(*p->index));
				p->index_funcs = weft_rd_xrealloc(p->index_funcs, p->index_cap * sizeof(*p->index_funcs));
			}
			memcpy(&p->index[p->nindex], r, sizeof(struct weft_index_rec));
			p->index_funcs[p->nindex] = index_funcs(p, &p->index[p->nindex], r + sizeof(struct weft_index_rec),
								len - sizeof(struct weft_index_rec));
			p->nindex++;
			break;
		case WEFT_M_CLOCK_SYNC:
			if (len >= 40) {
				p->clock_sync = weft_rd_xrealloc(p->clock_sync, (p->nclock_sync + 1) * sizeof(*p->clock_sync));
				struct weft_clock_sync *c = &p->clock_sync[p->nclock_sync++];
				memcpy(&c->phase, r, 4);
				memcpy(&c->ref_rank, r + 4, 4);
				memcpy(&c->offset_ns, r + 8, 8);
				memcpy(&c->at_ns, r + 16, 8);
				memcpy(&c->rtt_ns, r + 24, 8);
				memcpy(&c->rounds, r + 32, 4);
				memcpy(&c->took_us, r + 36, 4);
				size_t hl = bounded_len((const char *)r + 40, len - 40);
				snprintf(c->ref_host, sizeof(c->ref_host), "%.*s", (int)hl, (const char *)r + 40);
			}
			break;
		case WEFT_M_SNAPSHOT:
			if (len >= 24) {
				p->snaps = weft_rd_xrealloc(p->snaps, (p->nsnaps + 1) * sizeof(*p->snaps));
				struct weft_snap_mark *m = &p->snaps[p->nsnaps++];
				memcpy(&m->ticks, r, 8);
				memcpy(&m->origin, r + 8, 4);
				memcpy(&m->number, r + 12, 4);
				memcpy(&m->refused, r + 16, 4);
				memcpy(&m->err, r + 20, 4);
				m->reason = weft_rd_xstrndup((const char *)r + 24, bounded_len((const char *)r + 24, len - 24));
			}
			break;
		case WEFT_M_NOTE:
			p->notes = weft_rd_xrealloc(p->notes, (p->nnotes + 1) * sizeof(*p->notes));
			p->notes[p->nnotes++] = weft_rd_xstrndup((const char *)r, bounded_len((const char *)r, len));
			break;
		case WEFT_M_SOURCES:
			free(p->sources);
			p->sources = weft_rd_xstrndup((const char *)r, bounded_len((const char *)r, len));
			break;
		case WEFT_M_PROCESS_NAME:
			free(p->name);
			p->name = weft_rd_xstrndup((const char *)r, bounded_len((const char *)r, len));
			break;
		case WEFT_M_MAPS_Z:
			maps_z_record(t, name, p, r, len, &dctx, &zbroken);
			break;
		case WEFT_M_MAPS:
			if (len > 8) {
				p->maps = weft_rd_xrealloc(p->maps, p->maps_len + len - 8 + 2);
				memcpy(p->maps + p->maps_len, r + 8, len - 8);
				p->maps_len += len - 8;
				p->maps[p->maps_len++] = '\n';
				p->maps[p->maps_len] = 0;
			}
			break;
		case WEFT_M_OVERHEAD:
			if (len >= 16) {
				memcpy(&p->writer_cpu_ns, r, 8);
				memcpy(&p->slow_paths, r + 8, 8);
				p->has_overhead = 1;
			}
			break;
		case WEFT_M_WINDOW:
			if (len >= 80) {
				memcpy(p->window, r, 72);
				memcpy(&p->window_number, r + 72, 4);
				p->has_window = 1;
				free(p->window_reason);
				p->window_reason = strndup((const char *)r + 80, len - 80);
			}
			break;
		case WEFT_M_RING:
			if (len >= 24) {
				memcpy(p->ring, r, 24);
				p->has_ring = 1;
			}
			break;
		case WEFT_M_FUNC_FILTER:
			if (len >= 8)
				memcpy(&p->func_filtered, r, 8);
			break;
		case WEFT_M_DISABLED:
			if (len >= 8)
				memcpy(&p->disabled, r, 8);
			break;
		case WEFT_M_WRITE_FAILED:
			if (len >= 4)
				memcpy(&p->write_errno, r, 4);
			break;
		case WEFT_M_SIGNAL:
			if (len >= 16) {
				memcpy(&p->end_signal, r, 4);
				memcpy(&p->end_signal_tid, r + 4, 4);
				memcpy(&p->end_signal_ticks, r + 8, 8);
			}
			break;
		case WEFT_M_FORK:
			if (len >= 16) {
				memcpy(&p->fork_tid, r, 4);
				memcpy(&p->fork_ticks, r + 8, 8);
			}
			break;
		case WEFT_M_MEMORY:
			if (len >= 32) {
				uint32_t flags;
				memcpy(&flags, r, 4);
				p->mem_recorded = (flags & 1) != 0;
				p->mem_stacks = (flags & 2) != 0;
				memcpy(&p->mem_threshold, r + 8, 8);
				memcpy(&p->mem_sample, r + 16, 8);
				memcpy(&p->mem_sample_full, r + 24, 8);
				memcpy(&p->mem_nested_lost, r + 4, 4);
				p->mem_not_interposed = (flags & 4) != 0;
				free(p->mem_allocator);
				p->mem_allocator = len > 33 && r[32] ? weft_rd_xstrndup((const char *)r + 32, bounded_len((const char *)r + 32, len - 32)) : NULL;
			}
			break;
		case WEFT_M_COUNTERS:
			if (len >= 8) {
				uint32_t head[2];
				memcpy(head, r, 8);
				size_t o = 8;
				p->nctr = 0;
				p->ctr_flags = head[1];
				for (uint32_t k = 0; k < head[0] && k < 8 && o < len; k++) {
					size_t l = strnlen((const char *)r + o, len - o);
					snprintf(p->ctr_names[k], sizeof(p->ctr_names[k]), "%.*s", (int)l, (const char *)r + o);
					o += l + 1;
					p->nctr = k + 1;
				}
				if (p->nctr != head[0])
					p->nctr = 0; /* damaged: the values cannot be told apart */
			}
			break;
		case WEFT_M_ACCESS:
			if (len >= 32) {
				memcpy(&p->access_samples, r + 8, 8);
				memcpy(&p->access_lost, r + 16, 8);
				memcpy(&p->access_throttled, r + 24, 8);
				memcpy(&p->access_source, r, 4);
				if (len >= 40)
					memcpy(&p->access_own, r + 32, 8);
				p->has_access = 1;
			}
			break;
		case WEFT_M_SCHED:
			if (len >= 32) {
				uint32_t head[2], rd;
				memcpy(head, r, 8);
				memcpy(&p->sched_records, r + 8, 8);
				memcpy(&p->sched_lost, r + 16, 8);
				memcpy(&rd, r + 24, 4);
				memcpy(&p->sched_pinned, r + 28, 4);
				p->sched_mode = head[0];
				p->sched_cpus = head[1];
				p->sched_readers = rd;
				const char *str = (const char *)r + 32, *end = (const char *)r + len;
				char *dst[4] = {p->sched_release, p->sched_machine, p->sched_why, p->sched_sets};
				size_t cap[4] = {sizeof(p->sched_release), sizeof(p->sched_machine), sizeof(p->sched_why),
						 sizeof(p->sched_sets)};
				for (int k = 0; k < 4; k++) { /* (no sets before the readers' CPU sets) */
					size_t l = str < end ? bounded_len(str, (size_t)(end - str)) : 0;
					snprintf(dst[k], cap[k], "%.*s", (int)l, str);
					str += l + 1;
				}
				if (str < end && (size_t)(end - str) >= 8) /* (absent before it was counted) */
					memcpy(&p->sched_unreported, str, 8);
				p->has_sched = 1;
			}
			break;
		case WEFT_M_WATCH:
			if (len >= 16) {
				uint32_t head[2];
				memcpy(head, r, 8);
				memcpy(&p->watch_lost, r + 8, 8);
				p->watch_unwatched = head[1];
				size_t nw = head[0] < 4 ? head[0] : 4, o = 16;
				if (len < o + nw * 24)
					break;
				for (size_t k = 0; k < nw; k++, o += 24) {
					struct weft_watch_total *w = &p->watches[k];
					memcpy(&w->addr, r + o, 8);
					memcpy(&w->len, r + o + 8, 4);
					memcpy(&w->source, r + o + 12, 4);
					memcpy(&w->hits, r + o + 16, 8);
					w->name[0] = 0;
				}
				for (size_t k = 0; k < nw && o < len; k++) {
					size_t l = bounded_len((const char *)r + o, len - o);
					snprintf(p->watches[k].name, sizeof(p->watches[k].name), "%.*s", (int)l, (const char *)r + o);
					o += l + 1;
				}
				p->nwatches = nw;
				p->has_watch = 1;
			}
			break;
		case WEFT_M_RUSAGE:
			if (len >= 24) {
				memcpy(&p->max_rss, r, 8);
				memcpy(&p->user_ns, r + 8, 8);
				memcpy(&p->sys_ns, r + 16, 8);
				p->has_rusage = 1;
			}
			break;
		case WEFT_M_SYS_SOURCE:
			if (len >= 24) {
				uint32_t w[2];
				memcpy(w, r, 8);
				if (w[0] >= WEFT_SYS_NSOURCES)
					break;
				struct weft_sys_src_def *sd = &p->sys_sources[w[0]];
				sd->present = 1;
				sd->state = w[1];
				memcpy(&sd->period_ns, r + 8, 8);
				memcpy(&sd->tid, r + 16, 4);
				free(sd->text);
				sd->text = weft_rd_xstrndup((const char *)r + 24, bounded_len((const char *)r + 24, len - 24));
			}
			break;
		case WEFT_M_SYS_CHANNEL:
			if (len >= 24) {
				struct weft_sys_chan_def c = {0};
				uint16_t k;
				memcpy(&c.id, r, 4);
				if (c.id > WEFT_SYS_CHANNEL_MAX) { /* the analysis indexes channels by id */
					weft_trace_warn(t, "%s: sampler channel id %u is out of range (damaged metadata); the channel is ignored",
							name, c.id);
					break;
				}
				memcpy(&k, r + 4, 2);
				c.kind = k;
				memcpy(&c.index, r + 8, 4);
				memcpy(&c.aux, r + 16, 8);
				c.name = weft_rd_xstrndup((const char *)r + 24, bounded_len((const char *)r + 24, len - 24));
				p->sys_chans = weft_rd_xrealloc(p->sys_chans, (p->nsys_chans + 1) * sizeof(c));
				p->sys_chans[p->nsys_chans++] = c;
			}
			break;
		case WEFT_M_SYS_OVERHEAD:
			if (len >= 24) {
				memcpy(&p->sys_cpu_ns, r, 8);
				memcpy(&p->sys_wall_ns, r + 8, 8);
				memcpy(&p->sys_rounds, r + 16, 8);
				p->has_sys_overhead = 1;
			}
			break;
		case WEFT_M_GPU:
			if (len >= 48) {
				uint32_t w[2], nt;
				memcpy(w, r, 8);
				p->has_gpu = 1;
				p->gpu_state = w[0];
				nt = w[1] > WEFT_GPU_MAX_TIDS ? WEFT_GPU_MAX_TIDS : w[1];
				if (48 + 4 * (size_t)nt > len)
					nt = (uint32_t)((len - 48) / 4);
				memcpy(&p->gpu_records, r + 8, 8);
				memcpy(&p->gpu_dropped, r + 16, 8);
				memcpy(&p->gpu_buffers, r + 24, 8);
				memcpy(&p->gpu_api_calls, r + 32, 8);
				memcpy(&p->cupti_version, r + 40, 4);
				p->gpu_ntids = nt;
				memcpy(p->gpu_tids, r + 48, 4 * (size_t)nt);
				size_t off = 48 + 4 * (size_t)w[1];
				if (off < len) {
					size_t tl = bounded_len((const char *)r + off, len - off);
					if (tl >= sizeof(p->gpu_text))
						tl = sizeof(p->gpu_text) - 1;
					memcpy(p->gpu_text, r + off, tl);
					p->gpu_text[tl] = 0;
				}
			}
			break;
		case WEFT_M_GPU_CLOCK:
			if (len >= 24) {
				struct weft_gpu_clock_pt c;
				uint64_t b1;
				memcpy(&c.gpu_ns, r, 8);
				memcpy(&c.boot_ns, r + 8, 8);
				memcpy(&b1, r + 16, 8);
				if (b1 < c.boot_ns)
					break;
				c.width = b1 - c.boot_ns;
				c.boot_ns += c.width / 2;
				if (!(p->ngpu_clock & (p->ngpu_clock + 1))) /* 0, 1, 3, 7, ...: double */
					p->gpu_clock = weft_rd_xrealloc(p->gpu_clock, (2 * p->ngpu_clock + 2) * sizeof(c));
				p->gpu_clock[p->ngpu_clock++] = c;
			}
			break;
		case WEFT_M_GPU_DEVICE:
			if (len >= 64) {
				struct weft_gpu_device_def d;
				memset(&d, 0, sizeof(d));
				uint32_t w[12];
				memcpy(w, r, sizeof(w));
				d.id = w[0];
				d.sms = w[1];
				d.cc_major = w[2];
				d.cc_minor = w[3];
				d.max_warps_sm = w[4];
				d.max_blocks_sm = w[5];
				d.max_shared_sm = w[6];
				d.max_regs_sm = w[7];
				d.max_regs_block = w[8];
				d.max_shared_block = w[9];
				d.max_threads_block = w[10];
				d.warp_size = w[11];
				memcpy(&d.global_mem, r + 48, 8);
				memcpy(&d.clock_khz, r + 56, 4);
				size_t tl = bounded_len((const char *)r + 64, len - 64);
				if (tl >= sizeof(d.name))
					tl = sizeof(d.name) - 1;
				memcpy(d.name, r + 64, tl);
				size_t k;
				for (k = 0; k < p->ngpu_devices; k++)
					if (p->gpu_devices[k].id == d.id)
						break;
				if (k == p->ngpu_devices)
					p->gpu_devices = weft_rd_xrealloc(p->gpu_devices, ++p->ngpu_devices * sizeof(d));
				p->gpu_devices[k] = d;
			}
			break;
		case WEFT_M_FINISH:
			if (len >= sizeof(p->fin)) {
				memcpy(p->fin, r, sizeof(p->fin));
				p->finished = 1;
			}
			break;
		default:
			break; /* a newer minor version's record: skip */
		}
	}
	ZSTD_freeDCtx(dctx);
	maps_close(p);
}
