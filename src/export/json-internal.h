/*
 * json-internal.h - what the JSON writer's files share (json.c: the two passes driven and the
 * streams merged into the file; json-events.c: each event formatted): the formatted-entry
 * lists, a thread's state, and the text primitives (numbers, microseconds, escaped strings).
 */
#ifndef WEFT_JSON_INTERNAL_H
#define WEFT_JSON_INTERNAL_H

#include "export/export.h"
#include "export/pb.h"
#include "analysis/memory.h"
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* An entry's text is the event's JSON after the ",\n" that separates it from the one before
 * (add() writes it; the first event of the file skips it), so that entries formatted one after
 * the other are one run of bytes, written out without a copy. */
#define JF_BARE 1u /* the text has no separator before it (the GPU's list) */

struct jent {
	uint64_t ts;
	uint64_t off;
	uint32_t len, flags;
};

struct jstack {
	unsigned track;
	size_t *idx;
	size_t n, cap;
};

struct jlist { /* formatted entries and their text */
	struct pb text;
	struct jent *ents;
	size_t nents, cap, pos;
	int unsorted;
};

/* A process's sites as JSON, escaped once before the passes: site i's `,"name":"..."` (and
 * `,"cat":"..."` where it has a category) is text[off[i] .. off[i + 1]). */
struct jnames {
	struct pb text;
	uint32_t *off;
	size_t n; /* the process's nsites */
};

struct jthread {
	const struct weft_proc *p;
	const struct jnames *names;
	char pre[64]; /* `","pid":P,"tid":T,"ts":`: the head of every event on the thread's own row */
	unsigned npre;
	/* the digits of the last timestamp's whole seconds (ts / 10^9, when not 0): the next
	 * timestamps share them (put_ts) */
	uint64_t ts_hi;
	char ts_digits[24];
	unsigned ts_n;
	const struct weft_thread_data *th;
	size_t thread_index;
	int style, pass;
	int p1; /* what pass 1 learns: JP1_REST and (X style) JP1_DURS, once or in two walks */
	uint64_t end_ns; /* closes slices left open */
	struct jlist out;  /* pass 2: the entries being merged (one chunk's or more) */
	/* pass 2: the next entries, formatted ahead by a worker (json.c) while `out` is merged;
	 * `fill` is the list the walker's events go to (spare, or out in pass 1's side use) */
	struct jlist spare, *fill;
	int spare_state; /* json.c's JS_*: guarded by the feed's lock */
	struct jlist side; /* pass 1: complete slices */
	struct jstack *stacks;
	size_t nstacks;
	uint64_t *durs; /* pass 1: per begin, in order: duration | JD_UNTERM */
	size_t ndurs, dcap, dnext;
	/* X style, pass 1: the arguments that followed a slice's END (an MPI receive's actual
	 * source, say), formatted into etext, by the slice's begin index; pass 2 adds them to the
	 * X event (sorted by begin: enext walks them as dnext walks durs) */
	struct jendargs { size_t begin, off, len; } *eargs;
	size_t neargs, ecap, enext;
	struct pb etext;
	unsigned *lanes; /* named tracks used by this thread */
	size_t nlanes;
	struct weft_walker walker;
	uint64_t *buf;
	size_t bufcap, chunk;
	int finished;
	struct weft_walk_stats st;
	uint64_t *aflows; /* pass 1: ids of arrows that leave or reach an async slice */
	size_t naflows, acap;
	const uint64_t *aset; /* pass 2: every thread's aflows, sorted */
	size_t naset;
	const struct weft_mem_proc *mem; /* the process's memory analysis, or NULL */
	/* B/E style: per chunk, whether pass 1 wants it (weft_json_scan): 0 no, 1 yes, or -errno where
	 * its headers did not decode (the reason in want_why) */
	int *want;
	const char **want_why;
};
#define JP1_REST 1 /* lanes, complete slices, the arrows of async slices: before the merge */
#define JP1_DURS 2 /* the X style's durations: with the rest, or a group at a time */
#define JD_UNTERM (1ull << 63)
#define JD_EXC (1ull << 62) /* left by an exception */

