/*
 * plot-heap.c - `weft plot heap`: one heap's live bytes over time, stacked by the slice that
 * allocated each block, as a PNG (cairo).
 *
 * The memory analysis (analysis/memory.h) hands over every block's life as two steps in time
 * order, +bytes at the allocation and -bytes at the free (a block never freed lives to the end):
 * its bytes are scaled as the heap's own figures are, for sampled traces, so the top edge is the
 * same live-bytes curve the heap's counter shows, and it belongs to the site of the innermost
 * slice open on the allocating thread (0: none, drawn as "[outside any slice]"). Per site, a step
 * curve of live bytes. Nothing is held per block: the analysis runs three times (first to find
 * the process, the heap and the window), and each time the steps are followed as they come,
 * one timestamp's steps at a time.
 *
 * A first pass over the steps finds each site's own peak within the window; the `top` sites with
 * the highest peaks get a band each (the highest at the bottom) and the rest fold into "other".
 * A second pass draws at most one column per pixel (and at most MAX_COLUMNS): each column shows
 * the bands at the moment within it when their sum is highest, so no peak of the total is lost
 * to the down-sampling and the bands always add up to the top edge. Bands are filled as whole
 * pixels, so a band's height in pixels is its bytes over the scale, rounded.
 *
 * With memory_stacks every analysis names the call stacks' frames as new sites of the process,
 * appended in the same order each time: a site past those defined before a run is mapped back
 * to the first counting run's id (same_site).
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

/* One timestamp's steps are applied together; then the sites (or bands) they moved are looked at. */
struct bands;
struct follow {
	size_t proc;
	uint32_t heap;
	int pass;                 /* 1: each site's peak in the window; 2: the columns */
	uint64_t t0, t1;
	uint32_t first_end, end;  /* the last site defined when pass 1's run began, and this run
				   * (same_site) */
	int started;              /* a step at t0 or later came (or the end): the window began */
	int in_group;             /* a group of steps with ts >= t0 is open */
	uint64_t gts;             /* its time */
	int active;               /* pass 2: it falls in a column */
	/* pass 1: per site id */
	uint64_t *slive, *speak;
	uint8_t *dirty;
	uint32_t *touched;
	size_t ntouched, ncap;
	/* pass 2 */
	const uint32_t *band_of;  /* per site id (ncap of them); beyond: "other" */
	size_t nbands, nnamed, ncol, c;
	struct bands *bs;
	uint64_t *cols, best, peak;
};
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

/* The highest site id defined in p. */
static uint32_t last_site(const struct weft_proc *p)
{
	for (size_t i = p->nsites; i-- > 1;)
		if (p->sites[i].defined)
			return (uint32_t)i;
	return 0;
}

/* A site id of this run as counting run 1 numbered it. */
static uint32_t same_site(const struct follow *f, uint32_t site)
{
	return site > f->end ? site - f->end + f->first_end : site;
}

static void site_room(struct follow *f, uint32_t site)
{
	if (site < f->ncap)
		return;
	size_t n = f->ncap ? f->ncap : 64;
	while (n <= site)
		n *= 2;
	f->slive = realloc(f->slive, n * sizeof(*f->slive));
	f->speak = realloc(f->speak, n * sizeof(*f->speak));
	f->dirty = realloc(f->dirty, n);
	f->touched = realloc(f->touched, n * sizeof(*f->touched));
	if (!f->slive || !f->speak || !f->dirty || !f->touched)
		weft_oom("drawing the plot");
	memset(f->slive + f->ncap, 0, (n - f->ncap) * sizeof(*f->slive));
	memset(f->speak + f->ncap, 0, (n - f->ncap) * sizeof(*f->speak));
	memset(f->dirty + f->ncap, 0, n - f->ncap);
	f->ncap = n;
}

/* Pass 2: column c's end (the last column also takes t1 itself), its start and its end. */
static uint64_t col_end(const struct follow *f, size_t c)
{
	return c + 1 == f->ncol ? f->t1 + 1
				: f->t0 + (uint64_t)((double)(f->t1 - f->t0) * (double)(c + 1) / (double)f->ncol);
}

static void col_start(struct follow *f)
{
	if (f->c < f->ncol) {
		memcpy(&f->cols[f->c * (f->nbands + 1)], f->bs->live, f->nbands * sizeof(*f->cols));
		f->best = f->bs->total;
	}
}

static void col_done(struct follow *f)
{
	/* a column's total: its bands' sum ("no band" steps are never live in the window) */
	uint64_t *col = &f->cols[f->c * (f->nbands + 1)], sum = 0;
	for (size_t k = 0; k < f->nbands; k++)
		sum += col[k];
	col[f->nbands] = sum;
	f->peak = sum > f->peak ? sum : f->peak;
	f->c++;
	col_start(f);
}

