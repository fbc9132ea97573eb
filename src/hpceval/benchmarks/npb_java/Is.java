/*
 * NPB IS in Java (MPI bucket-redistribution form, as NPB's and hpceval's is.c): 2^n keys in
 * [0, 2^k), key i = (2^k / 4) (r_{4i+1} + ... + r_{4i+4}) truncated, in equal contiguous
 * blocks over a power-of-two number of ranks. One ranking iteration (one untimed, then 10
 * timed): keys[it] = it, keys[it + 10] = 2^k - it on rank 0; bucket counts (top b bits) and a
 * bucket-ordered send buffer; Allreduce of the counts (with the 5 test keys' values); bucket
 * ranges of about 2^n / P keys per rank; Alltoall of the counts, Alltoallv of the keys; each
 * rank counts the values of its range into cumulative counts; partial verification of the 5
 * test keys' ranks. After the loop, the full verification sorts with the last ranking and
 * checks the order inside and across ranks.
 */
import mpi.MPI;

final class Is {
    static final int ITERATIONS = 10, TESTS = 5;
    static final String CLASSES = "SWABC";
    static final int[] LOG2_KEYS = {16, 20, 23, 25, 27};
    static final int[] LOG2_MAX_KEY = {11, 16, 19, 21, 23};
    static final int[] LOG2_BUCKETS = {9, 10, 10, 10, 10};
    // verification.toml [is]: the test keys' indices and their official ranks
    static final long[][] TEST_INDEX = {
        {48427, 17148, 23627, 62548, 4431},
        {357773, 934767, 875723, 898999, 404505},
        {2112377, 662041, 5336171, 3642833, 4250760},
        {41869, 812306, 5102857, 18232239, 26860214},
        {44172927, 72999161, 74326391, 129606274, 21736814},
    };
    static final long[][] TEST_RANK = {
        {0, 18, 346, 64917, 65463},
        {1249, 11698, 1039987, 1043896, 1048018},
        {104, 17523, 123928, 8288932, 8388264},
        {33422937, 10244, 59149, 33135281, 99},
        {61147, 882988, 266290, 133997595, 133525895},
    };

    final Npb npb;
    int cls, nbuckets, shift, maxKey, nkeys;
    long totalKeys;
    int[] keys, send, recv = new int[0], hist = new int[0];
    int[] bucketLocal, bucketTotal, bfirst, blast, ptr;
    int[] sendCount, sendDispl, recvCount, recvDispl;
    int nrecv, minValue;
    long passed, failed;
    String firstFailure = "";

    Is(Npb npb) {
        this.npb = npb;
    }

    /** The official rank of test key i at iteration it: the class's shift rule. */
    long expectedRank(int i, int it) {
        long r = TEST_RANK[cls][i];
        switch (npb.className) {
            case 'S': return i <= 2 ? r + it : r - it;
            case 'W': return i < 2 ? r + (it - 2) : r - it;
            case 'A': return i <= 2 ? r + (it - 1) : r - (it - 1);
            case 'B': return (i == 1 || i == 2 || i == 4) ? r + it : r - it;
            default: return i <= 2 ? r + it : r - it; // C
        }
    }

    /** Keys first..first+count-1 of the global sequence: four numbers each, summed in order. */
    void makeKeys(long first, int count, int[] out) {
        long x = Npb.mul46(Npb.jump(Npb.A, 4 * first), Npb.SEED);
        double k4 = maxKey / 4;
        for (int i = 0; i < count; ++i) {
            x = Npb.mul46(Npb.A, x);
            double s = Npb.R46 * x;
            x = Npb.mul46(Npb.A, x);
            s += Npb.R46 * x;
            x = Npb.mul46(Npb.A, x);
            s += Npb.R46 * x;
            x = Npb.mul46(Npb.A, x);
            s += Npb.R46 * x;
            out[i] = (int) (k4 * s);
        }
    }

