/* A stand-in for one NPB 3.4-MPI program, written for hpceval's tests: it prints what NPB
 * prints (header, verification, the summary block, compile options) for BENCHMARK class
 * CLASS, with a real MPI run behind it. The work is a sum of 1/i^2 over MIMIC_TERMS terms,
 * shared among the ranks and repeated until it takes a measurable time; the time and the
 * Mop/s (NPB's operation count of the class over that time) are printed as NPB does. The
 * run verifies when the sum matches MIMIC_REFERENCE (common/reference.h). */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "reference.h"

static double npb_ops(const char *b, char c)
{
    int w = c == 'W';
    if (!strcmp(b, "EP")) return pow(2.0, (w ? 25 : 24) + 1);
    if (!strcmp(b, "IS")) return 10.0 * pow(2.0, w ? 20 : 16);
    if (!strcmp(b, "CG")) {
        double na = w ? 7000 : 1400, nz = w ? 8 : 7;
        return 2.0 * 15 * na * (3 + nz * (nz + 1) + 25 * (5 + nz * (nz + 1)) + 3);
    }
    if (!strcmp(b, "MG")) {
        double n = w ? 128 : 32;
        return 58.0 * 4 * n * n * n;
    }
    /* FT */
    double n = w ? 128.0 * 128 * 32 : 64.0 * 64 * 64;
    return n * (14.8157 + 7.19641 * log(n) + (5.23518 + 7.21113 * log(n)) * 6);
}

static int npb_iterations(const char *b)
{
    if (!strcmp(b, "CG")) return 15;
    if (!strcmp(b, "MG")) return 4;
    if (!strcmp(b, "FT")) return 6;
    if (!strcmp(b, "IS")) return 10;
    return 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0) {
        printf("\n\n NAS Parallel Benchmarks 3.4 -- %s Benchmark\n\n", BENCHMARK);
        printf(" Class: %c\n Number of active processes: %6d\n\n", CLASS, size);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime(), total = 0.0, elapsed = 0.0;
    int rounds = 0;
    do {
        double part = 0.0;
        for (long i = rank + 1; i <= MIMIC_TERMS; i += size) part += 1.0 / ((double)i * (double)i);
        MPI_Allreduce(&part, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        ++rounds;
        elapsed = MPI_Wtime() - start;
        MPI_Bcast(&elapsed, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    } while (elapsed < 0.1 && rounds < 100000);
    double err = fabs(total - MIMIC_REFERENCE) / MIMIC_REFERENCE;
    int verified = err <= 1e-10;
    if (rank == 0) {
        printf(" Sum is   %20.13E\n Error is %20.13E\n", total, err);
        printf(verified ? " VERIFICATION SUCCESSFUL\n" : " VERIFICATION FAILED\n");
        double mops = npb_ops(BENCHMARK, CLASS) / elapsed / 1e6;
        printf("\n\n %s Benchmark Completed.\n", BENCHMARK);
        printf(" Class           =             %12c\n", CLASS);
        printf(" Size            =             %12d\n", MIMIC_TERMS);
        printf(" Iterations      =             %12d\n", npb_iterations(BENCHMARK));
        printf(" Time in seconds =             %12.2f\n", elapsed);
        printf(" Total processes =             %12d\n", size);
        printf(" Active processes=             %12d\n", size);
        printf(" Mop/s total     =             %12.2f\n", mops);
        printf(" Mop/s/process   =             %12.2f\n", mops / size);
        printf(" Operation type  =    floating point\n");
        printf(" Verification    =             %12s\n", verified ? "SUCCESSFUL" : "UNSUCCESSFUL");
        printf(" Version         =             %12s\n", "3.4.2");
        printf(" Compile date    =              1 Jan 2026\n\n");
        printf(" Compile options:\n    MPICC        = %s\n    CFLAGS       = %s\n\n", COMPILER,
               FLAGS);
    }
    MPI_Finalize();
    return 0;
}
