/*
 * top-sample.c - what `weft top` shows, gathered: every recorder writing the directory (one
 * per rank of a job that shares it) is asked `cmd top` on its control socket
 * (DIR/.control.PID, record-control.c), and answers with the lines each of its processes'
 * runtimes gave (src/lib/live.c, prefixed "@PID "), then `ack`. The lines (docs/top.md):
 *   P pid now_ns since_ns events dropped heap rank size flight host comm
 *   T tid serial alive events calls dropped mpi_ns depth lag_chunks asof_ns
 *   S tid key open_ns          the open slices, outermost first
 *   E tid key calls self_ns    per function or slice name
 *   N key name                 a site's name (keys sN); fHEX keys are function addresses,
 *                              named here from the process's /proc/PID/maps and ELF symbols
 * A run that has ended has no recorder: its totals come from the trace (weft_profile_build).
 */
#include "tool/top.h"
#include "export/profile.h"
#include "format/reader.h"
#include "format/symbols.h"
#include "lib/job.h"
#include "tool/record-control.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* ---- symbols ---- */

struct top_sym {
	int pid;
	struct weft_symtab *st;
	size_t maps_len; /* of the maps it was made from: a dlopen since makes it anew */
};
struct top_syms {
	struct top_sym *v;
	size_t n;
};

struct top_syms *top_syms_new(void)
{
	return calloc(1, sizeof(struct top_syms));
}

void top_syms_free(struct top_syms *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].st)
			weft_symtab_close(s->v[i].st);
	free(s->v);
	free(s);
}

static char *read_all(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	size_t cap = 65536, n = 0;
	char *b = malloc(cap);
	for (ssize_t r; b; n += (size_t)r) {
		if (n + 1 == cap) {
			char *nb = realloc(b, cap * 2);
			if (!nb) {
				free(b);
				b = NULL;
				break;
			}
			b = nb;
			cap *= 2;
		}
		r = read(fd, b + n, cap - 1 - n);
		if (r <= 0)
			break;
	}
	close(fd);
	if (b)
		b[n] = 0;
	*len = n;
	return b;
}

/* pid's symbol table (NULL: its maps cannot be read here). */
static struct weft_symtab *syms_of(struct top_syms *s, int pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	size_t len;
	char *maps = read_all(path, &len);
	size_t i;
	for (i = 0; i < s->n && s->v[i].pid != pid; i++)
		;
	if (i < s->n && (!maps || s->v[i].maps_len == len)) {
		free(maps);
		return s->v[i].st;
	}
	if (!maps)
		return NULL;
	struct weft_proc p;
	memset(&p, 0, sizeof(p));
	p.maps = maps;
	p.maps_len = len;
	struct weft_symtab *st = weft_symtab_open(&p);
	free(maps);
	if (i == s->n) {
		struct top_sym *nv = realloc(s->v, (s->n + 1) * sizeof(*nv));
		if (!nv) {
			if (st)
				weft_symtab_close(st);
			return NULL;
		}
		s->v = nv;
		s->n++;
		s->v[i] = (struct top_sym){pid, NULL, 0};
	}
	if (s->v[i].st)
		weft_symtab_close(s->v[i].st);
	s->v[i].st = st;
	s->v[i].maps_len = len;
	return st;
}

/* ---- parsing an answer ---- */

struct names { /* one process's site names: key "sN" -> name */
	char **key, **name;
	size_t n, cap;
};

static const char *site_name(const struct names *nm, const char *key)
{
	for (size_t i = 0; i < nm->n; i++)
		if (!strcmp(nm->key[i], key))
			return nm->name[i];
	return NULL;
}

static char *name_of(const char *key, const struct names *nm, struct weft_symtab *st)
{
	if (key[0] == 's') {
		const char *n = site_name(nm, key);
		return strdup(n ? n : key);
	}
	uint64_t addr = strtoull(key + 1, NULL, 16);
	char buf[512];
	if (st)
		weft_symtab_name(st, addr, buf, sizeof(buf));
	else
		snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)addr);
	return strdup(buf);
}

static struct top_proc *proc_of(struct top_sample *s, int pid)
{
	for (size_t i = 0; i < s->nprocs; i++)
		if (s->procs[i].pid == pid)
			return &s->procs[i];
	return NULL;
}

static struct top_thread *thread_of(struct top_proc *p, int tid)
{
	for (size_t i = p->nthreads; i-- > 0;)
		if (p->threads[i].tid == tid)
			return &p->threads[i];
	return NULL;
}

static void *grow(void *v, size_t n, size_t size)
{
	if (n & (n - 1) && n) /* capacity doubles at powers of two */
		return v;
	return realloc(v, (n ? n * 2 : 1) * size);
}

