/* NPB FT: 3-D FFT PDE solver (NPB 3.x definition), C + MPI + OpenMP.
 *
 * The problem: a complex field u of nx*ny*nz points drawn from the NPB generator (seed
 * 314159265, a = 5^13; point i = (z*ny + y)*nx + x takes numbers 2i+1 and 2i+2) is
 * transformed by a forward 3-D FFT into the spectrum u0; then at every iteration t = 1..niter
 * the spectrum times exp(-4 alpha pi^2 (kx^2 + ky^2 + kz^2) t) (alpha = 1e-6, k from NPB's
 * index map) is transformed back by an inverse, unnormalised 3-D FFT, and the checksum of
 * 1024 points of the result (j = 1..1024 at x = j mod nx, y = 3j mod ny, z = 5j mod nz),
 * divided by nx*ny*nz, is verified against the official value of the class. Timed as the
 * original: index map, initial conditions, FFT set-up, forward FFT and the iterations, after
 * one untimed pass of everything up to the forward FFT.
 *
 * The evolve step multiplies the unchanged spectrum by the factor of time t (the problem's
 * definition, and NPB 2.x); NPB 3.x multiplies u0 in place by the factor of one step at every
 * iteration, which is the same up to rounding (relative 1e-16; the tolerance is 1e-12). The
 * factor is the product of one factor per dimension, so no N-sized twiddle array is needed.
 *
 * Decomposition, as the original: np a power of two; up to nz ranks the 1-D ("slab")
 * layout, beyond that the 2-D layout (see "the 2-D (pencil) layout" below). Slabs: in
 * physical space a rank owns nz/np consecutive z planes ([z_local][y][x], x fastest); in
 * spectral space ny/np consecutive y values of every z plane ([z][y_local][x]). One
 * MPI_Alltoall over all ranks (N/np^2 points for every pair) turns one into the other, once
 * per 3-D FFT, as the original's transposes. The local transposes around the exchange are
 * folded into the 1-D FFT passes, which write straight into the send buffer:
 *
 *   forward:  initial field -> [x FFTs, y FFTs per z plane] -> send (blocks by destination y
 *             range) -> Alltoall -> [z FFTs] -> u0
 *   inverse:  u0 * evolve factors -> [z FFTs] -> send (blocks by destination z range)
 *             -> Alltoall -> [x FFTs, y FFTs per z plane] -> checksum
 *
 * 1-D FFTs: a Stockham autosort transform (radix 8 passes, then radix 4; the last pass has no
 * twiddles) with precomputed roots of unity, sign +1 forward and -1 inverse as NPB's cfftz,
 * applied to blocks of FFTB lines at once: a block is n elements of FFTB real parts followed by
 * FFTB imaginary parts, so that every butterfly is a vector operation across the lines (the
 * original's fftblock). Blocks are gathered from memory in runs of consecutive complex numbers
 * and scattered to where the next step needs them, with non-temporal stores for the data that
 * goes back to memory. OpenMP threads share the blocks of every pass (or whole z planes). */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE /* madvise */
#endif
#include "npb_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#if defined(__SSE2__)
#include <immintrin.h> /* non-temporal stores */
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

/* Padding after every z plane of at least ZPAD_MIN points (complex numbers): without it the
 * z passes would read and write 128..1024 rows at a power-of-two distance that all fall into
 * the same cache sets. The pads travel with the transposes (at most 0.2% more volume). */
#ifndef ZPAD
#define ZPAD 16
#endif
#define ZPAD_MIN 8192

/* Lines transformed together (the vector lanes of the 1-D FFTs): 4 keeps a block of up to 256
 * points in the L1 cache. Every class has nx, ny multiples of it. */
#ifndef FFTB
#define FFTB 4
#endif

/* Memory is read and written in runs of up to RUN consecutive complex numbers: the z passes
 * and the y FFTs take RUN/FFTB blocks of lines together (a power of two). */
#ifndef RUN
#define RUN 64
#endif
#define ELEM (2 * FFTB) /* doubles per element of a block: FFTB real parts, FFTB imaginary */

#define FT_ALPHA 1.0e-6
#define FT_PI 3.141592653589793238
#define FT_TOLERANCE 1.0e-12
#define FT_MAX_ITER 25

typedef struct {
    double re, im;
} dcomplex;

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

/* ------------------------------------------------------------- 1-D FFTs -- */

/* One Stockham pass: radix 2, 4 or 8, s = product of the radices of the earlier passes,
 * m = n / (radix * s); w holds the twiddles of the pass for p = 0..m-1 (w^p, .. w^(radix-1)p)
 * with w = exp(sign 2 pi i / (radix m)). Radix 8 first, then radix 4 (the last pass, m = 1,
 * has no twiddles); radix 2 only for n = 2. */
struct fft_pass {
    int radix, s, m;
    const double *w[2]; /* [0]: forward (sign +1), [1]: inverse (sign -1) */
};

struct fft_plan {
    int n, npasses;
    struct fft_pass pass[32];
    double *table; /* all twiddles, both signs */
};

static void plan_init(struct fft_plan *pl, int n)
{
    int logn = 0;
    while ((1 << logn) < n) ++logn;
    if ((1 << logn) != n) npb_fail("internal: FFT length %d is not a power of two", n);
    pl->n = n;
    pl->npasses = 0;
    size_t total = 0;
    int log8 = logn / 3;                      /* radix-8 passes */
    if (logn % 3 == 1 && log8 > 0) --log8;    /* 8 * 2 = 4 * 4: no radix-2 pass */
    for (int s = 1; s < n;) {
        int radix = log8 > 0 ? 8 : (n / s >= 4 ? 4 : 2);
        if (radix == 8) --log8;
        int m = n / (radix * s);
        struct fft_pass *p = &pl->pass[pl->npasses++];
        p->radix = radix;
        p->s = s;
        p->m = m;
        total += (size_t)2 * (size_t)(radix - 1) * 2 * (size_t)m;
        s *= radix;
    }
    pl->table = npb_alloc((total > 0 ? total : 1) * sizeof(double), "FFT twiddles");
    double *t = pl->table;
    for (int k = 0; k < pl->npasses; ++k) {
        struct fft_pass *p = &pl->pass[k];
        for (int dir = 0; dir < 2; ++dir) {
            double sign = dir == 0 ? 1.0 : -1.0;
            p->w[dir] = t;
            for (int j = 0; j < p->m; ++j) {
                for (int r = 1; r < p->radix; ++r) {
                    /* exp(sign * 2 pi i * r j / (radix m)) = root of index r*j*s of n */
                    long idx = (long)r * j * p->s;
                    double angle = 2.0 * FT_PI * (double)idx / (double)n;
                    *t++ = cos(angle);
                    *t++ = sign * sin(angle);
                }
            }
        }
    }
}

static void plan_free(struct fft_plan *pl)
{
    free(pl->table);
    pl->table = NULL;
}

