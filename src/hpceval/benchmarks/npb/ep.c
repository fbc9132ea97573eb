/* hpceval NPB kernel EP: the "embarrassingly parallel" benchmark (NPB 3.x definition).
 *
 * 2^(m+1) uniform pseudo-random numbers of the NPB generator (a = 5^13, seed 271828183) are
 * taken in pairs (x, y) mapped to [-1, 1]^2; every pair inside the unit disc gives two
 * Gaussian deviates by the Marsaglia polar method, X = x sqrt(-2 ln t / t) and
 * Y = y sqrt(-2 ln t / t) with t = x^2 + y^2. The kernel sums X and Y (sx, sy, verified
 * against the official values) and counts the pairs in the square annuli
 * l <= max(|X|, |Y|) < l + 1, l = 0..9 (q, reported without an official reference).
 *
 * Computed the way NPB 3.4's EP computes it, so that its cost is NPB's: the numbers come in
 * 2^(m-16) batches of 2^16 pairs; for batch k the starting seed is found by NPB's binary
 * method (the seed times a^(2^17) squared along the bits of k, with randlc), the batch's
 * 2^17 numbers are drawn into an array by vranlc (one serial 64-bit integer multiplication
 * per number, as NPB's recommended randi8 build), then one scalar loop over the pairs tests
 * acceptance and, for the accepted ones, takes the log, square root, the sums and the
 * annulus count (kept in doubles, as NPB). Batches are split in contiguous blocks over the
 * ranks (the first `batches % ranks` ranks take one more, as NPB) and, inside a rank, over
 * the OpenMP threads. The timed section ends with the reduction of (sx, sy, q) over the
 * ranks, as NPB's. */
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

struct ep_sums {
    double sx, sy;
    double q[EP_NQ];
};

/* The seed of batch kk (0-based), as NPB finds it: t1 = s * an^kk with an = a^(2 * EP_NK),
 * by squaring an along the bits of kk. */
static double ep_batch_seed(long long kk, double an)
{
    double t1 = EP_SEED, t2 = an;
    for (int i = 0; i < 100; ++i) {
        long long ik = kk / 2;
        if (2 * ik != kk) (void)randlc(&t1, t2);
        if (ik == 0) break;
        (void)randlc(&t2, t2);
        kk = ik;
    }
    return t1;
}

/* One batch: 2 * EP_NK numbers into x, then the pairs, as NPB's loop (with its branch). */
static void ep_batch(long long kk, double an, double *restrict x, struct ep_sums *restrict s)
{
    double t1 = ep_batch_seed(kk, an);
    vranlc(2 * EP_NK, &t1, NPB_A, x);
    for (int i = 0; i < EP_NK; ++i) {
        double x1 = 2.0 * x[2 * i] - 1.0;
        double x2 = 2.0 * x[2 * i + 1] - 1.0;
        double t = x1 * x1 + x2 * x2;
        if (t <= 1.0) {
            double f = sqrt(-2.0 * log(t) / t);
            double g1 = x1 * f, g2 = x2 * f;
            /* NPB's l = max(|X|, |Y|) truncated, which gfortran computes without a branch
             * (maxsd); the same in integers here, so that gcc does not branch either. */
            int l1 = (int)fabs(g1), l2 = (int)fabs(g2);
            int l = l1 > l2 ? l1 : l2;
            s->q[l] += 1.0;
            s->sx += g1;
            s->sy += g2;
        }
    }
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
    /* NPB's x array (2 * EP_NK numbers, 1 MiB), one per thread, touched before timing as NPB
     * does. */
    double **xs = npb_alloc(sizeof(double *) * (size_t)nthreads, "batch arrays");
    for (int t = 0; t < nthreads; ++t) {
        xs[t] = npb_alloc(sizeof(double) * 2 * EP_NK, "batch of random numbers");
        for (int i = 0; i < 2 * EP_NK; ++i) xs[t][i] = -1.0e99;
    }

    NPB_CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    double t0 = MPI_Wtime();

    /* an = a^(2 * EP_NK): EP_MK + 1 squarings of a, as NPB. */
    double an = NPB_A;
    for (int i = 0; i < EP_MK + 1; ++i) (void)randlc(&an, an);

#pragma omp parallel num_threads(nthreads)
    {
        int tid = 0;
#ifdef _OPENMP
        tid = omp_get_thread_num();
#endif
        struct ep_sums s;
        memset(&s, 0, sizeof s);
        double *x = xs[tid];
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
            ep_batch(my_first + b, an, x, &s);
        }
        thread_sums[tid] = s;
    }

    /* Threads combined in a fixed order, then the one reduction over the ranks. */
    double local[2 + EP_NQ] = {0}, global[2 + EP_NQ];
    for (int t = 0; t < nthreads; ++t) {
        local[0] += thread_sums[t].sx;
        local[1] += thread_sums[t].sy;
        for (int l = 0; l < EP_NQ; ++l) local[2 + l] += thread_sums[t].q[l];
    }
    NPB_CHECK_MPI(MPI_Allreduce(local, global, 2 + EP_NQ, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    double elapsed = MPI_Wtime() - t0, tmax;
    NPB_CHECK_MPI(MPI_Allreduce(&elapsed, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    free(thread_sums);
    for (int t = 0; t < nthreads; ++t) free(xs[t]);
    free(xs);

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
