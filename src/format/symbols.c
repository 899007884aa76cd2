/*
 * symbols.c - see symbols.h. The distinct function addresses come from the chunks' index
 * entries where they list them (1.13, funcset.h), else from one pass over the chunks; each is
 * looked up in the union of all recorded memory maps (a library unloaded later still
 * resolves) and then in its file's symbols, read once per file.
 */
#include "format/symbols.h"
#include "format/format.h"
#include "format/chunkindex.h"
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status); /* libstdc++ */

struct mapping {
	uint64_t start, end, offset;
	const char *path; /* into the maps text */
};

struct fsym {
	uint64_t value, size;
	const char *name;
};

struct elf_file {
	char *path;
	Elf *elf;
	int fd;
	struct fsym *syms;
	size_t nsyms;
	GElf_Phdr *loads;
	size_t nloads;
};

static int cmp_map(const void *a, const void *b)
{
	const struct mapping *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

static int cmp_sym(const void *a, const void *b)
{
	const struct fsym *x = a, *y = b;
	return x->value < y->value ? -1 : x->value > y->value;
}

/* Executable file mappings from every MAPS snapshot, deduplicated, sorted. */
static struct mapping *parse_maps(char *text, size_t *n)
{
	size_t cap = 64, k = 0;
	struct mapping *m = malloc(cap * sizeof(*m));
	for (char *line = strtok(text, "\n"); line && m; line = strtok(NULL, "\n")) {
		unsigned long long s, e, off;
		char perms[8];
		int path_at = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &s, &e, perms, &off, &path_at) < 4)
			continue;
		if (!strchr(perms, 'x') || !path_at || line[path_at] != '/')
			continue;
		if (k == cap) {
			struct mapping *mm = realloc(m, cap * 2 * sizeof(*m));
			if (!mm)
				break;
			m = mm;
			cap *= 2;
		}
		m[k++] = (struct mapping){s, e, off, line + path_at};
	}
	if (m)
		qsort(m, k, sizeof(*m), cmp_map);
	size_t o = 0;
	for (size_t i = 0; i < k; i++)
		if (!o || m[o - 1].start != m[i].start || strcmp(m[o - 1].path, m[i].path))
			m[o++] = m[i];
	*n = o;
	return m;
}

static void load_elf(struct elf_file *f)
{
	f->fd = open(f->path, O_RDONLY | O_CLOEXEC);
	if (f->fd < 0)
		return;
	f->elf = elf_begin(f->fd, ELF_C_READ, NULL);
	if (!f->elf)
		return;
	size_t ph = 0;
	if (elf_getphdrnum(f->elf, &ph) == 0 && ph) {
		f->loads = calloc(ph, sizeof(GElf_Phdr));
		for (size_t i = 0; f->loads && i < ph; i++) {
			GElf_Phdr p;
			if (gelf_getphdr(f->elf, (int)i, &p) && p.p_type == PT_LOAD)
				f->loads[f->nloads++] = p;
		}
	}
	size_t cap = 0;
	for (int pass = 0; pass < 2; pass++) { /* .symtab first; .dynsym only if there is none */
		Elf_Scn *scn = NULL;
		size_t before = f->nsyms;
		while ((scn = elf_nextscn(f->elf, scn))) {
			GElf_Shdr sh;
			if (!gelf_getshdr(scn, &sh) || sh.sh_type != (pass ? SHT_DYNSYM : SHT_SYMTAB) ||
			    !sh.sh_entsize)
				continue;
			Elf_Data *d = elf_getdata(scn, NULL);
			size_t n = sh.sh_size / sh.sh_entsize;
			for (size_t j = 0; d && j < n; j++) {
				GElf_Sym sym;
				if (!gelf_getsym(d, (int)j, &sym) || !sym.st_value)
					continue;
				int type = GELF_ST_TYPE(sym.st_info);
				if (type != STT_FUNC && type != STT_GNU_IFUNC)
					continue;
				const char *name = elf_strptr(f->elf, sh.sh_link, sym.st_name);
				if (!name || !*name)
					continue;
				if (f->nsyms == cap) {
					cap = cap ? cap * 2 : 1024;
					struct fsym *ns = realloc(f->syms, cap * sizeof(*ns));
					if (!ns)
						return;
					f->syms = ns;
				}
				f->syms[f->nsyms++] = (struct fsym){sym.st_value, sym.st_size, name};
			}
		}
		if (f->nsyms > before)
			break;
	}
	if (f->nsyms)
		qsort(f->syms, f->nsyms, sizeof(*f->syms), cmp_sym);
}