/* Radix-4 pass, x -> y. Elements are ELEM doubles: FFTB real parts then FFTB imaginary. */
static inline __attribute__((always_inline)) void radix4_pass(const struct fft_pass *ps, int dir,
                                                               const double *restrict x,
                                                               double *restrict y)
{
    const int s = ps->s, m = ps->m;
    const double *restrict w = ps->w[dir];
    const size_t in_step = (size_t)s * m * ELEM; /* distance between the 4 inputs */
    const size_t out_step = (size_t)s * ELEM;    /* distance between the 4 outputs */
    for (int p = 0; p < m; ++p) {
        const double w1r = w[6 * p + 0], w1i = w[6 * p + 1];
        const double w2r = w[6 * p + 2], w2i = w[6 * p + 3];
        const double w3r = w[6 * p + 4], w3i = w[6 * p + 5];
        for (int q = 0; q < s; ++q) {
            const double *a = x + ((size_t)s * p + q) * ELEM;
            double *o = y + ((size_t)s * 4 * p + q) * ELEM;
#pragma omp simd
            for (int l = 0; l < FFTB; ++l) {
                double ar = a[l], ai = a[FFTB + l];
                double br = a[in_step + l], bi = a[in_step + FFTB + l];
                double cr = a[2 * in_step + l], ci = a[2 * in_step + FFTB + l];
                double dr = a[3 * in_step + l], di = a[3 * in_step + FFTB + l];
                double apcr = ar + cr, apci = ai + ci, amcr = ar - cr, amci = ai - ci;
                double bpdr = br + dr, bpdi = bi + di, bmdr = br - dr, bmdi = bi - di;
                /* j * (b - d) with j = +i forward, -i inverse */
                double jr = dir == 0 ? -bmdi : bmdi;
                double ji = dir == 0 ? bmdr : -bmdr;
                double t1r = amcr + jr, t1i = amci + ji;
                double t2r = apcr - bpdr, t2i = apci - bpdi;
                double t3r = amcr - jr, t3i = amci - ji;
                o[l] = apcr + bpdr;
                o[FFTB + l] = apci + bpdi;
                o[out_step + l] = w1r * t1r - w1i * t1i;
                o[out_step + FFTB + l] = w1r * t1i + w1i * t1r;
                o[2 * out_step + l] = w2r * t2r - w2i * t2i;
                o[2 * out_step + FFTB + l] = w2r * t2i + w2i * t2r;
                o[3 * out_step + l] = w3r * t3r - w3i * t3i;
                o[3 * out_step + FFTB + l] = w3r * t3i + w3i * t3r;
            }
        }
    }
}

/* Last radix-4 pass (m = 1, all twiddles 1). */
static inline __attribute__((always_inline)) void radix4_last(const struct fft_pass *ps, int dir,
                                                               const double *restrict x,
                                                               double *restrict y)
{
    const int s = ps->s;
    const size_t step = (size_t)s * ELEM;
    for (int q = 0; q < s; ++q) {
        const double *a = x + (size_t)q * ELEM;
        double *o = y + (size_t)q * ELEM;
#pragma omp simd
        for (int l = 0; l < FFTB; ++l) {
            double ar = a[l], ai = a[FFTB + l];
            double br = a[step + l], bi = a[step + FFTB + l];
            double cr = a[2 * step + l], ci = a[2 * step + FFTB + l];
            double dr = a[3 * step + l], di = a[3 * step + FFTB + l];
            double apcr = ar + cr, apci = ai + ci, amcr = ar - cr, amci = ai - ci;
            double bpdr = br + dr, bpdi = bi + di, bmdr = br - dr, bmdi = bi - di;
            double jr = dir == 0 ? -bmdi : bmdi;
            double ji = dir == 0 ? bmdr : -bmdr;
            o[l] = apcr + bpdr;
            o[FFTB + l] = apci + bpdi;
            o[step + l] = amcr + jr;
            o[step + FFTB + l] = amci + ji;
            o[2 * step + l] = apcr - bpdr;
            o[2 * step + FFTB + l] = apci - bpdi;
            o[3 * step + l] = amcr - jr;
            o[3 * step + FFTB + l] = amci - ji;
        }
    }
}

/* Radix-8 pass (twiddled: m > 1), x -> y: an 8-point DFT (two 4-point DFTs of the even and
 * odd inputs, combined with exp(sign 2 pi i t / 8)), then the twiddles w^t. */
static inline __attribute__((always_inline)) void radix8_pass(const struct fft_pass *ps, int dir,
                                                               int twiddled,
                                                               const double *restrict x,
                                                               double *restrict y)
{
    const int s = ps->s, m = ps->m;
    const double *restrict w = ps->w[dir];
    const size_t in_step = (size_t)s * m * ELEM;
    const size_t out_step = (size_t)s * ELEM;
    const double h = 0.70710678118654752440; /* 1/sqrt(2) */
    const double sg = dir == 0 ? 1.0 : -1.0; /* J = sg * i */
    for (int p = 0; p < m; ++p) {
        double wr[8], wi[8];
        for (int t = 1; t < 8; ++t) {
            wr[t] = twiddled ? w[14 * p + 2 * (t - 1)] : 1.0;
            wi[t] = twiddled ? w[14 * p + 2 * (t - 1) + 1] : 0.0;
        }
        for (int q = 0; q < s; ++q) {
            const double *a = x + ((size_t)s * p + q) * ELEM;
            double *o = y + ((size_t)s * 8 * p + q) * ELEM;
#pragma omp simd
            for (int l = 0; l < FFTB; ++l) {
#define LD(r, R, I) const double R = a[(r) * in_step + l], I = a[(r) * in_step + FFTB + l]
                LD(0, x0r, x0i); LD(1, x1r, x1i); LD(2, x2r, x2i); LD(3, x3r, x3i);
                LD(4, x4r, x4i); LD(5, x5r, x5i); LD(6, x6r, x6i); LD(7, x7r, x7i);
#undef LD
                /* 4-point DFT of (b0, b1, b2, b3) = inputs k, k+2, k+4, k+6 (J = sg i):
                 * B0 = s02 + s13, B2 = s02 - s13, B1 = d02 + J d13, B3 = d02 - J d13 */
#define DFT4(b0r, b0i, b1r, b1i, b2r, b2i, b3r, b3i, P)                                       \
    const double P##s02r = b0r + b2r, P##s02i = b0i + b2i;                                    \
    const double P##d02r = b0r - b2r, P##d02i = b0i - b2i;                                    \
    const double P##s13r = b1r + b3r, P##s13i = b1i + b3i;                                    \
    const double P##jr = -sg * (b1i - b3i), P##ji = sg * (b1r - b3r);                         \
    const double P##0r = P##s02r + P##s13r, P##0i = P##s02i + P##s13i;                        \
    const double P##2r = P##s02r - P##s13r, P##2i = P##s02i - P##s13i;                        \
    const double P##1r = P##d02r + P##jr, P##1i = P##d02i + P##ji;                            \
    const double P##3r = P##d02r - P##jr, P##3i = P##d02i - P##ji
                DFT4(x0r, x0i, x2r, x2i, x4r, x4i, x6r, x6i, e);
                DFT4(x1r, x1i, x3r, x3i, x5r, x5i, x7r, x7i, d);
#undef DFT4
                /* d_t *= W8^t: W8 = (1 + J)/sqrt2, W8^2 = J, W8^3 = (J - 1)/sqrt2 */
                const double c1r = h * (d1r - sg * d1i), c1i = h * (d1i + sg * d1r);
                const double c2r = -sg * d2i, c2i = sg * d2r;
                const double c3r = h * (-sg * d3i - d3r), c3i = h * (sg * d3r - d3i);
#define OUT(t, R, I)                                                                          \
    do {                                                                                      \
        const double R_ = (R), I_ = (I);                                                      \
        o[(t) * out_step + l] = wr[t] * R_ - wi[t] * I_;                                      \
        o[(t) * out_step + FFTB + l] = wr[t] * I_ + wi[t] * R_;                               \
    } while (0)
                o[l] = e0r + d0r;
                o[FFTB + l] = e0i + d0i;
                OUT(1, e1r + c1r, e1i + c1i);
                OUT(2, e2r + c2r, e2i + c2i);
                OUT(3, e3r + c3r, e3i + c3i);
                OUT(4, e0r - d0r, e0i - d0i);
                OUT(5, e1r - c1r, e1i - c1i);
                OUT(6, e2r - c2r, e2i - c2i);
                OUT(7, e3r - c3r, e3i - c3i);
#undef OUT
            }
        }
    }
}

/* Radix-2 pass (only for n = 2: m = 1, no twiddles). */
static void radix2_last(const struct fft_pass *ps, const double *restrict x, double *restrict y)
{
    const int s = ps->s;
    const size_t step = (size_t)s * ELEM;
    for (int q = 0; q < s; ++q) {
        const double *a = x + (size_t)q * ELEM;
        double *o = y + (size_t)q * ELEM;
#pragma omp simd
        for (int l = 0; l < ELEM; ++l) {
            double u = a[l], v = a[step + l];
            o[l] = u + v;
            o[step + l] = u - v;
        }
    }
}

