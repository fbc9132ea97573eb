/* Test program for the MPI_Allreduce of hpceval/smpi_colls/ompi_colls.c
 * (tests/test_smpi_programs.py).
 *
 *   allreduce_check verify   every communicator size from 2 to the world's; MPI_SUM and
 *                            MPI_MAX on 1 to size + 1 ints (fewer elements than ranks: Open
 *                            MPI's recursive doubling where its decision rings; else SMPI's
 *                            own), with and without MPI_IN_PLACE: every rank checks the
 *                            result; rank 0 prints "verified N" or exits 1
 *   allreduce_check time [C] rank 0 prints the simulated seconds of one 8 B MPI_Send from
 *                            rank 0 to rank 1 and the slowest rank's first and second
 *                            MPI_Allreduce of one double (each after a barrier), as "send S
 *                            allreduce A first F" (run it with smpi/simulate-computation:no,
 *                            so that no host time is charged, except to see what is); C is
 *                            the communicator of the allreduces: world (the default), or one
 *                            made from it with dup, split, split_type, create, create_group,
 *                            cart (MPI_Cart_create) or cart_sub (a 1-D MPI_Cart_sub of a
 *                            2-D grid of size x 1), all of every rank (split_type: of the
 *                            ranks of a node, so run it with every rank on one node)
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

/* A communicator of every rank, made as `how` says; MPI_COMM_NULL for an unknown name. */
static MPI_Comm made(const char *how)
{
    MPI_Comm comm = MPI_COMM_NULL, grid;
    MPI_Group group;
    int size, dims[2], periods[2] = {0, 0}, remain[2] = {1, 0};
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    dims[0] = size;
    dims[1] = 1;
    MPI_Comm_group(MPI_COMM_WORLD, &group);
    if (strcmp(how, "world") == 0) comm = MPI_COMM_WORLD;
    if (strcmp(how, "dup") == 0) MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    if (strcmp(how, "split") == 0) MPI_Comm_split(MPI_COMM_WORLD, 0, 0, &comm);
    if (strcmp(how, "split_type") == 0)
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &comm);
    if (strcmp(how, "create") == 0) MPI_Comm_create(MPI_COMM_WORLD, group, &comm);
    if (strcmp(how, "create_group") == 0) MPI_Comm_create_group(MPI_COMM_WORLD, group, 7, &comm);
    if (strcmp(how, "cart") == 0) MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &comm);
    if (strcmp(how, "cart_sub") == 0) {
        MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &grid);
        MPI_Cart_sub(grid, remain, &comm);
    }
    MPI_Group_free(&group);
    return comm;
}

static int time_allreduce(const char *how)
{
    int rank;
    double value = 1.0, sum = 0.0, send = 0.0, slowest = 0.0;
    MPI_Comm comm = made(how);
    if (comm == MPI_COMM_NULL) {
        fprintf(stderr, "no communicator made as %s\n", how);
        return 1;
    }
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
        MPI_Allreduce(&value, &sum, 1, MPI_DOUBLE, MPI_SUM, comm);
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
    int rc = argc > 1 && strcmp(argv[1], "time") == 0
                 ? time_allreduce(argc > 2 ? argv[2] : "world")
                 : verify();
    MPI_Finalize();
    return rc;
}
