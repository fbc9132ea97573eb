/* Collectives as Open MPI >= 4.1 runs them where SimGrid 3.32 runs others, linked into every
 * hpceval program built with smpicc: MPI_Bcast (its four unsegmented algorithms), MPI_Scan
 * and MPI_Exscan (a chain), MPI_Allreduce of fewer elements than ranks (recursive doubling).
 *
 * MPI_Bcast. SimGrid's Open MPI selector (smpi/coll-selector:ompi) takes Open MPI's
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
 * Active only when the environment has HPCEVAL_SMPI_BCAST=openmpi (hpceval's smpirun starter
 * sets it with the Open MPI selector, unless the run forces SMPI's own broadcast); otherwise
 * every call goes to PMPI_Bcast unchanged.
 *
 * MPI_Scan, MPI_Exscan. SimGrid posts, on every rank, a receive from each lower rank and a
 * send to each higher one: P(P-1)/2 messages at once, which its max-min solver and request
 * lists pay for far more than linearly (one MPI_Exscan of one int: 0.11 s of CPU at 64 ranks,
 * 2.3 s at 128, 247 s at 256; IS class C's full verification at 512 ranks never ended).
 * Open MPI 4.1 has them from coll/basic (coll/tuned has none), as a chain: rank r receives
 * the prefix of ranks 0..r-1 from r-1, combines its own value into it and sends that on to
 * r+1; P-1 messages, one after the other. Active when HPCEVAL_SMPI_SCAN=openmpi (set with
 * the Open MPI selector); data types that are not contiguous go to SMPI's own.
 *
 * MPI_Allreduce of fewer elements than ranks. Open MPI 4.1's fixed decision names its ring
 * (4) or its segmented ring (5, given a segment size of 0: the ring) at some sizes (4-7
 * ranks below 16 B, 16-63 ranks below 64-128 B, ...), and its ring hands a buffer of fewer
 * elements than ranks to recursive doubling (coll_base_allreduce.c). SimGrid's stand-in for
 * the ring (allreduce__lr) hands it to a reduce followed by a broadcast instead: twice the
 * hops (4 ranks, one double: 66 against 33 us with no per-message overhead, netns-4x1-1gbe's
 * calibration of 2026-12-04). So that case runs Open MPI's recursive doubling here, with
 * its pairing of the ranks beyond the largest power of two; every other MPI_Allreduce goes to
 * SMPI's (PMPI_Allreduce). Active when HPCEVAL_SMPI_ALLREDUCE=openmpi (set with the Open
 * MPI selector, unless the run forces SMPI's allreduce); non-commutative operations (Open
 * MPI never rings them) and types that are not contiguous go to SMPI's own.
 *
 * The messages travel on a duplicate of the communicator, so that they never match a receive
 * of the program's own (MPI keeps collective traffic apart in the same way). It is made where
 * the communicator is made, not on first use: MPI_COMM_WORLD's in MPI_Init / MPI_Init_thread,
 * every other one's in the call that creates it (MPI_Comm_dup, _dup_with_info, _split,
 * _split_type, _create, _create_group, MPI_Cart_create, MPI_Cart_sub pass through this file),
 * so that its cost falls in the program's setup. SMPI charges an MPI_Comm_dup as time: one
 * duplicate of a 4-rank communicator costs as much as a one-double allreduce on it (4.05 and
 * 6.07 us on tests/data/smpi/cluster-4x4.xml), and NPB MG class A at 32 ranks on ec2-cc1,
 * whose first MPI_Allreduce is in its timed region, took 96-102 ms with the duplicate made
 * there against 70-76 ms. A communicator made some other way (MPI_Comm_idup) gets its
 * duplicate at its first collective here. The duplicate is freed with its communicator.
 */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#define HPCEVAL_BCAST_TAG 1
#define HPCEVAL_SCAN_TAG 2
#define HPCEVAL_ALLREDUCE_TAG 3

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

/* Whether environment variable `name` is "openmpi", read once into *state (per rank: SMPI
 * privatizes this file's globals). */
static int openmpi_in(const char *name, int *state)
{
    if (*state < 0) {
        const char *v = getenv(name);
        *state = v != NULL && strcmp(v, "openmpi") == 0;
    }
    return *state;
}

static int bcast_enabled(void)
{
    static int state = -1;
    return openmpi_in("HPCEVAL_SMPI_BCAST", &state);
}

