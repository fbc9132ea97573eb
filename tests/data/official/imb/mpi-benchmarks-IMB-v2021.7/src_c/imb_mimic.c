/* A stand-in for IMB-MPI1, written for hpceval's tests: PingPong and Allreduce timed for
 * real over sizes 0 and 2^0..2^M (-msglog 0:M), on the -npmin process count, printed in
 * IMB 2021's format; other benchmark names are refused as IMB does. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void header(const char *name, int np)
{
    printf("#----------------------------------------------------------------\n");
    printf("# Benchmarking %s \n# #processes = %d \n", name, np);
    printf("#----------------------------------------------------------------\n");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, maxlog = 10, iters = 100;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *names[8];
    int nnames = 0;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "-msglog") && i + 1 < argc) maxlog = atoi(strchr(argv[++i], ':') + 1);
        else if (!strcmp(argv[i], "-iter") && i + 1 < argc) iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-npmin") && i + 1 < argc) ++i;
        else if (nnames < 8) names[nnames++] = argv[i];
    }
    char *buf = calloc((size_t)1 << maxlog, 1), *rbuf = calloc((size_t)1 << maxlog, 1);
    if (rank == 0)
        printf("#----------------------------------------------------------------\n"
               "#    Intel(R) MPI Benchmarks 2021.7, MPI-1 part\n"
               "#----------------------------------------------------------------\n");
    for (int b = 0; b < nnames; ++b) {
        int ping = !strcmp(names[b], "PingPong");
        if (!ping && strcmp(names[b], "Allreduce")) {
            if (rank == 0) printf("Invalid benchmark name %s\n", names[b]);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        if (rank == 0) {
            header(names[b], ping ? 2 : size);
            if (ping) printf("       #bytes #repetitions      t[usec]   Mbytes/sec\n");
            else printf("       #bytes #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]\n");
        }
        for (long n = 0; n <= (1L << maxlog); n = n ? n * 2 : 1) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            for (int it = 0; it < iters; ++it) {
                if (ping && rank == 0) {
                    MPI_Send(buf, (int)n, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
                    MPI_Recv(buf, (int)n, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else if (ping && rank == 1) {
                    MPI_Recv(buf, (int)n, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(buf, (int)n, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
                } else if (!ping) {
                    MPI_Allreduce(buf, rbuf, (int)(n / 4), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
                }
            }
            double t = (MPI_Wtime() - t0) * 1e6 / iters / (ping ? 2.0 : 1.0), lo, hi, sum;
            MPI_Reduce(&t, &lo, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
            MPI_Reduce(&t, &hi, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
            MPI_Reduce(&t, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
            if (rank != 0) continue;
            if (ping) printf("%13ld%13d%13.2f%13.2f\n", n, iters, t, t > 0 ? n / t : 0.0);
            else printf("%13ld%13d%13.2f%13.2f%13.2f\n", n, iters, lo, hi, sum / size);
        }
    }
    if (rank == 0) printf("\n\n# All processes entering MPI_Finalize\n\n");
    free(buf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
