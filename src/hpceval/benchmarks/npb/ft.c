/* NPB FT: 3-D FFT PDE solver (NPB 3.x definition), C + MPI + OpenMP.
 *
 * The problem: a complex field u of nx*ny*nz points drawn from the NPB generator (seed
 * 314159265, a = 5^13; point i = (z*ny + y)*nx + x takes numbers 2i+1 and 2i+2) is
 * transformed by a forward 3-D FFT into the spectrum u0; then at every iteration u0 is
 * multiplied by exp(-4 alpha pi^2 (kx^2 + ky^2 + kz^2)) (alpha = 1e-6, k from NPB's index
 * map), transformed back by an inverse, unnormalised 3-D FFT, and the checksum of 1024 points
 * of the result (j = 1..1024 at x = j mod nx, y = 3j mod ny, z = 5j mod nz), divided by
 * nx*ny*nz, is verified against the official value of the class.
 *
 * Computed the way NPB 3.4-MPI's FT computes it, so that its cost and memory traffic are
 * NPB's (written here from the algorithm; arrays are column-major as NPB's, index (i,j,k) of
 * a d1 x d2 x d3 array at i + d1*(j + d2*k)):
 *  - 1-D FFTs: Swarztrauber's Stockham variant, radix 2 (cfftz: log2(n) passes fftz2
 *    between two buffers), with the roots of unity of fft_init, on fftblock (16) lines at a
 *    time: cffts1/2/3 copy a pencil of fftblock lines into a scratch array padded to
 *    fftblockpad (18) lines, transform it and copy it back;
 *  - the evolve as a separate pass, u0 = u0 * twiddle, u1 = u0, with the real factors
 *    exp(ap (kx^2 + ky^2 + kz^2)) precomputed once per run (compute_indexmap) in the
 *    transposed layout of the spectrum;
 *  - decomposition: one rank, no transpose (0-D layout); up to nz ranks, slabs of z planes
 *    (1-D layout: the forward FFT transforms x and y, transposes xy-z with a local blocked
 *    transpose, MPI_Alltoall and a local reordering, then transforms z; the inverse mirrors
 *    it with the x-yz transpose); beyond nz ranks the 2-D layout of NPB (np1 = nz rows of
 *    np/nz ranks, transposes x-y and x-z over the row and column communicators);
 *  - timed as NPB: index map, initial conditions, FFT set-up, forward FFT and the
 *    iterations (evolve, inverse FFT, checksum reduced to rank 0), after one untimed pass of
 *    everything up to the forward FFT.
 * OpenMP threads (hybrid runs; NPB-MPI has none) share the pencils of every pass. */
#define _POSIX_C_SOURCE 200809L
#include "npb_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* The reference's compute_indexmap calls exp through glibc's vector math library
 * (libmvec): glibc declares exp SIMD-callable to gfortran unconditionally
 * (math-vector-fortran.h), to C only under -ffast-math. Declared so here, with the same
 * flags the loop is vectorised as the reference's is. */
#if defined(__x86_64__) && defined(__GLIBC__) && !defined(__FAST_MATH__)
__attribute__((simd("notinbranch"))) extern double exp(double);
#endif

#define FT_ALPHA 1.0e-6
#define FT_PI 3.141592653589793238
#define FT_TOLERANCE 1.0e-12
#define FT_MAX_ITER 25
#define FFTBLOCK_DEFAULT 16
#define FFTBLOCKPAD_DEFAULT 18
#define TRANSBLOCK 32
#define TRANSBLOCKPAD 34

enum { LAYOUT_0D = 0, LAYOUT_1D = 1, LAYOUT_2D = 2 };
/* ------------------------------------------------------- class parameters -- */

struct ft_class {
    char name;
    int nx, ny, nz, niter;
    double checksum[FT_MAX_ITER][2];
};

static const struct ft_class classes[] = {
    {'S', 64, 64, 64, 6,
     {{554.6087004964, 484.5363331978}, {554.6385409189, 486.5304269511},
      {554.6148406171, 488.3910722336}, {554.5423607415, 490.1273169046},
      {554.4255039624, 491.7475857993}, {554.2683411902, 493.2597244941}}},
    {'W', 128, 128, 32, 6,
     {{567.3612178944, 529.3246849175}, {563.1436885271, 528.2149986629},
      {559.402408997, 527.0996558037}, {556.069804702, 526.0027904925},
      {553.089899125, 524.9400845633}, {550.4159734538, 523.9212247086}}},
    {'A', 256, 256, 128, 6,
     {{504.6735008193, 511.404790551}, {505.9412319734, 509.8809666433},
      {506.9376896287, 509.8144042213}, {507.7892868474, 510.1336130759},
      {508.5233095391, 510.4914655194}, {509.1487099959, 510.7917842803}}},
    {'B', 512, 256, 256, 20,
     {{517.7643571579, 507.7803458597}, {515.4521291263, 508.8249431599},
      {514.6409228649, 509.6208912659}, {514.2378756213, 510.1023387619},
      {513.9626667737, 510.3976610617}, {513.7423460082, 510.5948019802},
      {513.5547056878, 510.7404165783}, {513.3910925466, 510.8576573661},
      {513.247070539, 510.9577278523}, {513.1197729984, 511.0460304483},
      {513.0070319283, 511.12524338}, {512.9070537032, 511.1968077718},
      {512.8182883502, 511.2616233064}, {512.7393733383, 511.3203605551},
      {512.669106202, 511.3735928093}, {512.6064276004, 511.4218460548},
      {512.550407657, 511.465613976}, {512.500233172, 511.5053595966},
      {512.4551951846, 511.5415130407}, {512.4146770029, 511.5744692211}}},
    {'C', 512, 512, 512, 20,
     {{519.5078707457, 514.9019699238}, {515.5422171134, 512.7578201997},
      {514.4678022222, 512.2251847514}, {514.0150594328, 512.1090289018},
      {513.755042681, 512.1143685824}, {513.5811056728, 512.1496764568},
      {513.4569343165, 512.1870921893}, {513.3651975661, 512.2193250322},
      {513.2955192805, 512.2454735794}, {513.2410471738, 512.2663649603},
      {513.1971141679, 512.2830879827}, {513.1605205716, 512.2965869718},
      {513.1290734194, 512.3075927445}, {513.1012720314, 512.3166486553},
      {513.0760908195, 512.3241541685}, {513.0528295923, 512.3304037599},
      {513.0310107773, 512.3356167976}, {513.0103090133, 512.3399592211},
      {512.9905029333, 512.3435588985}, {512.9714421109, 512.3465164008}}},
    {'D', 2048, 1024, 1024, 25,
     {{512.2230065252, 511.8534037109}, {512.0463975765, 511.7061181082},
      {511.986576676, 511.7096364601}, {511.9518799488, 511.737386395},
      {511.9269088223, 511.7680347632}, {511.9082416858, 511.7967875532},
      {511.8943814638, 511.8225281841}, {511.8842385057, 511.8451629348},
      {511.8769435632, 511.8649119387}, {511.8718203448, 511.8820803844},
      {511.8683569061, 511.8969781011}, {511.8661708593, 511.9098918835},
      {511.864976895, 511.9210777066}, {511.8645605626, 511.9307604484},
      {511.8647586618, 511.9391362671}, {511.8654451572, 511.9463757241},
      {511.8665212451, 511.9526269238}, {511.8679083821, 511.9580184108},
      {511.8695433664, 511.9626617538}, {511.8713748264, 511.9666538138},
      {511.8733606701, 511.9700787219}, {511.8754661974, 511.9730095953},
      {511.8776626738, 511.9755100241}, {511.8799262314, 511.9776353561},
      {511.8822370068, 511.979433806}}},
};

