/*
 * NPB CG in Java: the inverse power method on NPB's random sparse symmetric matrix (makea:
 * na outer products of random sparse vectors, weights falling from 1 to rcond = 0.1, minus
 * shift on the diagonal), niter outer iterations of 25 unpreconditioned CG iterations each;
 * zeta = shift + 1 / (x . z) verified. As NPB's MPI CG and hpceval's cg.c: a power-of-two
 * number of ranks in an nprows x npcols grid (npcols = nprows or 2 nprows), rank (row, col)
 * holding the matrix block of its row and column ranges; the product is the local block
 * product, the sum over the process row by log2(npcols) pairwise exchanges (Irecv + Send,
 * halving the piece in the first step when npcols = 2 nprows), then the exchange with the
 * transpose partner; dot products summed by the same pairwise exchanges. Every rank draws the
 * whole random sequence and keeps its block's entries.
 */
import mpi.MPI;
import mpi.Request;

final class Cg {
    static final double TOLERANCE = 1e-10;
    static final int ITMAX = 25;
    static final double RCOND = 0.1;
    // verification.toml [cg]: na, nonzer, niter, shift, zeta
    static final String CLASSES = "SWABC";
    static final int[] NA = {1400, 7000, 14000, 75000, 150000};
    static final int[] NONZER = {7, 8, 11, 13, 15};
    static final int[] NITER = {15, 15, 15, 75, 75};
    static final double[] SHIFT = {10.0, 12.0, 20.0, 60.0, 110.0};
    static final double[] ZETA = {8.5971775078648, 10.362595087124, 17.130235054029,
        22.712745482631, 28.973605592845};

    final Npb npb;
    // the process grid
    int me, nprows, npcols, procRow, procCol, row0, nrows, col0, ncols;
    int sendStart, sendLen, exchProc, l2npcols;
    int[] exch, redSendStart, redSendLen, redRecvLen;
    // the matrix block (CSR, local column indices)
    int[] rowstr, colidx;
    double[] a;
    // vectors: x, z, p, r, q on the column range; w and rbuf on the row range
    double[] x, z, p, r, q, w, rbuf;

    Cg(Npb npb) {
        this.npb = npb;
    }

    /** [first, first + count) of n split in `parts`, the first n % parts one longer. */
    static int[] split(int n, int parts, int index) {
        int base = n / parts, extra = n % parts;
        int count = base + (index < extra ? 1 : 0);
        return new int[] {index * base + Math.min(index, extra), count};
    }

    void setupGrid(int na) {
        me = npb.rank;
        int np = npb.nranks;
        if (!Npb.isPowerOfTwo(np)) throw Npb.fail("cg needs a power-of-two number of ranks, got %d", np);
        int l2 = Npb.ilog2(np);
        npcols = 1 << ((l2 + 1) / 2);
        nprows = 1 << (l2 / 2);
        if (npcols > na)
            throw Npb.fail("cg with %d ranks needs %d process columns, more than the %d matrix columns",
                np, npcols, na);
        procRow = me / npcols;
        procCol = me % npcols;
        boolean square = npcols == nprows;
        int[] rows = split(na, nprows, procRow);
        row0 = rows[0];
        nrows = rows[1];
        if (square) {
            int[] cols = split(na, npcols, procCol);
            col0 = cols[0];
            ncols = cols[1];
        } else {
            int[] seg = split(na, npcols / 2, procCol / 2);
            int firstHalf = (seg[1] + 1) / 2;
            col0 = procCol % 2 == 0 ? seg[0] : seg[0] + firstHalf;
            ncols = procCol % 2 == 0 ? firstHalf : seg[1] - firstHalf;
        }
        if (square) {
            sendStart = 0;
            sendLen = nrows;
            exchProc = (me % nprows) * nprows + me / nprows;
        } else {
            int firstHalf = (nrows + 1) / 2;
            sendStart = me % 2 == 0 ? 0 : firstHalf;
            sendLen = me % 2 == 0 ? firstHalf : nrows - firstHalf;
            exchProc = 2 * ((me / 2 % nprows) * nprows + me / 2 / nprows) + me % 2;
        }
        l2npcols = Npb.ilog2(npcols);
        exch = new int[l2npcols];
        redSendStart = new int[l2npcols];
        redSendLen = new int[l2npcols];
        redRecvLen = new int[l2npcols];
        for (int i = 0, div = npcols; i < l2npcols; ++i, div /= 2) {
            int j = (procCol + div / 2) % div + procCol / div * div;
            exch[i] = procRow * npcols + j;
            if (square) {
                redSendStart[i] = sendStart;
                redSendLen[i] = sendLen;
                redRecvLen[i] = nrows;
            } else if (i == l2npcols - 1) {
                redRecvLen[i] = sendLen;
                redSendLen[i] = nrows - sendLen;
                redSendStart[i] = me % 2 == 0 ? sendLen : 0;
            } else {
                redRecvLen[i] = sendLen;
                redSendLen[i] = sendLen;
                redSendStart[i] = sendStart;
            }
        }
        // The schedules agree with the partners' (one exchange each, before timing).
        int[] theirs = new int[1];
        for (int i = 0; i < l2npcols; ++i) {
            exchangeInts(new int[] {redSendLen[i]}, theirs, exch[i], 900 + i);
            if (theirs[0] != redRecvLen[i])
                throw Npb.fail("cg internal error: row-sum step %d of rank %d: partner %d sends %d, "
                    + "expected %d", i, me, exch[i], theirs[0], redRecvLen[i]);
        }
        exchangeInts(new int[] {sendLen}, theirs, exchProc, 950);
        if (theirs[0] != ncols)
            throw Npb.fail("cg internal error: transpose partner %d of rank %d sends %d, expected %d",
                exchProc, me, theirs[0], ncols);
    }