static int scan_enabled(void)
{
    static int state = -1;
    return openmpi_in("HPCEVAL_SMPI_SCAN", &state);
}

static int allreduce_enabled(void)
{
    static int state = -1;
    return openmpi_in("HPCEVAL_SMPI_ALLREDUCE", &state);
}

/* Frees the duplicate when its communicator is freed (the attribute's delete callback). */
static int free_private(MPI_Comm comm, int keyval, void *attribute, void *extra)
{
    (void)comm, (void)keyval, (void)extra;
    MPI_Comm *cached = attribute;
    int rc = PMPI_Comm_free(cached);
    free(cached);
    return rc;
}

/* The duplicate of `comm` this file sends on, made the first time it is asked for
 * (collectively: every rank of `comm` is in the same call) and kept as an attribute of
 * `comm`; not copied to the program's own duplicates of `comm`, which get theirs. */
static int private_comm(MPI_Comm comm, MPI_Comm *out)
{
    static int keyval = MPI_KEYVAL_INVALID;
    int rc, found = 0;
    MPI_Comm *cached = NULL;
    if (keyval == MPI_KEYVAL_INVALID) {
        rc = MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, free_private, &keyval, NULL);
        if (rc != MPI_SUCCESS) return rc;
    }
    rc = MPI_Comm_get_attr(comm, keyval, &cached, &found);
    if (rc != MPI_SUCCESS) return rc;
    if (!found) {
        cached = malloc(sizeof *cached);
        if (cached == NULL) return MPI_ERR_NO_MEM;
        /* PMPI_: this file's MPI_Comm_dup would ask for the duplicate's own duplicate */
        rc = PMPI_Comm_dup(comm, cached);
        if (rc != MPI_SUCCESS) {
            free(cached);
            return rc;
        }
        rc = MPI_Comm_set_attr(comm, keyval, cached);
        if (rc != MPI_SUCCESS) return rc;
    }
    *out = *cached;
    return MPI_SUCCESS;
}

/* Whether any collective of this file is active (then each communicator's duplicate is made
 * with it). */
static int any_enabled(void) { return bcast_enabled() || scan_enabled() || allreduce_enabled(); }

/* After a call that made `comm` (rc its result; MPI_COMM_NULL on the ranks left out): its
 * duplicate, made now, in the same collective call. */
static int with_duplicate(int rc, const MPI_Comm *comm)
{
    MPI_Comm own; /* *comm is read only once the call has succeeded */
    if (rc == MPI_SUCCESS && *comm != MPI_COMM_NULL && any_enabled()) rc = private_comm(*comm, &own);
    return rc;
}

int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);
    MPI_Comm world = MPI_COMM_WORLD;
    return with_duplicate(rc, &world);
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    MPI_Comm world = MPI_COMM_WORLD;
    return with_duplicate(rc, &world);
}

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm)
{
    return with_duplicate(PMPI_Comm_dup(comm, newcomm), newcomm);
}

int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm)
{
    return with_duplicate(PMPI_Comm_dup_with_info(comm, info, newcomm), newcomm);
}

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm)
{
    return with_duplicate(PMPI_Comm_split(comm, color, key, newcomm), newcomm);
}

int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm *newcomm)
{
    return with_duplicate(PMPI_Comm_split_type(comm, split_type, key, info, newcomm), newcomm);
}

int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm)
{
    return with_duplicate(PMPI_Comm_create(comm, group, newcomm), newcomm);
}

int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm)
{
    return with_duplicate(PMPI_Comm_create_group(comm, group, tag, newcomm), newcomm);
}

int MPI_Cart_create(MPI_Comm comm, int ndims, const int *dims, const int *periods, int reorder,
                    MPI_Comm *newcomm)
{
    return with_duplicate(PMPI_Cart_create(comm, ndims, dims, periods, reorder, newcomm),
                          newcomm);
}

