/* shortname.h - short forms of demangled C++ names for reports (see shortname.c). */
#ifndef WEFT_SHORTNAME_H
#define WEFT_SHORTNAME_H
#include <stddef.h>
/* Writes the short form of `name` into out (n bytes) and returns out. */
const char *weft_short_name(const char *name, char *out, size_t n);
/* The short form whole, however long (C++ template names run to many KiB), in a buffer of its
 * own kept until the next call; the name itself where memory fails. */
const char *weft_short_name_whole(const char *name);
/* Writes name with each outermost template argument list as "<…>" into out and returns out. */
const char *weft_elide_templates(const char *name, char *out, size_t n);
#endif
