/* The short form of demangled C++ names that weft report shows by default. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include "tool/shortname.h"

static void check(const char *full, const char *want)
{
	char buf[512];
	assert_string_equal(weft_short_name(full, buf, sizeof(buf)), want);
}

static void test_c_names_unchanged(void **state)
{
	(void)state;
	check("main", "main");
	check("fib", "fib");
	check("is_even", "is_even");
}

static void test_cxx_names(void **state)
{
	(void)state;
	check("void std::vector<int, std::allocator<int> >::push_back(int const&)",
	      "std::vector<int, std::allocator<int> >::push_back");
	check("middle()", "middle");
	check("ns::Widget::run() const", "ns::Widget::run");
	check("std::map<int, std::string>::operator[](int const&)", "std::map<int, std::string>::operator[]");
	check("bool operator< <int>(A<int> const&, A<int> const&)", "operator< <int>");
	check("std::ostream& operator<<(std::ostream&, Foo const&)", "operator<<");
	check("Foo::operator()(int) const", "Foo::operator()");
	check("void* operator new(unsigned long)", "operator new");
	check("char* strdup_like(char const*)", "strdup_like");
	check("std::unique_ptr<T, std::default_delete<T> >::~unique_ptr()",
	      "std::unique_ptr<T, std::default_delete<T> >::~unique_ptr");
	check("void std::__1::sort<std::__1::__wrap_iter<int*> >(std::__1::__wrap_iter<int*>, std::__1::__wrap_iter<int*>)",
	      "std::__1::sort<std::__1::__wrap_iter<int*> >");
	check("auto lambda_holder()::{lambda(int)#1}::operator()(int) const",
	      "lambda_holder()::{lambda(int)#1}::operator()");
}

static void elide(const char *name, const char *want)
{
	char out[256];
	assert_string_equal(weft_elide_templates(name, out, sizeof(out)), want);
}

/* plot legends: outermost template argument lists as <…>, operator< kept */
static void test_elide_templates(void **state)
{
	(void)state;
	elide("std::vector<int, std::allocator<int> >::push_back", "std::vector<\xe2\x80\xa6>::push_back");
	elide("Registry<std::__cxx11::basic_string<char> >::fill_first", "Registry<\xe2\x80\xa6>::fill_first");
	elide("a<b>::c<d<e> >", "a<\xe2\x80\xa6>::c<\xe2\x80\xa6>");
	elide("main", "main");
	elide("Point::operator<", "Point::operator<");
	char small[8];
	weft_elide_templates("abcdefghijkl", small, sizeof(small));
	assert_string_equal(small, "abcdefg");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_c_names_unchanged),
		cmocka_unit_test(test_cxx_names),
		cmocka_unit_test(test_elide_templates),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
