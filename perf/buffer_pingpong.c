/* PingPong of 2,000,000 bytes measured the way HPCC's b_eff does (per measurement, one
 * untimed round trip then a timed loop; the best of the measurements; bandwidth = bytes /
 * half a round trip), with the send buffer in one of two states:
 *
 *   touched    written before the loop, as an application's data (and mpibench's buffers)
 *   untouched  fresh from malloc and never written: a 2 MB malloc in a new process is a
 *              fresh anonymous mapping whose unwritten pages all map the kernel's shared
 *              zero page, so the sender's copy reads one cache-resident page over and over.
 *
 * HPCC also mallocs its buffers without writing them, but after its other tests the
 * allocator may hand it pages already written; perf/pingpong_vs_hpcc.py runs both states
 * to tell which one HPCC's figure resembles. Usage: mpirun -np 2 buffer_pingpong touched|untouched
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MESSAGE_BYTES = 2000000, LOOP = 20, MEASUREMENTS = 8 };

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2 || argc != 2 ||
        (strcmp(argv[1], "touched") != 0 && strcmp(argv[1], "untouched") != 0)) {
        if (rank == 0) fprintf(stderr, "usage: mpirun -np 2 buffer_pingpong touched|untouched\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const int touched = strcmp(argv[1], "touched") == 0;
    unsigned char *send = malloc(MESSAGE_BYTES), *recv = malloc(MESSAGE_BYTES);
    if (send == NULL || recv == NULL) MPI_Abort(MPI_COMM_WORLD, 2);
    if (touched) {
        memset(send, 0x3f, MESSAGE_BYTES);
        memset(recv, 0, MESSAGE_BYTES);
    }
    const int peer = 1 - rank;
    double best = 1e300;
    for (int m = 0; m < MEASUREMENTS; ++m) {
        MPI_Barrier(MPI_COMM_WORLD);
        double start = 0.0;
        for (int i = -1; i < LOOP; ++i) {
            if (i == 0) start = MPI_Wtime();
            if (rank == 0) {
                MPI_Send(send, MESSAGE_BYTES, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
                MPI_Recv(recv, MESSAGE_BYTES, MPI_BYTE, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(recv, MESSAGE_BYTES, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(send, MESSAGE_BYTES, MPI_BYTE, peer, 2, MPI_COMM_WORLD);
            }
        }
        const double half_round_trip = (MPI_Wtime() - start) / (2.0 * LOOP);
        if (half_round_trip < best) best = half_round_trip;
    }
    if (rank == 0) printf("%s %d %.6e %.3f\n", argv[1], MESSAGE_BYTES, best, MESSAGE_BYTES / best / 1e6);
    free(send);
    free(recv);
    MPI_Finalize();
    return 0;
}
