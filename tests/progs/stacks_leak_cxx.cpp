// Planted C++ leaks at known lines, for tprof leaks (tests/integration/stacks.bats): each plant_*
// function leaks from the line marked LEAK:<its name>, found by the test with grep.
//   plant_new        1 block,  40 bytes      plant_new_array  1 block,  100 bytes
//   plant_vector     2 blocks, 24 + 200 bytes (the vector, and its buffer from inside std::vector)
//   plant_string     4 blocks, 2 x (32 + 101) bytes (two strings and their buffers, from libstdc++)
// Everything else is freed.
#include <string>
#include <vector>

struct Widget {
	int v[10];
};

static void plant_new()
{
	Widget *w = new Widget(); // LEAK:plant_new
	w->v[0] = 1;
}

static void plant_new_array()
{
	int *a = new int[25]; // LEAK:plant_new_array
	a[0] = 1;
}

static void plant_vector()
{
	auto *v = new std::vector<int>(50); // LEAK:plant_vector
	(*v)[0] = 1;
}

static void plant_string()
{
	for (int i = 0; i < 2; i++)
		new std::string(100, 'x'); // LEAK:plant_string
}

int main()
{
	std::vector<double> ok(1000);
	plant_new();
	plant_new_array();
	plant_vector();
	plant_string();
	return ok.size() == 1000 ? 0 : 1;
}