static const char *lookup(const struct elf_file *f, uint64_t vaddr)
{
	size_t lo = 0, hi = f->nsyms;
	while (lo < hi) { /* last symbol with value <= vaddr */
		size_t mid = (lo + hi) / 2;
		if (f->syms[mid].value <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	const struct fsym *s = &f->syms[lo - 1];
	if (s->size ? vaddr < s->value + s->size : (lo == f->nsyms || vaddr < f->syms[lo].value))
		return s->name;
	return NULL;
}

/* The name's length, as snprintf counts it: out holds it whole where that is below outlen. */
static size_t name_of(struct elf_file *files, size_t nfiles, const struct mapping *maps, size_t nmaps,
		      uint64_t addr, char *out, size_t outlen, int demangle)
{
	size_t lo = 0, hi = nmaps;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (maps[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	const struct mapping *m = lo ? &maps[lo - 1] : NULL;
	if (!m || addr >= m->end)
		return (size_t)snprintf(out, outlen, "0x%llx", (unsigned long long)addr);
	struct elf_file *f = NULL;
	for (size_t i = 0; i < nfiles && !f; i++)
		if (!strcmp(files[i].path, m->path))
			f = &files[i];
	uint64_t off = addr - m->start + m->offset;
	const char *base = strrchr(m->path, '/') ? strrchr(m->path, '/') + 1 : m->path;
	const char *sym = NULL;
	for (size_t i = 0; f && i < f->nloads && !sym; i++) {
		const GElf_Phdr *p = &f->loads[i];
		if (off >= p->p_offset && off < p->p_offset + p->p_filesz)
			sym = lookup(f, off - p->p_offset + p->p_vaddr);
	}
	if (!sym)
		return (size_t)snprintf(out, outlen, "%s+0x%llx", base, (unsigned long long)off);
	int status = -1;
	char *dem = demangle && sym[0] == '_' && sym[1] == 'Z' ? __cxa_demangle(sym, NULL, NULL, &status) : NULL;
	size_t len = (size_t)snprintf(out, outlen, "%s", dem && status == 0 ? dem : sym);
	free(dem);
	return len;
}

static void table_put(struct weft_proc *p, uint64_t addr, uint32_t id)
{
	size_t mask = p->func_cap - 1;
	for (size_t i = (size_t)((addr * 0x9e3779b97f4a7c15ull) >> 20) & mask;; i = (i + 1) & mask)
		if (!p->func_addr[i] || p->func_addr[i] == addr) {
			p->func_addr[i] = addr;
			p->func_id[i] = id;
			return;
		}
}

static int table_grow(struct weft_proc *p)
{
	size_t cap = p->func_cap ? p->func_cap * 2 : 1024;
	uint64_t *oa = p->func_addr;
	uint32_t *oi = p->func_id;
	size_t ocap = p->func_cap;
	p->func_addr = calloc(cap, sizeof(uint64_t));
	p->func_id = calloc(cap, sizeof(uint32_t));
	if (!p->func_addr || !p->func_id)
		return -1;
	p->func_cap = cap;
	for (size_t i = 0; i < ocap; i++)
		if (oa[i])
			table_put(p, oa[i], oi[i]);
	free(oa);
	free(oi);
	return 0;
}

/* Pass 1, on two threads: every chunk's distinct function addresses into a per-worker set. */
struct addr_set {
	uint64_t *a;
	size_t cap, n;
};

static int set_add(struct addr_set *s, uint64_t a)
{
	if ((s->n + 1) * 2 > s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 1024;
		uint64_t *na = calloc(cap, sizeof(uint64_t));
		if (!na)
			return -1;
		for (size_t i = 0; i < s->cap; i++) {
			if (!s->a[i])
				continue;
			size_t j = (size_t)((s->a[i] * 0x9e3779b97f4a7c15ull) >> 20) & (cap - 1);
			while (na[j])
				j = (j + 1) & (cap - 1);
			na[j] = s->a[i];
		}
		free(s->a);
		s->a = na;
		s->cap = cap;
	}
	size_t j = (size_t)((a * 0x9e3779b97f4a7c15ull) >> 20) & (s->cap - 1);
	while (s->a[j] && s->a[j] != a)
		j = (j + 1) & (s->cap - 1);
	if (!s->a[j]) {
		s->a[j] = a;
		s->n++;
	}
	return 0;
}

#define COLLECTORS 16 /* at most: one per core */

struct collect_job {
	const struct weft_proc *p;
	const struct weft_chunk_view **chunks;
	size_t n;
	_Atomic size_t next;
	struct addr_set sets[COLLECTORS];
};

/* A program that calls many functions in turn has nearly every record a literal header (Lua:
 * 9 in 10), the same few hundred addresses over and over: `recent` (by the address's low bits)
 * answers most of them before the set is probed. */
#define RECENT 256
struct collect_ctx {
	struct addr_set *set;
	uint64_t recent[RECENT];
	int full;
};

static void collect_hdr(uint64_t h, void *ud)
{
	struct collect_ctx *x = ud;
	unsigned type = weft_rec_type(h);
	if (type != WEFT_R_FUNC_ENTER && type != WEFT_R_FUNC_EXIT)
		return;
	uint64_t a = weft_rec_addr(h), *r = &x->recent[(a >> 4) & (RECENT - 1)];
	if (*r == a || x->full)
		return;
	*r = a;
	if (a && set_add(x->set, a))
		x->full = 1;
}

static void *collect_main(void *arg)
{
	struct collect_job *j = ((void **)arg)[0];
	struct collect_ctx x = {.set = ((void **)arg)[1]};
	uint64_t *buf = NULL;
	size_t cap = 0;
	for (size_t c; !x.full && (c = atomic_fetch_add(&j->next, 1)) < j->n;) {
		const char *why;
		weft_chunk_headers(j->chunks[c], &buf, &cap, collect_hdr, &x, &why);
	}
	free(buf);
	return NULL;
}

struct weft_symtab {
	char *text;
	struct mapping *maps;
	size_t nmaps;
	struct elf_file *files;
	size_t nfiles;
};

struct weft_symtab *weft_symtab_open(const struct weft_proc *p)
{
	struct weft_symtab *st = calloc(1, sizeof(*st));
	if (!st || !(st->text = p->maps_len ? weft_proc_maps(p) : calloc(1, 1))) {
		free(st);
		return NULL;
	}
	st->maps = parse_maps(st->text, &st->nmaps);
	elf_version(EV_CURRENT);
	st->files = calloc(st->nmaps + 1, sizeof(*st->files));
	for (size_t i = 0; st->files && st->maps && i < st->nmaps; i++) {
		int seen = 0;
		for (size_t k = 0; k < st->nfiles && !seen; k++)
			seen = !strcmp(st->files[k].path, st->maps[i].path);
		if (!seen) {
			st->files[st->nfiles].path = strdup(st->maps[i].path);
			st->files[st->nfiles].fd = -1;
			load_elf(&st->files[st->nfiles++]);
		}
	}
	return st;
}

void weft_symtab_name(struct weft_symtab *st, uint64_t addr, char *out, size_t n)
{
	name_of(st->files, st->nfiles, st->maps, st->maps ? st->nmaps : 0, addr, out, n, 1);
}

const char *weft_symtab_name_full(struct weft_symtab *st, uint64_t addr, char *buf, size_t n, char **heap)
{
	*heap = NULL;
	size_t len = name_of(st->files, st->nfiles, st->maps, st->maps ? st->nmaps : 0, addr, buf, n, 1);
	if (len < n)
		return buf;
	if (!(*heap = malloc(len + 1)))
		return buf; /* cut at n - 1 bytes: no memory for more */
	name_of(st->files, st->nfiles, st->maps, st->maps ? st->nmaps : 0, addr, *heap, len + 1, 1);
	return *heap;
}

void weft_symtab_symbol(struct weft_symtab *st, uint64_t addr, char *out, size_t n)
{
	name_of(st->files, st->nfiles, st->maps, st->maps ? st->nmaps : 0, addr, out, n, 0);
}

void weft_symtab_close(struct weft_symtab *st)
{
	if (!st)
		return;
	for (size_t k = 0; k < st->nfiles; k++) {
		if (st->files[k].elf)
			elf_end(st->files[k].elf);
		if (st->files[k].fd >= 0)
			close(st->files[k].fd);
		free(st->files[k].syms);
		free(st->files[k].loads);
		free(st->files[k].path);
	}
	free(st->files);
	free(st->maps);
	free(st->text);
	free(st);
}

static int cmp_addr(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* A chunk whose function addresses its index entry lists (1.13, funcset.h): not scanned. */
static int chunk_listed(const struct weft_chunk_view *c)
{
	return c->has_ix && (c->ix.flags & WEFT_IX_FUNCS);
}

static int add_addr(struct weft_proc *p, uint64_t a)
{
	if (!a || weft_func_id(p, a))
		return 0;
	if ((p->nfuncs + 1) * 2 > p->func_cap && table_grow(p))
		return -1;
	table_put(p, a, UINT32_MAX);
	p->nfuncs++;
	return 0;
}

/* The listed chunks' addresses into the table (id UINT32_MAX until named); the listings freed. */
static void listed_addresses(struct weft_proc *p)
{
	int full = 0;
	for (size_t k = 0; k < p->nthreads; k++)
		for (size_t c = 0; c < p->threads[k].nchunks; c++) {
			const struct weft_chunk_view *v = &p->threads[k].chunks[c];
			if (!chunk_listed(v) || full)
				continue;
			for (uint32_t i = 0; i < v->funcs_n && !full; i++)
				if ((size_t)v->funcs_at + i < p->nix_funcs)
					full = add_addr(p, p->ix_funcs[v->funcs_at + i]);
		}
	free(p->ix_funcs);
	p->ix_funcs = NULL;
	p->nix_funcs = p->ix_funcs_cap = 0;
}

void weft_symbolize(struct weft_trace *t, struct weft_proc *p)
{
	if (p->symbolized)
		return;
	p->symbolized = 1;
	/* 1. distinct addresses (id 0 until named) */
	uint64_t *buf = NULL;
	struct collect_job j = {.p = p};
	for (size_t k = 0; k < p->nthreads; k++)
		j.n += p->threads[k].nchunks;
	j.chunks = calloc(j.n + 1, sizeof(*j.chunks));
	if (!j.chunks)
		return;
	j.n = 0;
	for (size_t k = 0; k < p->nthreads; k++)
		for (size_t c = 0; c < p->threads[k].nchunks; c++)
			if (!chunk_listed(&p->threads[k].chunks[c]))
				j.chunks[j.n++] = &p->threads[k].chunks[c];
	/* one collector per core (the chunks are decompressed to see their headers), each with its
	 * own set, on as many chunks as it takes */
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	int want = cores < 1 ? 1 : cores > COLLECTORS ? COLLECTORS : (int)cores, started = 1;
	void *args[COLLECTORS][2];
	pthread_t helper[COLLECTORS];
	for (int w = 0; w < COLLECTORS; w++) {
		args[w][0] = &j;
		args[w][1] = &j.sets[w];
	}
	while (started < want && (size_t)started + 1 < j.n &&
	       pthread_create(&helper[started], NULL, collect_main, args[started]) == 0)
		started++;
	collect_main(args[0]);
	for (int w = 1; w < started; w++)
		pthread_join(helper[w], NULL);
	free(j.chunks);
	listed_addresses(p);
	for (int w = 0; w < started; w++) {
		for (size_t i = 0; i < j.sets[w].cap; i++) {
			if (add_addr(p, j.sets[w].a[i]))
				break;
		}
		free(j.sets[w].a);
	}
	if (!p->nfuncs)
		goto out;
	/* 2. name each: maps -> file -> symbol */
	struct weft_symtab *st = weft_symtab_open(p);
	if (!st)
		goto out;
	/* in address order: the table's order depends on the order its addresses were found in
	 * (the collectors' timing), and the ids must not (the same trace, the same bytes) */
	size_t unnamed = 0, na = 0;
	uint64_t *addrs = malloc((p->nfuncs + 1) * sizeof(*addrs));
	if (!addrs) {
		weft_symtab_close(st);
		goto out;
	}
	for (size_t i = 0; i < p->func_cap && na < p->nfuncs; i++)
		if (p->func_addr[i] && p->func_id[i] == UINT32_MAX)
			addrs[na++] = p->func_addr[i];
	qsort(addrs, na, sizeof(*addrs), cmp_addr);
	for (size_t i = 0; i < na; i++) {
		char buf[1024], *heap;
		const char *name = weft_symtab_name_full(st, addrs[i], buf, sizeof(buf), &heap);
		if (name[0] == '0' && name[1] == 'x')
			unnamed++;
		table_put(p, addrs[i], weft_proc_add_site(p, name, ""));
		free(heap);
	}
	free(addrs);
	if (unnamed)
		weft_trace_warn(t, "process %d: %zu function addresses outside any recorded file mapping",
				p->pid, unnamed);
	weft_symtab_close(st);
out:
	free(buf);
}
