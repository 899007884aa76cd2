/*
 * sqlite-rows.c - see sqlite-rows.h. A block holds up to BLOCK_ROWS rows of one table; the
 * inserter writes it with the table's `batch`-row statement as often as it fits and the
 * one-row statement for the rest, then puts the block back on its table's free list. The
 * caller waits for a free block when MAX_BLOCKS of a table are in flight.
 */
#include "export/sqlite-rows.h"
#include "format/reader.h"
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK_ROWS 1024
#define MAX_BLOCKS 4

struct weft_sq_block {
	struct weft_sq_table *t;
	struct weft_sq_block *next;
	struct weft_sq_val *v; /* BLOCK_ROWS * ncols */
	unsigned nrows;
	char *text;            /* copied text ('T') */
	size_t tlen, tcap;
};

static sqlite3_stmt *prepare(struct weft_sq *db, const char *into, unsigned ncols, unsigned rows)
{
	size_t n = strlen(into) + 32 + (size_t)rows * (ncols * 2 + 3);
	char *sql = malloc(n);
	if (!sql)
		weft_oom("writing SQLite");
	size_t o = (size_t)snprintf(sql, n, "INSERT INTO %s VALUES", into);
	for (unsigned r = 0; r < rows; r++) {
		sql[o++] = r ? ',' : ' ';
		sql[o++] = '(';
		for (unsigned c = 0; c < ncols; c++) {
			if (c)
				sql[o++] = ',';
			sql[o++] = '?';
		}
		sql[o++] = ')';
	}
	sql[o] = 0;
	sqlite3_stmt *s = NULL;
	int rc = sqlite3_prepare_v2(db->h, sql, (int)o, &s, NULL);
	free(sql);
	if (rc != SQLITE_OK && !db->rc)
		db->rc = rc;
	return rc == SQLITE_OK ? s : NULL;
}

int weft_sq_table_init(struct weft_sq *db, struct weft_sq_table *t, const char *into, unsigned ncols,
		       unsigned batch)
{
	memset(t, 0, sizeof(*t));
	t->ncols = ncols;
	t->batch = batch ? batch : 1;
	t->one = prepare(db, into, ncols, 1);
	t->many = t->batch > 1 ? prepare(db, into, ncols, t->batch) : NULL;
	return t->one && (t->batch == 1 || t->many) ? 0 : -1;
}

/* ---- the inserter's side ---- */

static void bind(const struct weft_sq_block *b, sqlite3_stmt *s, int col, const struct weft_sq_val *v)
{
	switch (v->type) {
	case 'i': sqlite3_bind_int64(s, col, v->i); break;
	case 'd': {
		double d;
		memcpy(&d, &v->i, sizeof(d));
		sqlite3_bind_double(s, col, d);
		break;
	}
	case 't': sqlite3_bind_text(s, col, v->s, -1, SQLITE_STATIC); break;
	case 'T': sqlite3_bind_text(s, col, b->text + v->i, -1, SQLITE_STATIC); break;
	default: sqlite3_bind_null(s, col); break;
	}
}

static int step(sqlite3_stmt *s)
{
	int rc = sqlite3_step(s);
	sqlite3_reset(s);
	return rc == SQLITE_DONE ? 0 : rc;
}

/* Inserts a block's rows; the first error, or 0. */
static int insert(const struct weft_sq_block *b)
{
	const struct weft_sq_table *t = b->t;
	unsigned r = 0;
	int rc = 0;
	if (t->many)
		for (; !rc && r + t->batch <= b->nrows; r += t->batch) {
			const struct weft_sq_val *v = &b->v[r * t->ncols];
			for (unsigned k = 0; k < t->batch * t->ncols; k++)
				bind(b, t->many, (int)k + 1, &v[k]);
			rc = step(t->many);
		}
	for (; !rc && r < b->nrows; r++) {
		for (unsigned c = 0; c < t->ncols; c++)
			bind(b, t->one, (int)c + 1, &b->v[r * t->ncols + c]);
		rc = step(t->one);
	}
	return rc;
}

/* Done with b (under lock): back to its table. */
static void release(struct weft_sq *db, struct weft_sq_block *b)
{
	b->nrows = 0;
	b->tlen = 0;
	b->next = b->t->free;
	b->t->free = b;
	pthread_cond_broadcast(&db->cond);
}

static void *inserter(void *arg)
{
	struct weft_sq *db = arg;
	pthread_mutex_lock(&db->lock);
	for (;;) {
		while (!db->q_head && !db->quit)
			pthread_cond_wait(&db->cond, &db->lock);
		struct weft_sq_block *b = db->q_head;
		if (!b)
			break;
		db->q_head = b->next;
		if (!db->q_head)
			db->q_tail = NULL;
		db->busy = 1;
		int failed = db->rc;
		pthread_mutex_unlock(&db->lock);
		int rc = failed ? 0 : insert(b);
		pthread_mutex_lock(&db->lock);
		if (rc && !db->rc)
			db->rc = rc;
		db->busy = 0;
		release(db, b);
	}
	pthread_mutex_unlock(&db->lock);
	return NULL;
}