int MPI_Cart_sub(MPI_Comm comm, const int *remain_dims, MPI_Comm *newcomm)
{
    return with_duplicate(PMPI_Cart_sub(comm, remain_dims, newcomm), newcomm);
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
    if (!bcast_enabled() || count == 0) return PMPI_Bcast(buf, count, datatype, root, comm);
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

/* Bytes a buffer of `count` elements of `datatype` spans, if the type is contiguous from its
 * start (size = extent, lower bound 0), else -1: only those are copied here. */
static long long contiguous_bytes(int count, MPI_Datatype datatype)
{
    int size;
    MPI_Aint lb, extent;
    if (MPI_Type_size(datatype, &size) != MPI_SUCCESS) return -1;
    if (MPI_Type_get_extent(datatype, &lb, &extent) != MPI_SUCCESS) return -1;
    if (lb != 0 || extent != (MPI_Aint)size) return -1;
    return (long long)size * count;
}

/* Open MPI's linear scan: my input into recvbuf, the prefix of ranks < me from me - 1
 * combined in front of it (prefix op mine), the result on to me + 1. */
int MPI_Scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
             MPI_Comm comm)
{
    int size, rank, rc;
    long long bytes;
    if (!scan_enabled() || count <= 0 || (bytes = contiguous_bytes(count, datatype)) < 0)
        return PMPI_Scan(sendbuf, recvbuf, count, datatype, op, comm);
    if ((rc = MPI_Comm_size(comm, &size)) != MPI_SUCCESS) return rc;
    if ((rc = MPI_Comm_rank(comm, &rank)) != MPI_SUCCESS) return rc;
    if (sendbuf != MPI_IN_PLACE) memcpy(recvbuf, sendbuf, (size_t)bytes);
    if (size < 2) return MPI_SUCCESS;
    MPI_Comm own;
    if ((rc = private_comm(comm, &own)) != MPI_SUCCESS) return rc;
    if (rank > 0) {
        void *prefix = malloc((size_t)bytes);
        if (prefix == NULL) return MPI_ERR_NO_MEM;
        rc = MPI_Recv(prefix, count, datatype, rank - 1, HPCEVAL_SCAN_TAG, own,
                      MPI_STATUS_IGNORE);
        if (rc == MPI_SUCCESS) rc = MPI_Reduce_local(prefix, recvbuf, count, datatype, op);
        free(prefix);
        if (rc != MPI_SUCCESS) return rc;
    }
    if (rank + 1 < size)
        rc = MPI_Send(recvbuf, count, datatype, rank + 1, HPCEVAL_SCAN_TAG, own);
    return rc;
}

/* Open MPI's linear exscan: rank 0 sends its input; the last rank receives the prefix; every
 * other rank receives it into recvbuf and sends prefix op mine on. */
int MPI_Exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
               MPI_Op op, MPI_Comm comm)
{
    int size, rank, rc;
    long long bytes;
    if (!scan_enabled() || count <= 0 || (bytes = contiguous_bytes(count, datatype)) < 0)
        return PMPI_Exscan(sendbuf, recvbuf, count, datatype, op, comm);
    if ((rc = MPI_Comm_size(comm, &size)) != MPI_SUCCESS) return rc;
    if (size < 2) return MPI_SUCCESS; /* rank 0's recvbuf is undefined */
    if ((rc = MPI_Comm_rank(comm, &rank)) != MPI_SUCCESS) return rc;
    const void *mine = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    MPI_Comm own;
    if ((rc = private_comm(comm, &own)) != MPI_SUCCESS) return rc;
    if (rank == 0) return MPI_Send(mine, count, datatype, 1, HPCEVAL_SCAN_TAG, own);
    if (rank == size - 1)
        return MPI_Recv(recvbuf, count, datatype, rank - 1, HPCEVAL_SCAN_TAG, own,
                        MPI_STATUS_IGNORE);
    void *next = malloc((size_t)bytes);
    if (next == NULL) return MPI_ERR_NO_MEM;
    memcpy(next, mine, (size_t)bytes); /* before the receive: in place, it overwrites mine */
    rc = MPI_Recv(recvbuf, count, datatype, rank - 1, HPCEVAL_SCAN_TAG, own, MPI_STATUS_IGNORE);
    if (rc == MPI_SUCCESS) rc = MPI_Reduce_local(recvbuf, next, count, datatype, op);
    if (rc == MPI_SUCCESS) rc = MPI_Send(next, count, datatype, rank + 1, HPCEVAL_SCAN_TAG, own);
    free(next);
    return rc;
}

/* Whether Open MPI 4.1's fixed decision for a commutative MPI_Allreduce of `bytes` on `size`
 * ranks is its ring (4) or segmented ring (5); coll_tuned_decision_fixed.c, row by row. */
