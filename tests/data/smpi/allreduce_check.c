/* Test program for the MPI_Allreduce of hpceval/smpi_colls/ompi_colls.c
 * (tests/test_smpi_programs.py).
 *
 *   allreduce_check verify   every communicator size from 2 to the world's; MPI_SUM and
 *                            MPI_MAX on 1 to size + 1 ints (fewer elements than ranks: Open
 *                            MPI's recursive doubling where its decision rings; else SMPI's
 *                            own), with and without MPI_IN_PLACE: every rank checks the
 *                            result; rank 0 prints "verified N" or exits 1
 *   allreduce_check time     rank 0 prints the simulated seconds of one 8 B MPI_Send from
 *                            rank 0 to rank 1 and the slowest rank's first and second
 *                            MPI_Allreduce of one double (each after a barrier), as "send S
 *                            allreduce A first F" (run it with smpi/simulate-computation:no,
 *                            so that no host time is charged, except to see what is)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int value_of(int rank, int k) { return (rank * 37 + k * 11) % 101 - 50; }

static int check(MPI_Comm comm, int count, int in_place, MPI_Op op, int *bad)
{
    int rank, size, in[16], out[16];
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    for (int k = 0; k < count; ++k) in[k] = out[k] = value_of(rank, k);
    MPI_Allreduce(in_place ? MPI_IN_PLACE : in, out, count, MPI_INT, op, comm);
    for (int k = 0; k < count; ++k) {
        int want = value_of(0, k);
        for (int r = 1; r < size; ++r)
            want = op == MPI_SUM ? want + value_of(r, k)
                                 : (value_of(r, k) > want ? value_of(r, k) : want);
        if (out[k] != want) {
            fprintf(stderr, "rank %d of %d: allreduce %s of %d%s element %d: %d, not %d\n",
                    rank, size, op == MPI_SUM ? "sum" : "max", count,
                    in_place ? " in place" : "", k, out[k], want);
            ++*bad;
        }
    }
    return 1;
}

static int verify(void)
{
    int world, rank, checked = 0, bad = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int k = 2; k <= world && k < 15; ++k) {
        MPI_Comm comm;
        MPI_Comm_split(MPI_COMM_WORLD, rank < k ? 0 : MPI_UNDEFINED, rank, &comm);
        if (comm == MPI_COMM_NULL) continue;
        for (int count = 1; count <= k + 1; ++count) {
            for (int in_place = 0; in_place <= 1; ++in_place) {
                checked += check(comm, count, in_place, MPI_SUM, &bad);
                checked += check(comm, count, in_place, MPI_MAX, &bad);
            }
        }
        MPI_Comm_free(&comm);
    }
    int total_checked = 0, total_bad = 0;
    MPI_Reduce(&checked, &total_checked, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&bad, &total_bad, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        if (total_bad) return 1;
        printf("verified %d\n", total_checked);
    }
    return 0;
}

static int time_allreduce(void)
{
    int rank;
    double value = 1.0, sum = 0.0, send = 0.0, slowest = 0.0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (rank == 0) MPI_Send(&value, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD);
    if (rank == 1) {
        MPI_Recv(&sum, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        send = MPI_Wtime() - t0;
        MPI_Send(&send, 1, MPI_DOUBLE, 0, 1, MPI_COMM_WORLD);
    }
    if (rank == 0) MPI_Recv(&send, 1, MPI_DOUBLE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    double mine[2], slowest_two[2];
    for (int call = 0; call < 2; ++call) {
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        MPI_Allreduce(&value, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        mine[call] = MPI_Wtime() - t0;
    }
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Reduce(mine, slowest_two, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    slowest = slowest_two[1];
    if (rank == 0) printf("send %.9g allreduce %.9g first %.9g\n", send, slowest, slowest_two[0]);
    return sum == (double)size ? 0 : 1;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rc = argc > 1 && strcmp(argv[1], "time") == 0 ? time_allreduce() : verify();
    MPI_Finalize();
    return rc;
}
