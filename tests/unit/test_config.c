/* Options: sizes, CPU lists, the key table, error lines, globs, output patterns. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>
#include <stdio.h>
#include <unistd.h>
#include "lib/internal.h"

static char logged[4096];
static int nlogged;
static void capture(int level, const char *msg, void *ud)
{
	(void)level;
	(void)ud;
	nlogged++;
	snprintf(logged, sizeof(logged), "%s", msg);
}

static void sizes(void **s)
{
	(void)s;
	uint64_t v;
	assert_int_equal(weft_parse_size("4096", &v), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(weft_parse_size("64k", &v), 0);
	assert_int_equal(v, 65536);
	assert_int_equal(weft_parse_size("2M", &v), 0);
	assert_int_equal(v, 2u << 20);
	assert_int_equal(weft_parse_size("1GiB", &v), 0);
	assert_int_equal(v, 1ull << 30);
	assert_int_equal(weft_parse_size("-1", &v), -EINVAL);
	assert_int_equal(weft_parse_size("12q", &v), -EINVAL);
	assert_int_equal(weft_parse_size("", &v), -EINVAL);
	assert_int_equal(weft_parse_size("99999999999999999999", &v), -EINVAL);
}

static void cpulists(void **s)
{
	(void)s;
	uint64_t m;
	assert_int_equal(weft_parse_cpulist("1", &m), 0);
	assert_int_equal(m, 2);
	assert_int_equal(weft_parse_cpulist("0-2,5", &m), 0);
	assert_int_equal(m, 0x27);
	assert_int_equal(weft_parse_cpulist("3-1", &m), -EINVAL);
	assert_int_equal(weft_parse_cpulist("64", &m), -EINVAL);
	assert_int_equal(weft_parse_cpulist("a", &m), -EINVAL);
	assert_int_equal(weft_parse_cpulist("1,", &m), -EINVAL);
}

static void table(void **s)
{
	(void)s;
	struct weft_config c;
	weft_config_defaults(&c);
	weft_set_log(capture, NULL);
	nlogged = 0;
	int bad = weft_config_apply(&c, "buffer_size=1M:writers=3:overflow=block:compression=-5:"
				       "categories=a*,-b:output=x/{pid}", 1);
	assert_int_equal(bad, 0);
	assert_int_equal(nlogged, 0);
	assert_int_equal(c.buffer_size, 1u << 20);
	assert_int_equal(c.writers, 3);
	assert_int_equal(c.overflow, WEFT_OVERFLOW_BLOCK);
	assert_int_equal(c.compression, -5);
	assert_string_equal(c.categories, "a*,-b");

	bad = weft_config_apply(&c, "bogus=1", 1);
	assert_int_equal(bad, 1);
	assert_int_equal(nlogged, 1);
	assert_non_null(strstr(logged, "unknown option 'bogus'"));
	assert_non_null(strstr(logged, "valid keys: enable, output, name, categories, filter, buffer_size"));

	bad = weft_config_apply(&c, "writers=99:overflow=maybe:novalue", 1);
	assert_int_equal(bad, 3);
	assert_int_equal(c.writers, 3); /* a bad value keeps what was there */
	assert_int_equal(nlogged, 4);
	assert_non_null(strstr(logged, "expected key=value"));
	nlogged = 0;
	bad = weft_config_apply(&c, "overflow=maybe", 1);
	assert_non_null(strstr(logged, "bad value 'maybe' for option overflow: expected drop or block"));
	assert_int_equal(weft_config_set(&c, "chunk_size", "1k", 0), -EINVAL);
	assert_int_equal(weft_config_set(&c, "nope", "1", 0), -ENOENT);
	weft_set_log(NULL, NULL);
}