/* The thread's CPU time (utime + stime, in ns), 0 when its stat cannot be read. */
static uint64_t thread_cpu(int pid, int tid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
	size_t len;
	char *st = read_all(path, &len);
	char *p = st ? strrchr(st, ')') : NULL; /* the name may hold spaces and parentheses */
	unsigned long long ut = 0, stt = 0;
	int ok = p && sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &stt) == 2;
	free(st);
	long hz = sysconf(_SC_CLK_TCK);
	return ok && hz > 0 ? (ut + stt) * (1000000000ull / (unsigned long long)hz) : 0;
}

static void thread_name(int pid, int tid, char *out, size_t n)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", pid, tid);
	size_t len;
	char *c = read_all(path, &len);
	snprintf(out, n, "%s", c ? c : "");
	out[strcspn(out, "\n")] = 0;
	free(c);
}

/* The lines of one process (all prefixed "@pid "), in the order given: P first. */
static int parse_process(struct top_sample *s, struct top_syms *syms, char **lines, size_t nlines)
{
	struct names nm = {0};
	for (size_t i = 0; i < nlines; i++) /* names first: E and S lines use them */
		if (lines[i][0] == 'N' && lines[i][1] == ' ') {
			char *k = lines[i] + 2, *sp = strchr(k, ' ');
			if (!sp)
				continue;
			if (nm.n == nm.cap) {
				size_t nc = nm.cap ? nm.cap * 2 : 64;
				char **a = realloc(nm.key, nc * sizeof(char *)), **b = a ? realloc(nm.name, nc * sizeof(char *)) : NULL;
				if (a)
					nm.key = a;
				if (!a || !b)
					break;
				nm.name = b;
				nm.cap = nc;
			}
			*sp = 0;
			nm.key[nm.n] = k;
			nm.name[nm.n++] = sp + 1;
		}
	struct top_proc *p = NULL;
	struct weft_symtab *st = NULL;
	int rc = 0;
	for (size_t i = 0; i < nlines && !rc; i++) {
		char *l = lines[i], key[32];
		if (l[0] == 'P') {
			struct top_proc np = {0};
			int n = 0;
			unsigned long long now, since, ev, dr, heap;
			if (sscanf(l, "P %d %llu %llu %llu %llu %llu %d %u %d %63s %n", &np.pid, &now, &since, &ev, &dr, &heap,
				   &np.rank, &np.size, &np.flight, np.host, &n) < 10 || proc_of(s, np.pid))
				break;
			snprintf(np.comm, sizeof(np.comm), "%s", l + n);
			np.now_ns = now;
			np.since_ns = since;
			np.events = ev;
			np.dropped = dr;
			np.heap = heap;
			struct top_proc *v = grow(s->procs, s->nprocs, sizeof(*v));
			if (!v) {
				rc = -ENOMEM;
				break;
			}
			s->procs = v;
			p = &s->procs[s->nprocs++];
			*p = np;
			st = syms_of(syms, p->pid);
		} else if (!p) {
			continue;
		} else if (l[0] == 'T') {
			struct top_thread t = {0};
			unsigned long long ev, calls, dr, mpi, lag, asof;
			if (sscanf(l, "T %d %u %d %llu %llu %llu %llu %u %llu %llu", &t.tid, &t.serial, &t.alive, &ev, &calls,
				   &dr, &mpi, &t.depth, &lag, &asof) != 10)
				continue;
			t.asof_ns = asof;
			t.events = ev;
			t.calls = calls;
			t.dropped = dr;
			t.mpi_ns = mpi;
			t.lag_chunks = lag;
			if (t.alive) {
				thread_name(p->pid, t.tid, t.name, sizeof(t.name));
				t.cpu_ns = thread_cpu(p->pid, t.tid);
			}
			struct top_thread *v = grow(p->threads, p->nthreads, sizeof(*v));
			if (!v) {
				rc = -ENOMEM;
				break;
			}
			p->threads = v;
			p->threads[p->nthreads++] = t;
		} else if (l[0] == 'S' || l[0] == 'E') {
			int tid;
			unsigned long long a = 0, b = 0;
			int got = l[0] == 'S' ? sscanf(l, "S %d %31s %llu", &tid, key, &a)
					      : sscanf(l, "E %d %31s %llu %llu", &tid, key, &a, &b);
			struct top_thread *t = thread_of(p, tid);
			if (!t || got != (l[0] == 'S' ? 3 : 4))
				continue;
			char *name = name_of(key, &nm, st);
			if (!name) {
				rc = -ENOMEM;
				break;
			}
			if (l[0] == 'S') {
				struct top_frame *v = grow(t->stack, t->nstack, sizeof(*v));
				if (!v) {
					free(name);
					rc = -ENOMEM;
					break;
				}
				t->stack = v;
				t->stack[t->nstack++] = (struct top_frame){name, a};
			} else {
				/* several addresses can have one name (a function's two copies): merged */
				size_t k;
				for (k = 0; k < t->nfuncs && strcmp(t->funcs[k].name, name); k++)
					;
				if (k < t->nfuncs) {
					t->funcs[k].calls += a;
					t->funcs[k].self_ns += b;
					free(name);
					continue;
				}
				struct top_func *v = grow(t->funcs, t->nfuncs, sizeof(*v));
				if (!v) {
					free(name);
					rc = -ENOMEM;
					break;
				}
				t->funcs = v;
				t->funcs[t->nfuncs++] = (struct top_func){name, a, b};
			}
		}
	}
	free(nm.key);
	free(nm.name);
	return rc;
}

