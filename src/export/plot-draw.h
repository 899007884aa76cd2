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
/* Writes the picture to path and frees both; 0 or -EIO with the reason in err. */
int weft_draw_finish(cairo_t *cr, cairo_surface_t *sf, const char *path, char *err, size_t errlen);

#endif
