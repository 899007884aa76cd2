// C++: an exception thrown by thrower() through middle(), caught in outer(); names demangled.
#include <stdexcept>
#define NI __attribute__((noinline))
namespace ns {
template <class T> NI T twice(T v) { return v + v; }
struct Widget {
	NI int size() const { return twice(21); }
};
} // namespace ns
NI void thrower() { throw std::runtime_error("x"); }
NI void middle() { thrower(); }
NI int outer()
{
	try {
		middle();
	} catch (const std::exception &) {
		return 1;
	}
	return 0;
}
int main()
{
	ns::Widget w;
	return outer() + w.size() - 43;
}
