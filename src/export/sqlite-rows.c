/*
 * sqlite-rows.c - see sqlite-rows.h.
 */
#include "export/sqlite-rows.h"
#include "format/reader.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	t->v = calloc((size_t)t->batch * ncols, sizeof(*t->v));
	if (!t->v)
		weft_oom("writing SQLite");
	t->one = prepare(db, into, ncols, 1);
	t->many = t->batch > 1 ? prepare(db, into, ncols, t->batch) : NULL;
	return t->one && (t->batch == 1 || t->many) ? 0 : -1;
}

static void bind(struct weft_sq_table *t, sqlite3_stmt *s, int col, const struct weft_sq_val *v)
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
	case 'T': sqlite3_bind_text(s, col, t->text + v->i, -1, SQLITE_STATIC); break;
	default: sqlite3_bind_null(s, col); break;
	}
}

static void step(struct weft_sq *db, sqlite3_stmt *s)
{
	int rc = sqlite3_step(s);
	if (rc != SQLITE_DONE && !db->rc)
		db->rc = rc;
	sqlite3_reset(s);
}

void weft_sq_flush(struct weft_sq *db, struct weft_sq_table *t)
{
	if (!t->nrows)
		return;
	if (!db->rc) {
		if (t->nrows == t->batch && t->many) {
			for (unsigned k = 0; k < t->nrows * t->ncols; k++)
				bind(t, t->many, (int)k + 1, &t->v[k]);
			step(db, t->many);
		} else {
			for (unsigned r = 0; r < t->nrows; r++) {
				for (unsigned c = 0; c < t->ncols; c++)
					bind(t, t->one, (int)c + 1, &t->v[r * t->ncols + c]);
				step(db, t->one);
			}
		}
	}
	t->nrows = 0;
	t->tlen = 0;
}

void weft_sq_row(struct weft_sq *db, struct weft_sq_table *t, const char *types, ...)
{
	struct weft_sq_val *v = &t->v[t->nrows * t->ncols];
	va_list ap;
	va_start(ap, types);
	for (unsigned c = 0; c < t->ncols; c++, v++) {
		char ty = types[c];
		v->type = 'n';
		switch (ty) {
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
			if (!s)
				break;
			size_t l = strlen(s) + 1;
			if (t->tlen + l > t->tcap) {
				size_t cap = t->tcap ? t->tcap * 2 : 4096;
				while (cap < t->tlen + l)
					cap *= 2;
				char *nt = realloc(t->text, cap);
				if (!nt)
					weft_oom("writing SQLite");
				t->text = nt;
				t->tcap = cap;
			}
			memcpy(t->text + t->tlen, s, l);
			v->i = (int64_t)t->tlen;
			v->type = 'T';
			t->tlen += l;
			break;
		}
		default: /* 'n' */
			break;
		}
	}
	va_end(ap);
	if (++t->nrows == t->batch)
		weft_sq_flush(db, t);
	db->rows++;
	if (db->progress && !(db->rows & ((1u << 20) - 1)))
		fprintf(stderr, "\rweft: export: %llu rows...", (unsigned long long)db->rows);
}

void weft_sq_table_free(struct weft_sq_table *t)
{
	sqlite3_finalize(t->one);
	sqlite3_finalize(t->many);
	free(t->v);
	free(t->text);
	memset(t, 0, sizeof(*t));
}
