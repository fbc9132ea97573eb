/* MPI_Bcast as Open MPI >= 4.1 runs it, linked into every hpceval program built with smpicc.
 *
 * Why: SimGrid's Open MPI selector (smpi/coll-selector:ompi, SimGrid 3.32) takes Open MPI's
 * fixed decision (coll/tuned, the rules of Open MPI 4.1) but runs four of the algorithms it
 * names with SimGrid's nearest ones, which cut the message into segments and pipeline them.
 * Open MPI's fixed decision passes a segment size of 0 (the whole message at once) and a
 * fan-out of 0 (which its chain builder turns into a single chain):
 *
 *   Open MPI algorithm     SimGrid runs            Open MPI runs (and this file)
 *   1 basic_linear         NTSL (pipelined)        root sends the whole buffer to every rank
 *   2 chain, 3 pipeline    ompi_pipeline (segm.)   one chain, the whole buffer hop by hop
 *   5 binary_tree          NTSB (pipelined)        binary tree, the whole buffer per edge
 *
 * Measured on netns-4x1-1gbe (Open MPI 4.1.4, 4 ranks, 1 MiB: a chain): 20.8 ms; SimGrid's
 * segmented pipeline projects 4.9 ms. The other algorithms go to SMPI's own MPI_Bcast
 * (PMPI_Bcast), whose selector reaches the same decision: binomial, k-nomial and
 * scatter+allgather, which SimGrid runs unsegmented too, and the split binary tree (only at
 * 256-1023 ranks, 16-32 KiB), which stays SimGrid's segmented one.
 *
 * Active only when the environment has HPCEVAL_SMPI_BCAST=openmpi (hpceval's smpirun starter
 * sets it with the Open MPI selector); otherwise every call goes to PMPI_Bcast unchanged.
 * The messages travel on a duplicate of the communicator, so that they never match a receive
 * of the program's own (MPI keeps collective traffic apart in the same way).
 */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#define HPCEVAL_BCAST_TAG 1

enum bcast_algorithm { LINEAR = 1, CHAIN = 2, PIPELINE = 3, BINARY_TREE = 5 };

/* One row per communicator size class: the first threshold above the message size gives the
 * algorithm (Open MPI's numbering); `last` applies at and above the largest threshold. */
struct decision_row {
    int below_size; /* communicator sizes below this use the row */
    int n;
    long long limit[10];
    int algorithm[10];
    int last;
};

static const struct decision_row DECISION[] = {
    {4, 9, {32, 256, 512, 1024, 32768, 131072, 262144, 524288, 1048576}, {3, 5, 3, 7, 1, 5, 2, 1, 6}, 5},
    {8, 5, {64, 128, 2048, 8192, 1048576}, {5, 6, 5, 6, 1}, 2},
    {16, 5, {8, 64, 4096, 16384, 32768}, {7, 5, 7, 5, 6}, 1},
    {32, 2, {4096, 1048576}, {7, 6}, 8},
    {64, 1, {2048}, {6}, 7},
    {128, 0, {0}, {0}, 7},
    {256, 4, {2, 16384, 32768, 65536}, {6, 5, 1, 5}, 7},
    {1024, 2, {16384, 32768}, {7, 4}, 7},
    {2048, 1, {524288}, {7}, 8},
    {4096, 1, {262144}, {7}, 8},
    {0, 3, {8192, 16384, 262144}, {7, 5, 7}, 8}, /* every larger communicator */
};

/* Open MPI's fixed decision for a broadcast of `bytes` on `size` ranks. */
static int openmpi_bcast_algorithm(int size, long long bytes)
{
    const int rows = (int)(sizeof DECISION / sizeof DECISION[0]);
    const struct decision_row *row = &DECISION[rows - 1];
    for (int r = 0; r < rows - 1; ++r) {
        if (size < DECISION[r].below_size) {
            row = &DECISION[r];
            break;
        }
    }
    for (int i = 0; i < row->n; ++i)
        if (bytes < row->limit[i]) return row->algorithm[i];
    return row->last;
}

static int enabled(void)
{
    static int state = -1; /* per rank: SMPI privatizes this file's globals */
    if (state < 0) {
        const char *v = getenv("HPCEVAL_SMPI_BCAST");
        state = v != NULL && strcmp(v, "openmpi") == 0;
    }
    return state;
}

/* The duplicate of `comm` this file sends on, made on first use (collectively: every rank
 * of `comm` is in the same MPI_Bcast) and kept as an attribute of `comm`. */
