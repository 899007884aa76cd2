/* fuzz_reader.c - libFuzzer target for the trace reader and the converters. An input is a
 * metadata file and an events file of one process: the first 4 bytes (little-endian) say
 * where the first ends. Everything the reader accepts is converted to .pftrace, JSON and SQLite
 * and estimated (weft estimate); any crash, hang, leak or sanitizer report is a bug. The corpus in corpus/ is replayed by
 * replay.c in every `make test`. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "export/export.h"
#include "analysis/estimate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 4)
		return 0;
	uint32_t split;
	memcpy(&split, data, 4);
	data += 4;
	size -= 4;
	split = size ? split % (uint32_t)(size + 1) : 0;
	const char *names[2] = {"100.wmeta", "100-0.wevents"};
	const unsigned char *bufs[2] = {data, data + split};
	size_t sizes[2] = {split, size - split};
	struct weft_trace *t;
	char err[256];
	if (weft_trace_from_buffers(names, bufs, sizes, 2, &t, err, sizeof(err)))
		return 0;
	FILE *f = fopen("/dev/null", "wb");
	if (f) {
		struct weft_export_summary s;
		weft_export_pftrace(t, f, 1, 0, &s, err, sizeof(err));
		weft_export_json(t, f, WEFT_JSON_BE, 1, &s, err, sizeof(err));
		weft_export_json(t, f, WEFT_JSON_X, 1, &s, err, sizeof(err));
		fclose(f);
	}
	char db[64];
	snprintf(db, sizeof(db), "/tmp/weft-fuzz-%d.db", (int)getpid());
	struct weft_export_summary s;
	weft_export_sqlite(t, db, &s, err, sizeof(err));
	unlink(db);
	struct weft_estimate e; /* weft estimate's pass: every record's packed length */
	if (!weft_estimate_build(t, &e))
		weft_estimate_free(&e);
	weft_trace_free(t);
	return 0;
}