/* ------------------------------------------------------------- the state -- */

typedef struct {
    double re, im;
} dcomplex;

struct ft {
    const struct ft_class *cls;
    int nx, ny, nz, niter, maxdim;
    int np, rank, nthreads;
    int layout, np1, np2, me1, me2;
    MPI_Comm commslice1; /* the np2 ranks of the same me1, ranked by me2 */
    MPI_Comm commslice2; /* the np1 ranks of the same me2, ranked by me1 */
    MPI_Datatype dc_type;
    int dims[3][3];            /* dims[phase][coordinate], phases 0..2 as NPB's 1..3 */
    int xstart[3], ystart[3], zstart[3]; /* 0-based first index owned, per phase */
    int xend[3], yend[3], zend[3];       /* 0-based last index owned, per phase */
    int fftblock, fftblockpad;
    size_t ntdivnp; /* points per rank */
    dcomplex *u0, *u1, *u2;
    double *twiddle;
    dcomplex *u; /* roots of unity: u[0].re = log2(maxdim), block of length ln at u[ln] */
    dcomplex **scratch; /* per thread: fftblockpad * maxdim * 2 */
    double sums[FT_MAX_ITER][2];
};

static int ilog2(int n)
{
    int lg = 0;
    while ((1 << lg) < n) ++lg;
    return lg;
}

