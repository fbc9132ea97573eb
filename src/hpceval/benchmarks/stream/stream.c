/* hpceval's STREAM: Copy, Scale, Add, Triad on three arrays of doubles, per MPI rank.
 *
 * Follows the rules of McCalpin's STREAM (the benchmark's definition, not its code): each
 * array is large against the last-level cache (the caller sizes it from the platform's
 * provenance, see docs/stream.md), the four kernels run `trials` times, the first trial is a
 * warm-up that the statistics leave out, the bytes counted are those the kernel's source
 * names (2 arrays for Copy and Scale, 3 for Add and Triad, 8 bytes each, no write-allocate
 * traffic), and the arrays' contents are checked against the values the same sequence of
 * operations gives on scalars (relative error below 1e-13 for doubles).
 *
 * With several ranks each rank runs on its own arrays; a barrier starts every kernel, and a
 * kernel's time in a trial is the slowest rank's (MPI_MAX), so that the summed bandwidth is
 * the whole machine's. Output: JSON lines (header, one "kernel" record per kernel with every
 * trial's time, "validation", "end"), printed by rank 0; errors as "error" records.
 */
#define _POSIX_C_SOURCE 200112L
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define PROTOCOL_VERSION "1.0"
#define KERNELS 4
#define SCALAR 3.0
#define EPSILON_DOUBLE 1.e-13

static const char *const kernel_names[KERNELS] = {"copy", "scale", "add", "triad"};
static const int arrays_touched[KERNELS] = {2, 2, 3, 3};

static void fail(int rank, const char *message) {
    if (rank == 0) {
        printf("{\"record\":\"error\",\"message\":\"%s\"}\n", message);
        fflush(stdout);
    }
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static double *allocate(size_t n, int rank) {
    void *p = NULL;
    /* 2 MiB alignment: arrays start on a (huge) page boundary, as static arrays would. */
    if (posix_memalign(&p, 2u << 20, n * sizeof(double)) != 0) fail(rank, "out of memory");
    return p;
}

/* The relative error of one array against the value every element should hold. */
static double relative_error(const double *x, size_t n, double expected) {
    double sum = 0.0;
#pragma omp parallel for reduction(+ : sum)
    for (size_t j = 0; j < n; j++) sum += fabs(x[j] - expected);
    return fabs(sum / (double)n / expected);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, nranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    long long elements = 0;
    int trials = 10;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--elements") == 0) elements = atoll(argv[i + 1]);
        else if (strcmp(argv[i], "--trials") == 0) trials = atoi(argv[i + 1]);
        else fail(rank, "usage: stream --elements N --trials K");
    }
    if (elements < 1000) fail(rank, "--elements must be at least 1000");
    if (trials < 2) fail(rank, "--trials must be at least 2 (the first is a warm-up)");
    size_t n = (size_t)elements;
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif

    char name[MPI_MAX_PROCESSOR_NAME];
    int len;
    MPI_Get_processor_name(name, &len);
    char *names = rank == 0 ? malloc((size_t)nranks * MPI_MAX_PROCESSOR_NAME) : NULL;
    MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0,
               MPI_COMM_WORLD);
    if (rank == 0) {
        printf("{\"record\":\"header\",\"program\":\"stream\",\"version\":\"%s\",\"nranks\":%d,"
               "\"threads\":%d,\"elements\":%lld,\"bytes_per_array\":%lld,\"trials\":%d,"
               "\"hosts\":[",
               PROTOCOL_VERSION, nranks, threads, elements, elements * 8LL, trials);
        for (int r = 0; r < nranks; r++)
            printf("%s\"%s\"", r ? "," : "", names + (size_t)r * MPI_MAX_PROCESSOR_NAME);
        printf("]}\n");
        fflush(stdout);
        free(names);
    }

    double *a = allocate(n, rank), *b = allocate(n, rank), *c = allocate(n, rank);
    /* First touch by the threads that will use the pages (NUMA placement as STREAM does). */
#pragma omp parallel for
    for (size_t j = 0; j < n; j++) {
        a[j] = 1.0;
        b[j] = 2.0;
        c[j] = 0.0;
    }
#pragma omp parallel for
    for (size_t j = 0; j < n; j++) a[j] = 2.0 * a[j];

    double *times = malloc(sizeof(double) * KERNELS * (size_t)trials);
    const double scalar = SCALAR;
    for (int k = 0; k < trials; k++) {
        double t[KERNELS];
        MPI_Barrier(MPI_COMM_WORLD);
        t[0] = MPI_Wtime();
#pragma omp parallel for
        for (size_t j = 0; j < n; j++) c[j] = a[j];
        t[0] = MPI_Wtime() - t[0];
        MPI_Barrier(MPI_COMM_WORLD);
        t[1] = MPI_Wtime();
#pragma omp parallel for
        for (size_t j = 0; j < n; j++) b[j] = scalar * c[j];
        t[1] = MPI_Wtime() - t[1];
        MPI_Barrier(MPI_COMM_WORLD);
        t[2] = MPI_Wtime();
#pragma omp parallel for
        for (size_t j = 0; j < n; j++) c[j] = a[j] + b[j];
        t[2] = MPI_Wtime() - t[2];
        MPI_Barrier(MPI_COMM_WORLD);
        t[3] = MPI_Wtime();
#pragma omp parallel for
        for (size_t j = 0; j < n; j++) a[j] = b[j] + scalar * c[j];
        t[3] = MPI_Wtime() - t[3];
        double slowest[KERNELS];
        MPI_Reduce(t, slowest, KERNELS, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        for (int i = 0; i < KERNELS; i++) times[i * trials + k] = slowest[i];
    }

    /* The values every element must hold: the same operations on scalars. */
    double aj = 2.0, bj = 2.0, cj = 0.0;
    for (int k = 0; k < trials; k++) {
        cj = aj;
        bj = scalar * cj;
        cj = aj + bj;
        aj = bj + scalar * cj;
    }
    double err[3] = {relative_error(a, n, aj), relative_error(b, n, bj), relative_error(c, n, cj)};
    double worst[3];
    MPI_Reduce(err, worst, 3, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);

    if (rank == 0) {
        for (int i = 0; i < KERNELS; i++) {
            long long bytes = (long long)arrays_touched[i] * 8LL * elements * nranks;
            printf("{\"record\":\"kernel\",\"name\":\"%s\",\"bytes\":%lld,\"times_s\":[",
                   kernel_names[i], bytes);
            for (int k = 0; k < trials; k++) printf("%s%.9e", k ? "," : "", times[i * trials + k]);
            printf("]}\n");
        }
        int passed = worst[0] <= EPSILON_DOUBLE && worst[1] <= EPSILON_DOUBLE &&
                     worst[2] <= EPSILON_DOUBLE;
        printf("{\"record\":\"validation\",\"epsilon\":%.3e,\"expected\":[%.17g,%.17g,%.17g],"
               "\"relative_error\":[%.6e,%.6e,%.6e],\"passed\":%s}\n",
               EPSILON_DOUBLE, aj, bj, cj, worst[0], worst[1], worst[2],
               passed ? "true" : "false");
        printf("{\"record\":\"end\",\"status\":\"%s\"}\n", passed ? "ok" : "failed");
        fflush(stdout);
    }
    free(times);
    free(a);
    free(b);
    free(c);
    MPI_Finalize();
    return 0;
}