static void run_passes(const struct fft_plan *pl, int dir, const double *x, double *y)
{
    for (int k = 0; k < pl->npasses; ++k) {
        const struct fft_pass *ps = &pl->pass[k];
        if (ps->radix == 2) radix2_last(ps, x, y);
        else if (ps->radix == 8) {
            if (ps->m == 1) {
                if (dir == 0) radix8_pass(ps, 0, 0, x, y);
                else radix8_pass(ps, 1, 0, x, y);
            } else {
                if (dir == 0) radix8_pass(ps, 0, 1, x, y);
                else radix8_pass(ps, 1, 1, x, y);
            }
        } else if (ps->m == 1) {
            if (dir == 0) radix4_last(ps, 0, x, y);
            else radix4_last(ps, 1, x, y);
        } else {
            if (dir == 0) radix4_pass(ps, 0, x, y);
            else radix4_pass(ps, 1, x, y);
        }
        const double *t = x;
        x = y;
        y = (double *)t;
    }
}

/* Transforms the FFTB lines held in buf (n elements); work is scratch of the same size.
 * Returns where the result is (buf or work). dir 0: forward (+1), 1: inverse (-1). */
static double *fft_block(const struct fft_plan *pl, int dir, double *buf, double *work)
{
    run_passes(pl, dir, buf, work);
    return (pl->npasses % 2 == 0) ? buf : work;
}

/* ------------------------------------------------------------ the state -- */

/* The big arrays: 2 MiB aligned, with transparent huge pages asked for where the system
 * offers them (the strided z passes touch one page per element otherwise). */
static void zero_fill(void *p, size_t bytes)
{
    /* in parallel: the threads touch the pages first, and the memory is really there */
    char *c = p;
    const size_t chunk = (size_t)1 << 21;
    const long nchunks = (long)((bytes + chunk - 1) / chunk);
#pragma omp parallel for schedule(static)
    for (long i = 0; i < nchunks; ++i) {
        size_t off = (size_t)i * chunk;
        memset(c + off, 0, bytes - off < chunk ? bytes - off : chunk);
    }
}

static void *big_alloc(size_t bytes, const char *what)
{
    const size_t align = (size_t)2 << 20;
    size_t size = (bytes + align - 1) / align * align;
    if (size == 0) size = align;
#ifdef HPCEVAL_SMPI_FOLD
    /* Folded (SMPI): every big array of every rank maps onto the same pages. */
    void *p = NPB_FOLDABLE_ALLOC(size, what);
#else
    void *p = aligned_alloc(align, size);
    if (p == NULL) npb_fail("cannot allocate %zu bytes for %s", size, what);
#ifdef MADV_HUGEPAGE
    (void)madvise(p, size, MADV_HUGEPAGE); /* advice only: ignored where unsupported */
#endif
#endif
    zero_fill(p, size);
    return p;
}

static void big_free(void *p)
{
    NPB_FOLDABLE_FREE(p);
}

struct ft {
    const struct ft_class *cls;
    int nx, ny, nz, niter;
    int np, rank;
    int nzl, nyl;        /* z planes per rank (physical), y values per rank (spectral) */
    int zstart, ystart;  /* first global z plane / y value of this rank */
    int nxs, xstart;     /* x values per rank (spectral) and the first: nx, 0 for the slabs */
    int nyp, ypstart;    /* y rows per physical plane and the first: ny, 0 for the slabs */
    int pencils;         /* 2-D layout: p1 x p2 ranks (slabs: p1 = 1) */
    int p1, p2, r1, r2;  /* rank = r2 * p1 + r1 */
    MPI_Comm comm1, comm2; /* the p1 ranks of the same r2 / the p2 ranks of the same r1 */
    size_t block1;       /* pencils: points exchanged with each rank of comm1 */
    size_t nlocal;       /* points per rank */
    size_t zpitch;       /* spectral layout: distance between z planes (nyl*nx + pad) */
    size_t ppitch;       /* physical layout: distance between z planes (ny*nx + pad) */
    size_t block;        /* points exchanged with each rank: nzl * zpitch */
    size_t nalloc;       /* complex numbers per array: nz * zpitch */
    struct fft_plan px, py, pz;
    dcomplex *u0;        /* spectrum, layout [z][y_local][x] */
    long *kx2, *ky2, *kz2;        /* squared frequencies (index map) */
    double *ev_x, *ev_y, *ev_z;   /* evolve factors of the current iteration, per dimension */
    dcomplex *buf_a;     /* physical field / send buffer */
    dcomplex *buf_b;     /* receive buffer (same as buf_a on one rank) */
    int nthreads;
    int zgroup, ygroup;  /* FFT blocks of the z passes / y FFTs taken together */
    double **scratch;    /* per thread: FFT blocks, scratch_doubles() */
    double **planebuf;   /* plane buffers P (one per thread, or one shared): nx*ny complex */
    int nplanebufs;
    MPI_Datatype ctype;
    double sums[FT_MAX_ITER][2];
};

/* Moving FFTB consecutive complex numbers (a "row") between memory and the lane format of a
 * block element (FFTB real parts, then FFTB imaginary parts). Results that go to memory and are
 * not read again soon (the transpose buffers, the spectrum) are written with non-temporal
 * stores where the processor has them, which saves reading every line before writing it. */
static inline void get_lanes(const dcomplex *restrict s, double *restrict o)
{
#pragma omp simd
    for (int l = 0; l < FFTB; ++l) {
        o[l] = s[l].re;
        o[FFTB + l] = s[l].im;
    }
}

static inline void put_lanes(dcomplex *restrict o, const double *restrict s, int stream)
{
#if defined(__AVX__) && FFTB % 4 == 0
    if (stream) {
        for (int l = 0; l < FFTB; l += 4) {
            __m256d re = _mm256_load_pd(s + l), im = _mm256_load_pd(s + FFTB + l);
            __m256d lo = _mm256_unpacklo_pd(re, im), hi = _mm256_unpackhi_pd(re, im);
            _mm256_stream_pd(&o[l].re, _mm256_permute2f128_pd(lo, hi, 0x20));
            _mm256_stream_pd(&o[l + 2].re, _mm256_permute2f128_pd(lo, hi, 0x31));
        }
        return;
    }
#elif defined(__SSE2__)
    if (stream) {
        for (int l = 0; l < FFTB; ++l) _mm_stream_pd(&o[l].re, _mm_set_pd(s[FFTB + l], s[l]));
        return;
    }
#else
    (void)stream;
#endif
#pragma omp simd
    for (int l = 0; l < FFTB; ++l) {
        o[l].re = s[l];
        o[l].im = s[FFTB + l];
    }
}

/* Orders the non-temporal stores of this thread before what follows (a barrier, MPI). */
static inline void stream_fence(void)
{
#if defined(__SSE2__)
    _mm_sfence();
#endif
}

/* Element e of a line lies at base + (e / inner_n) * outer + (e % inner_n) * inner: a plain
 * stride (inner_n = n) or the blocks of a transpose buffer (one block per rank). The FFTB lines
 * of a block are consecutive complex numbers. */
struct lines {
    const dcomplex *base;
    size_t inner_n, inner, outer;
};

