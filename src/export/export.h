/*
 * export.h - trace -> file converters. Each returns 0 or -errno with a one-line reason in err,
 * and fills a summary of what it wrote.
 */
#ifndef WEFT_EXPORT_H
#define WEFT_EXPORT_H

#include <stdio.h>
#include "format/reader.h"
#include "export/model.h"

struct weft_export_summary {
	uint64_t events, dropped, unmatched_end, unterminated, unwound, bad_chunks, bytes;
};

int weft_export_pftrace(const struct weft_trace *t, FILE *out, int jobs,
			struct weft_export_summary *sum, char *err, size_t errlen);

enum weft_json_style { WEFT_JSON_BE = 0, WEFT_JSON_X = 1 };
int weft_export_json(const struct weft_trace *t, FILE *out, int style, int jobs,
		     struct weft_export_summary *sum, char *err, size_t errlen);

#endif