/* The answer of one recorder: "@PID LINE" lines, then "ack" (or "error: ..."). */
static int parse_answer(struct top_sample *s, struct top_syms *syms, char *text)
{
	char **lines = NULL;
	size_t n = 0, cap = 0;
	int rc = 0, pid = -1;
	for (char *l = text, *nl; *l && !rc; l = nl + 1) {
		nl = strchr(l, '\n');
		if (!nl)
			break;
		*nl = 0;
		int lp;
		char *sp = strchr(l, ' ');
		if (l[0] != '@' || !sp)
			continue;
		lp = atoi(l + 1);
		if (lp != pid && n) { /* the next process's lines */
			rc = parse_process(s, syms, lines, n);
			n = 0;
		}
		pid = lp;
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 256;
			char **v = realloc(lines, nc * sizeof(*v));
			if (!v) {
				rc = -ENOMEM;
				break;
			}
			lines = v;
			cap = nc;
		}
		lines[n++] = sp + 1;
	}
	if (!rc && n)
		rc = parse_process(s, syms, lines, n);
	free(lines);
	return rc;
}

struct asking {
	int fd;
	char *buf;
	size_t len, cap;
	int done;
};

/* Every recorder is asked at once, and read as its answer comes (a job's recorders answer
 * in parallel); one that says nothing for 5 s is left out. */
