/* A stand-in for one NPB 3.4-MZ-MPI program, written for hpceval's tests: NPB-MZ's output
 * (header, verification, summary with processes and threads) for BENCHMARK class CLASS,
 * around a real MPI + OpenMP sum of 1/i^2 checked against MIMIC_REFERENCE. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "reference.h"

/* NPB-MZ's operation count of the class (BT-MZ, SP-MZ; NPB-MZ's formulas over its zone
 * meshes, classes S and W), for a Mop/s that follows it as the real programs' do; LU-MZ's
 * is not checked, a stand-in count. */
static double operations(const char *b, char c)
{
    int w = c != 'S';
    if (!strcmp(b, "BT-MZ")) return w ? 14351975253.333334 : 381833519.99999994;
    if (!strcmp(b, "SP-MZ")) return w ? 7290312396.8 : 162900630.39999998;
    return (double)MIMIC_TERMS * 1000.0;
}

static int iterations(const char *b, char c)
{
    int w = c != 'S';
    if (!strcmp(b, "BT-MZ")) return w ? 200 : 60;
    if (!strcmp(b, "SP-MZ")) return w ? 400 : 100;
    return w ? 300 : 50;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, threads = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    if (rank == 0)
        printf("\n\n NAS Parallel Benchmarks (NPB3.4-MZ MPI+OpenMP) - %s Benchmark\n\n", BENCHMARK);
    double start = MPI_Wtime(), total = 0.0, elapsed = 0.0;
    long rounds = 0;
    do {
        double part = 0.0;
#pragma omp parallel for reduction(+ : part)
        for (long i = rank + 1; i <= MIMIC_TERMS; i += size) part += 1.0 / ((double)i * (double)i);
        MPI_Allreduce(&part, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        ++rounds;
        elapsed = MPI_Wtime() - start;
        MPI_Bcast(&elapsed, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    } while (elapsed < 0.1);
    int verified = fabs(total - MIMIC_REFERENCE) <= 1e-10 * MIMIC_REFERENCE;
    if (rank == 0) {
        double mops = operations(BENCHMARK, CLASS) / elapsed / 1e6;
        printf(" Verification being performed for class %c\n", CLASS);
        printf(verified ? " Verification Successful\n" : " Verification failed\n");
        printf("\n\n %s Benchmark Completed.\n", BENCHMARK);
        printf(" Class           =             %12c\n", CLASS);
        printf(" Size            =             %12s\n", "24x  24x   6");
        printf(" Iterations      =             %12d\n", iterations(BENCHMARK, CLASS));
        printf(" Time in seconds =             %12.2f\n", elapsed);
        printf(" Total processes =             %12d\n", size);
        printf(" Total threads   =             %12d\n", size * threads);
        printf(" Mop/s total     =             %12.2f\n", mops);
        printf(" Mop/s/thread    =             %12.2f\n", mops / (size * threads));
        printf(" Operation type  =    floating point\n");
        printf(" Verification    =             %12s\n", verified ? "SUCCESSFUL" : "UNSUCCESSFUL");
        printf(" Version         =             %12s\n", "3.4.2");
        printf(" Compile date    =              1 Jan 2026\n\n");
    }
    MPI_Finalize();
    return 0;
}