    void exchangeInts(int[] mine, int[] theirs, int partner, int tag) {
        Request rr = npb.world.Irecv(theirs, 0, 1, MPI.INT, partner, tag);
        Request sr = npb.world.Isend(mine, 0, 1, MPI.INT, partner, tag);
        rr.Wait();
        sr.Wait();
    }

    // ------------------------------------------------------------------- makea --

    long tran;
    final double[] v = new double[64];
    final int[] iv = new int[64];

    /** NPB's sprnvc + vecset: `nonzer` distinct random positions in 1..n, then 0.5 at iouter. */
    int randomVector(int n, int nn1, int nonzer, int iouter) {
        int nzv = 0;
        while (nzv < nonzer) {
            tran = Npb.mul46(Npb.A, tran);
            double vecelt = Npb.R46 * tran;
            tran = Npb.mul46(Npb.A, tran);
            double vecloc = Npb.R46 * tran;
            int i = (int) ((double) nn1 * vecloc) + 1;
            if (i > n) continue;
            boolean seen = false;
            for (int k = 0; k < nzv; ++k)
                if (iv[k] == i) {
                    seen = true;
                    break;
                }
            if (seen) continue;
            v[nzv] = vecelt;
            iv[nzv] = i;
            ++nzv;
        }
        boolean set = false;
        for (int k = 0; k < nzv; ++k)
            if (iv[k] == iouter) {
                v[k] = 0.5;
                set = true;
            }
        if (!set) {
            v[nzv] = 0.5;
            iv[nzv] = iouter;
            ++nzv;
        }
        return nzv;
    }