int top_sample_live(const char *dir, struct top_syms *syms, struct top_sample *s)
{
	memset(s, 0, sizeof(*s));
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	struct asking *a = NULL;
	size_t na = 0;
	struct dirent *e;
	char host[256] = "", here[256];
	gethostname(host, sizeof(host) - 1);
	weft_job_host_part(host, here, sizeof(here));
	while ((e = readdir(d))) {
		const char *at = !strncmp(e->d_name, ".weft-run-", 10) ? strchr(e->d_name, '@') : NULL;
		if (at && strcmp(at + 1, here)) { /* a job's recorder on another host */
			if (s->elsewhere++ < 4 && !strstr(s->other_hosts, at + 1)) {
				size_t l = strlen(s->other_hosts);
				snprintf(s->other_hosts + l, sizeof(s->other_hosts) - l, "%s%s", l ? ", " : "", at + 1);
			}
			continue;
		}
		if (strncmp(e->d_name, WEFT_CONTROL_PREFIX, strlen(WEFT_CONTROL_PREFIX)))
			continue;
		int fd = weft_rctl_connect(dir, e->d_name);
		if (fd < 0)
			continue; /* left by a recorder that was killed, or one that just ended */
		static const char line[] = "cmd top\n";
		struct asking *v = realloc(a, (na + 1) * sizeof(*v));
		if (!v || send(fd, line, sizeof(line) - 1, MSG_NOSIGNAL) != (ssize_t)sizeof(line) - 1) {
			close(fd);
			if (v)
				a = v;
			continue;
		}
		a = v;
		a[na++] = (struct asking){fd, NULL, 0, 0, 0};
	}
	closedir(d);
	if (!na) {
		free(a);
		return -ENOENT; /* (s->elsewhere stays) */
	}
	struct pollfd *pf = calloc(na, sizeof(*pf));
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (size_t left = na; pf && left;) {
		for (size_t i = 0; i < na; i++)
			pf[i] = (struct pollfd){.fd = a[i].done ? -1 : a[i].fd, .events = POLLIN};
		struct timespec t1;
		clock_gettime(CLOCK_MONOTONIC, &t1);
		long ms = 5000 - ((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000);
		if (ms <= 0 || poll(pf, na, (int)ms) <= 0)
			break;
		for (size_t i = 0; i < na; i++) {
			if (a[i].done || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (a[i].len + 65536 > a[i].cap) {
				size_t nc = a[i].cap ? a[i].cap * 2 : 131072;
				char *nb = realloc(a[i].buf, nc);
				if (!nb) {
					a[i].done = 1;
					left--;
					continue;
				}
				a[i].buf = nb;
				a[i].cap = nc;
			}
			ssize_t r = read(a[i].fd, a[i].buf + a[i].len, a[i].cap - a[i].len - 1);
			if (r > 0)
				a[i].len += (size_t)r;
			a[i].buf[a[i].len] = 0;
			/* its last line: ack or error */
			int end = r <= 0;
			if (!end && a[i].len && a[i].buf[a[i].len - 1] == '\n') {
				char *last = a[i].buf + a[i].len - 1;
				while (last > a[i].buf && last[-1] != '\n')
					last--;
				end = !strncmp(last, "ack\n", 4) || !strncmp(last, "error:", 6);
				if (end && last[0] == 'a')
					s->recorders++;
			}
			if (end) {
				a[i].done = 1;
				left--;
			}
		}
	}
	int rc = pf ? 0 : -ENOMEM;
	for (size_t i = 0; i < na; i++) {
		if (!rc && a[i].buf)
			rc = parse_answer(s, syms, a[i].buf);
		free(a[i].buf);
		close(a[i].fd);
	}
	free(pf);
	free(a);
	if (!rc && !s->recorders)
		rc = -ENOENT; /* (every one ended while it was asked) */
	return rc;
}

/* ---- a run that ended ---- */

int top_sample_ended(const char *dir, struct top_sample *s, char *err, size_t n)
{
	memset(s, 0, sizeof(*s));
	struct weft_trace *t;
	if (weft_trace_open(dir, &t, err, n))
		return -1;
	struct weft_profile prof;
	if (weft_profile_build(t, WEFT_PROFILE_THREADS, 0, 1, &prof)) {
		snprintf(err, n, "out of memory");
		weft_trace_free(t);
		return -1;
	}
	s->ended = 1;
	uint64_t lo = UINT64_MAX, hi = 0;
	s->procs = calloc(t->nprocs ? t->nprocs : 1, sizeof(*s->procs));
	for (size_t i = 0; s->procs && i < t->nprocs; i++) {
		const struct weft_proc *wp = &t->procs[i];
		struct top_proc *p = &s->procs[s->nprocs++];
		p->pid = wp->pid;
		uint32_t rank = weft_proc_rank(wp);
		p->rank = rank == WEFT_RANK_NONE ? -1 : (int)rank;
		p->size = wp->has_job ? wp->job_size : 0;
		p->flight = wp->has_window;
		snprintf(p->host, sizeof(p->host), "%s", wp->host ? wp->host : "");
		snprintf(p->comm, sizeof(p->comm), "%s", wp->name ? wp->name : "");
		if (wp->start_ns && wp->start_ns < lo)
			lo = wp->start_ns;
		if (wp->fin[6] > hi)
			hi = wp->fin[6];
		p->threads = calloc(wp->nthreads ? wp->nthreads : 1, sizeof(*p->threads));
		for (size_t k = 0; p->threads && k < wp->nthreads; k++) {
			const struct weft_thread_data *td = &wp->threads[k];
			if (td->weft_own)
				continue;
			struct top_thread *th = &p->threads[p->nthreads++];
			th->tid = (int)td->tid;
			th->serial = td->serial;
			snprintf(th->name, sizeof(th->name), "%s", td->name ? td->name : "");
			th->events = td->events;
			th->dropped = td->dropped;
			p->events += td->events;
			p->dropped += td->dropped;
			for (size_t r = 0; r < prof.nrows; r++) {
				const struct weft_fstat *f = &prof.rows[r];
				if (f->pid != wp->pid || f->tid != td->tid)
					continue;
				struct top_func *v = grow(th->funcs, th->nfuncs, sizeof(*v));
				if (!v)
					break;
				th->funcs = v;
				th->funcs[th->nfuncs++] = (struct top_func){strdup(f->name), f->calls, f->self};
				th->calls += f->calls;
				if (!strncmp(f->name, "MPI_", 4))
					th->mpi_ns += f->total;
			}
		}
	}
	s->span_s = hi > lo ? (double)(hi - lo) / 1e9 : 0;
	weft_profile_free(&prof);
	weft_trace_free(t);
	return 0;
}

void top_sample_free(struct top_sample *s)
{
	for (size_t i = 0; i < s->nprocs; i++) {
		struct top_proc *p = &s->procs[i];
		for (size_t k = 0; k < p->nthreads; k++) {
			struct top_thread *t = &p->threads[k];
			for (size_t j = 0; j < t->nstack; j++)
				free(t->stack[j].name);
			for (size_t j = 0; j < t->nfuncs; j++)
				free(t->funcs[j].name);
			free(t->stack);
			free(t->funcs);
		}
		free(p->threads);
	}
	free(s->procs);
	memset(s, 0, sizeof(*s));
}
