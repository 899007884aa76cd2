/*
 * registry.c - call sites and named tracks. The first event at a call site lands here
 * (weft__site_check): the site gets an id, shared by every site with the same kind, category
 * and name, its definition goes into the metadata, and its `state` byte is set from the
 * categories= and filter= options. Later changes of those options walk every registered site
 * and rewrite the byte; so do the control channel's disable and enable (control.c), where a
 * disabled site is NEW and its events are counted as disabled. Sites live in the program's
 * static storage; a library holding weft call sites must therefore stay loaded while tracing
 * runs (dlclose of such a library while categories are changed afterwards is not supported).
 */
#include "internal.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct intern {
	struct intern *next;
	uint32_t id;
	uint8_t kind;
	char *name, *cat;
	char *file;    /* the source location weft_site_source gave, or NULL */
	unsigned line;
};

/* All below guarded by reg_lock. */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct weft_site *sites;         /* every registered site, linked by ->next */
static struct intern *table[1024];      /* (kind, cat, name) -> id */
static uint32_t next_id = 1;
static char *tracks[65536];             /* track id -> name, 1..65535 */
static unsigned ntracks;
/* Site ids (below 65536) named MPI_*: set under reg_lock when the id is made, read without a
 * lock by weft top's writer-side counting (live.c), which must not take reg_lock (a fork takes
 * it before the writers' locks; the writer would hold one of those). */
static _Atomic uint32_t mpi_bits[65536 / 32];

static unsigned hash_str(const char *a, const char *b, unsigned kind)
{
	uint32_t h = 2166136261u ^ kind;
	for (; *a; a++)
		h = (h ^ (unsigned char)*a) * 16777619u;
	h = (h ^ 0xff) * 16777619u;
	for (; *b; b++)
		h = (h ^ (unsigned char)*b) * 16777619u;
	return h & 1023;
}

static void write_site(uint32_t id, const struct weft_site *s)
{
	unsigned char head[8] = {0};
	memcpy(head, &id, 4);
	head[4] = s->kind;
	head[5] = s->counter_is_double ? 1 : 0;
	const char *n = s->name ? s->name : "", *c = s->category ? s->category : "";
	const char *u = s->unit ? s->unit : "";
	size_t ln = strlen(n) + 1, lc = strlen(c) + 1, lu = strlen(u) + 1;
	char *body = malloc(ln + lc + lu);
	if (!body)
		return;
	memcpy(body, n, ln);
	memcpy(body + ln, c, lc);
	memcpy(body + ln + lc, u, lu);
	weft_meta_write(WEFT_M_SITE, head, sizeof(head), body, ln + lc + lu);
	free(body);
}

/* SOURCE record: the site's file and line (format 1.4). */
static void write_source(uint32_t id, const char *file, unsigned line)
{
	uint32_t head[2] = {id, line};
	weft_meta_write(WEFT_M_SOURCE, head, sizeof(head), file, strlen(file) + 1);
}

/* The id of (kind, category, name) - and source location, where one is given: a site at
 * another location is another id - defining a new one in the metadata. 0 when out of memory. */
static uint32_t intern(const struct weft_site *s, const char *file, unsigned line)
{
	const char *n = s->name ? s->name : "", *c = s->category ? s->category : "";
	unsigned h = hash_str(n, c, s->kind);
	for (struct intern *e = table[h]; e; e = e->next)
		if (e->kind == s->kind && !strcmp(e->name, n) && !strcmp(e->cat, c) &&
		    (file ? e->file && e->line == line && !strcmp(e->file, file) : !e->file))
			return e->id;
	struct intern *e = calloc(1, sizeof(*e));
	if (!e)
		return 0;
	e->name = strdup(n);
	e->cat = strdup(c);
	e->file = file ? strdup(file) : NULL;
	e->line = line;
	if (!e->name || !e->cat || (file && !e->file)) {
		free(e->name);
		free(e->cat);
		free(e->file);
		free(e);
		return 0;
	}
	e->kind = s->kind;
	e->id = next_id++;
	if (!strncmp(n, "MPI_", 4) && e->id < 65536)
		atomic_fetch_or_explicit(&mpi_bits[e->id >> 5], 1u << (e->id & 31), memory_order_relaxed);
	e->next = table[h];
	table[h] = e;
	write_site(e->id, s);
	if (file)
		write_source(e->id, file, line);
	return e->id;
}

