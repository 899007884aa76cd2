/*
 * sqlite-rows.h - rows into SQLite tables, many per statement, inserted by a thread of their
 * own. An INSERT of one row costs a statement step (VDBE program, b-tree seek); an INSERT of 32
 * rows costs one step for all of them. The caller (the export's walk) collects rows per table
 * into blocks, values as a type letter each; a full block goes to the inserter thread, which
 * binds and steps while the caller reads and joins the next rows, so the two halves of the
 * export use both cores. At most a few blocks per table are in flight: memory stays bounded.
 */
#ifndef WEFT_EXPORT_SQLITE_ROWS_H
#define WEFT_EXPORT_SQLITE_ROWS_H

#include <pthread.h>
#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

struct weft_sq_val {
	uint8_t type;   /* 'n' NULL, 'i' integer, 'd' double, 't' text kept by the caller, 'T' copied */
	int64_t i;      /* integer, double bits, or the copied text's offset in the block's arena */
	const char *s;
};

struct weft_sq_block;
struct weft_sq_table {
	sqlite3_stmt *one, *many;    /* one row; `batch` rows */
	unsigned ncols, batch;
	struct weft_sq_block *cur;   /* being filled by the caller */
	struct weft_sq_block *free;  /* written, ready for reuse (under the db's lock) */
	unsigned nblocks;            /* allocated */
};

struct weft_sq {
	sqlite3 *h;
	_Atomic int rc;  /* first SQLite error (an sqlite3 result code), 0 none */
	uint64_t rows;   /* rows given (the caller's count) */
	int progress;    /* a "rows..." line on stderr every 2^20 rows */
	/* the inserter thread and its queue */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t th;
	int threaded, quit, busy;
	struct weft_sq_block *q_head, *q_tail;
};

/* Prepares `INSERT INTO <into> VALUES(?,..)` for one and for `batch` rows of ncols columns
 * (`into` may name columns: "t(a, b)"). Returns 0 or -1 with db->rc set. */
int weft_sq_table_init(struct weft_sq *db, struct weft_sq_table *t, const char *into, unsigned ncols,
		       unsigned batch);
/* Starts the inserter thread (without one - it could not start - rows are inserted by the
 * caller, at the same points). Once started, only weft_sq_* touch the connection until
 * weft_sq_stop. */
void weft_sq_start(struct weft_sq *db);
/* A row, one value per letter of `types`: i int64, z int64 written NULL when 0, w int64
 * written NULL when negative, d double, t text the caller keeps alive until weft_sq_stop (NULL:
 * SQL NULL), T text copied, n NULL (no argument). */
void weft_sq_row(struct weft_sq *db, struct weft_sq_table *t, const char *types, ...);
/* Hands the table's rows collected so far to the inserter. */
void weft_sq_flush(struct weft_sq *db, struct weft_sq_table *t);
/* Waits until every row handed over is inserted and stops the thread; the connection is the
 * caller's again. Returns db->rc. */
int weft_sq_stop(struct weft_sq *db);
void weft_sq_table_free(struct weft_sq_table *t);

#endif