#if defined(__AVX__)
/* In-register transpose of a 4x4 matrix of doubles (rows r0..r3). */
#define TRANSPOSE4(r0, r1, r2, r3)                                                            \
    do {                                                                                      \
        __m256d t0_ = _mm256_unpacklo_pd(r0, r1), t1_ = _mm256_unpackhi_pd(r0, r1);          \
        __m256d t2_ = _mm256_unpacklo_pd(r2, r3), t3_ = _mm256_unpackhi_pd(r2, r3);          \
        r0 = _mm256_permute2f128_pd(t0_, t2_, 0x20);                                          \
        r1 = _mm256_permute2f128_pd(t1_, t3_, 0x20);                                          \
        r2 = _mm256_permute2f128_pd(t0_, t2_, 0x31);                                          \
        r3 = _mm256_permute2f128_pd(t1_, t3_, 0x31);                                          \
    } while (0)
#endif

/* Transposes a tile of FFTB elements x FFTB lanes (both contiguous, in L1): element e, lane l
 * of src becomes element l, lane e of dst (real and imaginary halves alike). */
static void tile_transpose(const double *restrict src, double *restrict dst)
{
#if defined(__AVX__) && FFTB % 4 == 0
    for (int h = 0; h < ELEM; h += FFTB)         /* real half, imaginary half */
        for (int e = 0; e < FFTB; e += 4)
            for (int l = 0; l < FFTB; l += 4) {
                const double *a = src + (size_t)e * ELEM + h + l;
                __m256d r0 = _mm256_load_pd(a), r1 = _mm256_load_pd(a + ELEM);
                __m256d r2 = _mm256_load_pd(a + 2 * ELEM), r3 = _mm256_load_pd(a + 3 * ELEM);
                TRANSPOSE4(r0, r1, r2, r3);
                double *o = dst + (size_t)l * ELEM + h + e;
                _mm256_store_pd(o, r0);
                _mm256_store_pd(o + ELEM, r1);
                _mm256_store_pd(o + 2 * ELEM, r2);
                _mm256_store_pd(o + 3 * ELEM, r3);
            }
#else
    for (int e = 0; e < FFTB; ++e)
        for (int l = 0; l < FFTB; ++l) {
            dst[l * ELEM + e] = src[e * ELEM + l];
            dst[l * ELEM + FFTB + e] = src[e * ELEM + FFTB + l];
        }
#endif
}

/* FFTB rows of n complex numbers (row l at rows[l]) -> block of n elements whose lane l is
 * row l. */
static void rows_to_block(const dcomplex *const *rows, int n, double *restrict dst)
{
#if defined(__AVX__) && FFTB % 4 == 0
    for (int l = 0; l < FFTB; l += 4) {
        const double *a0 = &rows[l]->re, *a1 = &rows[l + 1]->re;
        const double *a2 = &rows[l + 2]->re, *a3 = &rows[l + 3]->re;
        for (int e = 0; e < n; e += 2) {
            /* row l+i: re(e) im(e) re(e+1) im(e+1) -> re(e), im(e), re(e+1), im(e+1) over i */
            __m256d r0 = _mm256_load_pd(a0 + 2 * e), r1 = _mm256_load_pd(a1 + 2 * e);
            __m256d r2 = _mm256_load_pd(a2 + 2 * e), r3 = _mm256_load_pd(a3 + 2 * e);
            TRANSPOSE4(r0, r1, r2, r3);
            double *o = dst + (size_t)e * ELEM + l;
            _mm256_store_pd(o, r0);
            _mm256_store_pd(o + FFTB, r1);
            _mm256_store_pd(o + ELEM, r2);
            _mm256_store_pd(o + ELEM + FFTB, r3);
        }
    }
#else
    for (int l = 0; l < FFTB; ++l)
        for (int e = 0; e < n; ++e) {
            dst[(size_t)e * ELEM + l] = rows[l][e].re;
            dst[(size_t)e * ELEM + FFTB + l] = rows[l][e].im;
        }
#endif
}

/* The inverse of rows_to_block: lane l of the n elements goes to row rows[l] (non-temporal
 * stores with `stream`, where available). */
static void block_to_rows(const double *restrict src, int n, dcomplex *const *rows, int stream)
{
#if defined(__AVX__) && FFTB % 4 == 0
    for (int l = 0; l < FFTB; l += 4) {
        double *a0 = &rows[l]->re, *a1 = &rows[l + 1]->re;
        double *a2 = &rows[l + 2]->re, *a3 = &rows[l + 3]->re;
        for (int e = 0; e < n; e += 2) {
            const double *i = src + (size_t)e * ELEM + l;
            __m256d r0 = _mm256_load_pd(i), r1 = _mm256_load_pd(i + FFTB);
            __m256d r2 = _mm256_load_pd(i + ELEM), r3 = _mm256_load_pd(i + ELEM + FFTB);
            TRANSPOSE4(r0, r1, r2, r3);
            if (stream) {
                _mm256_stream_pd(a0 + 2 * e, r0);
                _mm256_stream_pd(a1 + 2 * e, r1);
                _mm256_stream_pd(a2 + 2 * e, r2);
                _mm256_stream_pd(a3 + 2 * e, r3);
            } else {
                _mm256_store_pd(a0 + 2 * e, r0);
                _mm256_store_pd(a1 + 2 * e, r1);
                _mm256_store_pd(a2 + 2 * e, r2);
                _mm256_store_pd(a3 + 2 * e, r3);
            }
        }
    }
#else
    (void)stream;
    for (int l = 0; l < FFTB; ++l)
        for (int e = 0; e < n; ++e) {
            rows[l][e].re = src[(size_t)e * ELEM + l];
            rows[l][e].im = src[(size_t)e * ELEM + FFTB + l];
        }
#endif
}

/* Per thread: the FFT blocks (see scratch_doubles). */
static double *thread_scratch(struct ft *ft)
{
    int t = 0;
#ifdef _OPENMP
    t = omp_get_thread_num();
#endif
    return ft->scratch[t];
}

/* Doubles of scratch per thread: a block and its work space for the x FFTs, ygroup work
 * spaces for the y FFTs, or zgroup blocks and work spaces for the z FFTs. */
static size_t scratch_doubles(const struct ft *ft)
{
    size_t x = (size_t)2 * ft->nx;
    size_t y = (size_t)(ft->pencils ? 2 : 1) * ft->ygroup * ft->ny;
    size_t z = (size_t)2 * ft->zgroup * ft->nz;
    size_t most = x > y ? x : y;
    return (most > z ? most : z) * ELEM;
}

/* Blocks taken together: up to RUN/FFTB, dividing nx/FFTB, with scratch up to ~1 MiB. */
static int group_size(int nx, size_t bytes_per_block)
{
    int g = 1;
    while (2 * g * FFTB <= RUN && nx % (2 * g * FFTB) == 0 &&
           2 * g * bytes_per_block <= ((size_t)1 << 20))
        g *= 2;
    return g;
}

/* The physical-space half of a 3-D FFT works on one z plane at a time through a plane buffer P
 * that holds the plane as nx/FFTB blocks [xb][y][lanes x] (16*nx*ny bytes: 1 MiB for class A,
 * 2 MiB for B, kept in the caches): the x FFTs of FFTB consecutive rows, read row by row from
 * memory, go to P transposed tile by tile; then the y FFTs run in P and go to memory. Forward: physical field -> send buffer; inverse:
 * receive buffer -> physical field (the inverse also transforms x first: the 2-D transform of
 * the plane is the same). Row y of the source, or element y of a destination line, lies at
 * base + (y / inner_n) * outer + (y % inner_n) * inner (struct lines). */

/* x FFTs of rows yb*FFTB.. of the plane `src`, into P. */
static void x_block(struct ft *ft, int dir, struct lines src, int yb, double *P, double *scr)
{
    const int nx = ft->nx, ny = ft->ny;
    double *work = scr + (size_t)nx * ELEM;
    const dcomplex *rows[FFTB];
    for (int l = 0; l < FFTB; ++l) {
        size_t y = (size_t)yb * FFTB + l;
        rows[l] = src.base + (y / src.inner_n) * src.outer + (y % src.inner_n) * src.inner;
    }
    rows_to_block(rows, nx, scr);
    double *res = fft_block(&ft->px, dir, scr, work);
    for (int xb = 0; xb < nx / FFTB; ++xb)
        tile_transpose(res + (size_t)xb * FFTB * ELEM,
                       P + ((size_t)xb * ny + (size_t)yb * FFTB) * ELEM);
}

