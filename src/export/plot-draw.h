/* plot-draw.h - the drawing helpers the plot pictures share (defined in plot.c): a white canvas,
 * text, round tick steps, the time axis, and writing the PNG. Internal to the weft-plot program. */
#ifndef WEFT_PLOT_DRAW_H
#define WEFT_PLOT_DRAW_H

#include <cairo.h>
#include <stddef.h>
#include <stdint.h>

/* A white canvas of W x H pixels with the sans-serif face. */
cairo_t *weft_draw_canvas(int W, int H, cairo_surface_t **sf);
/* Text at (x, y) (the baseline's left end) in the current colour. */
void weft_draw_text(cairo_t *cr, double x, double y, const char *s, double size);
/* A round step (1, 2 or 5 times a power of ten) for about n ticks over span. */
double weft_draw_nice_step(double span, int n);
/* The time axis from x0 to x1 at y for [t0, t1] ns, labelled from 0 in s, ms, us or ns. */
void weft_draw_time_axis(cairo_t *cr, double x0, double x1, double y, uint64_t t0, uint64_t t1);
/* A legend's label: name (a slice's: a C++ name without its return type and parameters, and
 * with elide, its template arguments as "<…>"), then suffix, in at most maxw pixels at `size`:
 * where it is wider, the name is cut at its left ("…" first: a function's own name is its end).
 * Written into out (n bytes); returns out. */
const char *weft_draw_fit_label(cairo_t *cr, const char *name, const char *suffix, double size, double maxw,
				int elide, char *out, size_t n);
/* Labels for n legend entries (names[k], suffixes[k]) into out[k] (len bytes each): fitted as
 * weft_draw_fit_label, template arguments elided except where that makes two labels the same. */
void weft_draw_fit_labels(cairo_t *cr, const char *const *names, const char *const *suffixes, size_t n,
			  double size, double maxw, char (*out)[256]);
/* A pixel width of s at size. */
double weft_draw_text_width(cairo_t *cr, const char *s, double size);
/* bytes in human units with one decimal ("41.6 TiB", "512 B"); returns out. */
const char *weft_draw_bytes(uint64_t bytes, char *out, size_t n);
/* Writes the picture to path and frees both; 0 or -EIO with the reason in err. */
int weft_draw_finish(cairo_t *cr, cairo_surface_t *sf, const char *path, char *err, size_t errlen);

#endif
