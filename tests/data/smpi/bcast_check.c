/* Test program for the MPI_Bcast of hpceval/smpi_colls/ompi_colls.c (tests/test_smpi_programs.py).
 *
 *   bcast_check verify   every communicator size from 2 to the world's, every root, sizes
 *                        that reach each of Open MPI's broadcast algorithms: each rank checks
 *                        the bytes it got; rank 0 prints "verified N" or exits 1
 *   bcast_check time     rank 0 prints the simulated seconds of one 1 MiB MPI_Send and of one
 *                        1 MiB MPI_Bcast from rank 0 (slowest rank), as "send S bcast B"
 *                        (run it with smpi/simulate-computation:no, so that no host time
 *                        between the calls is charged)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char expected(int root, int size, long i)
{
    return (unsigned char)((root * 31 + size * 7 + i * 13) & 0xff);
}

static int verify(void)
{
    static const long sizes[] = {1, 8, 16, 100, 3000, 4000, 65536, 200000, 600000, 2097152};
    const int nsizes = (int)(sizeof sizes / sizeof sizes[0]);
    int world, rank, checked = 0, bad = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    unsigned char *buf = malloc(2097152);
    for (int k = 2; k <= world; ++k) {
        MPI_Comm comm;
        MPI_Comm_split(MPI_COMM_WORLD, rank < k ? 0 : MPI_UNDEFINED, rank, &comm);
        if (comm == MPI_COMM_NULL) continue;
        for (int s = 0; s < nsizes; ++s) {
            for (int root = 0; root < k; ++root) {
                for (long i = 0; i < sizes[s]; ++i)
                    buf[i] = rank == root ? expected(root, k, i) : 0;
                MPI_Bcast(buf, (int)sizes[s], MPI_BYTE, root, comm);
                for (long i = 0; i < sizes[s]; ++i) {
                    if (buf[i] != expected(root, k, i)) {
                        fprintf(stderr, "rank %d: communicator of %d, root %d, %ld B: byte %ld wrong\n",
                                rank, k, root, sizes[s], i);
                        bad = 1;
                        break;
                    }
                }
                ++checked;
            }
        }
        MPI_Comm_free(&comm);
    }
    free(buf);
    int any_bad = 0;
    MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0 && !any_bad) printf("verified %d\n", checked);
    return any_bad;
}

static void time_one(void)
{
    const int n = 1048576;
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char *buf = calloc(n, 1);
    /* untimed: the first broadcast on a communicator makes the file's duplicate of it */
    MPI_Bcast(buf, 1, MPI_BYTE, 0, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    if (rank == 0) MPI_Send(buf, n, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
    if (rank == 1) MPI_Recv(buf, n, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    double send = MPI_Wtime() - start;
    double send_max;
    MPI_Reduce(&send, &send_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    start = MPI_Wtime();
    MPI_Bcast(buf, n, MPI_BYTE, 0, MPI_COMM_WORLD);
    double bcast = MPI_Wtime() - start, bcast_max;
    MPI_Reduce(&bcast, &bcast_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("send %.9g bcast %.9g\n", send_max, bcast_max);
    free(buf);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rc = 0;
    if (argc > 1 && strcmp(argv[1], "time") == 0)
        time_one();
    else
        rc = verify();
    MPI_Finalize();
    return rc;
}
