/*
 * symbols.h - function addresses recorded by -finstrument-functions hooks, turned into names
 * at read time: the process's memory maps (MAPS metadata) say which file each address lies
 * in, that file's ELF symbol tables (read with elfutils' libelf) say which function, and C++
 * names are demangled. Each distinct address becomes a call site of the process (kind event),
 * so converters and reports treat functions like any other slice.
 */
#ifndef WEFT_SYMBOLS_H
#define WEFT_SYMBOLS_H

#include "format/reader.h"

/* A process's symbol table: its recorded memory maps and the ELF symbols of their files,
 * opened once, for naming any code address (weft_symtab_name: "function" demangled, or
 * "file+0xOFFSET" without a symbol, or "0xADDR" outside every mapping). NULL when memory
 * fails. */
struct weft_symtab;
struct weft_symtab *weft_symtab_open(const struct weft_proc *p);
void weft_symtab_name(struct weft_symtab *st, uint64_t addr, char *out, size_t n);
/* The name whole, however long (C++ template names run to many KiB): in buf where it fits,
 * else in *heap (malloc'd, the caller frees it; NULL where buf was enough). */
const char *weft_symtab_name_full(struct weft_symtab *st, uint64_t addr, char *buf, size_t n, char **heap);
/* The same, with the symbol as the ELF table spells it (C++: mangled, as weft record's -F/-N
 * match it). */
void weft_symtab_symbol(struct weft_symtab *st, uint64_t addr, char *out, size_t n);
void weft_symtab_close(struct weft_symtab *st);

/* Symbolize every function address used by the process's chunks. */
void weft_symbolize(struct weft_trace *t, struct weft_proc *p);

/* The site id given to a function address (0 if the address was never seen). */
static inline uint32_t weft_func_id(const struct weft_proc *p, uint64_t addr)
{
	if (!p->func_cap)
		return 0;
	size_t mask = p->func_cap - 1;
	for (size_t i = (size_t)((addr * 0x9e3779b97f4a7c15ull) >> 20) & mask;; i = (i + 1) & mask) {
		if (p->func_addr[i] == addr)
			return p->func_id[i];
		if (!p->func_addr[i])
			return 0;
	}
}

#endif