    /** This rank's block, as NPB's sparse: duplicates summed in generation order, columns in
     *  the order they first become nonzero, exact zeros dropped. Two passes over the sequence. */
    void makea(int c, long tran0) {
        final int n = NA[c], nonzer = NONZER[c];
        final int r0 = row0, nr = nrows, c0 = col0, nc = ncols;
        int nn1 = 1;
        do nn1 *= 2;
        while (nn1 < n);
        long[] count = new long[nr + 1];
        tran = tran0;
        for (int iouter = 1; iouter <= n; ++iouter) {
            int nzv = randomVector(n, nn1, nonzer, iouter);
            int localCols = 0;
            for (int k = 0; k < nzv; ++k)
                if (iv[k] - 1 >= c0 && iv[k] - 1 < c0 + nc) ++localCols;
            if (localCols == 0) continue;
            for (int k = 0; k < nzv; ++k) {
                int row = iv[k] - 1 - r0;
                if (row >= 0 && row < nr) count[row + 1] += localCols;
            }
        }
        for (int j = 0; j < nr; ++j) {
            int col = r0 + j - c0;
            if (col >= 0 && col < nc) count[j + 1] += 1;
        }
        for (int j = 0; j < nr; ++j) count[j + 1] += count[j];
        if (count[nr] > Integer.MAX_VALUE - 8)
            throw Npb.fail("cg class %c: %d matrix entries on one rank exceed a Java array", npb.className,
                count[nr]);
        rowstr = new int[nr + 1];
        for (int j = 0; j <= nr; ++j) rowstr[j] = (int) count[j];
        int ndup = rowstr[nr];
        colidx = new int[ndup];
        a = new double[ndup];
        int[] fill = rowstr.clone();
        final double ratio = Math.pow(RCOND, 1.0 / (double) n);
        double size = 1.0;
        tran = tran0;
        for (int iouter = 1; iouter <= n; ++iouter) {
            int nzv = randomVector(n, nn1, nonzer, iouter);
            for (int kc = 0; kc < nzv; ++kc) {
                int col = iv[kc] - 1 - c0;
                if (col < 0 || col >= nc) continue;
                double scale = size * v[kc];
                for (int kr = 0; kr < nzv; ++kr) {
                    int row = iv[kr] - 1 - r0;
                    if (row < 0 || row >= nr) continue;
                    int at = fill[row]++;
                    colidx[at] = col;
                    a[at] = v[kr] * scale;
                }
            }
            size *= ratio;
        }
        for (int j = 0; j < nr; ++j) {
            int col = r0 + j - c0;
            if (col >= 0 && col < nc) {
                int at = fill[j]++;
                colidx[at] = col;
                a[at] = RCOND - SHIFT[c];
            }
        }
        // Merge duplicates row by row with a dense accumulator, then compact.
        double[] acc = new double[nc];
        boolean[] mark = new boolean[nc];
        int maxrow = 0;
        for (int j = 0; j < nr; ++j) maxrow = Math.max(maxrow, rowstr[j + 1] - rowstr[j]);
        int[] list = new int[maxrow + 1];
        int nnz = 0;
        for (int j = 0; j < nr; ++j) {
            int nlist = 0;
            for (int k = rowstr[j]; k < rowstr[j + 1]; ++k) {
                int col = colidx[k];
                acc[col] += a[k];
                if (!mark[col] && acc[col] != 0.0) {
                    mark[col] = true;
                    list[nlist++] = col;
                }
            }
            int start = nnz;
            for (int l = 0; l < nlist; ++l) {
                int col = list[l];
                double val = acc[col];
                acc[col] = 0.0;
                mark[col] = false;
                if (val != 0.0) {
                    colidx[nnz] = col;
                    a[nnz] = val;
                    ++nnz;
                }
            }
            rowstr[j] = start;
        }
        rowstr[nr] = nnz;
        colidx = java.util.Arrays.copyOf(colidx, Math.max(nnz, 1));
        a = java.util.Arrays.copyOf(a, Math.max(nnz, 1));
    }

    // ------------------------------------------------------------- vector work --

    final double[] other = new double[2];

    /** Sums `count` doubles over the process row by the pairwise exchanges (NPB's pattern). */
    void rowAllreduce(double[] val, int count) {
        for (int i = 0; i < l2npcols; ++i) {
            Request req = npb.world.Irecv(other, 0, count, MPI.DOUBLE, exch[i], 200 + i);
            npb.world.Send(val, 0, count, MPI.DOUBLE, exch[i], 200 + i);
            req.Wait();
            for (int k = 0; k < count; ++k) val[k] += other[k];
        }
    }

    final double[] one = new double[1];

    double rowSum(double s) {
        one[0] = s;
        rowAllreduce(one, 1);
        return one[0];
    }

    /** The full product A v on the column range: local block product, row sum, transpose
     *  exchange. Returns where the result lies (dest at 0, or w at sendStart). */
    double[] matvec(double[] vec, double[] dest) {
        final int[] rs = rowstr, col = colidx;
        final double[] av = a, ww = w;
        for (int j = 0; j < nrows; ++j) {
            double sum = 0.0;
            for (int k = rs[j], k1 = rs[j + 1]; k < k1; ++k) sum += av[k] * vec[col[k]];
            ww[j] = sum;
        }
        if (l2npcols == 0) return ww;
        for (int i = l2npcols - 1; i >= 0; --i) {
            Request req = npb.world.Irecv(rbuf, sendStart, redRecvLen[i], MPI.DOUBLE, exch[i], 100 + i);
            npb.world.Send(ww, redSendStart[i], redSendLen[i], MPI.DOUBLE, exch[i], 100 + i);
            req.Wait();
            for (int j = sendStart, hi = sendStart + redRecvLen[i]; j < hi; ++j) ww[j] += rbuf[j];
        }
        if (exchProc == me) {
            if (sendStart != 0) System.arraycopy(ww, sendStart, dest, 0, sendLen);
            else return ww;
            return dest;
        }
        Request req = npb.world.Irecv(dest, 0, ncols, MPI.DOUBLE, exchProc, 300);
        npb.world.Send(ww, sendStart, sendLen, MPI.DOUBLE, exchProc, 300);
        req.Wait();
        return dest;
    }