static inline void put(struct pb *b, const char *s, size_t n)
{
	pb_reserve(b, n);
	memcpy(b->p + b->n, s, n);
	b->n += n;
}
#define PUTS(b, lit) put(b, lit, sizeof(lit) - 1)

/* How many decimal digits v has. */
static inline unsigned dec_digits(uint64_t v)
{
	static const uint64_t pow10[20] = {1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull,
					   10000000ull, 100000000ull, 1000000000ull, 10000000000ull,
					   100000000000ull, 1000000000000ull, 10000000000000ull,
					   100000000000000ull, 1000000000000000ull, 10000000000000000ull,
					   100000000000000000ull, 1000000000000000000ull,
					   10000000000000000000ull};
	unsigned t = ((unsigned)(64 - __builtin_clzll(v | 1)) * 1233) >> 12; /* log10 from log2 */
	return t + 1 - (v < pow10[t]) + !v; /* 0 has one digit */
}

/* v in decimal, two digits per division, written in place (the exporters' hottest code: every
 * event has a pid, a tid and a timestamp) */
static inline void put_u64(struct pb *b, uint64_t v)
{
	static const char pairs[201] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
				       "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
				       "8081828384858687888990919293949596979899";
	unsigned len = dec_digits(v);
	pb_reserve(b, 20);
	char *o = (char *)b->p + b->n + len;
	while (v >= 100) {
		unsigned k = (unsigned)(v % 100) * 2;
		v /= 100;
		*--o = pairs[k + 1];
		*--o = pairs[k];
	}
	if (v >= 10) {
		*--o = pairs[v * 2 + 1];
		*--o = pairs[v * 2];
	} else {
		*--o = (char)('0' + v);
	}
	b->n += len;
}

static inline void put_i64(struct pb *b, int64_t v)
{
	if (v < 0) {
		PUTS(b, "-");
		put_u64(b, (uint64_t)0 - (uint64_t)v);
	} else {
		put_u64(b, (uint64_t)v);
	}
}

/* ns -> microseconds with three decimals (every event has a timestamp): the digits written back
 * to front in place */
static inline void put_us(struct pb *b, uint64_t ns)
{
	static const char pairs[201] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
				       "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
				       "8081828384858687888990919293949596979899";
	uint64_t v = ns / 1000;
	unsigned r = (unsigned)(ns - v * 1000);
	unsigned len = dec_digits(v);
	pb_reserve(b, 24);
	char *o = (char *)b->p + b->n + len + 4;
	b->n += len + 4;
	*--o = (char)('0' + r % 10);
	r /= 10;
	*--o = pairs[r * 2 + 1];
	*--o = pairs[r * 2];
	*--o = '.';
	while (v >= 100) {
		unsigned k = (unsigned)(v % 100) * 2;
		v /= 100;
		*--o = pairs[k + 1];
		*--o = pairs[k];
	}
	if (v >= 10) {
		*--o = pairs[v * 2 + 1];
		*--o = pairs[v * 2];
	} else {
		*--o = (char)('0' + v);
	}
}

/* n bytes from s, which may be read 16 bytes past its end, in 16-byte copies */
static inline void put_padded(struct pb *b, const uint8_t *s, size_t n)
{
	pb_reserve(b, n + 16);
	uint8_t *o = b->p + b->n;
	for (size_t k = 0; k < n; k += 16)
		memcpy(o + k, s + k, 16);
	b->n += n;
}

static inline void put_double(struct pb *b, double d)
{
	char tmp[40];
	if (d != d || d - d != 0) { /* NaN or infinity: JSON has no such number */
		PUTS(b, "null");
		return;
	}
	int n = snprintf(tmp, sizeof(tmp), "%.17g", d);
	put(b, tmp, (size_t)n);
}

