/*
 * sqlite-rows.h - rows into SQLite tables, many per statement. An INSERT of one row costs a
 * statement step (parse state, VDBE program, b-tree seek); an INSERT of 32 rows costs one step
 * for all of them, which is what takes a big export from ~1.6 M to ~2 M rows/s here. Rows are
 * collected per table, values as a type letter each, and written when the batch is full or
 * at weft_sq_flush.
 */
#ifndef WEFT_EXPORT_SQLITE_ROWS_H
#define WEFT_EXPORT_SQLITE_ROWS_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

struct weft_sq_val {
	uint8_t type;   /* 'n' NULL, 'i' integer, 'd' double, 't' text kept by the caller, 'T' copied */
	int64_t i;      /* integer, double bits, or the copied text's offset in the arena */
	const char *s;
};

struct weft_sq_table {
	sqlite3_stmt *one, *many; /* one row; `batch` rows */
	unsigned ncols, batch, nrows;
	struct weft_sq_val *v;    /* batch * ncols */
	char *text;               /* copied text of the rows collected */
	size_t tlen, tcap;
};

struct weft_sq {
	sqlite3 *h;
	int rc;          /* first SQLite error (an sqlite3 result code), 0 none */
	uint64_t rows;
	int progress;    /* a "rows..." line on stderr every 2^20 rows */
};

/* Prepares `INSERT INTO <into> VALUES(?,..)` for one and for `batch` rows of ncols columns
 * (`into` may name columns: "t(a, b)"). Returns 0 or -1 with db->rc set. */
int weft_sq_table_init(struct weft_sq *db, struct weft_sq_table *t, const char *into, unsigned ncols,
		       unsigned batch);
/* A row, one value per letter of `types`: i int64, z int64 written NULL when 0, d double,
 * t text the caller keeps alive until weft_sq_flush (NULL: SQL NULL), T text copied,
 * w int64 written NULL when negative, n NULL (no argument). */
void weft_sq_row(struct weft_sq *db, struct weft_sq_table *t, const char *types, ...);
/* Writes the rows collected so far. */
void weft_sq_flush(struct weft_sq *db, struct weft_sq_table *t);
void weft_sq_table_free(struct weft_sq_table *t);

#endif
