/* test_sched_tp.c - the tracefs format parser and the raw-sample decoder of the scheduling
 * tracepoints, on fixture format files (tests/data/tracefs: a 6.18 kernel's, a 6.14-style
 * task_rename without its pid field, a sched_switch missing next_pid) and raw records laid
 * out by those formats. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "collect/sched_tp.h"

#ifndef WEFT_TEST_DATA
#define WEFT_TEST_DATA "tests/data"
#endif

static int load(const char *kernel, struct weft_sched_tp *tp, char *why)
{
	char root[512];
	snprintf(root, sizeof(root), "%s/tracefs/%s", WEFT_TEST_DATA, kernel);
	return weft_sched_tp_load(tp, root, why, 200);
}

static void parses_a_format_file(void **s)
{
	(void)s;
	static const char text[] =
		"name: sched_waking\nID: 375\nformat:\n"
		"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
		"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
		"\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
		"\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n"
		"\nprint fmt: \"comm=%s pid=%d\", REC->comm, REC->pid\n";
	struct weft_tp_format f;
	assert_int_equal(weft_tp_parse_format(text, &f), 0);
	assert_int_equal(f.id, 375);
	assert_string_equal(f.name, "sched_waking");
	assert_int_equal(f.nfields, 4);
	const struct weft_tp_field *c = weft_tp_field(&f, "comm");
	assert_non_null(c);
	assert_int_equal(c->offset, 8);
	assert_int_equal(c->size, 16);
	const struct weft_tp_field *p = weft_tp_field(&f, "pid");
	assert_int_equal(p->offset, 24);
	assert_int_equal(p->is_signed, 1);
	assert_null(weft_tp_field(&f, "prio"));
	/* sign extension and bounds */
	unsigned char raw[28] = {0};
	int32_t neg = -5;
	memcpy(raw + 24, &neg, 4);
	assert_int_equal((int64_t)weft_tp_get(p, raw, sizeof(raw)), -5);
	assert_int_equal(weft_tp_get(p, raw, 26), 0);
	assert_int_equal(weft_tp_parse_format("name: x\nformat:\n", &f), -EINVAL);
}

static void decodes_a_switch_on_6_18(void **s)
{
	(void)s;
	struct weft_sched_tp tp;
	char why[200] = "";
	assert_int_equal(load("6.18", &tp, why), 0);
	assert_int_equal(tp.fmt[0].id, 372);
	unsigned char raw[64] = {0};
	uint16_t type = 372;
	int32_t v;
	int64_t st = 1;
	memcpy(raw, &type, 2);
	v = 101; memcpy(raw + 4, &v, 4);
	memcpy(raw + 8, "worker", 6);
	v = 101; memcpy(raw + 24, &v, 4);
	v = 120; memcpy(raw + 28, &v, 4);
	memcpy(raw + 32, &st, 8);
	memcpy(raw + 40, "swapper/1", 9);
	v = 0; memcpy(raw + 56, &v, 4);
	v = 120; memcpy(raw + 60, &v, 4);
	struct weft_sched_ev e;
	assert_int_equal(weft_sched_tp_decode(&tp, raw, sizeof(raw), &e), 0);
	assert_int_equal(e.kind, WEFT_SCHED_SWITCH);
	assert_int_equal(e.pid, 101);
	assert_int_equal(e.next_pid, 0);
	assert_int_equal(e.prev_state, 1);
	assert_int_equal(e.prio, 120);
	assert_string_equal(e.comm, "worker");
	assert_string_equal(e.next_comm, "swapper/1");
	/* an id none of the four has */
	type = 9;
	memcpy(raw, &type, 2);
	assert_int_equal(weft_sched_tp_decode(&tp, raw, sizeof(raw), &e), -1);
}

static void rename_without_pid_is_the_task_itself(void **s)
{
	(void)s;
	struct weft_sched_tp tp;
	char why[200] = "";
	assert_int_equal(load("6.14-norenamepid", &tp, why), 0);
	assert_null(tp.rn_pid);
	unsigned char raw[48] = {0};
	uint16_t type = 190;
	int32_t pid = 4242;
	memcpy(raw, &type, 2);
	memcpy(raw + 4, &pid, 4);
	memcpy(raw + 8, "old", 3);
	memcpy(raw + 24, "renamed", 7);
	struct weft_sched_ev e;
	assert_int_equal(weft_sched_tp_decode(&tp, raw, sizeof(raw), &e), 0);
	assert_int_equal(e.kind, WEFT_SCHED_RENAME);
	assert_int_equal(e.pid, 4242);
	assert_string_equal(e.comm, "renamed");
}

static void missing_field_or_tracepoint_is_said(void **s)
{
	(void)s;
	struct weft_sched_tp tp;
	char why[200] = "";
	assert_int_equal(load("nofield", &tp, why), -EINVAL);
	assert_string_equal(why, "the tracepoint format has no field sched_switch next_pid");
	assert_int_equal(load("no-such-kernel", &tp, why), -ENOENT);
	assert_non_null(strstr(why, "no sched_switch tracepoint under"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(parses_a_format_file),
		cmocka_unit_test(decodes_a_switch_on_6_18),
		cmocka_unit_test(rename_without_pid_is_the_task_itself),
		cmocka_unit_test(missing_field_or_tracepoint_is_said),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
