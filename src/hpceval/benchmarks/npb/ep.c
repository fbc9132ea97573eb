/* hpceval NPB kernel EP: the "embarrassingly parallel" benchmark (NPB 3.x definition).
 *
 * 2^(m+1) uniform pseudo-random numbers of the NPB generator (a = 5^13, seed 271828183) are
 * taken in pairs (x, y) mapped to [-1, 1]^2; every pair inside the unit disc gives two
 * Gaussian deviates by the Marsaglia polar method, X = x sqrt(-2 ln t / t) and
 * Y = y sqrt(-2 ln t / t) with t = x^2 + y^2. The kernel sums X and Y (sx, sy, verified
 * against the official values) and counts the pairs in the square annuli
 * l <= max(|X|, |Y|) < l + 1, l = 0..9 (q, reported without an official reference).
 *
 * The numbers come in 2^(m-16) batches of 2^16 pairs; batch k starts from the seed jumped
 * 2^17 * k steps from the origin, so the batches are independent. They are split in
 * contiguous blocks over the ranks (any count up to the number of batches; the first
 * `batches % ranks` ranks take one more) and, inside a rank, over the OpenMP threads. The
 * timed section ends with one MPI_Allreduce of (sx, sy, q).
 *
 * Speed: the generator recurrence is a serial chain (each number needs the previous one), so
 * a batch is produced by EP_LANES interleaved sub-sequences: lane l holds x_{j+l} and steps
 * by a^EP_LANES, giving exactly the reference numbers in the reference order with
 * independent, vectorizable multiplications (in 64-bit integers, see ep_gen_fill). Numbers
 * are made and consumed in small chunks that stay in the L1 cache. The Gaussian pairs are
 * computed branch-free (see ep_pairs). */
#define _POSIX_C_SOURCE 200809L
#include "npb_common.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define EP_MK 16                     /* log2 of the pairs per batch */
#define EP_NK (1 << EP_MK)           /* pairs per batch */
#define EP_NQ 10                     /* annuli */
#define EP_SEED 271828183.0          /* EP's own seed (NPB: s) */
#define EP_LANES 64                  /* interleaved generator lanes */
#define EP_CHUNK_PAIRS 1024          /* pairs made and consumed at a time (16 KiB of numbers) */
#define EP_TOLERANCE 1e-8

struct ep_class {
    char name;
    int m;
    double sx, sy;
};

/* verification.toml [ep] */
static const struct ep_class ep_classes[] = {
    {'S', 24, -3.247834652034740e3, -6.958407078382297e3},
    {'W', 25, -2.863319731645753e3, -6.320053679109499e3},
    {'A', 28, -4.295875165629892e3, -1.580732573678431e4},
    {'B', 30, 4.033815542441498e4, -2.660669192809235e4},
    {'C', 32, 4.764367927995374e4, -8.084072988043731e4},
    {'D', 36, 1.982481200946593e5, -1.020596636361769e5},
};

/* The generator in 64-bit integers (as NPB's own randi8 variant of randlc does): the seeds
 * are integers below 2^46 and x_{k+1} = a x_k mod 2^46 is the low 46 bits of the 64-bit
 * product, exactly the numbers of the double-precision randlc. One integer multiplication
 * and a mask per number, vectorizable across lanes. */
#define EP_M46 ((UINT64_C(1) << 46) - 1)
static const double R46 = 1.0 / 70368744177664.0; /* 2^-46 */

/* The state of one batch's generator: lane l holds the seed of the next number at offset l. */
struct ep_gen {
    uint64_t lane[EP_LANES];
    uint64_t step; /* a^EP_LANES mod 2^46 */
};

/* Positions the generator at batch `k`: the first number of the batch is x_1 = a * s_k with
 * s_k = s * a^(2 * EP_NK * k), as vranlc would produce it from seed s_k. */
