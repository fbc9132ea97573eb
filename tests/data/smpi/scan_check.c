/* Test program for the MPI_Scan and MPI_Exscan of hpceval/smpi_colls/ompi_colls.c
 * (tests/test_smpi_programs.py).
 *
 *   scan_check verify   every communicator size from 2 to the world's; MPI_SUM and MPI_MAX
 *                       on 3 ints and a non-commutative operation (2x2 matrix product modulo
 *                       a prime, 2 of a contiguous type of 4 ints), each with and without
 *                       MPI_IN_PLACE: every rank checks its prefix; rank 0 prints
 *                       "verified N" or exits 1 (SimGrid 3.32's own scans fail the matrices:
 *                       they return each rank's own value)
 *   scan_check time     rank 0 prints the simulated seconds of one 4 B MPI_Send from rank 0
 *                       to rank 1 and of one MPI_Exscan of an int on the last rank (after a
 *                       barrier), as "send S exscan E" (run it with
 *                       smpi/simulate-computation:no, so that no host time is charged)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PRIME 1009

/* inout = in x inout (2x2 matrices, row-major, modulo PRIME): associative, not commutative. */
static void matmul(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    const int *a = in;
    int *b = inout;
    for (int k = 0; k < *len; ++k, a += 4, b += 4) {
        int c[4] = {(a[0] * b[0] + a[1] * b[2]) % PRIME, (a[0] * b[1] + a[1] * b[3]) % PRIME,
                    (a[2] * b[0] + a[3] * b[2]) % PRIME, (a[2] * b[1] + a[3] * b[3]) % PRIME};
        memcpy(b, c, sizeof c);
    }
}

static void matrix_of(int rank, int k, int *m)
{
    m[0] = 1 + rank % 5;
    m[1] = 2 + k;
    m[2] = rank % 3;
    m[3] = 1 + (rank * 7 + k) % 11;
}

/* The expected prefix of ranks 0..upto (inclusive) in `m` (upto >= 0). */
static void matrix_prefix(int upto, int k, int *m)
{
    matrix_of(0, k, m);
    for (int r = 1; r <= upto; ++r) {
        int next[4], len = 1;
        MPI_Datatype none = MPI_DATATYPE_NULL;
        memcpy(next, m, sizeof next);
        matrix_of(r, k, m);
        matmul(next, m, &len, &none); /* m = prefix x matrix(r) */
    }
}

static int value_of(int rank, int k) { return (rank * 37 + k * 11) % 101 - 50; }

static int check_ints(MPI_Comm comm, int exclusive, int in_place, MPI_Op op, int *bad)
{
    int rank, size, count = 3, in[3], out[3];
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    for (int k = 0; k < count; ++k) in[k] = out[k] = value_of(rank, k);
    if (exclusive)
        MPI_Exscan(in_place ? MPI_IN_PLACE : in, out, count, MPI_INT, op, comm);
    else
        MPI_Scan(in_place ? MPI_IN_PLACE : in, out, count, MPI_INT, op, comm);
    int last = exclusive ? rank - 1 : rank;
    if (last < 0) return 0; /* rank 0's exclusive result is undefined */
    for (int k = 0; k < count; ++k) {
        int want = value_of(0, k);
        for (int r = 1; r <= last; ++r)
            want = op == MPI_SUM ? want + value_of(r, k)
                                 : (value_of(r, k) > want ? value_of(r, k) : want);
        if (out[k] != want) {
            fprintf(stderr, "rank %d of %d: %s %s%s element %d: %d, not %d\n", rank, size,
                    exclusive ? "exscan" : "scan", op == MPI_SUM ? "sum" : "max",
                    in_place ? " in place" : "", k, out[k], want);
            ++*bad;
        }
    }
    return 1;
}

static int check_matrices(MPI_Comm comm, int exclusive, int in_place, MPI_Op op,
                          MPI_Datatype matrix, int *bad)
{
    int rank, size, in[8], out[8];
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    for (int k = 0; k < 2; ++k) {
        matrix_of(rank, k, in + 4 * k);
        matrix_of(rank, k, out + 4 * k);
    }
    if (exclusive)
        MPI_Exscan(in_place ? MPI_IN_PLACE : in, out, 2, matrix, op, comm);
    else
        MPI_Scan(in_place ? MPI_IN_PLACE : in, out, 2, matrix, op, comm);
    int last = exclusive ? rank - 1 : rank;
    if (last < 0) return 0;
    for (int k = 0; k < 2; ++k) {
        int want[4];
        matrix_prefix(last, k, want);
        if (memcmp(out + 4 * k, want, sizeof want) != 0) {
            fprintf(stderr, "rank %d of %d: %s matrices%s, product %d wrong\n", rank, size,
                    exclusive ? "exscan" : "scan", in_place ? " in place" : "", k);
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
    MPI_Op product;
    MPI_Op_create(matmul, 0, &product);
    MPI_Datatype matrix;
    MPI_Type_contiguous(4, MPI_INT, &matrix);
    MPI_Type_commit(&matrix);
    for (int k = 2; k <= world; ++k) {
        MPI_Comm comm;
        MPI_Comm_split(MPI_COMM_WORLD, rank < k ? 0 : MPI_UNDEFINED, rank, &comm);
        if (comm == MPI_COMM_NULL) continue;
        for (int exclusive = 0; exclusive <= 1; ++exclusive) {
            for (int in_place = 0; in_place <= 1; ++in_place) {
                checked += check_ints(comm, exclusive, in_place, MPI_SUM, &bad);
                checked += check_ints(comm, exclusive, in_place, MPI_MAX, &bad);
                checked += check_matrices(comm, exclusive, in_place, product, matrix, &bad);
            }
        }
        MPI_Comm_free(&comm);
    }
    int total_checked = 0, total_bad = 0;
    MPI_Reduce(&checked, &total_checked, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&bad, &total_bad, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Type_free(&matrix);
    MPI_Op_free(&product);
    if (rank == 0) {
        if (total_bad) return 1;
        printf("verified %d\n", total_checked);
    }
    return 0;
}

static int time_exscan(void)
{
    int rank, size, value = 1, prefix = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime(), send = 0;
    if (rank == 0) MPI_Send(&value, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
    if (rank == 1) {
        MPI_Recv(&prefix, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        send = MPI_Wtime() - t0;
        MPI_Send(&send, 1, MPI_DOUBLE, 0, 1, MPI_COMM_WORLD);
    }
    if (rank == 0) MPI_Recv(&send, 1, MPI_DOUBLE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Exscan(&value, &prefix, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD); /* untimed: first use */
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    MPI_Exscan(&value, &prefix, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    double exscan = MPI_Wtime() - t0;
    if (rank == size - 1) MPI_Send(&exscan, 1, MPI_DOUBLE, 0, 2, MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Recv(&exscan, 1, MPI_DOUBLE, size - 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        printf("send %.9g exscan %.9g\n", send, exscan);
    }
    return rank == 0 || prefix == rank ? 0 : 1;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rc = argc > 1 && strcmp(argv[1], "time") == 0 ? time_exscan() : verify();
    MPI_Finalize();
    return rc;
}
