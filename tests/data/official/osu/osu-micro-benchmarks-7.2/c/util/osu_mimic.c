/* A stand-in for osu_latency (MIMIC_TEST 1), osu_bw (2) and osu_allreduce (3), written for
 * hpceval's tests: real MPI timings over powers-of-two sizes up to -m MAX (default 4096),
 * printed in the OSU 7.x format. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ITERS 200
#define WINDOW 16

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long max = 4096;
    for (int i = 1; i + 1 < argc; ++i)
        if (!strcmp(argv[i], "-m")) max = atol(argv[i + 1]);
    char *buf = calloc((size_t)max + 1, 1), *rbuf = calloc((size_t)max + 1, 1);
    if (rank == 0) {
        if (MIMIC_TEST == 1) printf("# OSU MPI Latency Test v7.2\n# Datatype: MPI_CHAR.\n# Size       Avg Latency(us)\n");
        if (MIMIC_TEST == 2) printf("# OSU MPI Bandwidth Test v7.2\n# Datatype: MPI_CHAR.\n# Size      Bandwidth (MB/s)\n");
        if (MIMIC_TEST == 3) printf("# OSU MPI Allreduce Latency Test v7.2\n# Datatype: MPI_INT.\n# Size       Avg Latency(us)\n");
    }
    long first = MIMIC_TEST == 1 ? 0 : (MIMIC_TEST == 2 ? 1 : 4);
    for (long n = first; n <= max; n = n ? n * 2 : 1) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int it = 0; it < ITERS; ++it) {
            if (MIMIC_TEST == 1 && size >= 2) {
                if (rank == 0) {
                    MPI_Send(buf, (int)n, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
                    MPI_Recv(buf, (int)n, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else if (rank == 1) {
                    MPI_Recv(buf, (int)n, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(buf, (int)n, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
                }
            } else if (MIMIC_TEST == 2 && size >= 2) {
                MPI_Request req[WINDOW];
                for (int w = 0; w < WINDOW; ++w) {
                    if (rank == 0) MPI_Isend(buf, (int)n, MPI_CHAR, 1, 2, MPI_COMM_WORLD, &req[w]);
                    else if (rank == 1) MPI_Irecv(rbuf, (int)n, MPI_CHAR, 0, 2, MPI_COMM_WORLD, &req[w]);
                }
                if (rank < 2) MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE);
                if (rank == 1) MPI_Send(buf, 0, MPI_CHAR, 0, 3, MPI_COMM_WORLD);
                if (rank == 0) MPI_Recv(buf, 0, MPI_CHAR, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Allreduce(buf, rbuf, (int)(n / 4), MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            }
        }
        double t = MPI_Wtime() - t0;
        if (rank == 0) {
            if (MIMIC_TEST == 1) printf("%-10ld%18.2f\n", n, t * 1e6 / (2.0 * ITERS));
            if (MIMIC_TEST == 2) printf("%-10ld%18.2f\n", n, (double)n * WINDOW * ITERS / t / 1e6);
            if (MIMIC_TEST == 3) printf("%-10ld%18.2f\n", n, t * 1e6 / ITERS);
        }
    }
    free(buf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