/* y FFTs of blocks xg*ygroup.. (ygroup blocks) of P, into the lines x = xg*ygroup*FFTB.. of
 * `dst`, written in runs of ygroup*FFTB complex numbers. */
static void y_group(struct ft *ft, int dir, double *P, int xg, struct lines dst, double *scr)
{
    const int G = ft->ygroup, ny = ft->ny;
    double *res[RUN / FFTB];
    for (int k = 0; k < G; ++k)
        res[k] = fft_block(&ft->py, dir, P + ((size_t)xg * G + k) * ny * ELEM,
                           scr + (size_t)k * ny * ELEM);
    dcomplex *base = (dcomplex *)dst.base + (size_t)xg * G * FFTB;
    for (int y = 0; y < ny; ++y) {
        dcomplex *row = base + (y / dst.inner_n) * dst.outer + (y % dst.inner_n) * dst.inner;
        for (int k = 0; k < G; ++k)
            put_lanes(row + (size_t)k * FFTB, res[k] + (size_t)y * ELEM, 1);
    }
}

/* Source rows and destination lines of plane zl. Forward: physical [zl][y][x] -> send
 * [rank][zl][y_local][x]; inverse: receive [rank][zl][y_local][x] -> physical. */
static void plane_lines(const struct ft *ft, int dir, const dcomplex *src, dcomplex *dst, int zl,
                        struct lines *in, struct lines *out)
{
    struct lines phys = {NULL, (size_t)ft->ny, (size_t)ft->nx, 0};
    struct lines trans = {NULL, (size_t)ft->nyl, (size_t)ft->nx, ft->block};
    *in = dir == 0 ? phys : trans;
    *out = dir == 0 ? trans : phys;
    in->base = src + (size_t)zl * (dir == 0 ? ft->ppitch : ft->zpitch);
    out->base = dst + (size_t)zl * (dir == 0 ? ft->zpitch : ft->ppitch);
}

/* x and y FFTs of every local z plane. With at least as many planes as threads, every thread
 * takes whole planes with its own P; otherwise the threads share one P and split the blocks
 * of each plane. */
static void plane_passes(struct ft *ft, int dir, const dcomplex *src, dcomplex *dst)
{
    const int nzl = ft->nzl, nxg = ft->nx / (FFTB * ft->ygroup), nyb = ft->ny / FFTB;
    const int private_planes = nzl >= ft->nthreads;
#pragma omp parallel
    {
        double *scr = thread_scratch(ft);
        struct lines in, out;
        if (private_planes) {
            int t = 0;
#ifdef _OPENMP
            t = omp_get_thread_num();
#endif
            double *P = ft->planebuf[t];
#pragma omp for schedule(static)
            for (int zl = 0; zl < nzl; ++zl) {
                plane_lines(ft, dir, src, dst, zl, &in, &out);
                for (int b = 0; b < nyb; ++b) x_block(ft, dir, in, b, P, scr);
                for (int b = 0; b < nxg; ++b) y_group(ft, dir, P, b, out, scr);
            }
        } else {
            double *P = ft->planebuf[0];
            for (int zl = 0; zl < nzl; ++zl) {
                plane_lines(ft, dir, src, dst, zl, &in, &out);
#pragma omp for schedule(static)
                for (int b = 0; b < nyb; ++b) x_block(ft, dir, in, b, P, scr);
#pragma omp for schedule(static)
                for (int b = 0; b < nxg; ++b) y_group(ft, dir, P, b, out, scr);
            }
        }
        stream_fence();
    }
}

/* z FFTs over the spectral layout [z][y_local][x] (complete z lines). The lines are taken
 * zgroup blocks (zgroup*FFTB consecutive x) at a time, so that every z row is read and
 * written in runs of zgroup*FFTB complex numbers.
 * Forward: src = receive buffer -> u0. Inverse: src = u0 times the evolve factors of the
 * iteration (evolve, which leaves u0 as it is) -> dst = send buffer, whose blocks by
 * destination rank are the rank's z planes. */
static void z_pass(struct ft *ft, int dir, const dcomplex *src, dcomplex *dst)
{
    const int G = ft->zgroup, nz = ft->nz, ngroups = ft->nxs / (G * FFTB), nyl = ft->nyl;
    const size_t zpitch = ft->zpitch, bstride = (size_t)2 * nz * ELEM;
#pragma omp parallel
    {
        double *scr = thread_scratch(ft);
        double *res[RUN / FFTB];
#pragma omp for schedule(static)
        for (int i = 0; i < nyl * ngroups; ++i) {
            const size_t off = (size_t)(i / ngroups) * ft->nxs + (size_t)(i % ngroups) * G * FFTB;
            for (int z = 0; z < nz; ++z) {
                const size_t at = off + (size_t)z * zpitch;
                if (dir == 0) {
                    for (int k = 0; k < G; ++k)
                        get_lanes(src + at + (size_t)k * FFTB, scr + k * bstride + (size_t)z * ELEM);
                } else {
                    const double fzy = ft->ev_z[z] * ft->ev_y[i / ngroups];
                    const double *fx = ft->ev_x + (off % ft->nxs);
                    for (int k = 0; k < G; ++k) {
                        const dcomplex *restrict u = src + at + (size_t)k * FFTB;
                        double *restrict o = scr + k * bstride + (size_t)z * ELEM;
#pragma omp simd
                        for (int l = 0; l < FFTB; ++l) {
                            double f = fzy * fx[k * FFTB + l];
                            o[l] = u[l].re * f;
                            o[FFTB + l] = u[l].im * f;
                        }
                    }
                }
            }
            for (int k = 0; k < G; ++k) {
                double *b = scr + k * bstride;
                res[k] = fft_block(&ft->pz, dir, b, b + (size_t)nz * ELEM);
            }
            dcomplex *out = dir == 0 ? ft->u0 : dst;
            for (int z = 0; z < nz; ++z)
                for (int k = 0; k < G; ++k)
                    put_lanes(out + off + (size_t)z * zpitch + (size_t)k * FFTB,
                              res[k] + (size_t)z * ELEM, 1);
        }
        stream_fence();
    }
}

/* The transposes: every rank of the communicator sends block r of `send` to its rank r. */
static dcomplex *transpose(MPI_Comm comm, int nranks, size_t count, dcomplex *send,
                           dcomplex *recv, MPI_Datatype type)
{
    if (nranks == 1) return send;
    NPB_CHECK_MPI(MPI_Alltoall(send, (int)count, type, recv, (int)count, type, comm));
    return recv;
}

/* ------------------------------------------------- the 2-D (pencil) layout -- */

/* For more ranks than z planes: a p1 x p2 grid of ranks, rank = r2 * p1 + r1, with p2 = nz and
 * p1 = np / nz. As the original's 2-D layout, a 3-D FFT then needs two Alltoalls, over the
 * ranks of a grid row and of a grid column; the original's grid is nz x np/nz the other way
 * round (its first transpose runs over nz ranks), which would leave fewer x values per rank
 * than the FFTB lanes of a block for most classes. Layouts of a rank:
 *   physical  [z_local][y_phys][x]: z planes r2*nzl.. (nzl = nz/p2), rows y = r1*nyp.. (nyp =
 *             ny/p1), all x;
 *   middle    all y, x values r1*nxs.. (nxs = nx/p1), held as the blocks of the first
 *             transpose (over comm1, the p1 ranks of one r2): [r1'][z_local][y_phys][x_s];
 *   spectral  [z][y_local][x_s]: all z, y values r2*nyl.. (nyl = ny/p2), as in the slab layout
 *             (second transpose, over comm2, the p2 ranks of one r1).
 * forward: x FFTs (physical -> comm1 blocks) -> Alltoall(comm1) -> y FFTs (-> comm2 blocks)
 *          -> Alltoall(comm2) -> z FFTs -> u0; the inverse goes back the same way. */