    void rank(int it) {
        final int B = nbuckets, P = npb.nranks;
        if (npb.rank == 0) {
            keys[it] = it;
            keys[it + ITERATIONS] = maxKey - it;
        }
        for (int i = 0; i < TESTS; ++i) {
            long g = TEST_INDEX[cls][i];
            bucketLocal[B + i] = (g / nkeys == npb.rank) ? keys[(int) (g % nkeys)] : 0;
        }
        // Bucket counts, then the write offset of every bucket in the send buffer.
        java.util.Arrays.fill(ptr, 0);
        for (int i = 0; i < nkeys; ++i) ptr[keys[i] >> shift]++;
        int pos = 0;
        for (int i = 0; i < B; ++i) {
            int c = ptr[i];
            bucketLocal[i] = c;
            ptr[i] = pos;
            pos += c;
        }
        npb.world.Allreduce(bucketLocal, 0, bucketTotal, 0, B + TESTS, MPI.INT, MPI.SUM);
        // Contiguous bucket ranges: rank p ends where the running total reaches (p + 1) nkeys.
        long cum = 0;
        int p = 0;
        bfirst[0] = 0;
        for (int i = 0; i < B; ++i) {
            cum += bucketTotal[i];
            while (p < P - 1 && cum >= (long) (p + 1) * nkeys) {
                blast[p] = i;
                bfirst[++p] = i + 1;
            }
        }
        blast[P - 1] = B - 1;
        int displ = 0;
        for (p = 0; p < P; ++p) {
            int n = 0;
            for (int i = bfirst[p]; i <= blast[p]; ++i) n += bucketLocal[i];
            sendCount[p] = n;
            sendDispl[p] = displ;
            displ += n;
        }
        for (int i = 0; i < nkeys; ++i) {
            int k = keys[i];
            send[ptr[k >> shift]++] = k;
        }
        // The key exchange, as NPB: every block through Alltoallv, this rank's own too.
        npb.world.Alltoall(sendCount, 0, 1, MPI.INT, recvCount, 0, 1, MPI.INT);
        long total = 0;
        for (p = 0; p < P; ++p) {
            recvDispl[p] = (int) total;
            total += recvCount[p];
        }
        if (total > Integer.MAX_VALUE)
            throw Npb.fail("rank %d would receive %d keys (more than 2^31 - 1)", npb.rank, total);
        if (recv.length < total) recv = new int[(int) (total + total / 32 + 64)];
        npb.world.Alltoallv(send, 0, sendCount, sendDispl, MPI.INT, recv, 0, recvCount, recvDispl,
            MPI.INT);
        nrecv = (int) total;
        // Ranking of the received keys over this rank's value range.
        final int bmin = bfirst[npb.rank], bmax = blast[npb.rank];
        minValue = bmin << shift;
        long lesser = 0;
        for (int i = 0; i < bmin && i < B; ++i) lesser += bucketTotal[i];
        if (bmin <= bmax) {
            int range = (bmax - bmin + 1) << shift;
            if (hist.length < range) hist = new int[range];
            java.util.Arrays.fill(hist, 0, range, 0);
            for (int i = 0; i < nrecv; ++i) hist[recv[i] - minValue]++;
            int run = 0;
            for (int v = 0; v < range; ++v) {
                run += hist[v];
                hist[v] = run;
            }
        }
        // Partial verification: the rank of each test key value held by this rank's range.
        for (int i = 0; i < TESTS; ++i) {
            int k = bucketTotal[B + i];
            int b = k >> shift;
            if (b < bmin || b > bmax) continue;
            long r = lesser + (k > minValue ? hist[k - 1 - minValue] : 0);
            long expected = expectedRank(i, it);
            if (r == expected) {
                passed++;
            } else {
                if (failed == 0)
                    firstFailure = "iteration " + it + " test key " + i + " (value " + k + "): rank "
                        + r + ", expected " + expected;
                failed++;
            }
        }
    }

