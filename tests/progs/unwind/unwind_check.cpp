// The stack walk's hard cases, for TPROF_VERIFY_STACKS=1 (every capture compared with a full
// libunwind unwind): random recursion through functions with and without frame pointers, with
// variable-size frames (alloca: a CFA from rbp) and large ones, a realigned stack with a variable
// frame (the CFA and saved registers given by DWARF expressions), code without unwind information
// that keeps a frame pointer (as JIT code does); allocations in signal handlers on
// the normal stack and on an alternate one; longjmp out of deep recursion; C++ exceptions thrown
// through allocating destructors; several threads at once; a plugin loaded and unloaded again.
// Built -O2 and -O0 (mk/unwind.mk). usage: unwind_check [ROUNDS [PLUGIN.so]]
#include <alloca.h>
#include <csetjmp>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <pthread.h>
#include <stdexcept>

static thread_local uint32_t rng_state;
static uint32_t rnd(uint32_t n)
{
	rng_state = rng_state * 1664525u + 1013904223u;
	return (rng_state >> 8) % n;
}

static void *volatile sink;
static void churn(size_t n)
{
	void *p = malloc(n);
	sink = p;
	free(p);
}

static void on_signal(int)
{
	churn(48); // raised synchronously: never inside the program's own malloc
	void *p = calloc(2, 40);
	sink = p;
	free(p);
}

struct Noisy { // allocates as an exception unwinds through it
	~Noisy() { churn(24); }
};

static thread_local jmp_buf *jump;
#define KINDS 8
static int level(int depth, int kind);

__attribute__((noinline)) static int plain(int depth)
{
	int r = level(depth - 1, (int)rnd(KINDS));
	churn(16 + (size_t)rnd(200));
	return r + 1;
}

__attribute__((noinline, optimize("no-omit-frame-pointer"))) static int framed(int depth)
{
	churn(8);
	return level(depth - 1, (int)rnd(KINDS)) + 2;
}

__attribute__((noinline)) static int variable(int depth)
{
	char *buf = (char *)alloca(16 + rnd(3000)); // the frame's size is known only at run time
	buf[0] = (char)depth;
	sink = buf;
	return level(depth - 1, (int)rnd(KINDS)) + buf[0] - depth;
}

__attribute__((noinline)) static int big(int depth)
{
	volatile char pad[20000];
	pad[0] = 1;
	pad[sizeof(pad) - 1] = 2;
	return level(depth - 1, (int)rnd(KINDS)) + pad[0];
}

// 64-byte aligned locals, a variable frame and arguments on the stack: the compiler realigns the
// stack through a register (DRAP), and its rules read the CFA through rbp (DW_OP_breg6; DW_OP_deref)
__attribute__((noinline)) static int aligned(int depth, int a2, int a3, int a4, int a5, int a6, int a7, int a8)
{
	alignas(64) volatile char line[64];
	line[0] = (char)depth;
	char *v = (char *)alloca(16 + (size_t)a8);
	v[0] = (char)a2;
	sink = v;
	sink = (void *)line;
	return level(depth - 1, a7) + line[0] - depth + (a3 + a4 + a5 + a6) * 0;
}

// Code without unwind information that keeps a frame pointer, as JIT code does: the walk follows
// the frame pointer chain through it, as libunwind does. An exception cannot cross it: caught here.
extern "C" int nocfi_call(int depth, int kind);
extern "C" int nocfi_level(int depth, int kind)
{
	try {
		return level(depth, kind);
	} catch (const std::runtime_error &) {
		churn(8);
		return 0;
	}
}
__asm__(".text\n"
	".globl nocfi_call\n"
	".type nocfi_call,@function\n"
	"nocfi_call:\n"
	"\tpush %rbp\n"
	"\tmov %rsp, %rbp\n"
	"\tcall nocfi_level\n"
	"\tpop %rbp\n"
	"\tret\n"
	".size nocfi_call, .-nocfi_call\n");

__attribute__((noinline)) static int throwing(int depth)
{
	Noisy n;
	if (rnd(4) == 0) {
		try {
			return level(depth - 1, (int)rnd(KINDS));
		} catch (const std::runtime_error &) {
			churn(32); // in the handler, after the unwinding
			return 0;
		}
	}
	return level(depth - 1, (int)rnd(KINDS));
}

struct Restore { // an exception passing through puts the outer jump target back
	jmp_buf *outer;
	~Restore() { jump = outer; }
};

__attribute__((noinline)) static int jumping(int depth)
{
	jmp_buf here;
	Restore keep = {jump};
	jump = &here;
	volatile int r;
	if (setjmp(here) == 0)
		r = level(depth - 1, (int)rnd(KINDS));
	else
		r = -1; // came back from deeper down
	jump = keep.outer;
	churn(40);
	return r;
}

static int leaf(void)
{
	switch (rnd(8)) {
	case 0:
		raise(SIGUSR1);
		break;
	case 1:
		raise(SIGUSR2); // handled on the alternate stack
		break;
	case 2:
		if (jump)
			longjmp(*jump, 1);
		break;
	case 3:
		throw std::runtime_error("unwind_check");
	default:
		break;
	}
	churn(1 + rnd(100));
	return 0;
}

static int level(int depth, int kind)
{
	if (depth <= 0)
		return leaf();
	switch (kind) {
	case 0: return plain(depth);
	case 1: return framed(depth);
	case 2: return variable(depth);
	case 3: return big(depth);
	case 4: return throwing(depth);
	case 5: return aligned(depth, 1, 2, 3, 4, 5, (int)rnd(KINDS), (int)rnd(100));
	case 6: return nocfi_call(depth - 1, (int)rnd(KINDS));
	default: return jumping(depth);
	}
}

static int rounds = 300;

static void *work(void *arg)
{
	rng_state = (uint32_t)(uintptr_t)arg;
	static thread_local char alt[1 << 16];
	stack_t ss = {};
	ss.ss_sp = alt;
	ss.ss_size = sizeof(alt);
	sigaltstack(&ss, nullptr);
	for (int i = 0; i < rounds; i++) {
		try {
			level(1 + (int)rnd(60), (int)rnd(KINDS));
		} catch (const std::runtime_error &) {
			churn(64);
		}
	}
	return nullptr;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		rounds = atoi(argv[1]);
	struct sigaction sa = {};
	sa.sa_handler = on_signal;
	sigaction(SIGUSR1, &sa, nullptr);
	sa.sa_flags = SA_ONSTACK;
	sigaction(SIGUSR2, &sa, nullptr);
	pthread_t t[3];
	for (uintptr_t i = 0; i < 3; i++)
		pthread_create(&t[i], nullptr, work, (void *)(i * 7919 + 1));
	work((void *)99991);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], nullptr);
	for (int i = 0; argc > 2 && i < 3; i++) { // code that comes and goes
		void *h = dlopen(argv[2], RTLD_NOW);
		if (!h) {
			fprintf(stderr, "unwind_check: %s\n", dlerror());
			return 1;
		}
		void (*leak)(int) = (void (*)(int))dlsym(h, "plugin_leak");
		if (leak)
			leak(2);
		churn(100);
		dlclose(h);
		churn(100);
	}
	printf("unwind_check: done\n");
	return 0;
}
