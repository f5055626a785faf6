// C++ allocations reach the recorder through malloc and free: new/delete, new[]/delete[], a vector
// that grows, a string, and one object that leaks. Compared with valgrind memcheck in report.bats.
#include <cstdio>
#include <string>
#include <vector>

struct Node {
	int v[10];
};

static Node *leaked;

int main()
{
	Node *n = new Node();
	delete n;
	int *a = new int[100];
	delete[] a;
	std::vector<double> v;
	for (int i = 0; i < 1000; i++)
		v.push_back(i);
	std::string s(200, 'x');
	leaked = new Node();
	std::printf("%zu %zu\n", v.size(), s.size());
	return 0;
}
