// memtest_cpp.cpp - C++ allocations known exactly (new, new[], aligned new, containers) and a
// custom pool reported through weft's named-heap API, for tests/integration/test_memory.py.
// Built with -finstrument-functions (functions are slices) and linked with libweft.
#include <weft.h>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#define NOINLINE __attribute__((noinline))
void *volatile sink;

// new int + delete: 1 allocation of 4 bytes
NOINLINE void new_one()
{
	int *p = new int(7);
	sink = p;
	delete p;
}

// new char[1000] + delete[]: 1 allocation of 1000 bytes
NOINLINE void new_array()
{
	char *p = new char[1000];
	sink = p;
	delete[] p;
}

struct alignas(64) Wide {
	char bytes[128];
};

// aligned new (operator new(size_t, align_val_t) -> aligned_alloc): 1 allocation of 128 bytes
NOINLINE void new_aligned()
{
	Wide *w = new Wide();
	sink = w;
	delete w;
}

// a vector of 100 ints, reserved once: 1 allocation of 400 bytes
NOINLINE void vector_once()
{
	std::vector<int> v;
	v.reserve(100);
	for (int i = 0; i < 100; i++)
		v.push_back(i);
	sink = v.data();
}

// A pool that hands out 256-byte slots from one 4 KiB block: the block comes from malloc
// (seen by the interposer), each slot is reported on the named heap "pool".
class Pool {
public:
	Pool() : heap_(weft_heap("pool")), block_(static_cast<char *>(std::malloc(4096))), used_(0) {}
	~Pool() { std::free(block_); }
	void *get()
	{
		void *p = block_ + 256 * used_++;
		weft_heap_alloc(heap_, p, 256);
		weft_heap_usage(heap_, 256 * used_, 4096 - 256 * used_, 4096);
		return p;
	}
	void put(void *p)
	{
		weft_heap_free(heap_, p);
	}

private:
	weft_heap_t *heap_;
	char *block_;
	unsigned used_;
};

// pool: 3 slots taken in pool_fill (768 bytes on heap "pool"), 2 given back in pool_drain,
// one still live at exit
NOINLINE void pool_fill(Pool &pool, void **slots)
{
	for (int i = 0; i < 3; i++)
		slots[i] = pool.get();
}

NOINLINE void pool_drain(Pool &pool, void **slots)
{
	pool.put(slots[0]);
	pool.put(slots[1]);
}

int main()
{
	new_one();
	new_array();
	new_aligned();
	vector_once();
	{
		Pool pool;
		void *slots[3];
		pool_fill(pool, slots);
		pool_drain(pool, slots);
	}
	return 0;
}