static void ep_gen_start(struct ep_gen *g, long long k)
{
    double x = EP_SEED;
    randlc(&x, npb_jump_multiplier(NPB_A, 2LL * EP_NK * k));
    for (int l = 0; l < EP_LANES; ++l) {
        randlc(&x, NPB_A);
        g->lane[l] = (uint64_t)x;
    }
    g->step = (uint64_t)npb_jump_multiplier(NPB_A, EP_LANES);
}

/* The next n numbers (n a multiple of EP_LANES) of the batch, in the reference order. */
static void ep_gen_fill(struct ep_gen *restrict g, int n, double *restrict y)
{
    uint64_t *restrict lane = g->lane;
    const uint64_t a = g->step;
    for (int j = 0; j < n; j += EP_LANES) {
        for (int l = 0; l < EP_LANES; ++l) {
            y[j + l] = R46 * (double)(int64_t)lane[l];
            lane[l] = (lane[l] * a) & EP_M46;
        }
    }
}

struct ep_sums {
    double sx, sy;
    long long q[EP_NQ];
};

/* Gaussian pairs of one chunk of uniform numbers (2 * npairs of them, npairs at most
 * EP_CHUNK_PAIRS), accumulated in s in the reference order. The acceptance test is ~79 %
 * true at random, a branch that the processor would often mispredict, and each accepted
 * pair needs a long chain (log, division, square root): so the accepted pairs are first
 * gathered without branches, their logarithms taken in a tight loop, and the rest done in
 * a branch-free loop whose iterations overlap. The annulus is max((int)|X|, (int)|Y|), the
 * same as (int)max(|X|, |Y|), in integers so that it compiles to a conditional move. */
static void ep_pairs(const double *restrict y, int npairs, struct ep_sums *restrict s)
{
    double px[EP_CHUNK_PAIRS], py[EP_CHUNK_PAIRS], pt[EP_CHUNK_PAIRS], lg[EP_CHUNK_PAIRS];
    int n = 0;
    for (int i = 0; i < npairs; ++i) {
        double x1 = 2.0 * y[2 * i] - 1.0;
        double x2 = 2.0 * y[2 * i + 1] - 1.0;
        double t = x1 * x1 + x2 * x2;
        px[n] = x1;
        py[n] = x2;
        pt[n] = t;
        n += (t <= 1.0);
    }
    for (int i = 0; i < n; ++i) lg[i] = log(pt[i]);
    double sx = s->sx, sy = s->sy;
    long long q[EP_NQ];
    memcpy(q, s->q, sizeof q);
    for (int i = 0; i < n; ++i) {
        double f = sqrt(-2.0 * lg[i] / pt[i]);
        double g1 = px[i] * f, g2 = py[i] * f;
        int l1 = (int)fabs(g1), l2 = (int)fabs(g2);
        q[l1 > l2 ? l1 : l2] += 1;
        sx += g1;
        sy += g2;
    }
    memcpy(s->q, q, sizeof q);
    s->sx = sx;
    s->sy = sy;
}

int main(int argc, char **argv)
{
    int provided; /* MPI is called from the main thread only, outside parallel regions */
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    struct npb_options opt;
    npb_parse_args(argc, argv, "ep", &opt);
    int rank, nranks;
    NPB_CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    NPB_CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &nranks));

    const struct ep_class *cls = NULL;
    for (size_t i = 0; i < sizeof ep_classes / sizeof ep_classes[0]; ++i)
        if (ep_classes[i].name == opt.class_name) cls = &ep_classes[i];
    if (cls == NULL) npb_fail("no EP parameters for class %c", opt.class_name);

    const long long nbatches = 1LL << (cls->m - EP_MK);
    if (nranks > nbatches)
        npb_fail("ep class %c has %lld batches of 2^%d pairs: needs at most %lld ranks, got %d",
                 cls->name, nbatches, EP_MK, nbatches, nranks);

    char problem[128];
    snprintf(problem, sizeof problem, "{\"m\":%d,\"mk\":%d,\"batches\":%lld}", cls->m, EP_MK,
             nbatches);
    npb_print_header("ep", cls->name, problem);

    /* Contiguous block of batches for this rank: the first (nbatches % nranks) ranks one more. */
    long long per_rank = nbatches / nranks, extra = nbatches % nranks;
    long long my_count = per_rank + (rank < extra ? 1 : 0);
    long long my_first = rank * per_rank + (rank < extra ? rank : extra);

    int nthreads = npb_threads();
    struct ep_sums *thread_sums = npb_alloc(sizeof(struct ep_sums) * (size_t)nthreads,
                                            "per-thread sums");

    NPB_CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    double t0 = MPI_Wtime();

