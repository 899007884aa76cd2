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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_c_names_unchanged),
		cmocka_unit_test(test_cxx_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
