// memsites.cpp - allocations through operator new, std::vector and std::string from two
// functions (built with frame pointers, without -finstrument-functions), for
// weft record --memory=stacks: the report's rows must name make_nodes and make_names, not
// operator new or the library's templates between them and the allocation.
#include <cstdio>
#include <string>
#include <vector>

#define NOINLINE __attribute__((noinline))

struct Node {
	long v[4];
};
std::vector<Node *> nodes;
std::vector<std::string> *volatile names_sink;

NOINLINE void make_nodes()
{
	for (int i = 0; i < 20; i++)
		nodes.push_back(new Node()); // new, and the vector's growth
}

NOINLINE void make_names()
{
	auto *v = new std::vector<std::string>();
	for (int i = 0; i < 10; i++)
		v->push_back(std::string(40 + i, 'x')); // the strings' own blocks
	names_sink = v;
}

int main()
{
	make_nodes();
	make_names();
	std::printf("%zu %zu\n", nodes.size(), names_sink->size());
	return 0;
}
