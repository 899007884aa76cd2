/*
 * plot-heap.c - `weft plot heap`: one heap's live bytes over time, stacked by the slice that
 * allocated each block, as a PNG (cairo).
 *
 * The memory analysis (analysis/memory.h) hands over every block's life: its allocation and
 * free times, its bytes (scaled as the heap's own figures are, for sampled traces, so the top
 * edge is the same live-bytes curve the heap's counter shows) and the site of the innermost
 * slice open on the allocating thread (0: none, drawn as "[outside any slice]"). Each life becomes two
 * steps, +bytes at the allocation and -bytes at the free (a block never freed lives to the end),
 * sorted by time: per site, a step curve of live bytes.
 *
 * A first pass over the steps finds each site's own peak within the window; the `top` sites with
 * the highest peaks get a band each (the highest at the bottom) and the rest fold into "other".
 * A second pass draws at most one column per pixel (and at most MAX_COLUMNS): each column shows
 * the bands at the moment within it when their sum is highest, so no peak of the total is lost
 * to the down-sampling and the bands always add up to the top edge. Bands are filled as whole
 * pixels, so a band's height in pixels is its bytes over the scale, rounded.
 *
 * `describe` prints the frame (plot area, time window, bytes per pixel) and each band (name,
 * colour, peak, legend swatch) as JSON lines, so a test can find the pixels it expects.
 */
#include "export/plot.h"
#include "analysis/memory.h"
#include "export/model.h"
#include "export/plot-draw.h"
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_COLUMNS 2000
#define MAX_TOP 20
#define DEFAULT_TOP 8

struct hblock { uint64_t t0, t1, bytes; uint32_t site, heap; size_t proc; };
struct hstep { uint64_t ts; int64_t delta; uint32_t site; };

struct hdata {
	struct hblock *b;
	size_t nb, cap;
};

static void on_block(void *ud, const struct weft_mem_block_info *bi)
{
	struct hdata *d = ud;
	if (!bi->bytes)
		return;
	if (d->nb == d->cap) {
		d->cap = d->cap ? d->cap * 2 : 1024;
		if (!(d->b = realloc(d->b, d->cap * sizeof(*d->b))))
			weft_oom("drawing the plot");
	}
	d->b[d->nb++] = (struct hblock){bi->alloc_ts, bi->free_ts, bi->bytes, bi->alloc_site, bi->heap, bi->proc};
}

static int cmp_u32(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
	return a < b ? -1 : a > b;
}

static int cmp_step(const void *x, const void *y)
{
	const struct hstep *a = x, *b = y;
	return a->ts < b->ts ? -1 : a->ts > b->ts;
}