/* A site's state: ON records; OFF costs one load (tracing disabled, category or name filtered
 * out); NEW sends every event to weft__site_check - used after weft_stop for the sites that
 * would record, so each later event is counted (after_stop) as weft.h promises. */
static uint8_t evaluate(const struct weft_site *s)
{
	int run = atomic_load(&weft_g.run);
	if (!weft_cfg.enable || (run != WEFT_RUN_ON && run != WEFT_RUN_STOPPED))
		return WEFT__SITE_OFF;
	if (s->kind != WEFT_KIND_ARG && s->kind != WEFT_KIND_TRACK) {
		const char *cat = (s->category && *s->category) ? s->category : "default";
		if (!weft_glob_list_match(weft_cfg.categories, cat, 1))
			return WEFT__SITE_OFF;
		if (s->kind == WEFT_KIND_EVENT && !weft_glob_list_match(weft_cfg.filter, s->name, 1))
			return WEFT__SITE_OFF;
		/* cpu_mem_exact= and trigger=: decided here, once per site, like filter= (both
		 * take the EXACT path, whose weft__cpumem sorts out which is wanted) */
		if (run == WEFT_RUN_ON && s->kind == WEFT_KIND_EVENT) {
			int exact = weft_cfg.cpu_mem_exact[0] &&
				    weft_glob_list_match(weft_cfg.cpu_mem_exact, s->name ? s->name : "", 0);
			int watched = weft_cfg.trigger[0] && weft_trigger_site(s->id, s->name, exact);
			if (exact || watched)
				return WEFT__SITE_EXACT;
		}
	}
	/* disabled by the control channel (paused): NEW, so each event comes to site_register
	 * and is counted as disabled; argument and track sites too, so no argument attaches to
	 * an event before it that was recorded */
	if (run == WEFT_RUN_ON && atomic_load(&weft_g.paused))
		return WEFT__SITE_NEW;
	return run == WEFT_RUN_ON ? WEFT__SITE_ON : WEFT__SITE_NEW;
}

/* Events of s not recorded because recording is disabled (control.c): counted as such. */
static int count_disabled(const struct weft_site *s, unsigned events)
{
	if (s->kind != WEFT_KIND_ARG && s->kind != WEFT_KIND_TRACK)
		atomic_fetch_add_explicit(&weft_g.disabled, events, memory_order_relaxed);
	return 0;
}

/* What weft__site_check returns for a state: 1 records, 2 records with exact CPU and RSS. */
static int records(uint8_t st)
{
	return st == WEFT__SITE_ON ? 1 : st == WEFT__SITE_EXACT ? 2 : 0;
}

/* Registers s (at a source location when file is not NULL) and sets its state. `events`:
 * how many events the call stands for, each counted where none is recorded. */
static int site_register(struct weft_site *s, const char *file, unsigned line, unsigned events)
{
	uint8_t st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
	if (st != WEFT__SITE_NEW)
		return records(st);
	if (weft_in_runtime)
		return 0; /* re-entered from a signal handler: registering could deadlock */
	weft_ensure_started();
	int run = atomic_load(&weft_g.run);
	if (run == WEFT_RUN_FAILED) { /* tracing was wanted but could not start: not recorded */
		atomic_fetch_add_explicit(&weft_g.dropped, events, memory_order_relaxed);
		return 0;
	}
	if (run == WEFT_RUN_STOPPED && weft_cfg.enable) { /* after weft_stop */
		if (s->kind != WEFT_KIND_ARG && s->kind != WEFT_KIND_TRACK)
			atomic_fetch_add_explicit(&weft_g.after_stop, events, memory_order_relaxed);
		return 0;
	}
	/* s->id: written once under reg_lock (release), read here without it (acquire) */
	if (run == WEFT_RUN_ON && __atomic_load_n(&s->id, __ATOMIC_ACQUIRE) && atomic_load(&weft_g.paused))
		return count_disabled(s, events); /* registered, disabled: no lock */
	struct weft_held_signals held;
	weft_hold_async_signals(&held); /* (a site's first use: once, and it writes) */
	weft_in_runtime++;
	pthread_mutex_lock(&reg_lock);
	if (s->state == WEFT__SITE_NEW) {
		if (!s->id) {
			__atomic_store_n(&s->id, intern(s, file, line), __ATOMIC_RELEASE);
			s->next = sites;
			sites = s;
		}
		__atomic_store_n(&s->state, s->id ? evaluate(s) : WEFT__SITE_OFF, __ATOMIC_RELEASE);
	}
	st = s->state;
	pthread_mutex_unlock(&reg_lock);
	weft_in_runtime--;
	weft_release_async_signals(&held);
	if (st == WEFT__SITE_NEW && run == WEFT_RUN_ON) /* evaluated while disabled */
		return count_disabled(s, events);
	return records(st);
}