    /** 25 CG iterations on A z = x from z = 0; returns ||x - A z||. */
    double conjGrad() {
        final int nc = ncols;
        double s = 0.0;
        for (int j = 0; j < nc; ++j) {
            z[j] = 0.0;
            r[j] = x[j];
            p[j] = x[j];
            s += x[j] * x[j];
        }
        double rho = rowSum(s);
        for (int cgit = 0; cgit < ITMAX; ++cgit) {
            final double[] qq = matvec(p, q);
            s = 0.0;
            for (int j = 0; j < nc; ++j) s += p[j] * qq[j];
            final double alpha = rho / rowSum(s);
            s = 0.0;
            for (int j = 0; j < nc; ++j) {
                z[j] = z[j] + alpha * p[j];
                final double rj = r[j] - alpha * qq[j];
                r[j] = rj;
                s += rj * rj;
            }
            final double rho0 = rho;
            rho = rowSum(s);
            final double beta = rho / rho0;
            for (int j = 0; j < nc; ++j) p[j] = r[j] + beta * p[j];
        }
        final double[] az = matvec(z, r);
        s = 0.0;
        for (int j = 0; j < nc; ++j) {
            final double e = x[j] - az[j];
            s += e * e;
        }
        return Math.sqrt(rowSum(s));
    }

    /** x . z and z . z over the process row, then x = z / ||z||; returns x . z. */
    double normalize() {
        double sxz = 0.0, szz = 0.0;
        for (int j = 0; j < ncols; ++j) {
            sxz += x[j] * z[j];
            szz += z[j] * z[j];
        }
        double[] norms = {sxz, szz};
        rowAllreduce(norms, 2);
        final double scale = 1.0 / Math.sqrt(norms[1]);
        for (int j = 0; j < ncols; ++j) x[j] = scale * z[j];
        return norms[0];
    }

    Npb.Result run() {
        int c = CLASSES.indexOf(npb.className);
        setupGrid(NA[c]);
        npb.header(String.format(java.util.Locale.ROOT,
            "{\"na\":%d,\"nonzer\":%d,\"niter\":%d,\"shift\":%.1f}", NA[c], NONZER[c], NITER[c], SHIFT[c]));
        // Seed 314159265, one draw (NPB's zeta = randlc(tran, amult)) before makea.
        makea(c, Npb.mul46(Npb.A, Npb.SEED));
        x = new double[ncols + 1];
        z = new double[ncols + 1];
        p = new double[ncols + 1];
        r = new double[ncols + 1];
        q = new double[ncols + 1];
        w = new double[nrows + 1];
        rbuf = new double[nrows + 1];

        // One untimed outer iteration, then x = 1 again (as NPB).
        java.util.Arrays.fill(x, 0, ncols, 1.0);
        conjGrad();
        normalize();
        java.util.Arrays.fill(x, 0, ncols, 1.0);

        npb.world.Barrier();
        double t0 = Npb.now();
        double zeta = 0.0, rnorm = 0.0;
        for (int it = 1; it <= NITER[c]; ++it) {
            rnorm = conjGrad();
            zeta = SHIFT[c] + 1.0 / normalize();
        }
        double tmax = npb.maxOverRanks(Npb.now() - t0);

        Npb.Result res = new Npb.Result();
        res.timeS = tmax;
        final double nz = NONZER[c];
        res.mopsTotal = 1e-6 * 2.0 * NITER[c] * (double) NA[c]
            * (3.0 + nz * (nz + 1.0) + 25.0 * (5.0 + nz * (nz + 1.0)) + 3.0) / tmax;
        res.iterations = NITER[c];
        res.add("zeta", zeta, ZETA[c], TOLERANCE);
        res.note = String.format(java.util.Locale.ROOT, "rnorm=%.14e grid=%dx%d", rnorm, nprows, npcols);
        return res;
    }
}
