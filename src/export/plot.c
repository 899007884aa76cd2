/*
 * plot.c - PNG pictures of a trace's memory, drawn with cairo (Debian libcairo2).
 *
 * weft_plot_memory: Heimdallr's address x time picture of one process. x is time; y is the
 * address, with the empty ranges between used ones squeezed out: every allocation's range and
 * every sampled page is a used interval, intervals closer than 1 MiB merge into a segment, and
 * each segment gets a band of the height in proportion to its size (at least 14 px), with a
 * dashed line and the size of the gap between bands. Allocations are rectangles from their
 * allocation to their free (or the end), coloured and labelled by the slice that made them;
 * sampled accesses are dots on top. A legend names the slices with the most bytes.
 *
 * weft_plot_heap_lines: live bytes over time, one line per heap of one process (`weft plot heap
 * --lines`; the stacked picture by allocating slice is plot-heap.c's).
 *
 * Nothing is held per allocation: the analysis runs three times, handing over every block's life
 * each time (analysis/memory.h): first for the extent in time, then for the used address ranges
 * (merged as they come), then to draw. The sampled accesses are kept (a sample per page).
 * With memory_stacks every run names the call stacks' frames as new sites, appended in the same
 * order each time: a site past those defined before a run is mapped back to the first run's id.
 *
 * weft_plot_memory can describe what it drew (`describe`: one JSON line per allocation with its
 * pixel rectangle), so a test can look at the pixels where a known block must be.
 *
 * The drawing helpers of plot-draw.h (canvas, text, ticks, the time axis, the PNG) live here too.
 */
#include "export/plot.h"
#include "export/plot-draw.h"
#include "analysis/memory.h"
#include "export/model.h"
#include "tool/shortname.h"
#include <cairo.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct paccess { uint64_t ts, addr; };
struct seg { uint64_t lo, hi; double y0, y1; };
struct legend { uint32_t site; uint64_t bytes; };

/* The address ranges closer than this are one segment of the picture. */
#define SEG_GAP ((uint64_t)1 << 20)

struct pdata {
	size_t proc;
	const struct weft_plot_opts *o;
	int pass;                 /* 1: the extent in time; 2: the used ranges; 3: the drawing */
	uint32_t first_end, end;  /* the last site defined when run 1 began, and this run */
	uint64_t t0, t1;          /* pass 1: the blocks' extent; then the window */
	struct paccess *a;
	size_t na, acap;
	struct seg *seg;          /* pass 2: the used ranges, merged, by address */
	size_t nseg, segcap, nb;  /* nb: blocks in the window */
	/* pass 3 */
	const struct weft_proc *p;
	cairo_t *cr;
	double left, sx;
	uint64_t draw_t1;
	struct legend *leg;
	size_t nleg, legcap;
};

static void *xgrow(void *p, size_t *cap, size_t n, size_t elem)
{
	if (n < *cap)
		return p;
	*cap = *cap ? *cap * 2 : 1024;
	void *q = realloc(p, *cap * elem);
	if (!q)
		weft_oom("drawing the plot");
	return q;
}

/* [lo, hi) is used: merged with every segment within SEG_GAP of it (segments stay apart by more
 * than that, so the result is the merge of the sorted ranges). */
static void seg_add(struct pdata *d, uint64_t lo, uint64_t hi)
{
	size_t i = 0, n = d->nseg;
	for (size_t l = 0, h = n; l < h;) { /* the first segment that ends near or past lo */
		size_t mid = (l + h) / 2;
		if (lo <= d->seg[mid].hi + SEG_GAP)
			h = mid;
		else
			l = mid + 1;
		i = h;
	}
	size_t j = i;
	for (; j < n && d->seg[j].lo <= hi + SEG_GAP; j++) {
		lo = d->seg[j].lo < lo ? d->seg[j].lo : lo;
		hi = d->seg[j].hi > hi ? d->seg[j].hi : hi;
	}
	if (i == j) { /* a new segment */
		d->seg = xgrow(d->seg, &d->segcap, d->nseg + 1, sizeof(*d->seg));
		memmove(d->seg + i + 1, d->seg + i, (n - i) * sizeof(*d->seg));
		d->nseg++;
	} else {
		memmove(d->seg + i + 1, d->seg + j, (n - j) * sizeof(*d->seg));
		d->nseg -= j - i - 1;
	}
	d->seg[i] = (struct seg){lo, hi, 0, 0};
}

