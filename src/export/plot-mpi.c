/*
 * plot-mpi.c - `weft plot mpi`: an MPI job's communication matrix as a heat map (row: the
 * sending rank, column: the receiving rank; colour: bytes on a log scale from the smallest
 * pair's (pale) to the largest pair's (dark red), white for none) beside the time of each rank as a bar (in MPI waiting red, in MPI
 * otherwise orange, outside MPI green; all bars on one time scale), from analysis/mpi.c. With
 * --describe every cell and bar is printed as a JSON line with its pixels and numbers.
 */
#include "export/plot.h"
#include "export/plot-draw.h"
#include "analysis/mpi.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void heat(double t, double rgb[3])
{
	rgb[0] = 1 - 0.45 * t;
	rgb[1] = 0.95 * (1 - t);
	rgb[2] = 0.7 * (1 - t);
}

static const double RED[3] = {0.85, 0.15, 0.15}, ORANGE[3] = {1.0, 0.6, 0.0}, GREEN[3] = {0.30, 0.69, 0.31};

static void fill(cairo_t *cr, const double c[3], double x, double y, double w, double h)
{
	cairo_set_source_rgb(cr, c[0], c[1], c[2]);
	cairo_rectangle(cr, x, y, w, h);
	cairo_fill(cr);
}

static int rgb8(double v)
{
	return (int)lround(v * 255);
}

/* A rank label step: 1, 2 or 5 times a power of ten, for at most 16 labels. */
static size_t label_step(size_t n)
{
	static const size_t mult[3] = {1, 2, 5};
	for (size_t p = 1;; p *= 10)
		for (int k = 0; k < 3; k++)
			if ((n + mult[k] * p - 1) / (mult[k] * p) <= 16)
				return mult[k] * p;
}