/* x FFTs. Forward: physical rows -> send blocks of comm1 (each row cut into p1 pieces of nxs);
 * inverse: receive blocks of comm1 -> physical rows. */
static void pencil_x_pass(struct ft *ft, int dir, const dcomplex *src, dcomplex *dst)
{
    const int nx = ft->nx, nxs = ft->nxs, p1 = ft->p1;
    const long nblocks = (long)ft->nzl * ft->nyp / FFTB; /* FFTB consecutive rows each */
#pragma omp parallel
    {
        double *scr = thread_scratch(ft), *work = scr + (size_t)nx * ELEM;
        const dcomplex *in[FFTB];
        dcomplex *out[FFTB];
#pragma omp for schedule(static)
        for (long b = 0; b < nblocks; ++b) {
            const size_t row = (size_t)b * FFTB;
            if (dir == 0) {
                for (int l = 0; l < FFTB; ++l) in[l] = src + (row + l) * nx;
                rows_to_block(in, nx, scr);
            } else {
                for (int q = 0; q < p1; ++q) {
                    for (int l = 0; l < FFTB; ++l) in[l] = src + q * ft->block1 + (row + l) * nxs;
                    rows_to_block(in, nxs, scr + (size_t)q * nxs * ELEM);
                }
            }
            double *res = fft_block(&ft->px, dir, scr, work);
            if (dir == 0) {
                for (int q = 0; q < p1; ++q) {
                    for (int l = 0; l < FFTB; ++l) out[l] = dst + q * ft->block1 + (row + l) * nxs;
                    block_to_rows(res + (size_t)q * nxs * ELEM, nxs, out, 1);
                }
            } else {
                for (int l = 0; l < FFTB; ++l) out[l] = dst + (row + l) * nx;
                block_to_rows(res, nx, out, 1);
            }
        }
        stream_fence();
    }
}

/* y FFTs between the blocks of comm1 ([r1'][z_local][y_phys][x_s], y = r1'*nyp + y_phys) and
 * those of comm2 ([r2'][z_local][y_local][x_s], y = r2'*nyl + y_local): forward 1 -> 2,
 * inverse 2 -> 1; ygroup blocks of lines (consecutive x) at a time. */
static void pencil_y_pass(struct ft *ft, int dir, const dcomplex *src, dcomplex *dst)
{
    const int G = ft->ygroup, ny = ft->ny, ngroups = ft->nxs / (G * FFTB);
    const size_t bstride = (size_t)2 * ny * ELEM;
    const size_t nxs = (size_t)ft->nxs, stride1 = (size_t)ft->nyp * nxs;
#pragma omp parallel
    {
        double *scr = thread_scratch(ft);
        double *res[RUN / FFTB];
#pragma omp for schedule(static)
        for (int i = 0; i < ft->nzl * ngroups; ++i) {
            const size_t zl = (size_t)(i / ngroups), x0 = (size_t)(i % ngroups) * G * FFTB;
            struct lines one = {NULL, (size_t)ft->nyp, nxs, ft->block1};
            struct lines two = {NULL, (size_t)ft->nyl, nxs, ft->block};
            struct lines in = dir == 0 ? one : two, out = dir == 0 ? two : one;
            in.base = src + zl * (dir == 0 ? stride1 : ft->zpitch) + x0;
            out.base = dst + zl * (dir == 0 ? ft->zpitch : stride1) + x0;
            for (int y = 0; y < ny; ++y) {
                const dcomplex *r = in.base + (y / in.inner_n) * in.outer + (y % in.inner_n) * in.inner;
                for (int k = 0; k < G; ++k)
                    get_lanes(r + (size_t)k * FFTB, scr + k * bstride + (size_t)y * ELEM);
            }
            for (int k = 0; k < G; ++k) {
                double *b = scr + k * bstride;
                res[k] = fft_block(&ft->py, dir, b, b + (size_t)ny * ELEM);
            }
            for (int y = 0; y < ny; ++y) {
                dcomplex *r = (dcomplex *)out.base + (y / out.inner_n) * out.outer +
                              (y % out.inner_n) * out.inner;
                for (int k = 0; k < G; ++k)
                    put_lanes(r + (size_t)k * FFTB, res[k] + (size_t)y * ELEM, 1);
            }
        }
        stream_fence();
    }
}

/* ------------------------------------------------------ setup, checksum -- */

/* NPB's index map: frequency k = i for 0-based i < n/2, i - n otherwise; its squares for
 * this rank's x and y values (spectral layout) and z. */
static void compute_indexmap(struct ft *ft)
{
    for (int xl = 0; xl < ft->nxs; ++xl) {
        long k = (ft->xstart + xl + ft->nx / 2) % ft->nx - ft->nx / 2;
        ft->kx2[xl] = k * k;
    }
    for (int yl = 0; yl < ft->nyl; ++yl) {
        long k = (ft->ystart + yl + ft->ny / 2) % ft->ny - ft->ny / 2;
        ft->ky2[yl] = k * k;
    }
    for (int z = 0; z < ft->nz; ++z) {
        long k = (z + ft->nz / 2) % ft->nz - ft->nz / 2;
        ft->kz2[z] = k * k;
    }
}

/* The evolve factors of iteration t: exp(-4 alpha pi^2 (kx^2 + ky^2 + kz^2) t), the product of
 * one factor per dimension (the spectrum u0 is multiplied by it into the inverse transform). */
static void evolve_factors(struct ft *ft, int t)
{
    const double ap = -4.0 * FT_ALPHA * FT_PI * FT_PI;
    for (int xl = 0; xl < ft->nxs; ++xl) ft->ev_x[xl] = exp(ap * (double)(ft->kx2[xl] * t));
    for (int yl = 0; yl < ft->nyl; ++yl) ft->ev_y[yl] = exp(ap * (double)(ft->ky2[yl] * t));
    for (int z = 0; z < ft->nz; ++z) ft->ev_z[z] = exp(ap * (double)(ft->kz2[z] * t));
}

/* The NPB generator x <- a x mod 2^46 in doubles (exact: 23-bit halves), written so that
 * independent chains vectorise; the values are those of randlc/vranlc. */
struct lcg_mult {
    double hi, lo; /* the multiplier's 23-bit halves */
};

static struct lcg_mult lcg_split(double a)
{
    struct lcg_mult m;
    m.hi = (double)(long long)(a * (1.0 / 8388608.0));
    m.lo = a - 8388608.0 * m.hi;
    return m;
}

/* Integer part of 0 <= v < 2^63 (a conversion, which vectorises). */
static inline double int_part(double v)
{
    return (double)(long long)v;
}

static inline double lcg_step(struct lcg_mult m, double x)
{
    const double r23 = 1.0 / 8388608.0, t23 = 8388608.0;
    const double r46 = r23 * r23, t46 = t23 * t23;
    double x_hi = int_part(r23 * x);
    double x_lo = x - t23 * x_hi;
    double cross = m.hi * x_lo + m.lo * x_hi; /* < 2^47: exact */
    double cross_hi = int_part(r23 * cross);
    double sum = t23 * (cross - t23 * cross_hi) + m.lo * x_lo;
    return sum - t46 * int_part(r46 * sum);
}

#define LCG_LANES 16

/* y[i] = 2^-46 x_{i+1} for i < count, where x_0 = *x; *x becomes x_count. LCG_LANES chains
 * advance together by a^LCG_LANES. */