static int private_comm(MPI_Comm comm, MPI_Comm *out)
{
    static int keyval = MPI_KEYVAL_INVALID;
    int rc, found = 0;
    MPI_Comm *cached = NULL;
    if (keyval == MPI_KEYVAL_INVALID) {
        rc = MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &keyval, NULL);
        if (rc != MPI_SUCCESS) return rc;
    }
    rc = MPI_Comm_get_attr(comm, keyval, &cached, &found);
    if (rc != MPI_SUCCESS) return rc;
    if (!found) {
        cached = malloc(sizeof *cached);
        if (cached == NULL) return MPI_ERR_NO_MEM;
        rc = MPI_Comm_dup(comm, cached);
        if (rc != MPI_SUCCESS) return rc;
        rc = MPI_Comm_set_attr(comm, keyval, cached);
        if (rc != MPI_SUCCESS) return rc;
    }
    *out = *cached;
    return MPI_SUCCESS;
}

/* Parent and children (shifted ranks, root = 0) of shifted rank `me` in the tree of each
 * algorithm; returns the number of children written to `child` (room for size - 1 for the
 * linear one, 2 for the others). */
static int topology(int algorithm, int size, int me, int *parent, int *child)
{
    int n = 0;
    *parent = -1;
    if (algorithm == LINEAR) {
        if (me == 0)
            for (int r = 1; r < size; ++r) child[n++] = r;
        else
            *parent = 0;
        return n;
    }
    if (algorithm == CHAIN || algorithm == PIPELINE) {
        if (me > 0) *parent = me - 1;
        if (me + 1 < size) child[n++] = me + 1;
        return n;
    }
    /* Binary tree numbered level by level, as Open MPI's tree builder does: level l holds
     * 2^l ranks; the children of a rank at level l are rank + 2^l and rank + 2^(l+1)
     * (size 7: 0 -> 1, 2; 1 -> 3, 5; 2 -> 4, 6). */
    int level_start = 0, width = 1;
    while (me >= level_start + width) {
        level_start += width;
        width *= 2;
    }
    if (me > 0) {
        int up_width = width / 2, up_start = level_start - up_width;
        *parent = up_start + (me - level_start) % up_width;
    }
    for (int i = 1; i <= 2; ++i) {
        int c = me + width * i;
        if (c < size) child[n++] = c;
    }
    return n;
}

int MPI_Bcast(void *buf, int count, MPI_Datatype datatype, int root, MPI_Comm comm)
{
    int size, rank, type_size, rc;
    if (!enabled() || count == 0) return PMPI_Bcast(buf, count, datatype, root, comm);
    if ((rc = MPI_Comm_size(comm, &size)) != MPI_SUCCESS) return rc;
    /* SMPI's own checks answer a bad root (SMPI has no intercommunicators) */
    if (size < 2 || root < 0 || root >= size)
        return PMPI_Bcast(buf, count, datatype, root, comm);
    if ((rc = MPI_Type_size(datatype, &type_size)) != MPI_SUCCESS) return rc;
    int algorithm = openmpi_bcast_algorithm(size, (long long)type_size * count);
    if (algorithm != LINEAR && algorithm != CHAIN && algorithm != PIPELINE && algorithm != BINARY_TREE)
        return PMPI_Bcast(buf, count, datatype, root, comm);

    MPI_Comm own;
    if ((rc = private_comm(comm, &own)) != MPI_SUCCESS) return rc;
    if ((rc = MPI_Comm_rank(comm, &rank)) != MPI_SUCCESS) return rc;
    int me = (rank - root + size) % size;
    /* size >= 2 here: room for at least one child */
    int parent, max_children = algorithm == LINEAR ? size - 1 : 2;
    int *child = malloc(sizeof(int) * (size_t)max_children);
    MPI_Request *requests = malloc(sizeof(MPI_Request) * (size_t)max_children);
    if (child == NULL || requests == NULL) {
        free(child);
        free(requests);
        return MPI_ERR_NO_MEM;
    }
    int n = topology(algorithm, size, me, &parent, child);
    rc = MPI_SUCCESS;
    if (parent >= 0)
        rc = MPI_Recv(buf, count, datatype, (parent + root) % size, HPCEVAL_BCAST_TAG, own,
                      MPI_STATUS_IGNORE);
    for (int i = 0; i < n && rc == MPI_SUCCESS; ++i)
        rc = MPI_Isend(buf, count, datatype, (child[i] + root) % size, HPCEVAL_BCAST_TAG, own,
                       &requests[i]);
    if (rc == MPI_SUCCESS && n > 0) rc = MPI_Waitall(n, requests, MPI_STATUSES_IGNORE);
    free(child);
    free(requests);
    return rc;
}
