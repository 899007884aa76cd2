/*
 * funcfilter.c - which functions the hooks record, when func_filter= (names) or func_libs=
 * (library file names) is set. The decision is taken once per function address, on its first
 * call, and kept in a lock-free table: the file comes from dladdr, the name from that file's
 * ELF symbol table (read once per file with libelf, so static functions have their names
 * too; elfsym.c reads them). Names are matched as the symbol table spells them (C++: mangled). An address the table
 * has no room for is recorded.
 */
#include "lib/internal.h"
#include <dlfcn.h>
#include <elf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SLOTS (1u << 16)
struct slot {
	_Atomic uintptr_t addr;
	_Atomic uint8_t keep; /* 0 undecided, 1 record, 2 skip */
};
static struct slot table[SLOTS];

struct symfile {
	char *path;
	int is_exec; /* ET_EXEC: symbol values are addresses */
	struct { uint64_t value, size; char *name; } *syms;
	size_t n;
};
static pthread_mutex_t files_lock = PTHREAD_MUTEX_INITIALIZER; /* guards files */
static struct symfile files[256];
static size_t nfiles;

static int cmp_sym(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

struct collect {
	struct symfile *f;
	size_t cap;
};

static int add_function(void *arg, const char *name, uint64_t value, uint64_t size, int type)
{
	struct collect *c = arg;
	struct symfile *f = c->f;
	if (type != STT_FUNC)
		return 0;
	if (f->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 256;
		void *ns = realloc(f->syms, cap * sizeof(*f->syms));
		if (!ns)
			return 1;
		f->syms = ns;
		c->cap = cap;
	}
	f->syms[f->n].value = value;
	f->syms[f->n].size = size;
	f->syms[f->n++].name = strdup(name);
	return 0;
}

static struct symfile *load(const char *path)
{
	for (size_t i = 0; i < nfiles; i++)
		if (!strcmp(files[i].path, path))
			return &files[i];
	if (nfiles == 256)
		return NULL;
	struct symfile *f = &files[nfiles++];
	f->path = strdup(path);
	struct collect c = {f, 0};
	weft_elf_symbols(path, &f->is_exec, add_function, &c);
	if (f->n)
		qsort(f->syms, f->n, sizeof(*f->syms), cmp_sym);
	return f;
}

static const char *name_in(const struct symfile *f, uint64_t v)
{
	size_t lo = 0, hi = f->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (f->syms[mid].value <= v)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && v < f->syms[lo - 1].value + (f->syms[lo - 1].size ? f->syms[lo - 1].size : 1))
		return f->syms[lo - 1].name;
	return NULL;
}

/* Fork: the forking thread holds files_lock across it (session.c's order: before the
 * runtime's locks, which load() may take through the allocation interposer), so the child
 * gets the table whole and the lock free. Added at the first decision, before the lock's
 * first use. */
static void files_prepare(void) { pthread_mutex_lock(&files_lock); }
static void files_parent(void) { pthread_mutex_unlock(&files_lock); }
static void files_child(void) { pthread_mutex_init(&files_lock, NULL); }
static pthread_once_t hooks_once = PTHREAD_ONCE_INIT;
static void add_fork_hooks(void)
{
	static const struct weft_fork_hooks h = {files_prepare, files_parent, files_child};
	weft_fork_hooks_add(&h);
}

static uint8_t decide(void *fn)
{
	Dl_info info;
	if (!dladdr(fn, &info) || !info.dli_fname)
		return 1;
	const char *base = strrchr(info.dli_fname, '/') ? strrchr(info.dli_fname, '/') + 1 : info.dli_fname;
	if (weft_cfg.func_libs[0] && !weft_glob_list_match(weft_cfg.func_libs, base, 1))
		return 2;
	if (!weft_cfg.func_filter[0])
		return 1;
	char path[4096];
	const char *file = info.dli_fname;
	if (!file[0] || !strchr(file, '/')) { /* the main program */
		ssize_t l = readlink("/proc/self/exe", path, sizeof(path) - 1);
		if (l > 0) {
			path[l] = 0;
			file = path;
		}
	}
	pthread_once(&hooks_once, add_fork_hooks);
	pthread_mutex_lock(&files_lock);
	struct symfile *f = load(file);
	const char *name = NULL;
	if (f)
		name = name_in(f, f->is_exec ? (uint64_t)(uintptr_t)fn
					     : (uint64_t)((uintptr_t)fn - (uintptr_t)info.dli_fbase));
	uint8_t keep = name && weft_glob_list_match(weft_cfg.func_filter, name, 1) ? 1 : (name ? 2 : 1);
	pthread_mutex_unlock(&files_lock);
	return keep;
}

/* 1: record calls of fn. */
int weft_func_allowed(void *fn)
{
	uintptr_t a = (uintptr_t)fn;
	size_t i = (size_t)((a * 0x9e3779b97f4a7c15ull) >> 40) & (SLOTS - 1);
	for (unsigned probe = 0; probe < 64; probe++, i = (i + 1) & (SLOTS - 1)) {
		uintptr_t cur = atomic_load_explicit(&table[i].addr, memory_order_acquire);
		if (cur == a) {
			uint8_t k = atomic_load_explicit(&table[i].keep, memory_order_acquire);
			if (k)
				return k == 1;
			return decide(fn) == 1; /* another thread is deciding: decide too */
		}
		if (cur == 0) {
			uintptr_t zero = 0;
			if (!atomic_compare_exchange_strong(&table[i].addr, &zero, a) && zero != a)
				continue;
			uint8_t k = decide(fn);
			atomic_store_explicit(&table[i].keep, k, memory_order_release);
			return k == 1;
		}
	}
	return 1;
}