static void lcg_fill(long count, double *x, double *restrict y)
{
    const struct lcg_mult a1 = lcg_split(NPB_A);
    const struct lcg_mult ak = lcg_split(npb_jump_multiplier(NPB_A, LCG_LANES));
    const double r46 = 1.0 / 70368744177664.0;
    double lane[LCG_LANES];
    double s = *x;
    long i = 0;
    if (count >= LCG_LANES) {
        for (int j = 0; j < LCG_LANES; ++j) lane[j] = s = lcg_step(a1, s);
        for (; i + LCG_LANES <= count; i += LCG_LANES) {
#pragma omp simd
            for (int j = 0; j < LCG_LANES; ++j) {
                y[i + j] = r46 * lane[j];
                lane[j] = lcg_step(ak, lane[j]);
            }
        }
        s = y[i - 1] * 70368744177664.0; /* x_i, exactly (a power-of-two scaling) */
    }
    for (; i < count; ++i) {
        s = lcg_step(a1, s);
        y[i] = r46 * s;
    }
    *x = s;
}

/* The initial field in physical layout [zl][y][x]: point (x, y, z) takes numbers 2i+1 and
 * 2i+2 of the generator (real, imaginary), i = (z*ny + y)*nx + x, seeded with 314159265.
 * Every thread jumps to the first line of its share and runs the generator from there. */
static void compute_initial_conditions(struct ft *ft, dcomplex *u)
{
    const int nx = ft->nx, ny = ft->nyp; /* this rank's rows: y = ypstart.. of every plane */
    const long lines = (long)ft->nzl * ny;
#pragma omp parallel
    {
        int nt = 1, t = 0;
#ifdef _OPENMP
        nt = omp_get_num_threads();
        t = omp_get_thread_num();
#endif
        long l0 = lines * t / nt, l1 = lines * (t + 1) / nt;
        if (l1 > l0) {
            for (long l = l0; l < l1;) { /* the lines of one plane at a time */
                long zl = l / ny, y = l % ny, n = ny - y < l1 - l ? ny - y : l1 - l;
                long line = (ft->zstart + zl) * (long)ft->ny + ft->ypstart + y; /* global */
                double x0 = NPB_SEED;
                randlc(&x0, npb_jump_multiplier(NPB_A, 2LL * nx * line));
                lcg_fill(2L * nx * n, &x0, (double *)(u + zl * ft->ppitch + y * nx));
                l += n;
            }
        }
    }
}

/* Checksum of iteration `it`: sum of u at (j mod nx, 3j mod ny, 5j mod nz), j = 1..1024, over
 * the ranks owning those points, divided by nx*ny*nz. */