static int thread_id(void)
{
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

/* ------------------------------------------------------------- 1-D FFTs -- */

/* Roots of unity for every power-of-two length up to n, stored so that each pass of the
 * FFT reads them with stride one: block ln (1, 2, 4, ...) holds exp(i pi k / ln), k < ln. */
static void fft_init(struct ft *ft, int n)
{
    int m = ilog2(n);
    ft->u[0].re = m;
    ft->u[0].im = 0.0;
    int ku = 1, ln = 1;
    for (int j = 0; j < m; ++j) {
        double t = FT_PI / ln;
        for (int i = 0; i < ln; ++i) {
            double ti = i * t;
            ft->u[ku + i].re = cos(ti);
            ft->u[ku + i].im = sin(ti);
        }
        ku += ln;
        ln *= 2;
    }
}

/* Pass l (1-based) of the Stockham FFT of length n = 2^m on ny lines at once (line stride
 * ny1): x -> y. The pass pairs points i*lk + k and i*lk + k + n/2 and writes their sum and
 * twiddled difference to i*2lk + k and i*2lk + k + lk. */
static void fftz2(int is, int l, int m, int n, int ny, int ny1, const dcomplex *u,
                  const dcomplex *x, dcomplex *y)
{
    const int n1 = n / 2;
    const int lk = 1 << (l - 1);
    const int li = 1 << (m - l);
    const int lj = 2 * lk;
    for (int i = 0; i < li; ++i) {
        const int i11 = i * lk, i12 = i11 + n1, i21 = i * lj, i22 = i21 + lk;
        const double ur = u[li + i].re, ui = is >= 1 ? u[li + i].im : -u[li + i].im;
        for (int k = 0; k < lk; ++k) {
            const dcomplex *restrict x1 = x + (size_t)ny1 * (i11 + k);
            const dcomplex *restrict x2 = x + (size_t)ny1 * (i12 + k);
            dcomplex *restrict y1 = y + (size_t)ny1 * (i21 + k);
            dcomplex *restrict y2 = y + (size_t)ny1 * (i22 + k);
            for (int j = 0; j < ny; ++j) {
                const double ar = x1[j].re, ai = x1[j].im, br = x2[j].re, bi = x2[j].im;
                y1[j].re = ar + br;
                y1[j].im = ai + bi;
                const double dr = ar - br, di = ai - bi;
                y2[j].re = ur * dr - ui * di;
                y2[j].im = ur * di + ui * dr;
            }
        }
    }
}

/* fftblock FFTs of length n = 2^m held in x (fftblockpad x n), y scratch of the same size;
 * the result is in x. */
static void cfftz(const struct ft *ft, int is, int m, int n, dcomplex *x, dcomplex *y)
{
    const int mx = (int)ft->u[0].re;
    if ((is != 1 && is != -1) || m < 1 || m > mx)
        npb_fail("cfftz: invalid parameters is=%d m=%d mx=%d", is, m, mx);
    for (int l = 1; l <= m; l += 2) {
        fftz2(is, l, m, n, ft->fftblock, ft->fftblockpad, ft->u, x, y);
        if (l == m) {
            for (int j = 0; j < n; ++j)
                for (int i = 0; i < ft->fftblock; ++i)
                    x[i + (size_t)ft->fftblockpad * j] = y[i + (size_t)ft->fftblockpad * j];
            return;
        }
        fftz2(is, l + 1, m, n, ft->fftblock, ft->fftblockpad, ft->u, y, x);
    }
}

/* FFTs along the first dimension of x (d1 x d2 x d3) into xout (may be x), fftblock lines
 * of the second dimension at a time, through the scratch pencil. */
static void cffts1(const struct ft *ft, int is, const int d[3], dcomplex *x, dcomplex *xout)
{
    const int d1 = d[0], d2 = d[1], d3 = d[2], fb = ft->fftblock, pad = ft->fftblockpad;
    const int logd1 = ilog2(d1);
#pragma omp parallel for schedule(static) num_threads(ft->nthreads)
    for (int k = 0; k < d3; ++k) {
        dcomplex *y = ft->scratch[thread_id()];
        for (int jj = 0; jj <= d2 - fb; jj += fb) {
            for (int j = 0; j < fb; ++j)
                for (int i = 0; i < d1; ++i)
                    y[j + (size_t)pad * i] = x[i + (size_t)d1 * (j + jj + (size_t)d2 * k)];
            cfftz(ft, is, logd1, d1, y, y + (size_t)pad * d1);
            for (int j = 0; j < fb; ++j)
                for (int i = 0; i < d1; ++i)
                    xout[i + (size_t)d1 * (j + jj + (size_t)d2 * k)] = y[j + (size_t)pad * i];
        }
    }
}

/* FFTs along the second dimension, fftblock lines of the first at a time. */
static void cffts2(const struct ft *ft, int is, const int d[3], dcomplex *x, dcomplex *xout)
{
    const int d1 = d[0], d2 = d[1], d3 = d[2], fb = ft->fftblock, pad = ft->fftblockpad;
    const int logd2 = ilog2(d2);
#pragma omp parallel for schedule(static) num_threads(ft->nthreads)
    for (int k = 0; k < d3; ++k) {
        dcomplex *y = ft->scratch[thread_id()];
        for (int ii = 0; ii <= d1 - fb; ii += fb) {
            for (int j = 0; j < d2; ++j)
                for (int i = 0; i < fb; ++i)
                    y[i + (size_t)pad * j] = x[i + ii + (size_t)d1 * (j + (size_t)d2 * k)];
            cfftz(ft, is, logd2, d2, y, y + (size_t)pad * d2);
            for (int j = 0; j < d2; ++j)
                for (int i = 0; i < fb; ++i)
                    xout[i + ii + (size_t)d1 * (j + (size_t)d2 * k)] = y[i + (size_t)pad * j];
        }
    }
}

/* FFTs along the third dimension, fftblock lines of the first at a time. */
static void cffts3(const struct ft *ft, int is, const int d[3], dcomplex *x, dcomplex *xout)
{
    const int d1 = d[0], d2 = d[1], d3 = d[2], fb = ft->fftblock, pad = ft->fftblockpad;
    const int logd3 = ilog2(d3);
#pragma omp parallel for schedule(static) num_threads(ft->nthreads)
    for (int j = 0; j < d2; ++j) {
        dcomplex *y = ft->scratch[thread_id()];
        for (int ii = 0; ii <= d1 - fb; ii += fb) {
            for (int k = 0; k < d3; ++k)
                for (int i = 0; i < fb; ++i)
                    y[i + (size_t)pad * k] = x[i + ii + (size_t)d1 * (j + (size_t)d2 * k)];
            cfftz(ft, is, logd3, d3, y, y + (size_t)pad * d3);
            for (int k = 0; k < d3; ++k)
                for (int i = 0; i < fb; ++i)
                    xout[i + ii + (size_t)d1 * (j + (size_t)d2 * k)] = y[i + (size_t)pad * k];
        }
    }
}

/* ------------------------------------------------------------ transposes -- */

/* xin (n1 x n2) -> xout (n2 x n1), blocked by TRANSBLOCK when both sides allow it. */
static void transpose2_local(const struct ft *ft, int n1, int n2, const dcomplex *xin,
                             dcomplex *xout)
{
    if (n1 < TRANSBLOCK || n2 < TRANSBLOCK) {
        if (n1 >= n2) {
#pragma omp parallel for schedule(static) num_threads(ft->nthreads)
            for (int j = 0; j < n2; ++j)
                for (int i = 0; i < n1; ++i)
                    xout[j + (size_t)n2 * i] = xin[i + (size_t)n1 * j];
        } else {
#pragma omp parallel for schedule(static) num_threads(ft->nthreads)
            for (int i = 0; i < n1; ++i)
                for (int j = 0; j < n2; ++j)
                    xout[j + (size_t)n2 * i] = xin[i + (size_t)n1 * j];
        }
        return;
    }
#pragma omp parallel for schedule(static) num_threads(ft->nthreads)
    for (int j = 0; j < n2; j += TRANSBLOCK) {
        dcomplex z[TRANSBLOCK][TRANSBLOCKPAD]; /* z[ii][jj], NPB's z(jj, ii) */
        for (int i = 0; i < n1; i += TRANSBLOCK) {
            for (int jj = 0; jj < TRANSBLOCK; ++jj)
                for (int ii = 0; ii < TRANSBLOCK; ++ii)
                    z[ii][jj] = xin[i + ii + (size_t)n1 * (j + jj)];
            for (int ii = 0; ii < TRANSBLOCK; ++ii)
                for (int jj = 0; jj < TRANSBLOCK; ++jj)
                    xout[j + jj + (size_t)n2 * (i + ii)] = z[ii][jj];
        }
    }
}

/* The exchange of the 1-D layout: block p of xin to rank p of commslice1. */
static void transpose2_global(const struct ft *ft, dcomplex *xin, dcomplex *xout)
{
    const int count = (int)(ft->ntdivnp / (size_t)ft->np);
    NPB_CHECK_MPI(MPI_Alltoall(xin, count, ft->dc_type, xout, count, ft->dc_type,
                               ft->commslice1));
}

/* xin (n2, n1/np2, np2 senders) -> xout (n2*np2, n1/np2). */
static void transpose2_finish(const struct ft *ft, int n1, int n2, const dcomplex *xin,
                              dcomplex *xout)
{
    const int np2 = ft->np2, n1p = n1 / np2;
#pragma omp parallel num_threads(ft->nthreads)
    for (int p = 0; p < np2; ++p) {
#pragma omp for schedule(static)
        for (int j = 0; j < n1p; ++j)
            for (int i = 0; i < n2; ++i)
                xout[i + (size_t)p * n2 + (size_t)n2 * np2 * j] =
                    xin[i + (size_t)n2 * (j + (size_t)n1p * p)];
    }
}

/* 1-D layout, forward: phase l1 (x, y, z_local) -> phase 3 (z, x, y_local). */
static void transpose_xy_z(struct ft *ft, int l1, dcomplex *xin, dcomplex *xout)
{
    const int n1 = ft->dims[l1][0] * ft->dims[l1][1], n2 = ft->dims[l1][2];
    { NPB_SAMPLED_SIZED("ft-transpose-xy-z-local", n1) { transpose2_local(ft, n1, n2, xin, xout); } }
    transpose2_global(ft, xout, xin);
    { NPB_SAMPLED_SIZED("ft-transpose-xy-z-finish", n1) { transpose2_finish(ft, n1, n2, xin, xout); } }
}

/* 1-D layout, inverse: phase l1 (z, x, y_local) -> phase 2 (x, y, z_local). */
static void transpose_x_yz(struct ft *ft, int l1, dcomplex *xin, dcomplex *xout)
{
    const int n1 = ft->dims[l1][0], n2 = ft->dims[l1][1] * ft->dims[l1][2];
    { NPB_SAMPLED_SIZED("ft-transpose-x-yz-local", n1) { transpose2_local(ft, n1, n2, xin, xout); } }
    transpose2_global(ft, xout, xin);
    { NPB_SAMPLED_SIZED("ft-transpose-x-yz-finish", n1) { transpose2_finish(ft, n1, n2, xin, xout); } }
}

/* xin (d1, d2, d3) -> xout (d3, d2, d1), blocked through buf. */
static void transpose_x_z_local(const struct ft *ft, const int d[3], const dcomplex *xin,
                                dcomplex *xout)
{
    const int d1 = d[0], d2 = d[1], d3 = d[2];
    int block3 = d3, block1 = d1;
    if (d1 >= 32 && block3 != 1) {
        if (block3 > TRANSBLOCK) block3 = TRANSBLOCK;
        if (block1 * block3 > TRANSBLOCK * TRANSBLOCK) block1 = TRANSBLOCK * TRANSBLOCK / block3;
#pragma omp parallel num_threads(ft->nthreads)
        {
            dcomplex *buf = ft->scratch[thread_id()]; /* buf(TRANSBLOCKPAD, block1) */
#pragma omp for schedule(static)
            for (int j = 0; j < d2; ++j)
                for (int kk = 0; kk <= d3 - block3; kk += block3)
                    for (int ii = 0; ii <= d1 - block1; ii += block1) {
                        for (int k = 0; k < block3; ++k)
                            for (int i = 0; i < block1; ++i)
                                buf[k + (size_t)TRANSBLOCKPAD * i] =
                                    xin[i + ii + (size_t)d1 * (j + (size_t)d2 * (k + kk))];
                        for (int i = 0; i < block1; ++i)
                            for (int k = 0; k < block3; ++k)
                                xout[k + kk + (size_t)d3 * (j + (size_t)d2 * (i + ii))] =
                                    buf[k + (size_t)TRANSBLOCKPAD * i];
                    }
        }
        return;
    }
#pragma omp parallel for schedule(static) num_threads(ft->nthreads)
    for (int j = 0; j < d2; ++j)
        for (int k = 0; k < d3; ++k)
            for (int i = 0; i < d1; ++i)
                xout[k + (size_t)d3 * (j + (size_t)d2 * i)] = xin[i + (size_t)d1 * (j + (size_t)d2 * k)];
}

/* xin (d1/np2, d2, d3, np2 senders) -> xout (d1, d2, d3). */
static void transpose_x_z_finish(const struct ft *ft, const int d[3], const dcomplex *xin,
                                 dcomplex *xout)
{
    const int d1 = d[0], d2 = d[1], d3 = d[2], np2 = ft->np2, d1p = d1 / np2;
#pragma omp parallel num_threads(ft->nthreads)
    for (int p = 0; p < np2; ++p) {
#pragma omp for schedule(static)
        for (int k = 0; k < d3; ++k)
            for (int j = 0; j < d2; ++j)
                for (int i = 0; i < d1p; ++i)
                    xout[i + (size_t)p * d1p + (size_t)d1 * (j + (size_t)d2 * k)] =
                        xin[i + (size_t)d1p * (j + (size_t)d2 * (k + (size_t)d3 * p))];
    }
}

/* 2-D layout: phase l1 -> l2 exchanging the first and third coordinates over commslice1. */
static void transpose_x_z(struct ft *ft, int l1, int l2, dcomplex *xin, dcomplex *xout)
{
    const int *d1 = ft->dims[l1], *d2 = ft->dims[l2];
    { NPB_SAMPLED_SIZED("ft-transpose-x-z-local", l1) { transpose_x_z_local(ft, d1, xin, xout); } }
    const int count = (int)((size_t)d1[0] * d1[1] * d1[2] / (size_t)ft->np2);
    NPB_CHECK_MPI(MPI_Alltoall(xout, count, ft->dc_type, xin, count, ft->dc_type,
                               ft->commslice1));
    { NPB_SAMPLED_SIZED("ft-transpose-x-z-finish", l2) { transpose_x_z_finish(ft, d2, xin, xout); } }
}

/* xin (d1, d2, d3) -> xout (d2, d3, d1). */
static void transpose_x_y_local(const struct ft *ft, const int d[3], const dcomplex *xin,
                                dcomplex *xout)
{
    const int d1 = d[0], d2 = d[1], d3 = d[2];
#pragma omp parallel for schedule(static) num_threads(ft->nthreads)
    for (int k = 0; k < d3; ++k)
        for (int i = 0; i < d1; ++i)
            for (int j = 0; j < d2; ++j)
                xout[j + (size_t)d2 * (k + (size_t)d3 * i)] = xin[i + (size_t)d1 * (j + (size_t)d2 * k)];
}

/* xin (d1/np1, d3, d2, np1 senders) -> xout (d1, d2, d3). */
static void transpose_x_y_finish(const struct ft *ft, const int d[3], const dcomplex *xin,
                                 dcomplex *xout)
{
    const int d1 = d[0], d2 = d[1], d3 = d[2], np1 = ft->np1, d1p = d1 / np1;
#pragma omp parallel num_threads(ft->nthreads)
    for (int p = 0; p < np1; ++p) {
#pragma omp for schedule(static)
        for (int k = 0; k < d3; ++k)
            for (int j = 0; j < d2; ++j)
                for (int i = 0; i < d1p; ++i)
                    xout[i + (size_t)p * d1p + (size_t)d1 * (j + (size_t)d2 * k)] =
                        xin[i + (size_t)d1p * (k + (size_t)d3 * (j + (size_t)d2 * p))];
    }
}

/* 2-D layout: phase l1 -> l2 exchanging the first and second coordinates over commslice2. */
static void transpose_x_y(struct ft *ft, int l1, int l2, dcomplex *xin, dcomplex *xout)
{
    const int *d1 = ft->dims[l1], *d2 = ft->dims[l2];
    { NPB_SAMPLED_SIZED("ft-transpose-x-y-local", l1) { transpose_x_y_local(ft, d1, xin, xout); } }
    const int count = (int)((size_t)d1[0] * d1[1] * d1[2] / (size_t)ft->np1);
    NPB_CHECK_MPI(MPI_Alltoall(xout, count, ft->dc_type, xin, count, ft->dc_type,
                               ft->commslice2));
    { NPB_SAMPLED_SIZED("ft-transpose-x-y-finish", l2) { transpose_x_y_finish(ft, d2, xin, xout); } }
}

/* ------------------------------------------------------------ 3-D FFTs -- */

/* Under SMPI with HPCEVAL_SMPI_SAMPLE the compute passes (no MPI inside) are sampled: run
 * for real the first times, then injected at their mean duration. */
#define PASS(tag, call)                                                                      \
    do {                                                                                     \
        NPB_SAMPLED(tag) { call; }                                                           \
    } while (0)

/* dir 1: x1 (physical, phase 1) -> x2 (spectrum, phase 3); dir -1: x1 (spectrum) -> x2
 * (physical). x1 is overwritten. */
static void fft(struct ft *ft, int dir, dcomplex *x1, dcomplex *x2)
{
    int(*d)[3] = ft->dims;
    if (dir == 1) {
        if (ft->layout == LAYOUT_0D) {
            PASS("ft-fwd-x", cffts1(ft, 1, d[0], x1, x1));
            PASS("ft-fwd-y", cffts2(ft, 1, d[1], x1, x1));
            PASS("ft-fwd-z", cffts3(ft, 1, d[2], x1, x2));
        } else if (ft->layout == LAYOUT_1D) {
            PASS("ft-fwd-x", cffts1(ft, 1, d[0], x1, x1));
            PASS("ft-fwd-y", cffts2(ft, 1, d[1], x1, x1));
            transpose_xy_z(ft, 1, x1, x2);
            PASS("ft-fwd-z", cffts1(ft, 1, d[2], x2, x2));
        } else {
            PASS("ft-fwd-x", cffts1(ft, 1, d[0], x1, x1));
            transpose_x_y(ft, 0, 1, x1, x2);
            PASS("ft-fwd-y", cffts1(ft, 1, d[1], x2, x2));
            transpose_x_z(ft, 1, 2, x2, x1);
            PASS("ft-fwd-z", cffts1(ft, 1, d[2], x1, x2));
        }
    } else {
        if (ft->layout == LAYOUT_0D) {
            PASS("ft-inv-z", cffts3(ft, -1, d[2], x1, x1));
            PASS("ft-inv-y", cffts2(ft, -1, d[1], x1, x1));
            PASS("ft-inv-x", cffts1(ft, -1, d[0], x1, x2));
        } else if (ft->layout == LAYOUT_1D) {
            PASS("ft-inv-z", cffts1(ft, -1, d[2], x1, x1));
            transpose_x_yz(ft, 2, x1, x2);
            PASS("ft-inv-y", cffts2(ft, -1, d[1], x2, x2));
            PASS("ft-inv-x", cffts1(ft, -1, d[0], x2, x2));
        } else {
            PASS("ft-inv-z", cffts1(ft, -1, d[2], x1, x1));
            transpose_x_z(ft, 2, 1, x1, x2);
            PASS("ft-inv-y", cffts1(ft, -1, d[1], x2, x2));
            transpose_x_y(ft, 1, 0, x2, x1);
            PASS("ft-inv-x", cffts1(ft, -1, d[0], x1, x2));
        }
    }
}

/* ------------------------------------------------------ setup, evolve, checksum -- */

/* The evolve factors exp(-4 alpha pi^2 (kx^2 + ky^2 + kz^2)) in the spectrum's layout
 * (phase 3), with NPB's index map: 0-based index i of extent n is frequency i for i < n/2,
 * i - n otherwise. */
/* NPB's index map: index g (0 <= g < n) is frequency g below n/2, g - n from there (NPB's
 * mod(g + n/2, n) - n/2, whose n is a compile-time constant; without the division here so
 * that the loops vectorise as the reference's do). */
static inline int freq(int g, int n) { return g < n / 2 ? g : g - n; }

static void compute_indexmap(struct ft *ft)
{
    const double ap = -4.0 * FT_ALPHA * FT_PI * FT_PI;
    const long d0 = ft->dims[2][0], d1 = ft->dims[2][1], d2 = ft->dims[2][2];
    const int nx = ft->nx, ny = ft->ny, nz = ft->nz;
    const int xs = ft->xstart[2], ys = ft->ystart[2], zs = ft->zstart[2];
    double *restrict twiddle = ft->twiddle;
    if (ft->layout == LAYOUT_0D) { /* twiddle(x, y, z) */
#pragma omp parallel for schedule(static) num_threads(ft->nthreads)
        for (long i = 0; i < d0; ++i) {
            const int ii = freq((int)i + xs, nx);
            for (long j = 0; j < d1; ++j) {
                const int jj = freq((int)j + ys, ny);
                const int ij2 = jj * jj + ii * ii;
                for (long k = 0; k < d2; ++k) {
                    const int kk = freq((int)k + zs, nz);
                    twiddle[i + d0 * (j + d1 * k)] = exp(ap * (double)(kk * kk + ij2));
                }
            }
        }
    } else { /* twiddle(z, x, y) */
#pragma omp parallel for schedule(static) num_threads(ft->nthreads)
        for (long i = 0; i < d1; ++i) {
            const int ii = freq((int)i + xs, nx);
            for (long j = 0; j < d2; ++j) {
                const int jj = freq((int)j + ys, ny);
                const int ij2 = jj * jj + ii * ii;
                for (long k = 0; k < d0; ++k) {
                    const int kk = freq((int)k + zs, nz);
                    twiddle[k + d0 * (i + d1 * j)] = exp(ap * (double)(kk * kk + ij2));
                }
            }
        }
    }
}

/* One time step in Fourier space: u0 = u0 * twiddle, u1 = u0. */
static void evolve(struct ft *ft)
{
    dcomplex *restrict u0 = ft->u0, *restrict u1 = ft->u1;
    const double *restrict tw = ft->twiddle;
    const long n = (long)ft->ntdivnp;
#pragma omp parallel for schedule(static) num_threads(ft->nthreads)
    for (long i = 0; i < n; ++i) {
        const double re = u0[i].re * tw[i], im = u0[i].im * tw[i];
        u0[i].re = re;
        u0[i].im = im;
        u1[i].re = re;
        u1[i].im = im;
    }
}

/* The initial field (phase 1) from the generator: each local z plane's rows in one vranlc
 * call, the plane starts ny rows (2 nx ny numbers) apart. */
static void compute_initial_conditions(struct ft *ft, dcomplex *u)
{
    const int nx = ft->nx, ny = ft->ny, d2 = ft->dims[0][1], d3 = ft->dims[0][2];
    double start = NPB_SEED;
    const long long first = (long long)ft->zstart[0] * ny + ft->ystart[0];
    (void)randlc(&start, npb_jump_multiplier(NPB_A, 2LL * nx * first));
    const double an = npb_jump_multiplier(NPB_A, 2LL * nx * ny);
    for (int k = 0; k < d3; ++k) {
        double x0 = start;
        vranlc(2 * nx * d2, &x0, NPB_A, (double *)(u + (size_t)nx * d2 * k));
        if (k != d3 - 1) (void)randlc(&start, an);
    }
}

/* Checksum of iteration it (0-based) over the result in phase 1, reduced to rank 0. */
static void checksum(struct ft *ft, int it, const dcomplex *u)
{
    const int *d = ft->dims[0];
    double chk[2] = {0.0, 0.0}, all[2];
    for (int j = 1; j <= 1024; ++j) {
        const int q = j % ft->nx, r = 3 * j % ft->ny, s = 5 * j % ft->nz;
        if (q >= ft->xstart[0] && q <= ft->xend[0] && r >= ft->ystart[0] && r <= ft->yend[0] &&
            s >= ft->zstart[0] && s <= ft->zend[0]) {
            const dcomplex v = u[(q - ft->xstart[0]) +
                                 (size_t)d[0] * ((r - ft->ystart[0]) +
                                                 (size_t)d[1] * (s - ft->zstart[0]))];
            chk[0] += v.re;
            chk[1] += v.im;
        }
    }
    const double ntotal = (double)ft->nx * ft->ny * ft->nz;
    chk[0] /= ntotal;
    chk[1] /= ntotal;
    NPB_CHECK_MPI(MPI_Reduce(chk, all, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD));
    if (ft->rank == 0) {
        ft->sums[it][0] = all[0];
        ft->sums[it][1] = all[1];
    }
}

/* compute_indexmap, initial conditions, fft_init and the forward FFT (as NPB). */
static void setup_and_forward(struct ft *ft)
{
    PASS("ft-indexmap", compute_indexmap(ft));
    PASS("ft-init", compute_initial_conditions(ft, ft->u1));
    fft_init(ft, ft->dims[0][0]);
    fft(ft, 1, ft->u1, ft->u0);
}

static void iterate(struct ft *ft)
{
    for (int it = 0; it < ft->niter; ++it) {
        PASS("ft-evolve", evolve(ft));
        fft(ft, -1, ft->u1, ft->u2);
        checksum(ft, it, ft->u2);
    }
}

/* NPB's decomposition: one rank 0-D, up to nz ranks 1-D (1 x np), beyond that 2-D
 * (nz x np/nz). NPB_FT_P1=<np1> in the environment chooses the processor array np1 x np/np1
 * instead (NPB's inputft.data), e.g. to test the 2-D layout on few ranks. */
static void setup(struct ft *ft)
{
    const int np = ft->np, nx = ft->nx, ny = ft->ny, nz = ft->nz;
    int np1 = 1, np2 = np;
    if (np == 1) {
        np2 = 1;
    } else if (np > nz) {
        np1 = nz;
        np2 = np / nz;
    }
    const char *forced = getenv("NPB_FT_P1");
    if (forced != NULL && *forced != '\0') {
        char *end;
        long v = strtol(forced, &end, 10);
        if (*end != '\0' || v < 1 || v > np || np % v != 0 || !npb_is_power_of_two((int)v))
            npb_fail("NPB_FT_P1=%s is not a power of two dividing the %d ranks", forced, np);
        np1 = (int)v;
        np2 = np / np1;
    }
    ft->np1 = np1;
    ft->np2 = np2;
    ft->layout = np1 == 1 && np2 == 1 ? LAYOUT_0D : np1 == 1 ? LAYOUT_1D : LAYOUT_2D;
    static const int order[3][3][3] = {
        /* 0-D */ {{0, 1, 2}, {0, 1, 2}, {0, 1, 2}},
        /* 1-D */ {{0, 1, 2}, {0, 1, 2}, {2, 0, 1}},
        /* 2-D */ {{0, 1, 2}, {1, 0, 2}, {2, 0, 1}},
    };
    const int n[3] = {nx, ny, nz};
    for (int ph = 0; ph < 3; ++ph) {
        for (int c = 0; c < 3; ++c) ft->dims[ph][c] = n[order[ft->layout][ph][c]];
        if (ft->dims[ph][1] % np1 != 0 || ft->dims[ph][2] % np2 != 0 ||
            ft->dims[ph][1] < np1 || ft->dims[ph][2] < np2)
            npb_fail("ft class %c (%dx%dx%d) cannot be laid out on a %d x %d processor array "
                     "(NPB's rule: slabs up to nz = %d ranks, then nz x np/nz)",
                     ft->cls->name, nx, ny, nz, np1, np2, nz);
        ft->dims[ph][1] /= np1;
        ft->dims[ph][2] /= np2;
    }
    ft->me2 = ft->rank % np2;
    ft->me1 = ft->rank / np2;
    NPB_CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, ft->me1, ft->me2, &ft->commslice1));
    NPB_CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, ft->me2, ft->me1, &ft->commslice2));
    const int me1 = ft->me1, me2 = ft->me2;
    for (int ph = 0; ph < 3; ++ph) {
        ft->xstart[ph] = 0, ft->xend[ph] = nx - 1;
        ft->ystart[ph] = 0, ft->yend[ph] = ny - 1;
        ft->zstart[ph] = 0, ft->zend[ph] = nz - 1;
    }
    if (ft->layout == LAYOUT_1D) {
        for (int ph = 0; ph < 2; ++ph) {
            ft->zstart[ph] = me2 * nz / np2;
            ft->zend[ph] = (me2 + 1) * nz / np2 - 1;
        }
        ft->ystart[2] = me2 * ny / np2;
        ft->yend[2] = (me2 + 1) * ny / np2 - 1;
    } else if (ft->layout == LAYOUT_2D) {
        ft->ystart[0] = me1 * ny / np1;
        ft->yend[0] = (me1 + 1) * ny / np1 - 1;
        ft->zstart[0] = ft->zstart[1] = me2 * nz / np2;
        ft->zend[0] = ft->zend[1] = (me2 + 1) * nz / np2 - 1;
        ft->xstart[1] = ft->xstart[2] = me1 * nx / np1;
        ft->xend[1] = ft->xend[2] = (me1 + 1) * nx / np1 - 1;
        ft->ystart[2] = me2 * ny / np2;
        ft->yend[2] = (me2 + 1) * ny / np2 - 1;
    }
    /* Pencils of fftblock lines; in the 2-D layout no wider than the second dimension. */
    ft->fftblock = FFTBLOCK_DEFAULT;
    ft->fftblockpad = FFTBLOCKPAD_DEFAULT;
    if (ft->layout == LAYOUT_2D)
        for (int ph = 0; ph < 3; ++ph)
            if (ft->dims[ph][1] < ft->fftblock) ft->fftblock = ft->dims[ph][1];
    if (ft->fftblock != FFTBLOCK_DEFAULT) ft->fftblockpad = ft->fftblock + 3;
    /* cffts1 takes pencils along the second dimension, cffts2/3 along the first. */
    for (int ph = 0; ph < 3; ++ph)
        for (int c = 0; c < 2; ++c)
            if (ft->dims[ph][c] % ft->fftblock != 0)
                npb_fail("ft class %c on a %d x %d processor array: an extent of %d is not a "
                         "multiple of the FFT block %d", ft->cls->name, np1, np2,
                         ft->dims[ph][c], ft->fftblock);
    ft->ntdivnp = (size_t)nx * ny * nz / (size_t)np;
    if (ft->ntdivnp / (size_t)(np1 < np2 ? np1 : np2) > (size_t)2147483647)
        npb_fail("ft class %c on %d ranks: %zu points per rank exceed an MPI count",
                 ft->cls->name, np, ft->ntdivnp);
    ft->maxdim = nx > ny ? nx : ny;
    if (nz > ft->maxdim) ft->maxdim = nz;
}

