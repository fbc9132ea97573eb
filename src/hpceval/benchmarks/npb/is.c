/* hpceval NPB kernel IS: integer sort (NPB 3.x definition, MPI bucket-redistribution form).
 *
 * 2^n keys in [0, 2^k) are drawn with the NPB generator (seed 314159265, a = 5^13): key i is
 * (2^k / 4) * (r_{4i+1} + r_{4i+2} + r_{4i+3} + r_{4i+4}), truncated. The keys are spread in
 * equal contiguous blocks over the ranks (a power of two); the block of rank r starts from the
 * seed jumped 4 * r * 2^n / P steps, so the key sequence does not depend on the rank count.
 *
 * One ranking iteration (10 timed ones, after one untimed as NPB does):
 *   - keys[it] = it and keys[it + 10] = 2^k - it (on rank 0, which holds the first keys);
 *   - every rank counts its keys per bucket (the top b bits of a key) and moves them into a
 *     bucket-ordered send buffer;
 *   - MPI_Allreduce of the bucket counts (plus the values of the 5 test keys, as NPB does):
 *     every rank then knows the global bucket sizes and gives each rank a contiguous range of
 *     buckets holding about 2^n / P keys;
 *   - MPI_Alltoall of the send counts, MPI_Alltoallv of the keys;
 *   - each rank ranks its keys: it counts every key value of its range and turns the counts
 *     into cumulative counts (the rank of a value is the number of smaller keys);
 *   - partial verification: the rank of each of the 5 test keys against the official value,
 *     shifted by the per-class rule.
 * After the timed loop, the full verification sorts the keys with the last ranking and checks
 * the order inside every rank and across the boundaries between consecutive ranks.
 *
 * OpenMP inside a rank: the bucket counting and the scatter split the keys in static slices
 * (each thread writes its own part of every bucket, in thread order, so the send buffer is
 * the same for any thread count); the ranking splits the rank's buckets among the threads.
 * A block of keys received from one rank is ordered by bucket, so each thread finds its part
 * of every block by binary search and counts its own disjoint part of the value range: one
 * count array, no merge, and the count array is visited bucket by bucket, in cache. */
#define _POSIX_C_SOURCE 200809L
#include "npb_common.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define IS_ITERATIONS 10
#define IS_TESTS 5
#define IS_MAX_THREADS 1024

typedef int is_key; /* keys are below 2^27 (class D) */

struct is_class {
    char name;
    int log2_keys, log2_max_key, log2_buckets;
    long long test_index[IS_TESTS];
    long long test_rank[IS_TESTS];
};

/* verification.toml [is] */
static const struct is_class is_classes[] = {
    {'S', 16, 11, 9, {48427, 17148, 23627, 62548, 4431}, {0, 18, 346, 64917, 65463}},
    {'W', 20, 16, 10, {357773, 934767, 875723, 898999, 404505},
     {1249, 11698, 1039987, 1043896, 1048018}},
    {'A', 23, 19, 10, {2112377, 662041, 5336171, 3642833, 4250760},
     {104, 17523, 123928, 8288932, 8388264}},
    {'B', 25, 21, 10, {41869, 812306, 5102857, 18232239, 26860214},
     {33422937, 10244, 59149, 33135281, 99}},
    {'C', 27, 23, 10, {44172927, 72999161, 74326391, 129606274, 21736814},
     {61147, 882988, 266290, 133997595, 133525895}},
    {'D', 31, 27, 10, {1317351170, 995930646, 1157283250, 1503301535, 1453734525},
     {1, 36538729, 1978098519, 2145192618, 2147425337}},
};

/* The official rank of test key i at iteration it: test_rank shifted by the class rule. */
static long long is_expected_rank(const struct is_class *c, int i, int it)
{
    long long r = c->test_rank[i];
    switch (c->name) {
    case 'S': return i <= 2 ? r + it : r - it;
    case 'W': return i < 2 ? r + (it - 2) : r - it;
    case 'A': return i <= 2 ? r + (it - 1) : r - (it - 1);
    case 'B': return (i == 1 || i == 2 || i == 4) ? r + it : r - it;
    case 'C': return i <= 2 ? r + it : r - it;
    default: return i < 2 ? r + it : r - it; /* D */
    }
}

