/*
 * sched_tp.c - tracefs format files of the scheduling tracepoints, and the decoder of their
 * raw sample bytes (see sched_tp.h). A format file lists each field as
 *   field:char prev_comm[16];	offset:8;	size:16;	signed:0;
 * and the tracepoint's id on an "ID:" line; weft reads the offsets rather than assuming
 * them, because they change between kernels.
 */
#include "collect/sched_tp.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *after(const char *s, const char *key)
{
	const char *p = strstr(s, key);
	return p ? p + strlen(key) : NULL;
}

int weft_tp_parse_format(const char *text, struct weft_tp_format *out)
{
	memset(out, 0, sizeof(*out));
	int have_id = 0;
	for (const char *line = text; line && *line;) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		char buf[512];
		if (len >= sizeof(buf))
			len = sizeof(buf) - 1;
		memcpy(buf, line, len);
		buf[len] = 0;
		line = end ? end + 1 : NULL;
		const char *s = buf;
		while (*s == ' ' || *s == '\t')
			s++;
		if (!strncmp(s, "name:", 5)) {
			s += 5;
			while (*s == ' ')
				s++;
			snprintf(out->name, sizeof(out->name), "%s", s);
		} else if (!strncmp(s, "ID:", 3)) {
			char *e;
			unsigned long v = strtoul(s + 3, &e, 10);
			if (e != s + 3) {
				out->id = (uint32_t)v;
				have_id = 1;
			}
		} else if (!strncmp(s, "field:", 6) && out->nfields < WEFT_TP_MAX_FIELDS) {
			const char *semi = strchr(s, ';');
			const char *o = after(s, "offset:"), *z = after(s, "size:"), *g = after(s, "signed:");
			if (!semi || !o || !z)
				continue;
			/* the name: the last identifier before ';' (and before any [N]) */
			const char *ne = semi;
			const char *br = memchr(s, '[', (size_t)(semi - s));
			if (br)
				ne = br;
			const char *nb = ne;
			while (nb > s + 6 && (nb[-1] == '_' || (nb[-1] >= '0' && nb[-1] <= '9') ||
					      (nb[-1] >= 'a' && nb[-1] <= 'z') || (nb[-1] >= 'A' && nb[-1] <= 'Z')))
				nb--;
			struct weft_tp_field *f = &out->f[out->nfields];
			size_t nl = (size_t)(ne - nb);
			if (!nl || nl >= sizeof(f->name))
				continue;
			memcpy(f->name, nb, nl);
			f->name[nl] = 0;
			f->offset = (uint16_t)strtoul(o, NULL, 10);
			f->size = (uint16_t)strtoul(z, NULL, 10);
			f->is_signed = g ? (uint8_t)(strtoul(g, NULL, 10) != 0) : 0;
			out->nfields++;
		}
	}
	return have_id && out->nfields ? 0 : -EINVAL;
}

const struct weft_tp_field *weft_tp_field(const struct weft_tp_format *fmt, const char *name)
{
	for (int i = 0; i < fmt->nfields; i++)
		if (!strcmp(fmt->f[i].name, name))
			return &fmt->f[i];
	return NULL;
}

uint64_t weft_tp_get(const struct weft_tp_field *f, const void *raw, size_t len)
{
	if (!f || (size_t)f->offset + f->size > len)
		return 0;
	const unsigned char *p = (const unsigned char *)raw + f->offset;
	switch (f->size) {
	case 1: { uint8_t v = p[0]; return f->is_signed ? (uint64_t)(int64_t)(int8_t)v : v; }
	case 2: { uint16_t v; memcpy(&v, p, 2); return f->is_signed ? (uint64_t)(int64_t)(int16_t)v : v; }
	case 4: { uint32_t v; memcpy(&v, p, 4); return f->is_signed ? (uint64_t)(int64_t)(int32_t)v : v; }
	case 8: { uint64_t v; memcpy(&v, p, 8); return v; }
	default: return 0;
	}
}

static void get_str(const struct weft_tp_field *f, const void *raw, size_t len, char out[16])
{
	memset(out, 0, 16);
	if (!f || (size_t)f->offset + f->size > len)
		return;
	size_t n = f->size < 15 ? f->size : 15;
	memcpy(out, (const char *)raw + f->offset, n);
}

