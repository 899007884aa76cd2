/* textout.c - see textout.h. */
#include "tool/textout.h"
#include <stdio.h>
#include <string.h>

static const struct weft_unit units[4] = {{"ns", 1, 0}, {"us", 1e3, 3}, {"ms", 1e6, 3}, {"s", 1e9, 2}};
static int forced = -1;

int weft_unit_force(const char *name)
{
	for (int i = 0; i < 4; i++)
		if (!strcmp(name, units[i].name)) {
			forced = i;
			return 0;
		}
	return -1;
}

struct weft_unit weft_unit_for(uint64_t max_ns)
{
	if (forced >= 0)
		return units[forced];
	return units[max_ns < 100000 ? 0 : max_ns < 100000000 ? 1 : max_ns < 100000000000ull ? 2 : 3];
}

void weft_json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

void weft_csv_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"')
			putchar('"');
		putchar(*s);
	}
	putchar('"');
}
