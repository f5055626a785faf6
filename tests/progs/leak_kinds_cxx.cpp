// The C++ cases of memcheck's leak heuristics, for tests/integration/leakscan.bats: blocks held only
// through interior pointers that memcheck still counts as reachable (new[] of a type with a
// destructor: the array's length comes first; a pointer to a second base class; a length-prefixed
// buffer), next to the same shapes lost, and standard containers held and lost. Built -O0 -g.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

struct D {
	~D() { x = 0; }
	long x = 1;
};
struct A {
	virtual ~A() {}
	long a = 1;
};
struct B {
	virtual ~B() {}
	long b = 2;
};
struct C : A, B {
	long c = 3;
};

static D *held_array;      // points 8 bytes into its block: newarray
static B *held_base;       // points at the B inside a C: multipleinheritance
static uint64_t *held_len; // points 8 bytes into a block whose first word is its length: length64
static std::string *held_string;
static std::vector<long> *held_vector;

__attribute__((noinline)) static void plant_heuristics()
{
	held_array = new D[5];
	held_base = new C;
	uint64_t *p = static_cast<uint64_t *>(malloc(8 + 40));
	memset(p, 0, 48);
	p[0] = 40;
	held_len = p + 1;
	held_string = new std::string(100, 'x');
	held_vector = new std::vector<long>(50, 7);
}

__attribute__((noinline)) static void plant_lost()
{
	D *a = new D[3];
	a[0].x = 2;
	B *b = new C;
	(void)b;
	auto *v = new std::vector<std::string>(4, std::string(40, 'y')); // lost, its strings indirectly
	(void)v;
}

int main()
{
	plant_heuristics();
	plant_lost();
	return 0;
}