static void draw_block(struct pdata *d, const struct weft_mem_block_info *bi, uint32_t site);

static uint32_t same_site(const struct pdata *d, uint32_t site)
{
	return site > d->end ? site - d->end + d->first_end : site;
}

static void on_block(void *ud, const struct weft_mem_block_info *bi)
{
	struct pdata *d = ud;
	if (bi->proc != d->proc || !bi->size)
		return;
	if (d->pass == 1) {
		d->t0 = bi->alloc_ts < d->t0 ? bi->alloc_ts : d->t0;
		uint64_t e = bi->free_ts ? bi->free_ts : bi->alloc_ts;
		d->t1 = e > d->t1 ? e : d->t1;
		return;
	}
	/* what lies in the window and the address range */
	const struct weft_plot_opts *o = d->o;
	uint64_t e = bi->free_ts ? bi->free_ts : d->t1;
	if (e < d->t0 || bi->alloc_ts > d->t1 || (o->a_hi && (bi->addr >= o->a_hi || bi->addr + bi->size <= o->a_lo)))
		return;
	if (d->pass == 2) {
		seg_add(d, bi->addr, bi->addr + bi->size);
		d->nb++;
		return;
	}
	draw_block(d, bi, same_site(d, bi->alloc_site));
}

/* The highest site id defined in p. */
static uint32_t last_site(const struct weft_proc *p)
{
	for (size_t i = p->nsites; i-- > 1;)
		if (p->sites[i].defined)
			return (uint32_t)i;
	return 0;
}

/* One run of the analysis for d's pass; 0 or its error. */
static int plot_run(const struct weft_trace *t, struct pdata *d, int pass, char *err, size_t errlen)
{
	d->pass = pass;
	d->end = last_site(&t->procs[d->proc]);
	if (pass == 1)
		d->first_end = d->end;
	struct weft_mem *m = NULL;
	int rc = weft_mem_analyze_blocks(t, on_block, d, &m, err, errlen);
	weft_mem_free(m);
	return rc;
}

static void on_event(void *ud, const struct weft_ev *ev)
{
	struct pdata *d = ud;
	if (ev->kind != WEFT_EV_ACCESS)
		return;
	d->a = xgrow(d->a, &d->acap, d->na, sizeof(*d->a));
	d->a[d->na++] = (struct paccess){ev->ts, ev->addr};
}

/* The used address ranges (merged into segments) laid out bottom (low addresses) to top. */
static void layout(struct seg *iv, size_t m, double top, double bottom)
{
	/* heights: proportional to size, at least 14 px each */
	double avail = bottom - top, total = 0, minh = 14;
	for (size_t i = 0; i < m; i++)
		total += (double)(iv[i].hi - iv[i].lo);
	double fixed = minh * (double)m, scale = m && total > 0 ? (avail - fixed) / total : 0;
	if (scale < 0)
		scale = 0, minh = m ? avail / (double)m : avail;
	double y = bottom;
	for (size_t i = 0; i < m; i++) {
		double h = minh + (double)(iv[i].hi - iv[i].lo) * scale;
		iv[i].y0 = y;     /* low address at the bottom of the band */
		iv[i].y1 = y - h; /* high at the top */
		y -= h;
	}
}

