/*
 * NPB EP in Java: 2^(m+1) numbers of the NPB generator (seed 271828183) taken in pairs; the
 * pairs inside the unit disc give Gaussian deviates by the Marsaglia polar method, summed
 * (sx, sy, verified) and counted in square annuli (q). As NPB 3.4's EP and hpceval's ep.c:
 * 2^(m-16) batches of 2^16 pairs, batch k's seed by NPB's binary method, its 2^17 numbers drawn
 * by vranlc into an array, then one loop over the pairs; contiguous blocks of batches per rank
 * (the first batches % ranks take one more); the timed section ends with the reduction.
 */
final class Ep {
    static final int MK = 16, NK = 1 << MK, NQ = 10;
    static final long EP_SEED = 271828183L;
    static final double TOLERANCE = 1e-8;
    // verification.toml [ep]: class, m, sx, sy
    static final String CLASSES = "SWABC";
    static final int[] M = {24, 25, 28, 30, 32};
    static final double[] SX = {-3.247834652034740e3, -2.863319731645753e3, -4.295875165629892e3,
        4.033815542441498e4, 4.764367927995374e4};
    static final double[] SY = {-6.958407078382297e3, -6.320053679109499e3, -1.580732573678431e4,
        -2.660669192809235e4, -8.084072988043731e4};

    final Npb npb;

    Ep(Npb npb) {
        this.npb = npb;
    }

    /** Seed of batch kk: EP_SEED times an^kk, an squared along the bits of kk (as NPB). */
    static long batchSeed(long kk, long an) {
        long t1 = EP_SEED, t2 = an;
        for (int i = 0; i < 100; ++i) {
            long ik = kk / 2;
            if (2 * ik != kk) t1 = Npb.mul46(t2, t1);
            if (ik == 0) break;
            t2 = Npb.mul46(t2, t2);
            kk = ik;
        }
        return t1;
    }

    Npb.Result run() {
        int c = CLASSES.indexOf(npb.className);
        int m = M[c];
        long nbatches = 1L << (m - MK);
        if (npb.nranks > nbatches)
            throw Npb.fail("ep class %c has %d batches of 2^%d pairs: needs at most %d ranks, got %d",
                npb.className, nbatches, MK, nbatches, npb.nranks);
        npb.header("{\"m\":" + m + ",\"mk\":" + MK + ",\"batches\":" + nbatches + "}");
        long perRank = nbatches / npb.nranks, extra = nbatches % npb.nranks;
        long myCount = perRank + (npb.rank < extra ? 1 : 0);
        long myFirst = npb.rank * perRank + Math.min(npb.rank, extra);
        double[] x = new double[2 * NK];
        java.util.Arrays.fill(x, -1.0e99);

        npb.world.Barrier();
        double t0 = Npb.now();
        // an = a^(2 NK): MK + 1 squarings of a, as NPB.
        long an = Npb.A;
        for (int i = 0; i < MK + 1; ++i) an = Npb.mul46(an, an);
        double sx = 0, sy = 0;
        double[] q = new double[NQ];
        for (long b = 0; b < myCount; ++b) {
            long t1 = batchSeed(myFirst + b, an);
            Npb.vranlc(2 * NK, t1, Npb.A, x, 0);
            for (int i = 0; i < NK; ++i) {
                double x1 = 2.0 * x[2 * i] - 1.0;
                double x2 = 2.0 * x[2 * i + 1] - 1.0;
                double t = x1 * x1 + x2 * x2;
                if (t <= 1.0) {
                    double f = Math.sqrt(-2.0 * Math.log(t) / t);
                    double g1 = x1 * f, g2 = x2 * f;
                    int l = Math.max((int) Math.abs(g1), (int) Math.abs(g2));
                    q[l] += 1.0;
                    sx += g1;
                    sy += g2;
                }
            }
        }
        double[] local = new double[2 + NQ], global = new double[2 + NQ];
        local[0] = sx;
        local[1] = sy;
        System.arraycopy(q, 0, local, 2, NQ);
        npb.world.Allreduce(local, 0, global, 0, 2 + NQ, mpi.MPI.DOUBLE, mpi.MPI.SUM);
        double tmax = npb.maxOverRanks(Npb.now() - t0);

        Npb.Result r = new Npb.Result();
        r.timeS = tmax;
        r.mopsTotal = Math.scalb(1.0, m + 1) / tmax / 1e6;
        r.iterations = 0;
        r.add("sx", global[0], SX[c], TOLERANCE);
        r.add("sy", global[1], SY[c], TOLERANCE);
        StringBuilder note = new StringBuilder();
        double pairs = 0;
        for (int l = 0; l < NQ; ++l) pairs += global[2 + l];
        note.append(String.format(java.util.Locale.ROOT, "gaussian_pairs=%.0f q=[", pairs));
        for (int l = 0; l < NQ; ++l)
            note.append(l > 0 ? "," : "").append(String.format(java.util.Locale.ROOT, "%.0f", global[2 + l]));
        r.note = note.append(']').toString();
        return r;
    }
}
