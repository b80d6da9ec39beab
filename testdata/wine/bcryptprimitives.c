/* A stand-in for Windows' bcryptprimitives.dll, for the test that runs the
 * Windows build of bpftape under Wine (cmd/bpftape/windows_wine_test.go)
 * only. Go's runtime (1.26, as go.mod asks) loads bcryptprimitives.dll from
 * system32 at start for ProcessPrng, its source of random bytes, and stops
 * with "bcryptprimitives.dll not found" without it; Wine 8.0, Debian 12's,
 * has no such DLL. This one exports ProcessPrng and forwards to Wine's
 * BCryptGenRandom. A Wine that ships bcryptprimitives.dll (9.0 and later)
 * needs none of this, and the test then leaves Wine's own in place.
 *
 * Built by the test with:
 *   x86_64-w64-mingw32-gcc -shared -O2 -o bcryptprimitives.dll bcryptprimitives.c -lbcrypt
 */
#include <windows.h>
#include <bcrypt.h>

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE buf, SIZE_T len)
{
	while (len > 0) {
		ULONG n = len > 0x40000000 ? 0x40000000 : (ULONG)len;
		if (BCryptGenRandom(NULL, buf, n, BCRYPT_USE_SYSTEM_PREFERRED_RNG) != 0)
			return FALSE;
		buf += n;
		len -= n;
	}
	return TRUE;
}