static int openmpi_allreduce_rings(int size, long long bytes)
{
    if (size < 4)
        return bytes < 8 || (bytes >= 4096 && bytes < 8192) || (bytes >= 16384 && bytes < 262144);
    if (size < 8) return bytes < 16;
    if (size < 16) return 0;
    if (size < 32) return bytes < 64;
    if (size < 64) return bytes < 128;
    if (size < 2048) return 0;
    if (size < 4096) return bytes >= 2048 && bytes < 4096;
    return bytes >= 2048 && bytes < 16384;
}

/* Open MPI's recursive doubling: with `extra` = size - the largest power of two below it,
 * each even rank below 2 x extra hands its data to the odd rank above it and waits; the rest
 * exchange and combine with the partner `distance` apart (distance 1, 2, 4, ...), then the
 * odd ranks hand the result back. Each exchange is a receive posted before a blocking send. */
static int recursive_doubling(void *result, int count, MPI_Datatype datatype, MPI_Op op,
                              MPI_Comm own, int rank, int size, long long bytes)
{
    int adjsize = 1, rc = MPI_SUCCESS;
    while (adjsize * 2 <= size) adjsize *= 2;
    int extra = size - adjsize, newrank;
    void *incoming = malloc((size_t)bytes);
    if (incoming == NULL) return MPI_ERR_NO_MEM;
    MPI_Request request;
    if (rank < 2 * extra) {
        if (rank % 2 == 0) {
            rc = MPI_Send(result, count, datatype, rank + 1, HPCEVAL_ALLREDUCE_TAG, own);
            newrank = -1;
        } else {
            rc = MPI_Recv(incoming, count, datatype, rank - 1, HPCEVAL_ALLREDUCE_TAG, own,
                          MPI_STATUS_IGNORE);
            if (rc == MPI_SUCCESS) rc = MPI_Reduce_local(incoming, result, count, datatype, op);
            newrank = rank / 2;
        }
    } else {
        newrank = rank - extra;
    }
    for (int distance = 1; newrank >= 0 && distance < adjsize && rc == MPI_SUCCESS;
         distance *= 2) {
        int newremote = newrank ^ distance;
        int remote = newremote < extra ? newremote * 2 + 1 : newremote + extra;
        rc = MPI_Irecv(incoming, count, datatype, remote, HPCEVAL_ALLREDUCE_TAG, own, &request);
        if (rc == MPI_SUCCESS)
            rc = MPI_Send(result, count, datatype, remote, HPCEVAL_ALLREDUCE_TAG, own);
        if (rc == MPI_SUCCESS) rc = MPI_Wait(&request, MPI_STATUS_IGNORE);
        if (rc == MPI_SUCCESS) rc = MPI_Reduce_local(incoming, result, count, datatype, op);
    }
    if (rc == MPI_SUCCESS && rank < 2 * extra) {
        if (rank % 2 == 0)
            rc = MPI_Recv(result, count, datatype, rank + 1, HPCEVAL_ALLREDUCE_TAG, own,
                          MPI_STATUS_IGNORE);
        else
            rc = MPI_Send(result, count, datatype, rank - 1, HPCEVAL_ALLREDUCE_TAG, own);
    }
    free(incoming);
    return rc;
}

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                  MPI_Op op, MPI_Comm comm)
{
    int size, rank, commutative, rc;
    long long bytes;
    if (!allreduce_enabled() || count <= 0)
        return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
    /* Most calls have at least as many elements as ranks: decided with one query, before the
     * datatype's and the operation's (each MPI call is a switch of SMPI's benchmark timer). */
    if ((rc = MPI_Comm_size(comm, &size)) != MPI_SUCCESS) return rc;
    if (size < 2 || count >= size || (bytes = contiguous_bytes(count, datatype)) < 0)
        return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
    if ((rc = MPI_Op_commutative(op, &commutative)) != MPI_SUCCESS) return rc;
    if (!commutative || !openmpi_allreduce_rings(size, bytes))
        return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
    if ((rc = MPI_Comm_rank(comm, &rank)) != MPI_SUCCESS) return rc;
    MPI_Comm own;
    if ((rc = private_comm(comm, &own)) != MPI_SUCCESS) return rc;
    if (sendbuf != MPI_IN_PLACE) memcpy(recvbuf, sendbuf, (size_t)bytes);
    return recursive_doubling(recvbuf, count, datatype, op, own, rank, size, bytes);
}