/* Sites ranked for the bands: by peak, highest first (then by id, so the order is stable). */
struct rank { uint32_t idx; uint64_t peak; };
static int cmp_rank(const void *x, const void *y)
{
	const struct rank *a = x, *b = y;
	if (a->peak != b->peak)
		return a->peak > b->peak ? -1 : 1;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* Band colours, 8-bit so what the PNG holds is exactly these; past them, lighter variants. */
static const unsigned char palette[10][3] = {
	{31, 119, 180}, {255, 127, 14}, {44, 160, 44}, {214, 39, 40}, {148, 103, 189},
	{140, 86, 75}, {227, 119, 194}, {188, 189, 34}, {23, 190, 207}, {57, 59, 121}};
static const unsigned char other_rgb[3] = {150, 150, 150};

static void band_rgb(size_t band, int other, unsigned char rgb[3])
{
	for (int k = 0; k < 3; k++) {
		unsigned v = other ? other_rgb[k] : palette[band % 10][k];
		rgb[k] = (unsigned char)(band >= 10 && !other ? v + (255 - v) * 2 / 5 : v);
	}
}

/* The unit bytes are labelled in: the largest that leaves at least 1. */
static double byte_unit(uint64_t peak, const char **name)
{
	static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double u = 1;
	int k = 0;
	while (k < 4 && (double)peak >= u * 1024)
		u *= 1024, k++;
	*name = names[k];
	return u;
}

/* bytes in its own unit, e.g. "3.00 MiB", "12.0 KiB", "100 B". */
static const char *fmt_bytes(uint64_t bytes, char *buf, size_t len)
{
	const char *uname;
	double u = byte_unit(bytes, &uname);
	if (u == 1)
		snprintf(buf, len, "%" PRIu64 " B", bytes);
	else
		snprintf(buf, len, "%.2f %s", (double)bytes / u, uname);
	return buf;
}

/* s as a JSON string's inside (quotes and controls escaped), cut to fit. */
static const char *json_str(const char *s, char *buf, size_t len)
{
	size_t o = 0;
	for (; *s && o + 7 < len; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			buf[o++] = '\\', buf[o++] = (char)c;
		else if (c < 0x20)
			o += (size_t)snprintf(buf + o, len - o, "\\u%04x", c);
		else
			buf[o++] = (char)c;
	}
	buf[o] = 0;
	return buf;
}

/* The window's state: live bytes per band, and each band's peak (at event resolution). */
struct bands {
	size_t n;
	uint64_t *live, *peak;
	uint64_t total;
};

static void apply_steps(struct bands *bs, const struct hstep *st, size_t from, size_t to, const uint32_t *band_of)
{
	for (size_t i = from; i < to; i++) {
		uint32_t b = band_of[st[i].site];
		bs->live[b] += (uint64_t)st[i].delta;
		bs->total += (uint64_t)st[i].delta;
	}
}

int weft_plot_heap(const struct weft_trace *t, const struct weft_plot_opts *o, char *err, size_t errlen)
{
	const char *heap_name = o->heap ? o->heap : "malloc";
	size_t top = o->top > 0 ? (size_t)(o->top > MAX_TOP ? MAX_TOP : o->top) : DEFAULT_TOP;
	size_t proc = 0;
	if (o->pid) {
		while (proc < t->nprocs && t->procs[proc].pid != o->pid)
			proc++;
		if (proc == t->nprocs) {
			snprintf(err, errlen, "no process %d in the trace", o->pid);
			return -ENOENT;
		}
	}
	struct hdata d = {0};
	struct weft_mem *mem = NULL;
	int rc = weft_mem_analyze_blocks(t, on_block, &d, &mem, err, errlen);
	if (rc) {
		free(d.b);
		return rc;
	}
	const struct weft_mem_proc *mp = NULL;
	for (size_t i = o->pid ? proc : 0; i < t->nprocs && !mp; i++) {
		mp = weft_mem_for(mem, &t->procs[i]);
		proc = i;
		if (o->pid)
			break;
	}
	rc = -ENODATA;
	struct hstep *st = NULL;
	uint32_t *sites = NULL, *band_of = NULL;
	struct rank *rk = NULL;
	uint64_t *cols = NULL, *speak = NULL, *blive = NULL;
	cairo_t *cr = NULL;
	cairo_surface_t *sf = NULL;
	if (!mp) {
		size_t i = 0;
		while (o->pid && i < t->nprocs && t->procs[i].pid != o->pid)
			i++;
		if (o->pid && i == t->nprocs)
			snprintf(err, errlen, "no process %d in the trace", o->pid);
		else
			weft_mem_why_none(t, o->pid, err, errlen);
		goto out;
	}
	const struct weft_proc *p = mp->p;
	const struct weft_mem_heap *h = NULL;
	for (size_t k = 0; k < mp->nheaps && !h; k++)
		if (!strcmp(mp->heaps[k].name, heap_name))
			h = &mp->heaps[k];
	if (!h && !strcmp(heap_name, "malloc") && p->mem_recorded) { /* e.g. only mmap records */
		weft_mem_why_none(t, p->pid, err, errlen);
		rc = -ENOENT;
		goto out;
	}
	if (!h) {
		int n = snprintf(err, errlen, "process %d has no heap '%s' (its heaps:", p->pid, heap_name);
		for (size_t k = 0; k < mp->nheaps && n > 0 && (size_t)n < errlen; k++)
			n += snprintf(err + n, errlen - (size_t)n, "%s %s", k ? "," : "", mp->heaps[k].name);
		if (n > 0 && (size_t)n < errlen)
			snprintf(err + n, errlen - (size_t)n, "%s)", mp->nheaps ? "" : " none");
		rc = -ENOENT;
		goto out;
	}

	/* the window, from the process's first memory record */
	uint64_t t0 = mp->first_ts, t1 = mp->last_ts;
	if (o->has_time) {
		if (o->t_from >= mp->last_ts - mp->first_ts && o->t_from) {
			snprintf(err, errlen, "nothing to draw: process %d's memory records end %.3f ms after its first",
				 p->pid, (double)(mp->last_ts - mp->first_ts) / 1e6);
			goto out;
		}
		t0 = mp->first_ts + o->t_from;
		if (o->t_to && mp->first_ts + o->t_to < t1)
			t1 = mp->first_ts + o->t_to;
	}
	if (t1 <= t0)
		t1 = t0 + 1;

	/* this heap's blocks: their sites, and two steps each */
	size_t nb = 0;
	for (size_t i = 0; i < d.nb; i++)
		if (d.b[i].proc == proc && d.b[i].heap == h->id)
			d.b[nb++] = d.b[i];
	sites = malloc((nb + 1) * sizeof(*sites));
	st = malloc((2 * nb + 1) * sizeof(*st));
	if (!sites || !st)
		weft_oom("drawing the plot");
	for (size_t i = 0; i < nb; i++)
		sites[i] = d.b[i].site;
	qsort(sites, nb, sizeof(*sites), cmp_u32);
	size_t nsites = 0;
	for (size_t i = 0; i < nb; i++)
		if (!nsites || sites[i] != sites[nsites - 1])
			sites[nsites++] = sites[i];
	size_t nst = 0;
	for (size_t i = 0; i < nb; i++) {
		const uint32_t *s = bsearch(&d.b[i].site, sites, nsites, sizeof(*sites), cmp_u32);
		uint32_t idx = (uint32_t)(s - sites);
		st[nst++] = (struct hstep){d.b[i].t0, (int64_t)d.b[i].bytes, idx};
		if (d.b[i].t1)
			st[nst++] = (struct hstep){d.b[i].t1 > d.b[i].t0 ? d.b[i].t1 : d.b[i].t0, -(int64_t)d.b[i].bytes, idx};
	}
	qsort(st, nst, sizeof(*st), cmp_step);

	/* pass 1: each site's own peak in the window (after each instant's steps) */
	band_of = malloc((nsites + 1) * sizeof(*band_of));
	speak = calloc(nsites + 1, sizeof(*speak));
	uint64_t *slive = calloc(nsites + 1, sizeof(*slive));
	if (!band_of || !speak || !slive)
		weft_oom("drawing the plot");
	for (size_t s = 0; s < nsites; s++)
		band_of[s] = (uint32_t)s;
	size_t e = 0;
	struct bands sb = {nsites, slive, speak, 0};
	while (e < nst && st[e].ts < t0)
		e++;
	apply_steps(&sb, st, 0, e, band_of);
	memcpy(speak, slive, nsites * sizeof(*speak));
	while (e < nst && st[e].ts <= t1) {
		size_t g = e;
		while (g < nst && st[g].ts == st[e].ts)
			g++;
		apply_steps(&sb, st, e, g, band_of);
		for (size_t i = e; i < g; i++)
			if (slive[st[i].site] > speak[st[i].site])
				speak[st[i].site] = slive[st[i].site];
		e = g;
	}
	free(slive);

	/* the bands: the top sites by peak, then "other" */
	rk = malloc((nsites + 1) * sizeof(*rk));
	if (!rk)
		weft_oom("drawing the plot");
	size_t nr = 0;
	for (size_t s = 0; s < nsites; s++)
		if (speak[s])
			rk[nr++] = (struct rank){(uint32_t)s, speak[s]};
	if (!nr) {
		snprintf(err, errlen, "nothing to draw: no live bytes in heap '%s' of process %d in that window",
			 heap_name, p->pid);
		goto out;
	}
	qsort(rk, nr, sizeof(*rk), cmp_rank);
	size_t nnamed = nr <= top + 1 ? nr : top, nbands = nnamed + (nr > nnamed);
	for (size_t s = 0; s < nsites; s++)
		band_of[s] = (uint32_t)nnamed; /* "other" (or no band: never live in the window) */
	for (size_t k = 0; k < nnamed; k++)
		band_of[rk[k].idx] = (uint32_t)k;

	/* pass 2: the columns, each at its moment of the highest total */
	int W = o->width, H = o->height;
	double left = 110, right = W - 250, top_y = 56, bottom = H - 50;
	size_t pw = (size_t)(right - left), ncol = pw < MAX_COLUMNS ? pw : MAX_COLUMNS;
	cols = calloc(ncol * (nbands + 1), sizeof(*cols));
	blive = calloc(2 * (nbands + 1), sizeof(*blive));
	if (!cols || !blive)
		weft_oom("drawing the plot");
	struct bands bs = {nbands + 1, blive, blive + nbands + 1, 0};
	for (e = 0; e < nst && st[e].ts < t0; e++)
		;
	apply_steps(&bs, st, 0, e, band_of);
	memcpy(bs.peak, bs.live, nbands * sizeof(*bs.peak));
	uint64_t peak = 0;
	for (size_t c = 0; c < ncol; c++) {
		/* [cs, ce): the last column also takes t1 itself */
		uint64_t ce = c + 1 == ncol ? t1 + 1 : t0 + (uint64_t)((double)(t1 - t0) * (double)(c + 1) / (double)ncol);
		uint64_t *col = &cols[c * (nbands + 1)], best = bs.total;
		memcpy(col, bs.live, nbands * sizeof(*col));
		while (e < nst && st[e].ts < ce) {
			size_t g = e;
			while (g < nst && st[g].ts == st[e].ts)
				g++;
			apply_steps(&bs, st, e, g, band_of);
			for (size_t k = 0; k < nbands; k++)
				if (bs.live[k] > bs.peak[k])
					bs.peak[k] = bs.live[k];
			if (bs.total > best) {
				best = bs.total;
				memcpy(col, bs.live, nbands * sizeof(*col));
			}
			e = g;
		}
		/* a column's total: its bands' sum ("no band" steps are never live in the window) */
		uint64_t sum = 0;
		for (size_t k = 0; k < nbands; k++)
			sum += col[k];
		col[nbands] = sum;
		peak = sum > peak ? sum : peak;
	}
	for (size_t k = 0; k < nnamed; k++)
		bs.peak[k] = speak[rk[k].idx]; /* exact, whatever the column sampling */

	/* the picture */
	const char *uname;
	double unit = byte_unit(peak, &uname), ymax = (double)peak * 1.05, ys = (bottom - top_y) / ymax;
	cr = weft_draw_canvas(W, H, &sf);
	char buf[512];
	snprintf(buf, sizeof(buf), "weft: live bytes of heap '%s' by allocating slice, process %d %s", heap_name,
		 p->pid, p->name ? p->name : "");
	cairo_set_source_rgb(cr, 0, 0, 0);
	weft_draw_text(cr, left, 24, buf, 14);
	if (mp->scale_note > 0)
		snprintf(buf, sizeof(buf), "peak %.2f %s (estimated: sampled, one per %.0f bytes on average)",
			 (double)peak / unit, uname, mp->scale_note);
	else
		snprintf(buf, sizeof(buf), "peak %.2f %s; the top edge is the heap's live bytes", (double)peak / unit, uname);
	cairo_set_source_rgb(cr, 0.3, 0.3, 0.3);
	weft_draw_text(cr, left, 42, buf, 11);
	/* the bytes axis and its grid */
	double step = weft_draw_nice_step(ymax / unit, 6);
	cairo_set_line_width(cr, 1);
	for (int k = 0; k * step * unit <= ymax; k++) {
		double v = k * step, y = floor(bottom - v * unit * ys) + 0.5;
		cairo_set_source_rgb(cr, 0.88, 0.88, 0.88);
		cairo_move_to(cr, left, y);
		cairo_line_to(cr, right, y);
		cairo_stroke(cr);
		snprintf(buf, sizeof(buf), "%g %s", v, uname);
		cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
		weft_draw_text(cr, 8, y + 4, buf, 10);
	}
	/* the stacks, whole pixels each */
	unsigned char rgb[MAX_TOP + 2][3];
	for (size_t k = 0; k < nbands; k++)
		band_rgb(k, k == nnamed, rgb[k]);
	for (size_t c = 0; c < ncol; c++) {
		double x0 = left + round((double)c * (double)pw / (double)ncol);
		double x1 = left + round((double)(c + 1) * (double)pw / (double)ncol);
		const uint64_t *col = &cols[c * (nbands + 1)];
		uint64_t cum = 0;
		double yprev = bottom;
		for (size_t k = 0; k < nbands; k++) {
			cum += col[k];
			double y = round(bottom - (double)cum * ys);
			if (y >= yprev)
				continue;
			cairo_set_source_rgb(cr, rgb[k][0] / 255.0, rgb[k][1] / 255.0, rgb[k][2] / 255.0);
			cairo_rectangle(cr, x0, y, x1 - x0, yprev - y);
			cairo_fill(cr);
			yprev = y;
		}
	}
	weft_draw_time_axis(cr, left, right, bottom, t0, t1);
	if (o->describe)
		printf("{\"frame\":{\"pid\":%d,\"heap\":\"%s\",\"left\":%.0f,\"right\":%.0f,\"top\":%.0f,\"bottom\":%.0f,"
		       "\"t0\":%" PRIu64 ",\"t1\":%" PRIu64 ",\"columns\":%zu,\"bytes_per_px\":%.6f,\"peak\":%" PRIu64 "}}\n",
		       p->pid, json_str(heap_name, buf, sizeof(buf)), left, right, top_y, bottom, t0, t1, ncol, 1 / ys,
		       peak);
	/* the legend, top to bottom as the stack */
	double lx = right + 20, ly = top_y + 4;
	cairo_set_source_rgb(cr, 0, 0, 0);
	weft_draw_text(cr, lx, ly, "allocating slice (its peak)", 11);
	/* the labels first: fitted together (two names never look the same) */
	char (*labels)[256] = calloc(nbands + 1, sizeof(*labels)), (*names)[64] = calloc(nbands + 1, sizeof(*names));
	char (*sizes)[48] = calloc(nbands + 1, sizeof(*sizes));
	const char **lnames = calloc(nbands + 1, sizeof(*lnames)), **lsuffix = calloc(nbands + 1, sizeof(*lsuffix));
	if (!labels || !names || !sizes || !lnames || !lsuffix)
		weft_oom("drawing the plot");
	for (size_t k = 0; k < nbands; k++) {
		char size[32];
		fmt_bytes(bs.peak[k], size, sizeof(size));
		lnames[k] = "other";
		if (k < nnamed) {
			uint32_t site = sites[rk[k].idx];
			lnames[k] = site ? weft_site_name(p, site) : WEFT_MEM_NO_SLICE;
			if (!lnames[k]) {
				snprintf(names[k], sizeof(names[k]), "site %" PRIu32, site);
				lnames[k] = names[k];
			}
			snprintf(sizes[k], sizeof(sizes[k]), " %s", size);
		} else {
			snprintf(sizes[k], sizeof(sizes[k]), " (%zu slices) %s", nr - nnamed, size);
		}
		lsuffix[k] = sizes[k];
	}
	weft_draw_fit_labels(cr, lnames, lsuffix, nbands, 10, W - 8 - (lx + 16), labels);
	for (size_t j = 0; j < nbands; j++) {
		size_t k = nbands - 1 - j;
		ly += 18;
		cairo_set_source_rgb(cr, rgb[k][0] / 255.0, rgb[k][1] / 255.0, rgb[k][2] / 255.0);
		cairo_rectangle(cr, lx, ly - 10, 12, 12);
		cairo_fill(cr);
		const char *nm = lnames[k];
		size_t folded = k < nnamed ? 0 : nr - nnamed;
		const char *lab = labels[k];
		cairo_set_source_rgb(cr, 0, 0, 0);
		weft_draw_text(cr, lx + 16, ly, lab, 10);
		if (o->describe) {
			char lb[600];
			printf("{\"band\":%zu,\"name\":\"%s\",\"rgb\":[%u,%u,%u],\"peak\":%" PRIu64 ",\"folded\":%zu,"
			       "\"swatch\":[%.0f,%.0f,12,12],\"label\":\"%s\",\"label_right\":%.1f}\n", k,
			       json_str(nm, buf, sizeof(buf)), rgb[k][0], rgb[k][1], rgb[k][2], bs.peak[k], folded, lx, ly - 10,
			       json_str(lab, lb, sizeof(lb)), lx + 16 + weft_draw_text_width(cr, lab, 10));
		}
	}
	free(labels);
	free(names);
	free(sizes);
	free(lnames);
	free(lsuffix);
	rc = weft_draw_finish(cr, sf, o->out, err, errlen);
	cr = NULL;
out:
	if (cr) {
		cairo_destroy(cr);
		cairo_surface_destroy(sf);
	}
	free(cols);
	free(blive);
	free(rk);
	free(band_of);
	free(speak);
	free(sites);
	free(st);
	free(d.b);
	weft_mem_free(mem);
	return rc;
}