static void checksum(struct ft *ft, int it, const dcomplex *u)
{
    double local[2] = {0.0, 0.0}, global[2];
    for (int j = 1; j <= 1024; ++j) {
        int q = j % ft->nx, r = (3 * j) % ft->ny, s = (5 * j) % ft->nz;
        if (s >= ft->zstart && s < ft->zstart + ft->nzl && r >= ft->ypstart &&
            r < ft->ypstart + ft->nyp) {
            const dcomplex *p = u + (size_t)(s - ft->zstart) * ft->ppitch +
                                (size_t)(r - ft->ypstart) * ft->nx + q;
            local[0] += p->re;
            local[1] += p->im;
        }
    }
    NPB_CHECK_MPI(MPI_Allreduce(local, global, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    double ntotal = (double)ft->nx * ft->ny * ft->nz;
    ft->sums[it][0] = global[0] / ntotal;
    ft->sums[it][1] = global[1] / ntotal;
}

static void fft_init(struct ft *ft)
{
    plan_free(&ft->px);
    plan_free(&ft->py);
    plan_free(&ft->pz);
    plan_init(&ft->px, ft->nx);
    plan_init(&ft->py, ft->ny);
    plan_init(&ft->pz, ft->nz);
}

/* Build with -DFT_TIMERS for a breakdown of the timed section on stderr (rank 0). */
#ifdef FT_TIMERS
enum { T_INDEXMAP, T_INIT, T_FWD_PLANES, T_FWD_TRANSPOSE, T_FWD_Z, T_INV_Z, T_INV_TRANSPOSE,
       T_INV_PLANES, T_CHECKSUM, T_COUNT };
static const char *timer_names[T_COUNT] = {"indexmap", "init", "fwd x+y", "fwd alltoall",
                                           "fwd z", "evolve+inv z", "inv alltoall",
                                           "inv y+x", "checksum"};
static double timers[T_COUNT];
#define TIMED(k, stmt)                                                                       \
    do {                                                                                     \
        double t_ = MPI_Wtime();                                                             \
        stmt;                                                                                \
        timers[k] += MPI_Wtime() - t_;                                                       \
    } while (0)
static void report_timers(int rank)
{
    if (rank != 0) return;
    for (int k = 0; k < T_COUNT; ++k) fprintf(stderr, "ft timer %-14s %9.4f s\n", timer_names[k], timers[k]);
}
static void reset_timers(void) { memset(timers, 0, sizeof timers); }
#else
#define TIMED(k, stmt) stmt
static void report_timers(int rank) { (void)rank; }
static void reset_timers(void) {}
#endif

/* compute_indexmap, initial conditions, fft_init and the forward FFT (as the original). */
static void setup_and_forward(struct ft *ft)
{
    TIMED(T_INDEXMAP, compute_indexmap(ft));
    TIMED(T_INIT, compute_initial_conditions(ft, ft->buf_b));
    fft_init(ft);
    dcomplex *recv = ft->buf_b;
    if (ft->pencils) {
        TIMED(T_FWD_PLANES, pencil_x_pass(ft, 0, ft->buf_b, ft->buf_a));
        TIMED(T_FWD_TRANSPOSE, transpose(ft->comm1, ft->p1, ft->block1, ft->buf_a, ft->buf_b,
                                         ft->ctype));
        TIMED(T_FWD_PLANES, pencil_y_pass(ft, 0, ft->buf_b, ft->buf_a));
    } else {
        TIMED(T_FWD_PLANES, plane_passes(ft, 0, ft->buf_b, ft->buf_a));
    }
    TIMED(T_FWD_TRANSPOSE, recv = transpose(ft->comm2, ft->p2, ft->block, ft->buf_a, ft->buf_b,
                                            ft->ctype));
    TIMED(T_FWD_Z, z_pass(ft, 0, recv, ft->u0));
}

static void iterate(struct ft *ft)
{
    for (int it = 0; it < ft->niter; ++it) {
        /* Under SMPI with HPCEVAL_SMPI_SAMPLE the compute passes (no MPI inside) are
         * sampled: run for real the first times, then injected at their mean duration. */
        NPB_SAMPLED("ft-evolve") { evolve_factors(ft, it + 1); }
        NPB_SAMPLED("ft-inv-z") { TIMED(T_INV_Z, z_pass(ft, 1, ft->u0, ft->buf_a)); }
        dcomplex *recv, *phys;
        TIMED(T_INV_TRANSPOSE, recv = transpose(ft->comm2, ft->p2, ft->block, ft->buf_a,
                                                ft->buf_b, ft->ctype));
        if (ft->pencils) { /* (with p2 = 1 the first transpose leaves the data in buf_a) */
            dcomplex *mid = recv == ft->buf_a ? ft->buf_b : ft->buf_a;
            NPB_SAMPLED("ft-inv-y") { TIMED(T_INV_PLANES, pencil_y_pass(ft, 1, recv, mid)); }
            dcomplex *other = mid == ft->buf_a ? ft->buf_b : ft->buf_a;
            TIMED(T_INV_TRANSPOSE, recv = transpose(ft->comm1, ft->p1, ft->block1, mid, other,
                                                    ft->ctype));
            phys = mid;
            NPB_SAMPLED("ft-inv-x") { TIMED(T_INV_PLANES, pencil_x_pass(ft, 1, recv, phys)); }
        } else {
            phys = (ft->np == 1) ? recv : ft->buf_a;
            NPB_SAMPLED("ft-inv-planes") { TIMED(T_INV_PLANES, plane_passes(ft, 1, recv, phys)); }
        }
        TIMED(T_CHECKSUM, checksum(ft, it, phys));
    }
}

/* The decomposition, as the original: slabs of z planes (1-D layout) up to nz ranks, beyond
 * that the 2-D layout with p2 = nz and p1 = np / nz. NPB_FT_P1=<p1> in the environment forces
 * the 2-D layout with that p1 (to test it on few ranks). */
static void choose_layout(struct ft *ft)
{
    const int np = ft->np, nx = ft->nx, ny = ft->ny, nz = ft->nz;
    const int maxranks = (nz < ny ? nz : ny) * ((nx < ny ? nx : ny) / FFTB);
    int p1 = np > nz ? np / nz : 1;
    const char *forced = getenv("NPB_FT_P1");
    if (forced != NULL && *forced != '\0') {
        char *end;
        long v = strtol(forced, &end, 10);
        if (*end != '\0' || v < 1 || v > np || np % v != 0 || !npb_is_power_of_two((int)v))
            npb_fail("NPB_FT_P1=%s is not a power of two dividing the %d ranks", forced, np);
        p1 = (int)v;
    }
    const int p2 = np / p1;
    if (np > maxranks || p2 > nz || p2 > ny || nx / p1 < FFTB || ny / p1 < 1 ||
        (long)(nz / p2) * (ny / p1) < FFTB)
        npb_fail("ft class %c (%dx%dx%d) runs on at most %d ranks (slabs of z planes up to %d "
                 "ranks, then a %d x %d grid at most), got %d%s",
                 ft->cls->name, nx, ny, nz, maxranks, nz < ny ? nz : ny, maxranks / nz, nz, np,
                 forced != NULL && *forced != '\0' ? " with NPB_FT_P1" : "");
    ft->p1 = p1;
    ft->p2 = p2;
    ft->pencils = p1 > 1;
    ft->r1 = ft->rank % p1;
    ft->r2 = ft->rank / p1;
    ft->nzl = nz / p2;
    ft->zstart = ft->r2 * ft->nzl;
    ft->nyl = ny / p2; /* spectral y values */
    ft->ystart = ft->r2 * ft->nyl;
    ft->nxs = nx / p1; /* spectral x values */
    ft->xstart = ft->r1 * ft->nxs;
    ft->nyp = ny / p1; /* physical rows per plane */
    ft->ypstart = ft->r1 * ft->nyp;
    ft->nlocal = (size_t)nx * ny * nz / (size_t)np;
    ft->zpitch = (size_t)ft->nyl * ft->nxs;
    ft->ppitch = (size_t)ft->nyp * nx; /* the same as zpitch on one rank */
    if (ft->zpitch >= ZPAD_MIN) ft->zpitch += ZPAD;
    if (!ft->pencils && ft->ppitch >= ZPAD_MIN) ft->ppitch += ZPAD;
    ft->block = (size_t)ft->nzl * ft->zpitch;
    ft->block1 = (size_t)ft->nzl * ft->nyp * ft->nxs;
    ft->nalloc = (size_t)nz * ft->zpitch;
    if (ft->block > (size_t)2147483647 || ft->block1 > (size_t)2147483647)
        npb_fail("ft class %c on %d ranks: %zu points per rank pair exceed an MPI count",
                 ft->cls->name, np, ft->block);
    if (ft->pencils) {
        NPB_CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, ft->r2, ft->r1, &ft->comm1));
        NPB_CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, ft->r1, ft->r2, &ft->comm2));
    } else {
        ft->comm1 = MPI_COMM_NULL;
        ft->comm2 = MPI_COMM_WORLD; /* the transposes over all ranks */
    }
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
    choose_layout(&ft);
    ft.nthreads = npb_threads();

    char problem[160];
    snprintf(problem, sizeof problem,
             "{\"nx\":%d,\"ny\":%d,\"nz\":%d,\"niter\":%d,\"layout\":\"%s\",\"grid\":[%d,%d]}",
             ft.nx, ft.ny, ft.nz, ft.niter, ft.pencils ? "2d" : "1d", ft.p1, ft.p2);
    npb_print_header("ft", ft.cls->name, problem);

    ft.u0 = big_alloc(ft.nalloc * sizeof(dcomplex), "u0 (spectrum)");
    ft.kx2 = npb_alloc((size_t)ft.nxs * sizeof(long), "index map");
    ft.ky2 = npb_alloc((size_t)ft.nyl * sizeof(long), "index map");
    ft.kz2 = npb_alloc((size_t)ft.nz * sizeof(long), "index map");
    ft.ev_x = npb_alloc((size_t)ft.nxs * sizeof(double), "evolve factors");
    ft.ev_y = npb_alloc((size_t)ft.nyl * sizeof(double), "evolve factors");
    ft.ev_z = npb_alloc((size_t)ft.nz * sizeof(double), "evolve factors");
    ft.buf_a = big_alloc(ft.nalloc * sizeof(dcomplex), "field / transpose buffer");
    ft.buf_b = ft.np == 1 ? ft.buf_a
                          : big_alloc(ft.nalloc * sizeof(dcomplex), "transpose receive buffer");
    ft.zgroup = group_size(ft.nxs, (size_t)2 * ft.nz * ELEM * sizeof(double));
    ft.ygroup = group_size(ft.nxs, (size_t)(ft.pencils ? 2 : 1) * ft.ny * ELEM * sizeof(double));
    size_t scratch_bytes = scratch_doubles(&ft) * sizeof(double);
    ft.scratch = npb_alloc((size_t)ft.nthreads * sizeof(double *), "scratch pointers");
    for (int t = 0; t < ft.nthreads; ++t) {
        ft.scratch[t] = aligned_alloc(64, scratch_bytes);
        if (ft.scratch[t] == NULL) npb_fail("cannot allocate %zu bytes for FFT scratch", scratch_bytes);
        memset(ft.scratch[t], 0, scratch_bytes);
    }
    ft.nplanebufs = ft.pencils ? 0 : ft.nzl >= ft.nthreads ? ft.nthreads : 1;
    ft.planebuf = npb_alloc((size_t)ft.nplanebufs * sizeof(double *), "plane buffer pointers");
    for (int t = 0; t < ft.nplanebufs; ++t)
        ft.planebuf[t] = big_alloc((size_t)ft.nx * ft.ny * 2 * sizeof(double), "plane buffer");
    NPB_CHECK_MPI(MPI_Type_contiguous(2, MPI_DOUBLE, &ft.ctype));
    NPB_CHECK_MPI(MPI_Type_commit(&ft.ctype));

    /* Untimed warm-up: everything up to the forward FFT, as the original. */
    setup_and_forward(&ft);

    NPB_CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    reset_timers();
    double t0 = MPI_Wtime();
    setup_and_forward(&ft);
    iterate(&ft);
    double elapsed = MPI_Wtime() - t0, tmax;
    NPB_CHECK_MPI(MPI_Allreduce(&elapsed, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    report_timers(ft.rank);

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

    NPB_CHECK_MPI(MPI_Type_free(&ft.ctype));
    if (ft.pencils) {
        NPB_CHECK_MPI(MPI_Comm_free(&ft.comm1));
        NPB_CHECK_MPI(MPI_Comm_free(&ft.comm2));
    }
    for (int t = 0; t < ft.nthreads; ++t) free(ft.scratch[t]);
    free(ft.scratch);
    for (int t = 0; t < ft.nplanebufs; ++t) big_free(ft.planebuf[t]);
    free(ft.planebuf);
    plan_free(&ft.px);
    plan_free(&ft.py);
    plan_free(&ft.pz);
    if (ft.buf_b != ft.buf_a) big_free(ft.buf_b);
    big_free(ft.buf_a);
    free(ft.kx2);
    free(ft.ky2);
    free(ft.kz2);
    free(ft.ev_x);
    free(ft.ev_y);
    free(ft.ev_z);
    big_free(ft.u0);
    NPB_CHECK_MPI(MPI_Finalize());
    return res.verified ? 0 : 3;
}
