// longnames.cpp - blocks allocated in functions whose demangled names are long and alike (the
// same class template instance, two methods; a long namespace and class), built with
// -finstrument-functions: the plots' legends must tell them apart and stay inside the picture.
#include <cstdlib>
#include <string>

#define NOINLINE __attribute__((noinline))

void *volatile longnames_sink[3];

template <class T> struct Registry {
	NOINLINE void fill_first() { longnames_sink[0] = std::malloc(300000); }
	NOINLINE void fill_second() { longnames_sink[1] = std::malloc(200000); }
};

namespace a_rather_long_namespace_name_for_the_legend {
struct AnotherQuiteLongClassNameInThatNamespace {
	NOINLINE void and_a_method_whose_name_is_long_too(int) { longnames_sink[2] = std::malloc(100000); }
};
} // namespace a_rather_long_namespace_name_for_the_legend

int main()
{
	Registry<std::string> r;
	r.fill_first();
	r.fill_second();
	a_rather_long_namespace_name_for_the_legend::AnotherQuiteLongClassNameInThatNamespace().and_a_method_whose_name_is_long_too(1);
	for (void *p : longnames_sink)
		std::free(p);
	return 0;
}
