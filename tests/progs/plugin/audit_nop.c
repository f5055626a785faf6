/* An audit module that audits nothing (LD_AUDIT), for tests/integration/lifecycle.bats: the dynamic
 * loader then allocates with its own minimal allocator for longer, which changes what the C
 * library's __libc_freeres may free at exit. */
unsigned la_version(unsigned v);

unsigned la_version(unsigned v)
{
	return v;
}