/* The window begins: each site's (band's) peak starts at what is live at t0. */
static void window_start(struct follow *f)
{
	f->started = 1;
	if (f->pass == 1) {
		if (f->ncap)
			memcpy(f->speak, f->slive, f->ncap * sizeof(*f->speak));
		return;
	}
	memcpy(f->bs->peak, f->bs->live, f->nbands * sizeof(*f->bs->peak));
	f->c = 0;
	col_start(f);
}

/* The open group of steps is complete. */
static void group_done(struct follow *f)
{
	if (!f->in_group)
		return;
	f->in_group = 0;
	if (f->pass == 1) {
		for (size_t i = 0; i < f->ntouched; i++) {
			uint32_t s = f->touched[i];
			if (f->slive[s] > f->speak[s])
				f->speak[s] = f->slive[s];
			f->dirty[s] = 0;
		}
		f->ntouched = 0;
		return;
	}
	if (!f->active)
		return;
	struct bands *bs = f->bs;
	for (size_t k = 0; k < f->nbands; k++)
		if (bs->live[k] > bs->peak[k])
			bs->peak[k] = bs->live[k];
	if (bs->total > f->best) {
		f->best = bs->total;
		memcpy(&f->cols[f->c * (f->nbands + 1)], bs->live, f->nbands * sizeof(*f->cols));
	}
}

static void on_step(void *ud, const struct weft_mem_step *st)
{
	struct follow *f = ud;
	if (st->proc != f->proc || st->heap != f->heap)
		return;
	uint32_t site = same_site(f, st->site);
	if (f->pass == 1)
		site_room(f, site);
	if (f->in_group && st->ts != f->gts)
		group_done(f);
	if (st->ts >= f->t0 && !f->started)
		window_start(f);
	if (f->started && !f->in_group) { /* a new group: in the window (pass 1), in a column (pass 2)? */
		f->in_group = 1;
		f->gts = st->ts;
		if (f->pass == 2) {
			while (f->c < f->ncol && st->ts >= col_end(f, f->c))
				col_done(f);
			f->active = f->c < f->ncol;
		}
	}
	if (f->pass == 1) {
		if (f->started && st->ts > f->t1)
			return;
		f->slive[site] += (uint64_t)st->delta;
		if (f->started && !f->dirty[site]) {
			f->dirty[site] = 1;
			f->touched[f->ntouched++] = site;
		}
		return;
	}
	if (f->started && !f->active)
		return;
	uint32_t b = site < f->ncap ? f->band_of[site] : (uint32_t)f->nnamed;
	f->bs->live[b] += (uint64_t)st->delta;
	f->bs->total += (uint64_t)st->delta;
}

/* One run of the analysis with f following the steps; 0 or its error. */
static int follow_run(const struct weft_trace *t, struct follow *f, char *err, size_t errlen)
{
	const struct weft_proc *p = &t->procs[f->proc];
	f->end = last_site(p);
	if (f->pass == 1)
		f->first_end = f->end;
	struct weft_mem_hooks hk = {.step = on_step, .ud = f};
	struct weft_mem *m = NULL;
	int rc = weft_mem_analyze_hooks(t, &hk, &m, err, errlen);
	weft_mem_free(m);
	if (rc)
		return rc;
	group_done(f);
	if (!f->started)
		window_start(f);
	if (f->pass == 2)
		while (f->c < f->ncol)
			col_done(f);
	return 0;
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
	struct weft_mem *mem = NULL; /* run 0: which process, which heap, the window */
	int rc = weft_mem_analyze(t, &mem, err, errlen);
	if (rc)
		return rc;
	const struct weft_mem_proc *mp = NULL;
	for (size_t i = o->pid ? proc : 0; i < t->nprocs && !mp; i++) {
		mp = weft_mem_for(mem, &t->procs[i]);
		proc = i;
		if (o->pid)
			break;
	}
	rc = -ENODATA;
	struct follow f = {0};
	uint32_t *band_of = NULL;
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

	/* pass 1: each site's own peak in the window (after each instant's steps) */
	f = (struct follow){.proc = proc, .heap = h->id, .pass = 1, .t0 = t0, .t1 = t1};
	if ((rc = follow_run(t, &f, err, errlen)))
		goto out;
	rc = -ENODATA;
	size_t nsites = f.ncap;
	speak = f.speak;

	/* the bands: the top sites by peak, then "other" */
	rk = malloc((nsites + 1) * sizeof(*rk));
	band_of = malloc((nsites + 1) * sizeof(*band_of));
	if (!rk || !band_of)
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
	f.pass = 2;
	f.started = f.in_group = f.active = 0;
	f.band_of = band_of;
	f.nbands = nbands;
	f.nnamed = nnamed;
	f.ncol = ncol;
	f.c = 0;
	f.bs = &bs;
	f.cols = cols;
	f.best = f.peak = 0;
	if ((rc = follow_run(t, &f, err, errlen)))
		goto out;
	uint64_t peak = f.peak;
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
			uint32_t site = rk[k].idx;
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
	free(f.slive);
	free(f.speak);
	free(f.dirty);
	free(f.touched);
	weft_mem_free(mem);
	return rc;
}
