// structs2.c is a second compilation unit of the ctypes workload, which
// sees struct req only declared: its DWARF has an incomplete struct req.
struct req;

__attribute__((noinline, noipa, used)) long opaque_user(struct req *r, int n)
{
	return r ? n : 0;
}
