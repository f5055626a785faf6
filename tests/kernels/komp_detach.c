/* An OpenMP task with a detach clause, for tests/integration/ops.bats: libgomp writes the task's
 * event handle into the first word of the task's argument block, so a wrapper that puts anything in
 * front of that block must leave such tasks alone. Prints what the tasks computed; the same with and
 * without the preload. Built with gcc -fopenmp. */
#include <omp.h>
#include <stdio.h>

int main(void)
{
	long sum = 0;
#pragma omp parallel num_threads(2)
#pragma omp single
	for (int i = 1; i <= 20; i++) {
		omp_event_handle_t ev;
#pragma omp task detach(ev) firstprivate(i) shared(sum)
		{
#pragma omp atomic
			sum += i;
			omp_fulfill_event(ev);
		}
#pragma omp task firstprivate(i) shared(sum) if (i % 2)
		{
#pragma omp atomic
			sum += 100 * i;
		}
	}
	printf("detached tasks: %ld\n", sum);
	return 0;
}