/* ------------------------------------------------------------ key generation -- */

/* The generator in 64-bit integers (as NPB's own randi8 variant of randlc does): seeds are
 * integers below 2^46 and a x mod 2^46 is the low 46 bits of the 64-bit product, exactly
 * the numbers of the double-precision randlc. */
#define IS_M46 ((UINT64_C(1) << 46) - 1)
static const double R46 = 1.0 / 70368744177664.0; /* 2^-46 */

#define IS_LANES 64
#define IS_GEN_KEYS 1024 /* keys made at a time (4 uniform numbers each) */

/* Keys first..first+count-1 of the global sequence (0-based), written to out. The uniform
 * numbers r_{4g+1..4g+4} of key g are produced by IS_LANES interleaved sub-sequences, each
 * stepping by a^IS_LANES: the reference numbers in the reference order, vectorizable. The
 * sum is taken in the reference order, ((r1 + r2) + r3) + r4, before the truncation. */
static void is_make_keys(long long first, long long count, int max_key, is_key *out)
{
    uint64_t lane[IS_LANES];
    double r[4 * IS_GEN_KEYS];
    double x = NPB_SEED;
    randlc(&x, npb_jump_multiplier(NPB_A, 4 * first));
    for (int l = 0; l < IS_LANES; ++l) {
        randlc(&x, NPB_A);
        lane[l] = (uint64_t)x;
    }
    const uint64_t step = (uint64_t)npb_jump_multiplier(NPB_A, IS_LANES);
    const double k4 = (double)(max_key / 4);
    for (long long done = 0; done < count; done += IS_GEN_KEYS) {
        for (int j = 0; j < 4 * IS_GEN_KEYS; j += IS_LANES) {
            for (int l = 0; l < IS_LANES; ++l) {
                r[j + l] = R46 * (double)(int64_t)lane[l];
                lane[l] = (lane[l] * step) & IS_M46;
            }
        }
        long long n = count - done < IS_GEN_KEYS ? count - done : IS_GEN_KEYS;
        for (long long i = 0; i < n; ++i) {
            double s = r[4 * i];
            s += r[4 * i + 1];
            s += r[4 * i + 2];
            s += r[4 * i + 3];
            out[done + i] = (is_key)(k4 * s);
        }
    }
}

/* ------------------------------------------------------------------- state -- */

struct is_state {
    const struct is_class *cls;
    int rank, nranks, nthreads;
    int nbuckets, shift, max_key;
    long long total_keys;
    int nkeys;                /* keys per rank */
    is_key *keys;             /* this rank's keys (nkeys) */
    is_key *send;             /* keys in bucket order (nkeys) */
    is_key *recv;             /* keys received from the other ranks for this rank's buckets */
    size_t recv_capacity;
    int *hist;                /* cumulative counts of this rank's key values */
    size_t hist_capacity;
    int *tcount;              /* per-thread bucket counts, then write offsets [thread][bucket] */
    int *bucket_local;        /* this rank's bucket counts + the 5 test-key values */
    int *bucket_total;        /* the same summed over the ranks */
    int *bfirst, *blast;      /* bucket range of every rank (empty when bfirst > blast) */
    int *send_count, *send_displ, *recv_count, *recv_displ;
    /* the ranking of the last iteration, for the full verification */
    int nrecv;
    int min_value;            /* smallest value of this rank's range */
    long long passed, failed; /* partial verification checks on this rank */
    char first_failure[160];
};

static void *grow(void *p, size_t *capacity, size_t needed, size_t elem, const char *what)
{
    if (needed <= *capacity && p != NULL) return p;
    size_t cap = needed + needed / 32 + 64;
    free(p);
    p = npb_alloc(cap * elem, what);
    *capacity = cap;
    return p;
}