#pragma omp parallel num_threads(nthreads)
    {
        int tid = 0;
#ifdef _OPENMP
        tid = omp_get_thread_num();
#endif
        struct ep_sums s;
        memset(&s, 0, sizeof s);
        double y[2 * EP_CHUNK_PAIRS] __attribute__((aligned(64)));
        struct ep_gen g;
#ifdef HPCEVAL_SMPI_SAMPLE
        /* Simulated with sampling: the first batches of this rank run for real, the rest
         * are injected at their mean duration (every batch does the same work). */
        npb_note_sampling();
        SMPI_SAMPLE_LOCAL(long long b = 0, b < my_count, ++b, NPB_SMPI_SAMPLES, -1.0)
#else
#pragma omp for schedule(static)
        for (long long b = 0; b < my_count; ++b)
#endif
        {
            ep_gen_start(&g, my_first + b);
            for (int c = 0; c < EP_NK; c += EP_CHUNK_PAIRS) {
                ep_gen_fill(&g, 2 * EP_CHUNK_PAIRS, y);
                ep_pairs(y, EP_CHUNK_PAIRS, &s);
            }
        }
        thread_sums[tid] = s;
    }

    /* Threads combined in a fixed order, then the one reduction over the ranks. */
    double local[2 + EP_NQ] = {0}, global[2 + EP_NQ];
    for (int t = 0; t < nthreads; ++t) {
        local[0] += thread_sums[t].sx;
        local[1] += thread_sums[t].sy;
        for (int l = 0; l < EP_NQ; ++l) local[2 + l] += (double)thread_sums[t].q[l];
    }
    NPB_CHECK_MPI(MPI_Allreduce(local, global, 2 + EP_NQ, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    double elapsed = MPI_Wtime() - t0, tmax;
    NPB_CHECK_MPI(MPI_Allreduce(&elapsed, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    free(thread_sums);

    struct npb_result result;
    memset(&result, 0, sizeof result);
    result.kernel = "ep";
    result.class_name = cls->name;
    result.time_s = tmax;
    result.mops_total = ldexp(1.0, cls->m + 1) / tmax / 1e6;
    result.iterations = 0;
    result.verified = 1;
    npb_add_quantity(&result, "sx", global[0], cls->sx, EP_TOLERANCE);
    npb_add_quantity(&result, "sy", global[1], cls->sy, EP_TOLERANCE);

    /* The annulus counts and the number of Gaussian pairs have no official reference: they
     * go in the note for the record. */
    char note[512];
    double pairs = 0.0;
    for (int l = 0; l < EP_NQ; ++l) pairs += global[2 + l];
    int len = snprintf(note, sizeof note, "gaussian_pairs=%.0f q=[", pairs);
    for (int l = 0; l < EP_NQ && len > 0 && (size_t)len < sizeof note; ++l)
        len += snprintf(note + len, sizeof note - (size_t)len, "%s%.0f", l ? "," : "",
                        global[2 + l]);
    if (len > 0 && (size_t)len < sizeof note) snprintf(note + len, sizeof note - (size_t)len, "]");
    result.note = note;

    npb_print_result(&result);
    MPI_Finalize();
    return result.verified ? 0 : 3;
}