int weft__site_check(struct weft_site *s)
{
	return site_register(s, NULL, 0, 1);
}

int weft__site_check_n(struct weft_site *s, unsigned events)
{
	return site_register(s, NULL, 0, events);
}

int weft_site_source(struct weft_site *s, const char *file, unsigned line)
{
	if (!s || !file)
		return -EINVAL;
	return site_register(s, file, line, 1) != 0;
}

void weft_registry_reevaluate(void)
{
	pthread_mutex_lock(&reg_lock);
	for (struct weft_site *s = sites; s; s = s->next)
		__atomic_store_n(&s->state, evaluate(s), __ATOMIC_RELEASE);
	pthread_mutex_unlock(&reg_lock);
}

unsigned weft_track(const char *name)
{
	if (!name)
		return 0;
	weft_ensure_started();
	weft_in_runtime++;
	pthread_mutex_lock(&reg_lock);
	unsigned id = 0;
	for (unsigned i = 1; i <= ntracks; i++)
		if (!strcmp(tracks[i], name)) {
			id = i;
			break;
		}
	if (!id && ntracks < 65535 && (tracks[ntracks + 1] = strdup(name))) {
		struct weft_held_signals held; /* (a track's first use writes its record) */
		weft_hold_async_signals(&held);
		id = ++ntracks;
		uint32_t id32 = id;
		weft_meta_write(WEFT_M_TRACK, &id32, 4, name, strlen(name) + 1);
		weft_release_async_signals(&held);
	}
	pthread_mutex_unlock(&reg_lock);
	weft_in_runtime--;
	return id;
}

int weft_registry_is_mpi(uint32_t id)
{
	return id < 65536 && (atomic_load_explicit(&mpi_bits[id >> 5], memory_order_relaxed) >> (id & 31) & 1);
}

int weft_registry_name(uint32_t id, char *out, size_t n)
{
	int rc = -ENOENT;
	pthread_mutex_lock(&reg_lock);
	for (unsigned h = 0; h < 1024 && rc; h++)
		for (struct intern *e = table[h]; e; e = e->next)
			if (e->id == id) {
				snprintf(out, n, "%s", e->name);
				rc = 0;
				break;
			}
	pthread_mutex_unlock(&reg_lock);
	return rc;
}

/* Fork child: its new metadata file must define everything the parent had defined. */
void weft_registry_write_all(void)
{
	pthread_mutex_lock(&reg_lock);
	for (unsigned h = 0; h < 1024; h++)
		for (struct intern *e = table[h]; e; e = e->next) {
			struct weft_site tmp = {0, e->kind, 0, 0, e->id, e->name, e->cat, "", 0};
			for (struct weft_site *s = sites; s; s = s->next)
				if (s->id == e->id) {
					tmp = *s;
					break;
				}
			write_site(e->id, &tmp);
			if (e->file)
				write_source(e->id, e->file, e->line);
		}
	for (unsigned i = 1; i <= ntracks; i++) {
		uint32_t id32 = i;
		weft_meta_write(WEFT_M_TRACK, &id32, 4, tracks[i], strlen(tracks[i]) + 1);
	}
	pthread_mutex_unlock(&reg_lock);
}

void weft_registry_atfork_prepare(void) { pthread_mutex_lock(&reg_lock); }
void weft_registry_atfork_parent(void) { pthread_mutex_unlock(&reg_lock); }
void weft_registry_atfork_child(void) { pthread_mutex_init(&reg_lock, NULL); }
