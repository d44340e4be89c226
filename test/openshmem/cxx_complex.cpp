// The complex reductions called from C++ (GCC's and Clang's _Complex, as
// tests-sos's cxx_test_shmem_complex calls them): each PE gives
// (me+1) + i*me; the sums must be exact, the product within rounding.
#include <shmem.h>

#include <cstdio>
#include <cstdlib>

#define NRED 8

static double _Complex dsrc[NRED], ddst[NRED];
static float _Complex fsrc[NRED], fdst[NRED];

static double _Complex mkd(double re, double im)
{
    double _Complex v;
    __real__ v = re;
    __imag__ v = im;
    return v;
}

static void fail(const char *what, int i)
{
    std::fprintf(stderr, "PE %d: %s [%d] wrong\n", shmem_my_pe(), what, i);
    shmem_global_exit(1);
}

int main()
{
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    double _Complex dwant = 0, dprod = 1;
    for (int pe = 0; pe < n; pe++) {
        double _Complex v = mkd(pe + 1.0, pe);
        dwant += v;
        dprod *= v;
    }
    for (int i = 0; i < NRED; i++) {
        dsrc[i] = mkd(me + 1.0, me);
        __real__ fsrc[i] = me + 1.0f;
        __imag__ fsrc[i] = (float)me;
    }
    if (shmem_complexd_sum_reduce(SHMEM_TEAM_WORLD, ddst, dsrc, NRED) != 0)
        fail("complexd_sum_reduce returned", -1);
    for (int i = 0; i < NRED; i++)
        if (__real__ ddst[i] != __real__ dwant
            || __imag__ ddst[i] != __imag__ dwant)
            fail("complexd sum", i);
    if (shmem_complexf_sum_reduce(SHMEM_TEAM_WORLD, fdst, fsrc, NRED) != 0)
        fail("complexf_sum_reduce returned", -1);
    for (int i = 0; i < NRED; i++)
        if (__real__ fdst[i] != (float)__real__ dwant
            || __imag__ fdst[i] != (float)__imag__ dwant)
            fail("complexf sum", i);
    if (shmem_complexd_prod_reduce(SHMEM_TEAM_WORLD, ddst, dsrc, NRED) != 0)
        fail("complexd_prod_reduce returned", -1);
    for (int i = 0; i < NRED; i++) {
        double re = __real__ ddst[i] - __real__ dprod;
        double im = __imag__ ddst[i] - __imag__ dprod;
        if (re * re + im * im > 1e-18 * (1 + __real__ dprod * __real__ dprod
                                          + __imag__ dprod * __imag__ dprod))
            fail("complexd prod", i);
    }
    shmem_finalize();
    return 0;
}