static double addr_y(const struct seg *s, size_t n, uint64_t a)
{
	size_t lo = 0, hi = n;
	while (lo < hi) { /* last segment with lo <= a */
		size_t mid = (lo + hi) / 2;
		if (s[mid].lo <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return s[0].y0;
	const struct seg *g = &s[lo - 1];
	if (a >= g->hi)
		return g->y1;
	return g->y0 + (g->y1 - g->y0) * (double)(a - g->lo) / (double)(g->hi - g->lo);
}

static void colour_of(uint32_t site, double *r, double *g, double *b)
{
	uint32_t h = site * 2654435761u;
	double hue = (double)(h % 360) / 60.0, s = 0.65, v = 0.85;
	int i = (int)hue;
	double f = hue - i, p = v * (1 - s), q = v * (1 - s * f), t = v * (1 - s * (1 - f));
	double rgb[6][3] = {{v, t, p}, {q, v, p}, {p, v, t}, {p, q, v}, {t, p, v}, {v, p, q}};
	*r = rgb[i % 6][0];
	*g = rgb[i % 6][1];
	*b = rgb[i % 6][2];
}

void weft_draw_text(cairo_t *cr, double x, double y, const char *s, double size)
{
	cairo_set_font_size(cr, size);
	cairo_move_to(cr, x, y);
	cairo_show_text(cr, s);
}

double weft_draw_text_width(cairo_t *cr, const char *s, double size)
{
	cairo_text_extents_t e;
	cairo_set_font_size(cr, size);
	cairo_text_extents(cr, s, &e);
	return e.x_advance;
}

const char *weft_draw_fit_label(cairo_t *cr, const char *name, const char *suffix, double size, double maxw,
				int elide, char *out, size_t n)
{
	char shortn[1024], el[1024];
	const char *nm = weft_short_name(name, shortn, sizeof(shortn));
	if (elide)
		nm = weft_elide_templates(nm, el, sizeof(el));
	snprintf(out, n, "%s%s", nm, suffix);
	size_t len = strlen(nm), cut = 0;
	while (weft_draw_text_width(cr, out, size) > maxw && cut + 1 < len) {
		cut++;
		while (cut < len && ((unsigned char)nm[cut] & 0xc0) == 0x80)
			cut++; /* not inside a UTF-8 character */
		snprintf(out, n, "\xe2\x80\xa6%s%s", nm + cut, suffix);
	}
	return out;
}

void weft_draw_fit_labels(cairo_t *cr, const char *const *names, const char *const *suffixes, size_t n,
			  double size, double maxw, char (*out)[256])
{
	for (size_t k = 0; k < n; k++)
		weft_draw_fit_label(cr, names[k], suffixes[k], size, maxw, 1, out[k], sizeof(out[k]));
	for (size_t k = 0; k < n; k++) /* the same label for two names: their template arguments shown */
		for (size_t j = 0; j < n; j++)
			if (j != k && !strcmp(out[j], out[k]) && strcmp(names[j], names[k])) {
				weft_draw_fit_label(cr, names[k], suffixes[k], size, maxw, 0, out[k], sizeof(out[k]));
				weft_draw_fit_label(cr, names[j], suffixes[j], size, maxw, 0, out[j], sizeof(out[j]));
			}
}

const char *weft_draw_bytes(uint64_t bytes, char *out, size_t n)
{
	static const char *const u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	double v = (double)bytes;
	int k = 0;
	while (v >= 1024 && k < 6) {
		v /= 1024;
		k++;
	}
	if (k)
		snprintf(out, n, "%.1f %s", v, u[k]);
	else
		snprintf(out, n, "%" PRIu64 " B", bytes);
	return out;
}

/* Round step for about n ticks over span. */
double weft_draw_nice_step(double span, int n)
{
	double raw = span / n, p = pow(10, floor(log10(raw))), f = raw / p;
	return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * p;
}

void weft_draw_time_axis(cairo_t *cr, double x0, double x1, double y, uint64_t t0, uint64_t t1)
{
	cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
	cairo_set_line_width(cr, 1);
	cairo_move_to(cr, x0, y + 0.5);
	cairo_line_to(cr, x1, y + 0.5);
	cairo_stroke(cr);
	/* the unit: the largest in which the span is at least 2 */
	double span_ns = (double)(t1 - t0), unit = 1;
	const char *uname = "ns";
	if (span_ns >= 2e9)
		unit = 1e9, uname = "s";
	else if (span_ns >= 2e6)
		unit = 1e6, uname = "ms";
	else if (span_ns >= 2e3)
		unit = 1e3, uname = "us";
	double span = span_ns / unit, step = weft_draw_nice_step(span > 0 ? span : 1, 8);
	for (int k = 0; k * step <= span + 1e-9 * span; k++) {
		double v = k * step, x = x0 + (x1 - x0) * v / (span > 0 ? span : 1);
		cairo_move_to(cr, x + 0.5, y);
		cairo_line_to(cr, x + 0.5, y + 5);
		cairo_stroke(cr);
		char buf[32];
		snprintf(buf, sizeof(buf), "%g %s", v, uname);
		weft_draw_text(cr, x - 12, y + 18, buf, 11);
	}
}

/* A white canvas of W x H with the sans-serif face. */
cairo_t *weft_draw_canvas(int W, int H, cairo_surface_t **sf)
{
	*sf = cairo_image_surface_create(CAIRO_FORMAT_RGB24, W, H);
	cairo_t *cr = cairo_create(*sf);
	cairo_set_source_rgb(cr, 1, 1, 1);
	cairo_paint(cr);
	cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
	return cr;
}

/* Writes the picture to path; 0 or -EIO with the reason in err. */
int weft_draw_finish(cairo_t *cr, cairo_surface_t *sf, const char *path, char *err, size_t errlen)
{
	cairo_destroy(cr);
	cairo_status_t st = cairo_surface_write_to_png(sf, path);
	cairo_surface_destroy(sf);
	if (st == CAIRO_STATUS_SUCCESS)
		return 0;
	snprintf(err, errlen, "cannot write %s: %s", path, cairo_status_to_string(st));
	return -EIO;
}

/* One allocation's rectangle, and its bytes for the legend. */
static void draw_block(struct pdata *d, const struct weft_mem_block_info *bi, uint32_t site)
{
	cairo_t *cr = d->cr;
	uint64_t t0 = d->t0, t1 = d->draw_t1;
	double left = d->left, sx = d->sx;
	uint64_t e = bi->free_ts && bi->free_ts < t1 ? bi->free_ts : t1, s = bi->alloc_ts > t0 ? bi->alloc_ts : t0;
	double x0 = left + (double)(s - t0) * sx, x1 = left + (double)(e - t0) * sx;
	double ya = addr_y(d->seg, d->nseg, bi->addr), yb = addr_y(d->seg, d->nseg, bi->addr + bi->size);
	if (x1 - x0 < 1)
		x1 = x0 + 1;
	if (ya - yb < 1)
		yb = ya - 1;
	double r, g, bl;
	colour_of(site, &r, &g, &bl);
	cairo_set_source_rgba(cr, r, g, bl, 0.45);
	cairo_rectangle(cr, x0, yb, x1 - x0, ya - yb);
	cairo_fill_preserve(cr);
	cairo_set_source_rgba(cr, r * 0.6, g * 0.6, bl * 0.6, 0.9);
	cairo_set_line_width(cr, 1);
	cairo_stroke(cr);
	const char *name = site ? weft_site_name(d->p, site) : WEFT_MEM_NO_SLICE;
	if (x1 - x0 > 70 && ya - yb > 14 && name) {
		cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
		weft_draw_text(cr, x0 + 3, yb + 12, name, 10);
	}
	if (d->o->describe)
		printf("{\"addr\":%" PRIu64 ",\"size\":%" PRIu64 ",\"slice\":\"%s\",\"x0\":%.0f,\"y0\":%.0f,"
		       "\"x1\":%.0f,\"y1\":%.0f}\n", bi->addr, bi->size, name ? name : "", x0, yb, x1, ya);
	size_t k = 0;
	while (k < d->nleg && d->leg[k].site != site)
		k++;
	if (k == d->nleg) {
		d->leg = xgrow(d->leg, &d->legcap, d->nleg, sizeof(*d->leg));
		d->leg[d->nleg++] = (struct legend){site, 0};
	}
	d->leg[k].bytes += bi->size;
}

static int cmp_leg(const void *x, const void *y)
{
	const struct legend *a = x, *b = y;
	return a->bytes > b->bytes ? -1 : a->bytes < b->bytes;
}

int weft_plot_memory(const struct weft_trace *t, const struct weft_plot_opts *o, char *err, size_t errlen)
{
	size_t proc = 0;
	if (o->pid) {
		for (proc = 0; proc < t->nprocs && t->procs[proc].pid != o->pid; proc++)
			;
		if (proc == t->nprocs) {
			snprintf(err, errlen, "no process %d in the trace", o->pid);
			return -ENOENT;
		}
	}
	const struct weft_proc *p = &t->procs[proc];
	struct pdata d = {.proc = proc, .o = o, .p = p, .t0 = UINT64_MAX};
	int rc = plot_run(t, &d, 1, err, errlen); /* 1: the blocks' extent in time */
	if (rc)
		return rc;
	uint64_t *buf = NULL;
	size_t cap = 0;
	for (size_t k = 0; k < p->nthreads; k++) {
		struct weft_walk_stats st = {0};
		weft_walk_thread(p, &p->threads[k], t->last_ns, on_event, &d, &st, &buf, &cap);
	}
	free(buf);
	/* the window: what was asked, else everything of this process */
	uint64_t t0 = d.t0, t1 = d.t1;
	for (size_t i = 0; i < d.na; i++) {
		t0 = d.a[i].ts < t0 ? d.a[i].ts : t0;
		t1 = d.a[i].ts > t1 ? d.a[i].ts : t1;
	}
	if (o->has_time) { /* relative to the process's first memory event */
		uint64_t base = t0;
		t0 = base + o->t_from;
		if (o->t_to && base + o->t_to < t1)
			t1 = base + o->t_to;
	}
	d.t0 = t0;
	d.t1 = t1;
	/* keep the accesses in the window and the address range */
	size_t na = 0;
	for (size_t i = 0; i < d.na; i++) {
		struct paccess a = d.a[i];
		if (a.ts < t0 || a.ts > t1 || (o->a_hi && (a.addr >= o->a_hi || a.addr < o->a_lo)))
			continue;
		d.a[na++] = a;
	}
	d.na = na;
	if ((rc = plot_run(t, &d, 2, err, errlen))) { /* 2: the used address ranges of those in the window */
		free(d.a);
		free(d.seg);
		return rc;
	}
	for (size_t i = 0; i < d.na; i++) {
		uint64_t page = d.a[i].addr & ~(uint64_t)4095;
		seg_add(&d, page, page + 4096);
	}
	if (!d.nb && !na) {
		if (!o->has_time && !o->a_hi && p->mem_recorded) /* no window: there were none at all */
			weft_mem_why_none(t, p->pid, err, errlen);
		else
			snprintf(err, errlen, "nothing to draw: no allocations or accesses of process %d in that range",
				 p->pid);
		free(d.a);
		free(d.seg);
		return -ENODATA;
	}
	if (t1 <= t0)
		t1 = t0 + 1;
	int W = o->width, H = o->height;
	double left = 150, right = W - 300, top = 40, bottom = H - 50; /* right of it: gap labels, the legend */
	size_t nseg = d.nseg;
	struct seg *seg = d.seg;
	layout(seg, nseg, top, bottom);
	cairo_surface_t *sf;
	cairo_t *cr = weft_draw_canvas(W, H, &sf);
	char title[512];
	snprintf(title, sizeof(title), "weft: memory of process %d %s: allocations by slice (rectangles), "
		 "sampled accesses (dots)", p->pid, p->name ? p->name : "");
	cairo_set_source_rgb(cr, 0, 0, 0);
	weft_draw_text(cr, left, 24, title, 14);
	/* bands and the squeezed gaps between them */
	for (size_t i = 0; i < nseg; i++) {
		cairo_set_source_rgb(cr, i % 2 ? 0.965 : 0.93, i % 2 ? 0.965 : 0.93, i % 2 ? 0.965 : 0.93);
		cairo_rectangle(cr, left, seg[i].y1, right - left, seg[i].y0 - seg[i].y1);
		cairo_fill(cr);
		char lab[64];
		snprintf(lab, sizeof(lab), "0x%" PRIx64, seg[i].lo);
		cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
		weft_draw_text(cr, 6, seg[i].y0 - 2, lab, 10);
		if (i + 1 < nseg) {
			double dash[] = {4, 3};
			cairo_set_dash(cr, dash, 2, 0);
			cairo_set_source_rgb(cr, 0.5, 0.5, 0.5);
			cairo_move_to(cr, left, seg[i].y1 + 0.5);
			cairo_line_to(cr, right, seg[i].y1 + 0.5);
			cairo_stroke(cr);
			cairo_set_dash(cr, NULL, 0, 0);
			char gb[32];
			snprintf(lab, sizeof(lab), "gap %s", weft_draw_bytes(seg[i + 1].lo - seg[i].hi, gb, sizeof(gb)));
			weft_draw_text(cr, right + 4, seg[i].y1 + 4, lab, 9);
			if (o->describe)
				printf("{\"gap\":%" PRIu64 ",\"label\":\"%s\"}\n", seg[i + 1].lo - seg[i].hi, lab);
		}
	}
	/* allocations: drawn as the third run hands them over */
	d.cr = cr;
	d.left = left;
	d.sx = (right - left) / (double)(t1 - t0);
	d.draw_t1 = t1; /* (the window's end, at least t0 + 1, as the drawing has it) */
	if ((rc = plot_run(t, &d, 3, err, errlen))) {
		cairo_destroy(cr);
		cairo_surface_destroy(sf);
		free(d.leg);
		free(d.a);
		free(d.seg);
		return rc;
	}
	struct legend *leg = d.leg;
	size_t nleg = d.nleg;
	double sx = d.sx;
	/* accesses */
	cairo_set_source_rgba(cr, 0.75, 0.05, 0.05, 0.8);
	for (size_t i = 0; i < d.na; i++) {
		double x = left + (double)(d.a[i].ts - t0) * sx, y = addr_y(seg, nseg, d.a[i].addr);
		cairo_rectangle(cr, x - 1, y - 1, 2, 2);
	}
	cairo_fill(cr);
	weft_draw_time_axis(cr, left, right, bottom, t0, t1);
	/* legend */
	qsort(leg, nleg, sizeof(*leg), cmp_leg);
	double ly = top + 10;
	cairo_set_source_rgb(cr, 0, 0, 0);
	weft_draw_text(cr, right + 70, ly, "allocating slice (bytes)", 11);
	size_t nshow = nleg < 16 ? nleg : 16;
	const char *lnames[16] = {0}, *lsuffix[16] = {0};
	char lsizes[16][40], labels[16][256];
	for (size_t k = 0; k < nshow; k++) {
		const char *name = leg[k].site ? weft_site_name(p, leg[k].site) : WEFT_MEM_NO_SLICE;
		lnames[k] = name ? name : "?";
		char hb[32];
		snprintf(lsizes[k], sizeof(lsizes[k]), " %s", weft_draw_bytes(leg[k].bytes, hb, sizeof(hb)));
		lsuffix[k] = lsizes[k];
	}
	double lx = right + 70, maxw = W - 8 - (lx + 16); /* the picture's right edge, less a margin */
	weft_draw_fit_labels(cr, lnames, lsuffix, nshow, 10, maxw, labels);
	for (size_t k = 0; k < nshow; k++) {
		ly += 18;
		double r, g, bl;
		colour_of(leg[k].site, &r, &g, &bl);
		cairo_set_source_rgba(cr, r, g, bl, 0.7);
		cairo_rectangle(cr, lx, ly - 10, 12, 12);
		cairo_fill(cr);
		cairo_set_source_rgb(cr, 0, 0, 0);
		weft_draw_text(cr, lx + 16, ly, labels[k], 10);
		if (o->describe)
			printf("{\"legend\":%zu,\"name\":\"%s\",\"label\":\"%s\",\"x\":%.0f,\"right\":%.1f}\n", k,
			       lnames[k], labels[k], lx + 16, lx + 16 + weft_draw_text_width(cr, labels[k], 10));
	}
	ly += 26;
	cairo_set_source_rgba(cr, 0.75, 0.05, 0.05, 0.8);
	cairo_rectangle(cr, right + 73, ly - 6, 4, 4);
	cairo_fill(cr);
	cairo_set_source_rgb(cr, 0, 0, 0);
	char lab[96];
	snprintf(lab, sizeof(lab), "access (page fault) x %zu", d.na);
	weft_draw_text(cr, right + 86, ly, lab, 10);
	free(leg);
	free(seg);
	free(d.a);
	return weft_draw_finish(cr, sf, o->out, err, errlen);
}

int weft_plot_heap_lines(const struct weft_trace *t, const struct weft_plot_opts *o, char *err, size_t errlen)
{
	struct weft_mem *mem = NULL;
	int rc = weft_mem_analyze(t, &mem, err, errlen);
	if (rc)
		return rc;
	const struct weft_mem_proc *mp = NULL;
	for (size_t i = 0; i < t->nprocs && !mp; i++)
		if (!o->pid || t->procs[i].pid == o->pid)
			mp = weft_mem_for(mem, &t->procs[i]);
	if (!mp) {
		weft_mem_why_none(t, o->pid, err, errlen);
		weft_mem_free(mem);
		return -ENODATA;
	}
	uint64_t t0 = mp->first_ts, t1 = mp->last_ts > mp->first_ts ? mp->last_ts : mp->first_ts + 1, peak = 1;
	for (size_t k = 0; k < mp->nheaps; k++)
		peak = mp->heaps[k].peak > peak ? mp->heaps[k].peak : peak;
	int W = o->width, H = o->height;
	double left = 110, right = W - 230, top = 40, bottom = H - 50;
	cairo_surface_t *sf;
	cairo_t *cr = weft_draw_canvas(W, H, &sf);
	char buf[256];
	snprintf(buf, sizeof(buf), "weft: live bytes per heap, process %d %s", mp->p->pid, mp->p->name ? mp->p->name : "");
	cairo_set_source_rgb(cr, 0, 0, 0);
	weft_draw_text(cr, left, 24, buf, 14);
	double step = weft_draw_nice_step((double)peak / 1048576.0, 6);
	for (double v = 0; v <= (double)peak / 1048576.0 + 1e-9 && step > 0; v += step) {
		double y = bottom - (bottom - top) * v * 1048576.0 / (double)peak;
		cairo_set_source_rgb(cr, 0.88, 0.88, 0.88);
		cairo_move_to(cr, left, y + 0.5);
		cairo_line_to(cr, right, y + 0.5);
		cairo_stroke(cr);
		snprintf(buf, sizeof(buf), "%g MiB", v);
		cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
		weft_draw_text(cr, 8, y + 4, buf, 10);
	}
	double ly = top + 10;
	for (size_t k = 0; k < mp->nheaps; k++) {
		const struct weft_mem_heap *h = &mp->heaps[k];
		static const double pal[6][3] = {{0.12, 0.47, 0.71}, {1.0, 0.5, 0.05}, {0.17, 0.63, 0.17},
						 {0.84, 0.15, 0.16}, {0.58, 0.4, 0.74}, {0.55, 0.34, 0.29}};
		double r = pal[k % 6][0] / 0.8, g = pal[k % 6][1] / 0.8, b = pal[k % 6][2] / 0.8;
		cairo_set_source_rgb(cr, r * 0.8, g * 0.8, b * 0.8);
		cairo_set_line_width(cr, 1.5);
		double last_y = bottom;
		for (size_t i = 0; i < h->npoints; i++) {
			double x = left + (right - left) * (double)(h->points[i].ts - t0) / (double)(t1 - t0);
			double y = bottom - (bottom - top) * (double)h->points[i].live / (double)peak;
			if (!i)
				cairo_move_to(cr, x, bottom);
			cairo_line_to(cr, x, last_y); /* a step: the value holds until the next point */
			cairo_line_to(cr, x, y);
			last_y = y;
		}
		cairo_line_to(cr, right, last_y);
		cairo_stroke(cr);
		ly += 18;
		cairo_rectangle(cr, right + 20, ly - 10, 12, 12);
		cairo_fill(cr);
		snprintf(buf, sizeof(buf), "%s: peak %.2f MiB", h->id ? h->name : "malloc", (double)h->peak / 1048576.0);
		cairo_set_source_rgb(cr, 0, 0, 0);
		weft_draw_text(cr, right + 36, ly, buf, 10);
	}
	weft_draw_time_axis(cr, left, right, bottom, t0, t1);
	weft_mem_free(mem);
	return weft_draw_finish(cr, sf, o->out, err, errlen);
}