    /** Sorts the keys with the last ranking; the global count of misplaced keys. */
    long fullVerify() {
        final int n = nrecv;
        long errors = 0;
        keys = null;
        int[] sorted = new int[Math.max(n, 1)];
        final int bmin = bfirst[npb.rank], bmax = blast[npb.rank];
        final int lo = bmin << shift, hi = bmax >= bmin ? ((bmax + 1) << shift) - 1 : -1;
        java.util.Arrays.fill(sorted, -1);
        for (int i = 0; i < n; ++i) {
            int k = recv[i];
            if (k < lo || k > hi) {
                errors++;
                continue;
            }
            int at = --hist[k - lo];
            if (at < 0 || at >= n) errors++;
            else sorted[at] = k;
        }
        for (int i = 0; i < n; ++i)
            if (sorted[i] < 0 || (i > 0 && sorted[i - 1] > sorted[i])) errors++;
        // The last key of every rank, to compare with the next ranks' first keys.
        int[] last = {n > 0 ? sorted[n - 1] : -1}, lasts = new int[npb.nranks];
        npb.world.Allgather(last, 0, 1, MPI.INT, lasts, 0, 1, MPI.INT);
        int prevMax = -1;
        for (int p = 0; p < npb.rank; ++p) prevMax = Math.max(prevMax, lasts[p]);
        if (npb.rank > 0 && n > 0 && prevMax > sorted[0]) errors++;
        long[] counts = {errors, n}, sums = new long[2];
        npb.world.Allreduce(counts, 0, sums, 0, 2, MPI.LONG, MPI.SUM);
        if (sums[1] != totalKeys) sums[0] += Math.abs(totalKeys - sums[1]);
        return sums[0];
    }

    Npb.Result run() {
        cls = CLASSES.indexOf(npb.className);
        final int P = npb.nranks;
        nbuckets = 1 << LOG2_BUCKETS[cls];
        shift = LOG2_MAX_KEY[cls] - LOG2_BUCKETS[cls];
        maxKey = 1 << LOG2_MAX_KEY[cls];
        totalKeys = 1L << LOG2_KEYS[cls];
        if (!Npb.isPowerOfTwo(P)) throw Npb.fail("is needs a power-of-two number of ranks, got %d", P);
        if (P > nbuckets)
            throw Npb.fail("is class %c has %d buckets: needs at most %d ranks, got %d",
                npb.className, nbuckets, nbuckets, P);
        nkeys = (int) (totalKeys / P);
        npb.header("{\"total_keys_log2\":" + LOG2_KEYS[cls] + ",\"max_key_log2\":" + LOG2_MAX_KEY[cls]
            + ",\"buckets_log2\":" + LOG2_BUCKETS[cls] + ",\"iterations\":" + ITERATIONS + "}");
        keys = new int[nkeys];
        send = new int[nkeys];
        ptr = new int[nbuckets];
        bucketLocal = new int[nbuckets + TESTS];
        bucketTotal = new int[nbuckets + TESTS];
        bfirst = new int[P];
        blast = new int[P];
        sendCount = new int[P];
        sendDispl = new int[P];
        recvCount = new int[P];
        recvDispl = new int[P];
        makeKeys((long) npb.rank * nkeys, nkeys, keys);

        rank(1); // untimed, as NPB; its checks do not count
        passed = failed = 0;
        firstFailure = "";
        npb.world.Barrier();
        double t0 = Npb.now();
        for (int it = 1; it <= ITERATIONS; ++it) rank(it);
        double tmax = npb.maxOverRanks(Npb.now() - t0);

        long fullErrors = fullVerify();
        long[] checks = {passed, failed}, checksTotal = new long[2];
        npb.world.Allreduce(checks, 0, checksTotal, 0, 2, MPI.LONG, MPI.SUM);
        Npb.Result r = new Npb.Result();
        if (checksTotal[1] > 0 || checksTotal[0] != (long) TESTS * ITERATIONS || fullErrors != 0) {
            // The first failing rank's message: gathered, rank 0 reports.
            r.note = "partial verification: " + checksTotal[0] + " of " + TESTS * ITERATIONS
                + " checks passed" + (failed > 0 ? ", first failure on rank " + npb.rank + ": "
                + firstFailure : "") + "; full verification: " + fullErrors + " keys out of order";
        }
        r.timeS = tmax;
        r.mopsTotal = (double) ITERATIONS * (double) totalKeys / tmax / 1e6;
        r.iterations = ITERATIONS;
        r.verified = checksTotal[1] == 0 && fullErrors == 0;
        r.add("partial_verification_passed", checksTotal[0], TESTS * ITERATIONS, 0.0);
        r.add("full_verification_keys_out_of_order", fullErrors, 0.0, 0.0);
        return r;
    }
}