/* First index in the bucket-ordered block a[0..n) whose key lies in bucket >= b. */
static int lower_bucket(const is_key *a, int n, int b, int shift)
{
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if ((a[mid] >> shift) < b) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* The keys received from rank p, ordered by bucket. */
static const is_key *is_block(const struct is_state *st, int p, int *n)
{
    *n = st->recv_count[p];
    return st->recv + st->recv_displ[p];
}

/* One ranking iteration (see the header comment). */
static void is_rank(struct is_state *st, int it)
{
    const int B = st->nbuckets, shift = st->shift, T = st->nthreads, P = st->nranks;
    const int nkeys = st->nkeys;
    is_key *restrict keys = st->keys;

    if (st->rank == 0) {
        keys[it] = it;
        keys[it + IS_ITERATIONS] = st->max_key - it;
    }

    int *bucket_local = st->bucket_local;
    for (int i = 0; i < IS_TESTS; ++i) {
        long long g = st->cls->test_index[i];
        bucket_local[B + i] = (g / nkeys == st->rank) ? keys[g % nkeys] : 0;
    }

    /* Bucket counts, one array per thread over a static slice of the keys. */
#pragma omp parallel num_threads(T)
    {
        int t = 0;
#ifdef _OPENMP
        t = omp_get_thread_num();
#endif
        int lo = (int)((long long)nkeys * t / T), hi = (int)((long long)nkeys * (t + 1) / T);
        int *restrict c = st->tcount + (size_t)t * B;
        memset(c, 0, sizeof(int) * (size_t)B);
        for (int i = lo; i < hi; ++i) c[keys[i] >> shift]++;
    }

    /* Rank totals per bucket; the write offset of thread t in bucket i comes after the
     * whole of the previous buckets and after threads 0..t-1 in bucket i. */
    int pos = 0;
    for (int i = 0; i < B; ++i) {
        int total = 0;
        for (int t = 0; t < T; ++t) {
            int c = st->tcount[(size_t)t * B + i];
            st->tcount[(size_t)t * B + i] = pos + total;
            total += c;
        }
        bucket_local[i] = total;
        pos += total;
    }

    NPB_CHECK_MPI(MPI_Allreduce(bucket_local, st->bucket_total, B + IS_TESTS, MPI_INT, MPI_SUM,
                                MPI_COMM_WORLD));
    const int *total = st->bucket_total;

    /* Contiguous bucket ranges: rank p ends with the bucket where the running total reaches
     * (p + 1) * nkeys, so it holds at most nkeys plus one bucket; the last rank takes the
     * rest. */
    {
        long long cum = 0;
        int p = 0;
        st->bfirst[0] = 0;
        for (int i = 0; i < B; ++i) {
            cum += total[i];
            while (p < P - 1 && cum >= (long long)(p + 1) * nkeys) {
                st->blast[p] = i;
                st->bfirst[++p] = i + 1;
            }
        }
        st->blast[P - 1] = B - 1;
    }
    int displ = 0;
    for (int p = 0; p < P; ++p) {
        int n = 0;
        for (int i = st->bfirst[p]; i <= st->blast[p]; ++i) n += bucket_local[i];
        st->send_count[p] = n;
        st->send_displ[p] = displ;
        displ += n;
    }

    /* Scatter into the bucket-ordered send buffer (same slices as the counting). */
#pragma omp parallel num_threads(T)
    {
        int t = 0;
#ifdef _OPENMP
        t = omp_get_thread_num();
#endif
        int lo = (int)((long long)nkeys * t / T), hi = (int)((long long)nkeys * (t + 1) / T);
        int *restrict ptr = st->tcount + (size_t)t * B;
        is_key *restrict send = st->send;
        for (int i = lo; i < hi; ++i) {
            is_key k = keys[i];
            send[ptr[k >> shift]++] = k;
        }
    }

    /* The key exchange, as NPB: every block through MPI_Alltoallv, this rank's own too. */
    NPB_CHECK_MPI(MPI_Alltoall(st->send_count, 1, MPI_INT, st->recv_count, 1, MPI_INT,
                               MPI_COMM_WORLD));
    long long nrecv = 0;
    for (int p = 0; p < P; ++p) {
        st->recv_displ[p] = (int)nrecv;
        nrecv += st->recv_count[p];
    }
    if (nrecv > 0x7fffffffLL) npb_fail("rank %d would receive %lld keys (more than 2^31 - 1)",
                                       st->rank, nrecv);
    st->recv = grow(st->recv, &st->recv_capacity, (size_t)nrecv, sizeof(is_key),
                    "received keys");
    NPB_CHECK_MPI(MPI_Alltoallv(st->send, st->send_count, st->send_displ, MPI_INT, st->recv,
                                st->recv_count, st->recv_displ, MPI_INT, MPI_COMM_WORLD));
    st->nrecv = (int)nrecv;

    /* Ranking of the received keys over this rank's value range. */
    const int bmin = st->bfirst[st->rank], bmax = st->blast[st->rank];
    const int min_value = bmin << shift;
    st->min_value = min_value;
    long long lesser = 0; /* keys of all ranks in buckets below this rank's range */
    for (int i = 0; i < bmin && i < B; ++i) lesser += total[i];
    if (bmin <= bmax) {
        size_t range = (size_t)(bmax - bmin + 1) << shift;
        st->hist = grow(st->hist, &st->hist_capacity, range, sizeof(int), "key value counts");
        /* Threads take contiguous bucket ranges of about equal key counts. */
        int tb[IS_MAX_THREADS + 1];
        int before[IS_MAX_THREADS + 1];
        {
            long long cum = 0;
            int t = 1;
            tb[0] = bmin;
            before[0] = 0;
            for (int i = bmin; i <= bmax && t < T; ++i) {
                while (t < T && cum >= nrecv * t / T) {
                    tb[t] = i;
                    before[t] = (int)cum;
                    ++t;
                }
                cum += total[i];
            }
            for (; t < T; ++t) {
                tb[t] = bmax + 1;
                before[t] = (int)cum;
            }
            tb[T] = bmax + 1;
        }
#pragma omp parallel num_threads(T)
        {
            int t = 0;
#ifdef _OPENMP
            t = omp_get_thread_num();
#endif
            int *restrict h = st->hist; /* h[v - min_value] counts the keys of value v */
            const int v0 = (tb[t] - bmin) << shift, v1 = (tb[t + 1] - bmin) << shift;
            if (v1 > v0) {
                memset(h + v0, 0, sizeof(int) * (size_t)(v1 - v0));
                for (int p = 0; p < P; ++p) {
                    int n;
                    const is_key *restrict blk = is_block(st, p, &n);
                    int lo = T == 1 ? 0 : lower_bucket(blk, n, tb[t], shift);
                    int hi = T == 1 ? n : lower_bucket(blk, n, tb[t + 1], shift);
                    for (int i = lo; i < hi; ++i) h[blk[i] - min_value]++;
                }
                int run = before[t];
                for (int v = v0; v < v1; ++v) {
                    run += h[v];
                    h[v] = run;
                }
            }
        }
    }

    /* Partial verification: the rank of each test key value held by this rank's range. */
    for (int i = 0; i < IS_TESTS; ++i) {
        int k = total[B + i];
        int b = k >> shift;
        if (b < bmin || b > bmax) continue;
        long long r = lesser + (k > min_value ? st->hist[k - 1 - min_value] : 0);
        long long expected = is_expected_rank(st->cls, i, it);
        if (r == expected) {
            st->passed++;
        } else {
            if (st->failed == 0)
                snprintf(st->first_failure, sizeof st->first_failure,
                         "iteration %d test key %d (value %d): rank %lld, expected %lld", it, i,
                         k, r, expected);
            st->failed++;
        }
    }
}

/* Full verification (untimed): sorts the keys with the last ranking, then counts the keys out
 * of order inside the rank and across the boundary with the previous ranks, plus any key
 * placed outside the rank's range or position left empty (a ranking that does not match the
 * keys). Returns the global count of errors (on every rank). */
static long long is_full_verify(struct is_state *st)
{
    const int n = st->nrecv;
    long long errors = 0;
    free(st->keys); /* not needed any more: room for the sorted keys */
    st->keys = NULL;
    is_key *sorted = npb_alloc(sizeof(is_key) * (size_t)(n > 0 ? n : 1), "sorted keys");
    const int bmin = st->bfirst[st->rank], bmax = st->blast[st->rank];
    const int min_value = bmin << st->shift;
    const int max_value = bmax >= bmin ? ((bmax + 1) << st->shift) - 1 : -1;
    for (int i = 0; i < n; ++i) sorted[i] = -1;
    for (int p = 0; p < st->nranks; ++p) {
        int nb;
        const is_key *blk = is_block(st, p, &nb);
        for (int i = 0; i < nb; ++i) {
            is_key k = blk[i];
            if (k < min_value || k > max_value) {
                errors++;
                continue;
            }
            int pos = --st->hist[k - min_value];
            if (pos < 0 || pos >= n) errors++;
            else sorted[pos] = k;
        }
    }
    for (int i = 0; i < n; ++i)
        if (sorted[i] < 0 || (i > 0 && sorted[i - 1] > sorted[i])) errors++;

    /* Largest key of the previous ranks (the last key of the nearest non-empty one) against
     * this rank's first key. */
    int last = n > 0 ? sorted[n - 1] : -1, prev_max = -1;
    NPB_CHECK_MPI(MPI_Exscan(&last, &prev_max, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
    if (st->rank > 0 && n > 0 && prev_max > sorted[0]) errors++;
    free(sorted);

    long long counts[2] = {errors, n}, sums[2];
    NPB_CHECK_MPI(MPI_Allreduce(counts, sums, 2, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
    if (sums[1] != st->total_keys) sums[0] += st->total_keys > sums[1] ? st->total_keys - sums[1]
                                                                       : sums[1] - st->total_keys;
    return sums[0];
}

int main(int argc, char **argv)
{
    int provided; /* MPI is called from the main thread only, outside parallel regions */
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    struct npb_options opt;
    npb_parse_args(argc, argv, "is", &opt);
    struct is_state st;
    memset(&st, 0, sizeof st);
    NPB_CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &st.rank));
    NPB_CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &st.nranks));
    for (size_t i = 0; i < sizeof is_classes / sizeof is_classes[0]; ++i)
        if (is_classes[i].name == opt.class_name) st.cls = &is_classes[i];
    if (st.cls == NULL) npb_fail("no IS parameters for class %c", opt.class_name);
    const struct is_class *cls = st.cls;

    st.nbuckets = 1 << cls->log2_buckets;
    st.shift = cls->log2_max_key - cls->log2_buckets;
    st.max_key = 1 << cls->log2_max_key;
    st.total_keys = 1LL << cls->log2_keys;
    if (!npb_is_power_of_two(st.nranks))
        npb_fail("is needs a power-of-two number of ranks, got %d", st.nranks);
    if (st.nranks > st.nbuckets)
        npb_fail("is class %c has %d buckets: needs at most %d ranks, got %d", cls->name,
                 st.nbuckets, st.nbuckets, st.nranks);
    if (st.total_keys / st.nranks > 0x40000000LL)
        npb_fail("is class %c needs at least %lld ranks (at most 2^30 keys per rank), got %d",
                 cls->name, st.total_keys >> 30, st.nranks);
    st.nthreads = npb_threads();
    if (st.nthreads > IS_MAX_THREADS)
        npb_fail("is supports at most %d threads per rank, got %d", IS_MAX_THREADS, st.nthreads);
    st.nkeys = (int)(st.total_keys / st.nranks);

    char problem[160];
    snprintf(problem, sizeof problem,
             "{\"total_keys_log2\":%d,\"max_key_log2\":%d,\"buckets_log2\":%d,\"iterations\":%d}",
             cls->log2_keys, cls->log2_max_key, cls->log2_buckets, IS_ITERATIONS);
    npb_print_header("is", cls->name, problem);

    const int B = st.nbuckets, P = st.nranks, T = st.nthreads;
    st.keys = npb_alloc(sizeof(is_key) * (size_t)st.nkeys, "keys");
    st.send = npb_alloc(sizeof(is_key) * (size_t)st.nkeys, "send buffer");
    st.tcount = npb_alloc(sizeof(int) * (size_t)B * (size_t)T, "per-thread bucket counts");
    st.bucket_local = npb_alloc(sizeof(int) * (size_t)(B + IS_TESTS), "bucket counts");
    st.bucket_total = npb_alloc(sizeof(int) * (size_t)(B + IS_TESTS), "bucket totals");
    st.bfirst = npb_alloc(sizeof(int) * (size_t)P, "bucket ranges");
    st.blast = npb_alloc(sizeof(int) * (size_t)P, "bucket ranges");
    st.send_count = npb_alloc(sizeof(int) * (size_t)P, "send counts");
    st.send_displ = npb_alloc(sizeof(int) * (size_t)P, "send displacements");
    st.recv_count = npb_alloc(sizeof(int) * (size_t)P, "receive counts");
    st.recv_displ = npb_alloc(sizeof(int) * (size_t)P, "receive displacements");

    /* Keys of this rank, the threads each making a contiguous part (first touch). */
    const long long first_key = (long long)st.rank * st.nkeys;
#pragma omp parallel num_threads(T)
    {
        int t = 0;
#ifdef _OPENMP
        t = omp_get_thread_num();
#endif
        long long lo = (long long)st.nkeys * t / T, hi = (long long)st.nkeys * (t + 1) / T;
        if (hi > lo) is_make_keys(first_key + lo, hi - lo, st.max_key, st.keys + lo);
        memset(st.send + lo, 0, sizeof(is_key) * (size_t)(hi - lo));
    }

    /* One untimed iteration, as NPB does; its checks do not count. */
    is_rank(&st, 1);
    st.passed = st.failed = 0;
    st.first_failure[0] = 0;

    NPB_CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    double t0 = MPI_Wtime();
    for (int it = 1; it <= IS_ITERATIONS; ++it) is_rank(&st, it);
    double elapsed = MPI_Wtime() - t0, tmax;
    NPB_CHECK_MPI(MPI_Allreduce(&elapsed, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));

    long long full_errors = is_full_verify(&st);
    long long checks[2] = {st.passed, st.failed}, checks_total[2];
    NPB_CHECK_MPI(MPI_Allreduce(checks, checks_total, 2, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));

    /* Which rank saw the first partial failure: its message goes in the note. */
    char note[400] = "";
    if (checks_total[1] > 0 || checks_total[0] != (long long)IS_TESTS * IS_ITERATIONS ||
        full_errors != 0) {
        int mine = st.failed > 0 ? st.rank : P, first;
        NPB_CHECK_MPI(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
        char message[160] = "";
        if (first < P) {
            if (st.rank == first) memcpy(message, st.first_failure, sizeof message);
            NPB_CHECK_MPI(MPI_Bcast(message, sizeof message, MPI_CHAR, first, MPI_COMM_WORLD));
        }
        snprintf(note, sizeof note,
                 "partial verification: %lld of %d checks passed%s%s; full verification: %lld "
                 "keys out of order",
                 checks_total[0], IS_TESTS * IS_ITERATIONS, message[0] ? ", first failure: " : "",
                 message, full_errors);
    }

    struct npb_result result;
    memset(&result, 0, sizeof result);
    result.kernel = "is";
    result.class_name = cls->name;
    result.time_s = tmax;
    result.mops_total = (double)IS_ITERATIONS * (double)st.total_keys / tmax / 1e6;
    result.iterations = IS_ITERATIONS;
    result.verified = checks_total[1] == 0 && full_errors == 0;
    npb_add_quantity(&result, "partial_verification_passed", (double)checks_total[0],
                     (double)(IS_TESTS * IS_ITERATIONS), 0.0);
    npb_add_quantity(&result, "full_verification_keys_out_of_order", (double)full_errors, 0.0,
                     0.0);
    if (note[0]) result.note = note;
    npb_print_result(&result);

    free(st.send);
    free(st.recv);
    free(st.hist);
    free(st.tcount);
    free(st.bucket_local);
    free(st.bucket_total);
    free(st.bfirst);
    free(st.blast);
    free(st.send_count);
    free(st.send_displ);
    free(st.recv_count);
    free(st.recv_displ);
    MPI_Finalize();
    return result.verified ? 0 : 3;
}
