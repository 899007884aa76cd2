/*
 * elfsym.c - the runtime's reading of ELF symbol tables, with libelf: every symbol of a file,
 * from .symtab (static symbols too) or, in a stripped file, .dynsym, handed to a callback. The
 * function filters (funcfilter.c) name functions with it; watch= finds a variable of the traced
 * executable by name, at its run-time address (the symbol's value plus the load bias of a
 * position-independent executable, from dl_iterate_phdr, whose first entry is the program).
 */
#include "lib/internal.h"
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <link.h>
#include <string.h>
#include <unistd.h>

int weft_elf_symbols(const char *path, int *is_exec,
		     int (*fn)(void *arg, const char *name, uint64_t value, uint64_t size, int type), void *arg)
{
	elf_version(EV_CURRENT);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	GElf_Ehdr eh;
	if (!e || !gelf_getehdr(e, &eh)) {
		if (e)
			elf_end(e);
		close(fd);
		return -ENOEXEC;
	}
	if (is_exec)
		*is_exec = eh.e_type == ET_EXEC;
	int seen = 0, stop = 0;
	for (int pass = 0; pass < 2 && !seen && !stop; pass++) {
		Elf_Scn *scn = NULL;
		while (!stop && (scn = elf_nextscn(e, scn))) {
			GElf_Shdr sh;
			if (!gelf_getshdr(scn, &sh) || sh.sh_type != (pass ? SHT_DYNSYM : SHT_SYMTAB) || !sh.sh_entsize)
				continue;
			Elf_Data *d = elf_getdata(scn, NULL);
			for (size_t j = 0; d && !stop && j < sh.sh_size / sh.sh_entsize; j++) {
				GElf_Sym sym;
				if (!gelf_getsym(d, (int)j, &sym) || !sym.st_value)
					continue;
				const char *name = elf_strptr(e, sh.sh_link, sym.st_name);
				if (!name || !*name)
					continue;
				seen = 1;
				stop = fn(arg, name, sym.st_value, sym.st_size, GELF_ST_TYPE(sym.st_info));
			}
		}
	}
	elf_end(e);
	close(fd);
	return 0;
}

struct find {
	const char *name;
	uint64_t value, size;
	int found;
};

static int match(void *arg, const char *name, uint64_t value, uint64_t size, int type)
{
	struct find *f = arg;
	if ((type != STT_OBJECT && type != STT_NOTYPE && type != STT_COMMON) || strcmp(name, f->name))
		return 0;
	f->value = value;
	f->size = size;
	f->found = 1;
	return 1;
}

static int first_bias(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	*(uint64_t *)arg = (uint64_t)info->dlpi_addr;
	return 1; /* the first entry is the program */
}

int weft_exe_symbol(const char *name, uint64_t *addr, uint64_t *size)
{
	char path[4096];
	ssize_t l = readlink("/proc/self/exe", path, sizeof(path) - 1);
	if (l <= 0)
		return -errno;
	path[l] = 0;
	struct find f = {name, 0, 0, 0};
	int is_exec = 0;
	int rc = weft_elf_symbols(path, &is_exec, match, &f);
	if (rc)
		return rc;
	if (!f.found)
		return -ENOENT;
	uint64_t bias = 0;
	if (!is_exec)
		dl_iterate_phdr(first_bias, &bias);
	*addr = f.value + bias;
	*size = f.size;
	return 0;
}