static void globs(void **s)
{
	(void)s;
	assert_true(weft_glob_list_match("*", "anything", 0));
	assert_true(weft_glob_list_match("", "x", 1));
	assert_false(weft_glob_list_match("", "x", 0));
	assert_true(weft_glob_list_match("gpu*,io", "gpu.copy", 0));
	assert_true(weft_glob_list_match("gpu*,io", "io", 0));
	assert_false(weft_glob_list_match("gpu*,io", "iox", 0));
	assert_false(weft_glob_list_match("-debug", "debug", 1));
	assert_true(weft_glob_list_match("-debug", "render", 1));
	assert_false(weft_glob_list_match("*,-d?bug", "debug", 1));
	assert_true(weft_glob_list_match("[ab]x", "bx", 0));
	/* /regex/: POSIX extended, unanchored */
	assert_true(weft_glob_list_match("/^is_(even|odd)$/", "is_odd", 0));
	assert_false(weft_glob_list_match("/^is_(even|odd)$/", "is_oddly", 0));
	assert_true(weft_glob_list_match("/mat[0-9]+/", "do_mat42_mul", 0));
	assert_false(weft_glob_list_match("*,-/^_Z/", "_ZN3foo3barEv", 1));
	assert_true(weft_glob_list_match("*,-/^_Z/", "main", 1));
	assert_true(weft_glob_list_match("/", "/", 0)); /* one slash is a glob */
	/* a bad regex matches nothing and is refused when set */
	assert_false(weft_glob_list_match("/(a/", "(a", 0));
	char err[128] = "";
	assert_int_equal(weft_glob_check("/(a/", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "Unmatched ( or \\(");
	assert_int_equal(weft_glob_check("a(", err, sizeof(err)), 0);
	assert_int_equal(weft_glob_list_check("x,-/[/"), -EINVAL);
	assert_int_equal(weft_glob_list_check("x,-/[a]/"), 0);
	struct weft_config c;
	weft_config_defaults(&c);
	assert_int_equal(weft_config_set(&c, "filter", "/(/", 0), -EINVAL);
	assert_string_equal(c.filter, "");
	assert_int_equal(weft_config_set(&c, "func_filter", "-/^a(b|c)/", 0), 0);
	assert_string_equal(c.func_filter, "-/^a(b|c)/");
}

static void patterns(void **s)
{
	(void)s;
	char out[600], want[600], host[256] = "localhost";
	gethostname(host, sizeof(host) - 1);
	assert_int_equal(weft_expand_output("t/{name}-{host}-{pid}", "app", out, sizeof(out)), 0);
	snprintf(want, sizeof(want), "t/app-%s-%d", host, (int)getpid());
	assert_string_equal(out, want);
	assert_int_equal(weft_expand_output("{name}", "", out, sizeof(out)), 0);
	assert_string_equal(out, "weft");
	assert_int_equal(weft_expand_output("{name}{name}", "abcdef", out, 8), -ENAMETOOLONG);
}

/* watch=: symbols and addresses, lengths, modes, both separators, the limits */
static void watch_specs(void **s)
{
	(void)s;
	struct weft_watch_spec w[WEFT_MAX_WATCH];
	char why[200];
	assert_int_equal(weft_watch_parse("counter", w, why, sizeof(why)), 1);
	assert_string_equal(w[0].symbol, "counter");
	assert_int_equal(w[0].addr, 0);
	assert_int_equal(w[0].len, 0); /* the default: 8, or the variable's size */
	assert_int_equal(w[0].rw, 0);
	assert_int_equal(weft_watch_parse("0x7ffc1000:4:rw,g_state.x/rw/2,0X10/1,_n$1:w:8", w, why, sizeof(why)), 4);
	assert_string_equal(w[0].symbol, "");
	assert_int_equal(w[0].addr, 0x7ffc1000);
	assert_int_equal(w[0].len, 4);
	assert_int_equal(w[0].rw, 1);
	assert_string_equal(w[1].symbol, "g_state.x");
	assert_int_equal(w[1].len, 2);
	assert_int_equal(w[1].rw, 1);
	assert_int_equal(w[2].addr, 0x10);
	assert_int_equal(w[2].len, 1);
	assert_int_equal(w[2].rw, 0);
	assert_string_equal(w[3].symbol, "_n$1");
	assert_int_equal(w[3].len, 8);
	assert_int_equal(weft_watch_parse("", w, why, sizeof(why)), 0);
	assert_int_equal(weft_watch_parse("a,b,c,d,e", w, why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "at most 4 watchpoints (the debug registers of x86)");
	assert_int_equal(weft_watch_parse("x:3", w, why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "bad watch field '3': expected a length (1, 2, 4, 8) or w or rw, once each");
	assert_int_equal(weft_watch_parse("x:r", w, why, sizeof(why)), -EINVAL);
	assert_int_equal(weft_watch_parse("x:4:8", w, why, sizeof(why)), -EINVAL);
	assert_int_equal(weft_watch_parse("x:w:rw", w, why, sizeof(why)), -EINVAL);
	assert_int_equal(weft_watch_parse("0x1004", w, why, sizeof(why)), -EINVAL); /* 8 bytes: a multiple of 8 */
	assert_string_equal(why, "0x1004 is not a multiple of the watched length 8");
	assert_int_equal(weft_watch_parse("0x1004:4", w, why, sizeof(why)), 1);
	assert_int_equal(weft_watch_parse("0x0", w, why, sizeof(why)), -EINVAL);
	assert_int_equal(weft_watch_parse("0xzz", w, why, sizeof(why)), -EINVAL);
	assert_int_equal(weft_watch_parse("1abc", w, why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "'1abc' is neither a symbol nor a 0x address");
	assert_int_equal(weft_watch_parse("a,,b", w, why, sizeof(why)), -EINVAL);
	assert_int_equal(weft_watch_parse("a,", w, why, sizeof(why)), -EINVAL);
	/* through the key table (WEFT_OPTIONS: '/' between fields); a bad value keeps the old */
	struct weft_config c;
	weft_config_defaults(&c);
	assert_int_equal(c.nwatch, 0);
	assert_int_equal(weft_config_set(&c, "watch", "counter/4/rw,0x1000", 0), 0);
	assert_int_equal(c.nwatch, 2);
	assert_int_equal(c.watch[1].addr, 0x1000);
	assert_int_equal(weft_config_set(&c, "watch", "counter/5", 0), -EINVAL);
	assert_int_equal(c.nwatch, 2);
	assert_int_equal(weft_config_apply(&c, "watch=flag/1:writers=2", 0), 0);
	assert_int_equal(c.nwatch, 1);
	assert_string_equal(c.watch[0].symbol, "flag");
	assert_int_equal(c.watch[0].len, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sizes), cmocka_unit_test(cpulists), cmocka_unit_test(table),
		cmocka_unit_test(globs), cmocka_unit_test(patterns), cmocka_unit_test(watch_specs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
