/*
 * sched_tp.h - the kernel's scheduling tracepoints as weft reads them: each tracepoint's
 * id and field layout parsed from its tracefs `format` file (ids and offsets differ between
 * kernels: task_rename lost its pid field in 6.14, for one), and the decoder of the raw bytes
 * a PERF_SAMPLE_RAW sample carries into one scheduling event. Kept apart from the runtime
 * (collect/sched.c) so the parser is tested on fixture format files.
 */
#ifndef WEFT_SCHED_TP_H
#define WEFT_SCHED_TP_H

#include <stddef.h>
#include <stdint.h>

#define WEFT_TP_MAX_FIELDS 24

struct weft_tp_field {
	char name[32];
	uint16_t offset, size;
	uint8_t is_signed;
};

/* One tracepoint's format file. */
struct weft_tp_format {
	uint32_t id;
	char name[64];
	int nfields;
	struct weft_tp_field f[WEFT_TP_MAX_FIELDS];
};

/* Parses the text of a format file ("name: ...", "ID: N", "field:TYPE NAME;\toffset:N;\tsize:N;\tsigned:N;"
 * lines). Returns 0, or -EINVAL when it has no ID or no field. */
int weft_tp_parse_format(const char *text, struct weft_tp_format *out);

/* The field called name, or NULL. */
const struct weft_tp_field *weft_tp_field(const struct weft_tp_format *fmt, const char *name);

/* Reads a field (1, 2, 4 or 8 bytes; sign-extended when signed) from the raw bytes; 0 when
 * the field is NULL or lies beyond len. */
uint64_t weft_tp_get(const struct weft_tp_field *f, const void *raw, size_t len);

/* The kinds of scheduling event weft records (the `track` of a SCHED record, docs/format.md). */
enum weft_sched_kind {
	WEFT_SCHED_SWITCH = 1,     /* sched_switch */
	WEFT_SCHED_WAKING = 2,     /* sched_waking */
	WEFT_SCHED_NEWTASK = 3,    /* task_newtask */
	WEFT_SCHED_RENAME = 4,     /* task_rename */
	WEFT_SCHED_OUT = 5,        /* one of the program's threads left its CPU (PERF_RECORD_SWITCH) */
	WEFT_SCHED_IN = 6,         /* ... and came back on */
	WEFT_SCHED_COMM = 7,       /* a task's name, before the first record that needs it */
};

/* The four tracepoints' layouts, read from one tracefs root. */
struct weft_sched_tp {
	struct weft_tp_format fmt[4]; /* switch, waking, newtask, rename */
	/* resolved fields (NULL when the kernel lacks one) */
	const struct weft_tp_field *common_pid;
	const struct weft_tp_field *sw_prev_comm, *sw_prev_pid, *sw_prev_prio, *sw_prev_state, *sw_next_comm,
		*sw_next_pid, *sw_next_prio;
	const struct weft_tp_field *wk_comm, *wk_pid, *wk_prio, *wk_target_cpu;
	const struct weft_tp_field *nt_pid, *nt_comm, *nt_clone_flags;
	const struct weft_tp_field *rn_pid, *rn_newcomm;
};

/* The tracefs directory ("/sys/kernel/tracing", else "/sys/kernel/debug/tracing"), mounting
 * tracefs at /sys/kernel/tracing when none is mounted (root only). Returns 0 with the path in
 * out, or -errno with the reason in why. */
int weft_tracefs_find(char *out, size_t n, char *why, size_t whyn);

/* Reads events/sched/sched_switch, sched_waking and events/task/task_newtask, task_rename
 * (each under sched/ or task/, whichever the kernel has) from the tracefs root. Returns 0, or
 * -errno with the reason ("no sched_switch tracepoint: ...") in why. */
int weft_sched_tp_load(struct weft_sched_tp *tp, const char *tracefs, char *why, size_t n);

/* Resolves the fields after the four formats are filled in (weft_sched_tp_load does it; tests
 * that parse fixtures call it). Returns 0, or -EINVAL when a field weft needs is missing. */
int weft_sched_tp_resolve(struct weft_sched_tp *tp, char *why, size_t n);

/* One decoded scheduling event. */
struct weft_sched_ev {
	int kind;                /* enum weft_sched_kind, 0 for a tracepoint weft does not know */
	uint32_t common_pid;     /* the task that was running */
	uint32_t pid, next_pid;  /* switch: prev and next; waking/newtask/rename: the task */
	int32_t prio, next_prio;
	int64_t prev_state;
	int32_t target_cpu;
	uint64_t clone_flags;
	char comm[16], next_comm[16]; /* switch: prev and next; rename: the new name */
};

/* Decodes the raw bytes of one tracepoint sample (common_type selects the format). Returns
 * 0, or -1 when the bytes are too short or the tracepoint is none of the four. */
int weft_sched_tp_decode(const struct weft_sched_tp *tp, const void *raw, size_t len, struct weft_sched_ev *out);

#endif
