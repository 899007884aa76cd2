/*
 * shortname.c - the short form of a demangled C++ function name for reports: without its
 * return type and its parameter list (and the const/&/noexcept after it), template arguments
 * kept. "void std::vector<int, std::allocator<int> >::push_back(int const&)" becomes
 * "std::vector<int, std::allocator<int> >::push_back". A C name comes back unchanged. Operator
 * names keep their own parentheses and spaces ("operator()", "operator new").
 *
 * weft_elide_templates, for the narrow room of a plot's legend: every template argument list
 * outside another one written "<…>" ("std::vector<…>::push_back").
 */
#include "tool/shortname.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Does s[0..i) end with the keyword "operator" (a whole word)? */
static int after_operator(const char *s, size_t i)
{
	size_t k = i;
	while (k > 0 && s[k - 1] == ' ')
		k--;
	return k >= 8 && !strncmp(s + k - 8, "operator", 8) && (k == 8 || !(s[k - 9] == '_' ||
		(s[k - 9] >= 'a' && s[k - 9] <= 'z') || (s[k - 9] >= 'A' && s[k - 9] <= 'Z') ||
		(s[k - 9] >= '0' && s[k - 9] <= '9')));
}

/* Strips trailing qualifiers after a parameter list: " const", " volatile", " &", " &&",
 * " noexcept". Returns the new end. */
static size_t strip_quals(const char *s, size_t end)
{
	static const char *const quals[] = {" const", " volatile", " noexcept", " &&", " &"};
	for (int again = 1; again;) {
		again = 0;
		for (size_t q = 0; q < sizeof(quals) / sizeof(quals[0]); q++) {
			size_t l = strlen(quals[q]);
			if (end >= l && !strncmp(s + end - l, quals[q], l)) {
				end -= l;
				again = 1;
			}
		}
	}
	return end;
}

const char *weft_short_name(const char *name, char *out, size_t n)
{
	size_t len = strlen(name), end = strip_quals(name, len), start = 0;
	/* the parameter list: the parenthesised group the name ends with */
	if (end > 0 && name[end - 1] == ')') {
		int depth = 0;
		for (size_t i = end; i-- > 0;) {
			if (name[i] == ')')
				depth++;
			else if (name[i] == '(' && --depth == 0) {
				if (i > 0)
					end = i;
				break;
			}
		}
	} else {
		end = len; /* not a function signature: keep it whole */
	}
	/* the return type: up to the last space outside <>, () and {} (not "operator new") */
	int depth = 0;
	for (size_t i = 0; i < end; i++) {
		char c = name[i];
		if (!depth && !strncmp(name + i, "operator", 8) && (i == 0 || name[i - 1] == ' ' || name[i - 1] == ':'))
			break; /* an operator's name may hold spaces and '<': it ends the scan */
		if (c == '<' || c == '(' || c == '{') {
			if (!(c == '<' && after_operator(name, i)))
				depth++;
		} else if (c == '>' || c == ')' || c == '}') {
			if (depth && !(c == '>' && after_operator(name, i)))
				depth--;
		} else if (c == ' ' && !depth && !after_operator(name, i) && i + 1 < end) {
			start = i + 1;
		}
	}
	while (start < end && (name[start] == '*' || name[start] == '&'))
		start++; /* "char* foo(...)" demangles with the pointer on the type */
	snprintf(out, n, "%.*s", (int)(end - start), name + start);
	return out;
}

const char *weft_elide_templates(const char *name, char *out, size_t n)
{
	size_t o = 0;
	int depth = 0;
	if (!n)
		return out;
	for (size_t i = 0; name[i] && o + 1 < n; i++) {
		char c = name[i];
		if (c == '<' && !after_operator(name, i)) {
			if (!depth++ && o + 6 <= n) { /* "<…>" is 5 bytes */
				memcpy(out + o, "<\xe2\x80\xa6>", 5);
				o += 5;
			}
			continue;
		}
		if (c == '>' && depth && !after_operator(name, i)) {
			depth--;
			continue;
		}
		if (!depth)
			out[o++] = c;
	}
	out[o] = 0;
	return out;
}

const char *weft_short_name_whole(const char *name)
{
	static char *buf;
	static size_t cap;
	size_t need = strlen(name) + 1; /* the short form is never longer */
	if (need > cap) {
		char *b = realloc(buf, need);
		if (!b)
			return name;
		buf = b;
		cap = need;
	}
	return weft_short_name(name, buf, cap);
}