int weft_tracefs_find(char *out, size_t n, char *why, size_t whyn)
{
	static const char *const roots[] = {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"};
	struct stat st;
	for (size_t i = 0; i < 2; i++) {
		char p[256];
		snprintf(p, sizeof(p), "%s/events/sched/sched_switch/format", roots[i]);
		if (!stat(p, &st)) {
			snprintf(out, n, "%s", roots[i]);
			return 0;
		}
	}
	/* none mounted: mount it where the kernel provides the mount point (root only) */
	if (!stat(roots[0], &st) && mount("nodev", roots[0], "tracefs", 0, NULL) == 0) {
		snprintf(out, n, "%s", roots[0]);
		return 0;
	}
	int e = errno ? errno : ENOENT;
	snprintf(why, whyn, "no tracefs at /sys/kernel/tracing (mounting it failed: %s)", strerror(e));
	return -e;
}

static int load_one(struct weft_tp_format *f, const char *tracefs, const char *name, char *why, size_t n)
{
	static const char *const groups[] = {"sched", "task"};
	for (size_t g = 0; g < 2; g++) {
		char p[512];
		snprintf(p, sizeof(p), "%s/events/%s/%s/format", tracefs, groups[g], name);
		FILE *fp = fopen(p, "re");
		if (!fp)
			continue;
		char *text = malloc(16384);
		size_t got = text ? fread(text, 1, 16383, fp) : 0;
		fclose(fp);
		if (!text)
			return -ENOMEM;
		text[got] = 0;
		int rc = weft_tp_parse_format(text, f);
		free(text);
		if (rc)
			snprintf(why, n, "cannot parse %s", p);
		return rc;
	}
	snprintf(why, n, "no %s tracepoint under %s/events", name, tracefs);
	return -ENOENT;
}

int weft_sched_tp_resolve(struct weft_sched_tp *tp, char *why, size_t n)
{
	const struct weft_tp_format *sw = &tp->fmt[0], *wk = &tp->fmt[1], *nt = &tp->fmt[2], *rn = &tp->fmt[3];
	tp->common_pid = weft_tp_field(sw, "common_pid");
	tp->sw_prev_comm = weft_tp_field(sw, "prev_comm");
	tp->sw_prev_pid = weft_tp_field(sw, "prev_pid");
	tp->sw_prev_prio = weft_tp_field(sw, "prev_prio");
	tp->sw_prev_state = weft_tp_field(sw, "prev_state");
	tp->sw_next_comm = weft_tp_field(sw, "next_comm");
	tp->sw_next_pid = weft_tp_field(sw, "next_pid");
	tp->sw_next_prio = weft_tp_field(sw, "next_prio");
	tp->wk_comm = weft_tp_field(wk, "comm");
	tp->wk_pid = weft_tp_field(wk, "pid");
	tp->wk_prio = weft_tp_field(wk, "prio");
	tp->wk_target_cpu = weft_tp_field(wk, "target_cpu");
	tp->nt_pid = weft_tp_field(nt, "pid");
	tp->nt_comm = weft_tp_field(nt, "comm");
	tp->nt_clone_flags = weft_tp_field(nt, "clone_flags");
	tp->rn_pid = weft_tp_field(rn, "pid"); /* gone in 6.14: the task renames itself (common_pid) */
	tp->rn_newcomm = weft_tp_field(rn, "newcomm");
	const char *missing = !tp->common_pid ? "common_pid" : !tp->sw_prev_pid ? "sched_switch prev_pid"
			      : !tp->sw_next_pid ? "sched_switch next_pid" : !tp->sw_prev_state ? "sched_switch prev_state"
			      : !tp->wk_pid ? "sched_waking pid" : !tp->nt_pid ? "task_newtask pid"
			      : !tp->rn_newcomm ? "task_rename newcomm" : NULL;
	if (missing) {
		snprintf(why, n, "the tracepoint format has no field %s", missing);
		return -EINVAL;
	}
	return 0;
}

int weft_sched_tp_load(struct weft_sched_tp *tp, const char *tracefs, char *why, size_t n)
{
	static const char *const names[4] = {"sched_switch", "sched_waking", "task_newtask", "task_rename"};
	memset(tp, 0, sizeof(*tp));
	for (int i = 0; i < 4; i++) {
		int rc = load_one(&tp->fmt[i], tracefs, names[i], why, n);
		if (rc)
			return rc;
	}
	return weft_sched_tp_resolve(tp, why, n);
}

int weft_sched_tp_decode(const struct weft_sched_tp *tp, const void *raw, size_t len, struct weft_sched_ev *out)
{
	if (len < 8)
		return -1;
	uint16_t type;
	memcpy(&type, raw, 2);
	memset(out, 0, sizeof(*out));
	out->common_pid = (uint32_t)weft_tp_get(tp->common_pid, raw, len);
	if (type == tp->fmt[0].id) {
		out->kind = WEFT_SCHED_SWITCH;
		out->pid = (uint32_t)weft_tp_get(tp->sw_prev_pid, raw, len);
		out->next_pid = (uint32_t)weft_tp_get(tp->sw_next_pid, raw, len);
		out->prio = (int32_t)weft_tp_get(tp->sw_prev_prio, raw, len);
		out->next_prio = (int32_t)weft_tp_get(tp->sw_next_prio, raw, len);
		out->prev_state = (int64_t)weft_tp_get(tp->sw_prev_state, raw, len);
		get_str(tp->sw_prev_comm, raw, len, out->comm);
		get_str(tp->sw_next_comm, raw, len, out->next_comm);
	} else if (type == tp->fmt[1].id) {
		out->kind = WEFT_SCHED_WAKING;
		out->pid = (uint32_t)weft_tp_get(tp->wk_pid, raw, len);
		out->prio = (int32_t)weft_tp_get(tp->wk_prio, raw, len);
		out->target_cpu = (int32_t)weft_tp_get(tp->wk_target_cpu, raw, len);
		get_str(tp->wk_comm, raw, len, out->comm);
	} else if (type == tp->fmt[2].id) {
		out->kind = WEFT_SCHED_NEWTASK;
		out->pid = (uint32_t)weft_tp_get(tp->nt_pid, raw, len);
		out->clone_flags = weft_tp_get(tp->nt_clone_flags, raw, len);
		get_str(tp->nt_comm, raw, len, out->comm);
	} else if (type == tp->fmt[3].id) {
		out->kind = WEFT_SCHED_RENAME;
		out->pid = tp->rn_pid ? (uint32_t)weft_tp_get(tp->rn_pid, raw, len) : out->common_pid;
		get_str(tp->rn_newcomm, raw, len, out->comm);
	} else {
		return -1;
	}
	return 0;
}