static inline void put_str(struct pb *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	pb_reserve(b, n * 6 + 2);
	uint8_t *o = b->p + b->n;
	*o++ = '"';
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\') {
			*o++ = '\\';
			*o++ = c;
		} else if (c < 0x20 || c == 0x7f) {
			*o++ = '\\';
			*o++ = 'u';
			*o++ = '0';
			*o++ = '0';
			*o++ = (uint8_t)hex[c >> 4];
			*o++ = (uint8_t)hex[c & 15];
		} else if (c >= 0x80) {
			/* pass valid UTF-8 through; replace invalid bytes with U+FFFD */
			size_t len = (c >= 0xf0 && c < 0xf5) ? 4 : (c >= 0xe0) ? 3 : (c >= 0xc2 && c < 0xe0) ? 2 : 0;
			int ok = len && i + len <= n;
			for (size_t k = 1; ok && k < len; k++)
				ok = ((unsigned char)s[i + k] & 0xc0) == 0x80;
			if (ok) {
				memcpy(o, s + i, len);
				o += len;
				i += len - 1;
			} else {
				memcpy(o, "\xef\xbf\xbd", 3);
				o += 3;
			}
		} else {
			*o++ = c;
		}
	}
	*o++ = '"';
	b->n = (size_t)(o - b->p);
}

static inline void put_cstr(struct pb *b, const char *s)
{
	put_str(b, s, strlen(s));
}

/* Escapes the names of p's sites into N. */
void weft_json_names_build(const struct weft_proc *p, struct jnames *N);

/* Makes j->pre from its pid and tid. */
void weft_json_thread_prefix(struct jthread *j);
/* B/E style, before pass 1: which chunks of the n threads pass 1 wants, on `jobs` threads. */
void weft_json_scan(struct jthread *js, size_t n, int jobs);
/* Pass 1 of thread i of the array ud (struct jthread[]): what its p1 says (durations, lanes,
 * side list). */
void weft_json_pass1(size_t i, void *ud);
/* Pass 2's event callback: formats into the thread's out list. */
void weft_json_pass2_event(void *ud, const struct weft_ev *ev);
/* The process's memory counters, into the side list of its first thread. */
void weft_json_mem_counters(struct jthread *j);
/* Snapshot requests as instants, into L. */
void weft_json_snapshot_marks(const struct weft_trace *t, struct jlist *L);
/* A lane's pseudo-thread id. */
uint64_t weft_json_lane_tid(const struct jthread *j, unsigned track);
int weft_json_cmp_u64(const void *a, const void *b);

/* The merge in stages (json-runs.c): sorted runs of entries in a spill file, then merged. */
struct jruns {
	int fd;        /* the spill file: unlinked, in $TMPDIR or /tmp */
	const char *dir;
	void *cctx;    /* (ZSTD_CCtx) */
	uint8_t *blk, *zbuf; /* the block being gathered; a compressed block */
	size_t blkn, blkcap, zcap;
	uint64_t *off; /* run i: bytes [off[i], off[i + 1]) */
	size_t n, cap;
	uint64_t at;   /* bytes written */
	int err;       /* the first failure's errno */
};
/* A new spill file: 0, or -errno. */
int weft_json_runs_open(struct jruns *R);
/* An entry (text without its separator) to the run being written. */
void weft_json_runs_add(struct jruns *R, uint64_t ts, const uint8_t *text, size_t len);
/* Ends the run being written (the next entry starts another). */
void weft_json_runs_end(struct jruns *R);
/* Every run's entries to emit, by (timestamp, run): 0, or -errno. */
int weft_json_runs_merge(struct jruns *R, void (*emit)(void *ud, const uint8_t *text, size_t len), void *ud);
void weft_json_runs_free(struct jruns *R);
int weft_json_cmp_ent(const void *a, const void *b);

#endif