void weft_sq_start(struct weft_sq *db)
{
	pthread_mutex_init(&db->lock, NULL);
	pthread_cond_init(&db->cond, NULL);
	db->quit = db->busy = 0;
	db->q_head = db->q_tail = NULL;
	sigset_t all, old; /* signals stay with the caller */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	db->threaded = pthread_create(&db->th, NULL, inserter, db) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* ---- the caller's side ---- */

static void submit(struct weft_sq *db, struct weft_sq_block *b)
{
	if (!db->threaded) {
		int rc = db->rc ? 0 : insert(b);
		if (rc && !db->rc)
			db->rc = rc;
		b->nrows = 0;
		b->tlen = 0;
		b->next = b->t->free;
		b->t->free = b;
		return;
	}
	pthread_mutex_lock(&db->lock);
	b->next = NULL;
	if (db->q_tail)
		db->q_tail->next = b;
	else
		db->q_head = b;
	db->q_tail = b;
	pthread_cond_broadcast(&db->cond);
	pthread_mutex_unlock(&db->lock);
}

static struct weft_sq_block *block_get(struct weft_sq *db, struct weft_sq_table *t)
{
	struct weft_sq_block *b = NULL;
	if (db->threaded)
		pthread_mutex_lock(&db->lock);
	while (!t->free && t->nblocks >= MAX_BLOCKS && db->threaded)
		pthread_cond_wait(&db->cond, &db->lock);
	if (t->free) {
		b = t->free;
		t->free = b->next;
	}
	if (db->threaded)
		pthread_mutex_unlock(&db->lock);
	if (b)
		return b;
	b = calloc(1, sizeof(*b));
	if (!b || !(b->v = calloc((size_t)BLOCK_ROWS * t->ncols, sizeof(*b->v))))
		weft_oom("writing SQLite");
	b->t = t;
	t->nblocks++;
	return b;
}

static void text_copy(struct weft_sq_block *b, struct weft_sq_val *v, const char *s)
{
	size_t l = strlen(s) + 1;
	if (b->tlen + l > b->tcap) {
		size_t cap = b->tcap ? b->tcap * 2 : 4096;
		while (cap < b->tlen + l)
			cap *= 2;
		char *nt = realloc(b->text, cap);
		if (!nt)
			weft_oom("writing SQLite");
		b->text = nt;
		b->tcap = cap;
	}
	memcpy(b->text + b->tlen, s, l);
	v->i = (int64_t)b->tlen;
	v->type = 'T';
	b->tlen += l;
}

void weft_sq_row(struct weft_sq *db, struct weft_sq_table *t, const char *types, ...)
{
	if (!t->cur)
		t->cur = block_get(db, t);
	struct weft_sq_block *b = t->cur;
	struct weft_sq_val *v = &b->v[b->nrows * t->ncols];
	va_list ap;
	va_start(ap, types);
	for (unsigned c = 0; c < t->ncols; c++, v++) {
		v->type = 'n';
		switch (types[c]) {
		case 'i':
			v->type = 'i';
			v->i = va_arg(ap, int64_t);
			break;
		case 'z':
			v->i = va_arg(ap, int64_t);
			if (v->i)
				v->type = 'i';
			break;
		case 'w':
			v->i = va_arg(ap, int64_t);
			if (v->i >= 0)
				v->type = 'i';
			break;
		case 'd': {
			double d = va_arg(ap, double);
			memcpy(&v->i, &d, sizeof(d));
			v->type = 'd';
			break;
		}
		case 't':
			v->s = va_arg(ap, const char *);
			if (v->s)
				v->type = 't';
			break;
		case 'T': {
			const char *s = va_arg(ap, const char *);
			if (s)
				text_copy(b, v, s);
			break;
		}
		default: /* 'n' */
			break;
		}
	}
	va_end(ap);
	if (++b->nrows == BLOCK_ROWS) {
		t->cur = NULL;
		submit(db, b);
	}
	db->rows++;
	if (db->progress && !(db->rows & ((1u << 20) - 1)))
		fprintf(stderr, "\rweft: export: %llu rows...", (unsigned long long)db->rows);
}

void weft_sq_flush(struct weft_sq *db, struct weft_sq_table *t)
{
	if (t->cur && t->cur->nrows) {
		submit(db, t->cur);
		t->cur = NULL;
	}
}

int weft_sq_stop(struct weft_sq *db)
{
	if (db->threaded) {
		pthread_mutex_lock(&db->lock);
		db->quit = 1;
		pthread_cond_broadcast(&db->cond);
		pthread_mutex_unlock(&db->lock);
		pthread_join(db->th, NULL);
		db->threaded = 0;
		pthread_mutex_destroy(&db->lock);
		pthread_cond_destroy(&db->cond);
	}
	return db->rc;
}

void weft_sq_table_free(struct weft_sq_table *t)
{
	sqlite3_finalize(t->one);
	sqlite3_finalize(t->many);
	if (t->cur) {
		t->cur->next = t->free;
		t->free = t->cur;
	}
	for (struct weft_sq_block *b = t->free, *n; b; b = n) {
		n = b->next;
		free(b->v);
		free(b->text);
		free(b);
	}
	memset(t, 0, sizeof(*t));
}
