// longsym.cpp - one function, work<Q4>, whose demangled name is 5,814 characters (nested class
// templates, no typedef in the name), built with -finstrument-functions: converters and
// reports must name it whole (symbols.c once cut every name at 1,023 bytes).
#include <cstdio>

template <int N> struct Deep {
};
template <class A, class B, class C, class D> struct Q {
};
typedef Q<Deep<40>, Deep<41>, Deep<42>, Deep<43>> Q1;
typedef Q<Q1, Q1, Q1, Q1> Q2;
typedef Q<Q2, Q2, Q2, Q2> Q3;
typedef Q<Q3, Q3, Q3, Q3> Q4;

template <class T> __attribute__((noinline)) int work(T, int x)
{
	return x * 3 + 1;
}

int main()
{
	Q4 q;
	int s = 0;
	for (int i = 0; i < 3; i++)
		s += work(q, i);
	std::printf("%d\n", s);
	return 0;
}