/* ----------------------------------------------------------------- main -- */

int main(int argc, char **argv)
{
    int provided;
    NPB_CHECK_MPI(MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided));
    struct npb_options opt;
    npb_parse_args(argc, argv, "ft", &opt);
    if (provided < MPI_THREAD_FUNNELED && npb_threads() > 1)
        npb_fail("the MPI library does not provide MPI_THREAD_FUNNELED, needed with %d threads",
                 npb_threads());

    struct ft ft;
    memset(&ft, 0, sizeof ft);
    for (size_t i = 0; i < sizeof classes / sizeof classes[0]; ++i)
        if (classes[i].name == opt.class_name) ft.cls = &classes[i];
    if (ft.cls == NULL) npb_fail("unknown class %c", opt.class_name);
    ft.nx = ft.cls->nx;
    ft.ny = ft.cls->ny;
    ft.nz = ft.cls->nz;
    ft.niter = ft.cls->niter;
    NPB_CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &ft.rank));
    NPB_CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &ft.np));
    if (!npb_is_power_of_two(ft.np))
        npb_fail("ft needs a power-of-two number of ranks, got %d", ft.np);
    ft.nthreads = npb_threads();
    setup(&ft);

    char problem[200];
    snprintf(problem, sizeof problem,
             "{\"nx\":%d,\"ny\":%d,\"nz\":%d,\"niter\":%d,\"layout\":\"%dd\",\"grid\":[%d,%d],"
             "\"fftblock\":%d}",
             ft.nx, ft.ny, ft.nz, ft.niter, ft.layout, ft.np1, ft.np2, ft.fftblock);
    npb_print_header("ft", ft.cls->name, problem);

    /* As NPB: three complex arrays and the real twiddle array, padded by 3 points. */
    const size_t nalloc = ft.ntdivnp + 3;
    ft.u0 = NPB_FOLDABLE_ALLOC(nalloc * sizeof(dcomplex), "u0 (spectrum)");
    ft.u1 = NPB_FOLDABLE_ALLOC(nalloc * sizeof(dcomplex), "u1 (work array)");
    ft.u2 = NPB_FOLDABLE_ALLOC(nalloc * sizeof(dcomplex), "u2 (work array)");
    ft.twiddle = NPB_FOLDABLE_ALLOC(ft.ntdivnp * sizeof(double), "twiddle (evolve factors)");
    ft.u = npb_alloc((size_t)(ft.maxdim + 1) * sizeof(dcomplex), "roots of unity");
    const size_t scratch_len = (size_t)FFTBLOCKPAD_DEFAULT * ft.maxdim * 2;
    ft.scratch = npb_alloc((size_t)ft.nthreads * sizeof(dcomplex *), "scratch pointers");
    for (int t = 0; t < ft.nthreads; ++t)
        ft.scratch[t] = npb_alloc(scratch_len * sizeof(dcomplex), "FFT scratch");
    NPB_CHECK_MPI(MPI_Type_contiguous(2, MPI_DOUBLE, &ft.dc_type));
    NPB_CHECK_MPI(MPI_Type_commit(&ft.dc_type));

    /* Untimed: everything up to the forward FFT once, so that all data is touched. */
    setup_and_forward(&ft);

    NPB_CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    double t0 = MPI_Wtime();
    setup_and_forward(&ft);
    iterate(&ft);
    double elapsed = MPI_Wtime() - t0, tmax;
    NPB_CHECK_MPI(MPI_Allreduce(&elapsed, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    /* Every rank judges the same sums (rank 0's), untimed. */
    NPB_CHECK_MPI(MPI_Bcast(ft.sums, 2 * FT_MAX_ITER, MPI_DOUBLE, 0, MPI_COMM_WORLD));

    struct npb_result res;
    memset(&res, 0, sizeof res);
    res.kernel = "ft";
    res.class_name = ft.cls->name;
    res.time_s = tmax;
    res.iterations = ft.niter;
    res.verified = 1;
    double n = (double)ft.nx * ft.ny * ft.nz;
    res.mops_total = tmax > 0.0 ? 1e-6 * n *
                                      (14.8157 + 7.19641 * log(n) +
                                       (5.23518 + 7.21113 * log(n)) * ft.niter) /
                                      tmax
                                : 0.0;
    for (int it = 0; it < ft.niter; ++it) {
        char name[48];
        snprintf(name, sizeof name, "checksum[%d].real", it + 1);
        npb_add_quantity(&res, name, ft.sums[it][0], ft.cls->checksum[it][0], FT_TOLERANCE);
        snprintf(name, sizeof name, "checksum[%d].imag", it + 1);
        npb_add_quantity(&res, name, ft.sums[it][1], ft.cls->checksum[it][1], FT_TOLERANCE);
    }
    npb_print_result(&res);

    NPB_CHECK_MPI(MPI_Type_free(&ft.dc_type));
    NPB_CHECK_MPI(MPI_Comm_free(&ft.commslice1));
    NPB_CHECK_MPI(MPI_Comm_free(&ft.commslice2));
    for (int t = 0; t < ft.nthreads; ++t) free(ft.scratch[t]);
    free(ft.scratch);
    free(ft.u);
    NPB_FOLDABLE_FREE(ft.twiddle);
    NPB_FOLDABLE_FREE(ft.u2);
    NPB_FOLDABLE_FREE(ft.u1);
    NPB_FOLDABLE_FREE(ft.u0);
    NPB_CHECK_MPI(MPI_Finalize());
    return res.verified ? 0 : 3;
}