int weft_plot_mpi(const struct weft_trace *t, const struct weft_plot_opts *o, char *err, size_t errlen)
{
	struct weft_mpi *m;
	int rc = weft_mpi_analyze(t, &m, err, errlen);
	if (rc) {
		weft_mpi_free(m);
		return rc;
	}
	if (!m->calls) {
		weft_mpi_free(m);
		snprintf(err, errlen, "this trace has no MPI calls: nothing to draw");
		return -ENODATA;
	}
	size_t n = m->nranks;
	uint64_t maxb = 0, minb = UINT64_MAX, maxspan = 0;
	for (size_t i = 0; i < m->npairs; i++) {
		if (m->pairs[i].src + (size_t)1 > n)
			n = m->pairs[i].src + (size_t)1;
		if (m->pairs[i].dst + (size_t)1 > n)
			n = m->pairs[i].dst + (size_t)1;
		maxb = m->pairs[i].bytes > maxb ? m->pairs[i].bytes : maxb;
		if (m->pairs[i].bytes && m->pairs[i].bytes < minb)
			minb = m->pairs[i].bytes;
	}
	for (size_t r = 0; r < m->nranks; r++)
		if (m->ranks[r].present) {
			uint64_t s = m->ranks[r].last_ns - m->ranks[r].first_ns;
			maxspan = s > maxspan ? s : maxspan;
		}
	int W = o->width, H = o->height;
	cairo_surface_t *sf;
	cairo_t *cr = weft_draw_canvas(W, H, &sf);
	char txt[256];
	cairo_set_source_rgb(cr, 0, 0, 0);
	snprintf(txt, sizeof(txt), "MPI: %zu ranks, %llu calls, %llu messages matched", m->npresent,
		 (unsigned long long)m->calls, (unsigned long long)m->messages);
	weft_draw_text(cr, 20, 28, txt, 16);

	/* the matrix */
	double x0 = 80, y0 = 80, side = fmin(W * 0.5 - 120, H - 190);
	double cell = side / (double)n;
	weft_draw_text(cr, x0, y0 - 12, "bytes sent (row: from rank, column: to rank)", 12);
	cairo_set_source_rgb(cr, 0.6, 0.6, 0.6);
	cairo_set_line_width(cr, 1);
	cairo_rectangle(cr, x0 - 0.5, y0 - 0.5, side + 1, side + 1);
	cairo_stroke(cr);
	if (o->describe)
		printf("{\"frame\":{\"matrix_x\":%.0f,\"matrix_y\":%.0f,\"matrix_side\":%.0f,\"ranks\":%zu,\"min_bytes\":%llu,"
		       "\"max_bytes\":%llu}}\n", x0, y0, side, n, (unsigned long long)(maxb ? minb : 0), (unsigned long long)maxb);
	for (size_t i = 0; i < m->npairs; i++) {
		const struct weft_mpi_pair *p = &m->pairs[i];
		if (!p->bytes)
			continue;
		/* 0.15 (the smallest) .. 1 (the largest), by log(bytes) */
		double c[3], tt = maxb > minb ? 0.15 + 0.85 * log((double)p->bytes / (double)minb) / log((double)maxb / (double)minb)
					     : 1;
		heat(tt, c);
		double x = floor(x0 + cell * p->dst), y = floor(y0 + cell * p->src);
		double w = floor(x0 + cell * (p->dst + 1)) - x, h = floor(y0 + cell * (p->src + 1)) - y;
		if (w < 1)
			w = 1;
		if (h < 1)
			h = 1;
		fill(cr, c, x, y, w, h);
		if (o->describe)
			printf("{\"cell\":{\"from\":%u,\"to\":%u,\"bytes\":%llu,\"x\":%.0f,\"y\":%.0f,\"w\":%.0f,\"h\":%.0f,"
			       "\"rgb\":[%d,%d,%d]}}\n", p->src, p->dst, (unsigned long long)p->bytes, x, y, w, h, rgb8(c[0]),
			       rgb8(c[1]), rgb8(c[2]));
	}
	size_t step = label_step(n);
	cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
	for (size_t r = 0; r < n; r += step) {
		snprintf(txt, sizeof(txt), "%zu", r);
		weft_draw_text(cr, x0 + cell * ((double)r + 0.5) - 4, y0 + side + 16, txt, 11);
		weft_draw_text(cr, x0 - 10 - weft_draw_text_width(cr, txt, 11), y0 + cell * ((double)r + 0.5) + 4, txt, 11);
	}
	weft_draw_text(cr, x0 + side / 2 - 20, y0 + side + 34, "to rank", 12);
	weft_draw_text(cr, 10, y0 - 12 + side / 2, "from", 12);
	/* the colour scale */
	double sy = y0 + side + 50;
	for (int k = 0; k < 200; k++) {
		double c[3];
		heat(0.15 + 0.85 * k / 199.0, c);
		fill(cr, c, x0 + k * side / 200, sy, side / 200 + 1, 12);
	}
	char b0[32];
	cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
	weft_draw_text(cr, x0, sy + 28, maxb ? weft_draw_bytes(minb, b0, sizeof(b0)) : "", 11);
	snprintf(txt, sizeof(txt), "%s (log scale)", weft_draw_bytes(maxb, b0, sizeof(b0)));
	weft_draw_text(cr, x0 + side - weft_draw_text_width(cr, txt, 11), sy + 28, txt, 11);

	/* time per rank */
	double bx0 = x0 + side + 110, bx1 = W - 40, by0 = y0, bh = fmin(40, side / (double)m->nranks);
	double ns_px = maxspan ? (double)maxspan / (bx1 - bx0) : 1;
	cairo_set_source_rgb(cr, 0, 0, 0);
	weft_draw_text(cr, bx0, y0 - 12, "time per rank: in MPI waiting, in MPI, outside MPI", 12);
	if (o->describe)
		printf("{\"frame\":{\"bars_x\":%.0f,\"bars_y\":%.0f,\"bars_right\":%.0f,\"ns_per_px\":%.3f}}\n", bx0, by0,
		       bx1, ns_px);
	size_t bstep = label_step(m->nranks);
	for (size_t r = 0; r < m->nranks; r++) {
		const struct weft_mpi_rank *a = &m->ranks[r];
		if (!a->present)
			continue;
		uint64_t wait = a->wait_ns < a->mpi_ns ? a->wait_ns : a->mpi_ns, comp = weft_mpi_compute_ns(a);
		double y = floor(by0 + bh * (double)r), h = floor(bh * 0.8) > 1 ? floor(bh * 0.8) : 1;
		double ww = floor((double)wait / ns_px), wb = floor((double)(a->mpi_ns - wait) / ns_px),
		       wc = floor((double)comp / ns_px);
		fill(cr, RED, bx0, y, ww, h);
		fill(cr, ORANGE, bx0 + ww, y, wb, h);
		fill(cr, GREEN, bx0 + ww + wb, y, wc, h);
		if (r % bstep == 0) {
			snprintf(txt, sizeof(txt), "%zu", r);
			cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
			weft_draw_text(cr, bx0 - 10 - weft_draw_text_width(cr, txt, 11), y + h / 2 + 4, txt, 11);
		}
		if (o->describe)
			printf("{\"bar\":{\"rank\":%zu,\"y\":%.0f,\"h\":%.0f,\"x\":%.0f,\"wait_w\":%.0f,\"mpi_w\":%.0f,"
			       "\"compute_w\":%.0f,\"mpi_ns\":%llu,\"wait_ns\":%llu,\"compute_ns\":%llu}}\n", r, y, h, bx0, ww,
			       wb, wc, (unsigned long long)a->mpi_ns, (unsigned long long)wait, (unsigned long long)comp);
	}
	weft_draw_time_axis(cr, bx0, bx1, by0 + bh * (double)m->nranks + 6, 0, maxspan);
	/* the legend */
	double ly = by0 + bh * (double)m->nranks + 46;
	static const char *const names[3] = {"in MPI, waiting", "in MPI", "outside MPI"};
	const double *cols[3] = {RED, ORANGE, GREEN};
	for (int k = 0; k < 3; k++) {
		fill(cr, cols[k], bx0 + k * 160, ly, 14, 14);
		cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
		weft_draw_text(cr, bx0 + k * 160 + 20, ly + 12, names[k], 12);
	}
	weft_mpi_free(m);
	return weft_draw_finish(cr, sf, o->out, err, errlen);
}
