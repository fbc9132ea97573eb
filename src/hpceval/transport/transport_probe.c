/* transport_probe: which transport did the MPI library choose between ranks 0 and 1?
 *
 * The MPI library reports its choice on the ranks' stderr when asked (Open MPI component
 * verbosity, UCX info log); stderr is joined to stdout before MPI_Init so that the launcher,
 * which follows stdout line by line, receives the library's own words in order. Rank 0 then
 * prints one JSON line: the median 8-byte round-trip latency over blocks of ping-pongs, the
 * number the plausibility check holds against the recorded transport.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define WARMUP_ITERATIONS 100
#define BLOCK_ITERATIONS 200
#define BLOCKS 7
#define MESSAGE_BYTES 8

#define CHECK(call)                                                                   \
    do {                                                                              \
        int rc_ = (call);                                                             \
        if (rc_ != MPI_SUCCESS) {                                                     \
            fprintf(stderr, "transport_probe: %s:%d: MPI error %d\n", __FILE__, __LINE__, rc_); \
            MPI_Abort(MPI_COMM_WORLD, 1);                                             \
        }                                                                             \
    } while (0)

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void ping_pong(int rank, char *buffer, int iterations) {
    for (int i = 0; i < iterations; i++) {
        if (rank == 0) {
            CHECK(MPI_Send(buffer, MESSAGE_BYTES, MPI_CHAR, 1, 0, MPI_COMM_WORLD));
            CHECK(MPI_Recv(buffer, MESSAGE_BYTES, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        } else if (rank == 1) {
            CHECK(MPI_Recv(buffer, MESSAGE_BYTES, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK(MPI_Send(buffer, MESSAGE_BYTES, MPI_CHAR, 0, 0, MPI_COMM_WORLD));
        }
    }
}

int main(int argc, char **argv) {
    fflush(stdout);
    dup2(STDOUT_FILENO, STDERR_FILENO);
    setvbuf(stdout, NULL, _IOLBF, 0);
    CHECK(MPI_Init(&argc, &argv));
    int rank, size;
    CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    if (size < 2) {
        fprintf(stderr, "transport_probe: needs 2 ranks, got %d\n", size);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    char buffer[MESSAGE_BYTES] = {0};
    double block_us[BLOCKS];
    ping_pong(rank, buffer, WARMUP_ITERATIONS);
    for (int b = 0; b < BLOCKS; b++) {
        CHECK(MPI_Barrier(MPI_COMM_WORLD));
        double start = MPI_Wtime();
        ping_pong(rank, buffer, BLOCK_ITERATIONS);
        block_us[b] = (MPI_Wtime() - start) * 1e6 / (2.0 * BLOCK_ITERATIONS);
    }
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    char peer[256] = "";
    if (rank == 1) CHECK(MPI_Send(host, sizeof host, MPI_CHAR, 0, 1, MPI_COMM_WORLD));
    if (rank == 0) {
        CHECK(MPI_Recv(peer, sizeof peer, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        qsort(block_us, BLOCKS, sizeof block_us[0], compare_doubles);
        printf("{\"probe\": \"transport\", \"ranks\": %d, \"host0\": \"%s\", \"host1\": \"%s\", "
               "\"latency_8B_us\": %.3f}\n", size, host, peer, block_us[BLOCKS / 2]);
    }
    CHECK(MPI_Finalize());
    return 0;
}
