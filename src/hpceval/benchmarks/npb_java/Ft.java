/*
 * NPB FT in Java: 3-D FFT PDE solver. A complex field of nx ny nz points from the NPB
 * generator (point i takes numbers 2i+1, 2i+2) is transformed forward into u0; every iteration
 * multiplies u0 by exp(-4 alpha pi^2 |k|^2), transforms back (inverse, unnormalised) and takes
 * the checksum of 1024 points divided by nx ny nz, verified per iteration. As NPB 3.4-MPI's FT
 * and hpceval's ft.c: Swarztrauber's Stockham radix-2 FFT (cfftz, fftz2 passes between two
 * buffers) on fftblock (16) lines at a time through a scratch pencil padded to 18 lines; the
 * evolve factors precomputed once per run in the spectrum's layout; one rank: no transpose
 * (0-D layout); up to nz ranks: slabs of z planes (1-D layout: forward x, y, then the xy-z
 * transpose (blocked local transpose, Alltoall, reordering) and z; the inverse mirrors it). The
 * 2-D layout (more ranks than nz planes) is not written here. Complex arrays interleave the
 * real and imaginary parts (re at 2i, im at 2i + 1). Timed as NPB: index map, initial
 * conditions, FFT set-up, forward FFT and the iterations, after one untimed pass.
 */
import mpi.MPI;

final class Ft {
    static final double ALPHA = 1.0e-6, PI = 3.141592653589793238, TOLERANCE = 1.0e-12;
    static final int FFTBLOCK = 16, FFTBLOCKPAD = 18, TRANSBLOCK = 32, TRANSBLOCKPAD = 34;
    static final String CLASSES = "SWABC";
    static final int[][] DIMS = {{64, 64, 64, 6}, {128, 128, 32, 6}, {256, 256, 128, 6},
        {512, 256, 256, 20}, {512, 512, 512, 20}};
    // verification.toml [ft]: per-iteration checksums (real, imaginary)
    static final double[][][] CHECKSUMS = {
        {{554.6087004964, 484.5363331978}, {554.6385409189, 486.5304269511},
         {554.6148406171, 488.3910722336}, {554.5423607415, 490.1273169046},
         {554.4255039624, 491.7475857993}, {554.2683411902, 493.2597244941}},
        {{567.3612178944, 529.3246849175}, {563.1436885271, 528.2149986629},
         {559.402408997, 527.0996558037}, {556.069804702, 526.0027904925},
         {553.089899125, 524.9400845633}, {550.4159734538, 523.9212247086}},
        {{504.6735008193, 511.404790551}, {505.9412319734, 509.8809666433},
         {506.9376896287, 509.8144042213}, {507.7892868474, 510.1336130759},
         {508.5233095391, 510.4914655194}, {509.1487099959, 510.7917842803}},
        {{517.7643571579, 507.7803458597}, {515.4521291263, 508.8249431599},
         {514.6409228649, 509.6208912659}, {514.2378756213, 510.1023387619},
         {513.9626667737, 510.3976610617}, {513.7423460082, 510.5948019802},
         {513.5547056878, 510.7404165783}, {513.3910925466, 510.8576573661},
         {513.247070539, 510.9577278523}, {513.1197729984, 511.0460304483},
         {513.0070319283, 511.12524338}, {512.9070537032, 511.1968077718},
         {512.8182883502, 511.2616233064}, {512.7393733383, 511.3203605551},
         {512.669106202, 511.3735928093}, {512.6064276004, 511.4218460548},
         {512.550407657, 511.465613976}, {512.500233172, 511.5053595966},
         {512.4551951846, 511.5415130407}, {512.4146770029, 511.5744692211}},
        {{519.5078707457, 514.9019699238}, {515.5422171134, 512.7578201997},
         {514.4678022222, 512.2251847514}, {514.0150594328, 512.1090289018},
         {513.755042681, 512.1143685824}, {513.5811056728, 512.1496764568},
         {513.4569343165, 512.1870921893}, {513.3651975661, 512.2193250322},
         {513.2955192805, 512.2454735794}, {513.2410471738, 512.2663649603},
         {513.1971141679, 512.2830879827}, {513.1605205716, 512.2965869718},
         {513.1290734194, 512.3075927445}, {513.1012720314, 512.3166486553},
         {513.0760908195, 512.3241541685}, {513.0528295923, 512.3304037599},
         {513.0310107773, 512.3356167976}, {513.0103090133, 512.3399592211},
         {512.9905029333, 512.3435588985}, {512.9714421109, 512.3465164008}},
    };

    final Npb npb;
    int nx, ny, nz, niter, maxdim, np;
    boolean slabs; // 1-D layout (np > 1)
    final int[][] dims = new int[3][3]; // dims[phase][coordinate]
    final int[] xstart = new int[3], ystart = new int[3], zstart = new int[3];
    final int[] xend = new int[3], yend = new int[3], zend = new int[3];
    int ntdivnp;
    double[] u0, u1, u2, twiddle, roots, scratch, tblock;
    double[][] sums;

    Ft(Npb npb) {
        this.npb = npb;
    }

    // ---------------------------------------------------------------- 1-D FFTs --

    /** Roots of unity for every power of two up to n: block ln holds exp(i pi k / ln). */
    void fftInit(int n) {
        int m = Npb.ilog2(n);
        roots[0] = m;
        roots[1] = 0.0;
        int ku = 1, ln = 1;
        for (int j = 0; j < m; ++j) {
            double t = PI / ln;
            for (int i = 0; i < ln; ++i) {
                double ti = i * t;
                roots[2 * (ku + i)] = Math.cos(ti);
                roots[2 * (ku + i) + 1] = Math.sin(ti);
            }
            ku += ln;
            ln *= 2;
        }
    }

    /** Pass l of the Stockham FFT of length n = 2^m on `ny` lines (stride ny1): x -> y. */
    void fftz2(int is, int l, int m, int n, int nyl, int ny1, double[] x, int xo, double[] y, int yo) {
        final int n1 = n / 2, lk = 1 << (l - 1), li = 1 << (m - l), lj = 2 * lk;
        final double[] u = roots;
        for (int i = 0; i < li; ++i) {
            final int i11 = i * lk, i12 = i11 + n1, i21 = i * lj, i22 = i21 + lk;
            final double ur = u[2 * (li + i)], ui = is >= 1 ? u[2 * (li + i) + 1] : -u[2 * (li + i) + 1];
            for (int k = 0; k < lk; ++k) {
                final int x1 = xo + 2 * ny1 * (i11 + k), x2 = xo + 2 * ny1 * (i12 + k);
                final int y1 = yo + 2 * ny1 * (i21 + k), y2 = yo + 2 * ny1 * (i22 + k);
                for (int j = 0; j < 2 * nyl; j += 2) {
                    final double ar = x[x1 + j], ai = x[x1 + j + 1], br = x[x2 + j], bi = x[x2 + j + 1];
                    y[y1 + j] = ar + br;
                    y[y1 + j + 1] = ai + bi;
                    final double dr = ar - br, di = ai - bi;
                    y[y2 + j] = ur * dr - ui * di;
                    y[y2 + j + 1] = ur * di + ui * dr;
                }
            }
        }
    }

    /** FFTBLOCK FFTs of length n = 2^m in the scratch pencil (at 0), its second half (at
     *  yo) as the other buffer; the result in the first. */
    void cfftz(int is, int m, int n, int yo) {
        final int mx = (int) roots[0];
        if ((is != 1 && is != -1) || m < 1 || m > mx)
            throw Npb.fail("cfftz: invalid parameters is=%d m=%d mx=%d", is, m, mx);
        final double[] s = scratch;
        for (int l = 1; l <= m; l += 2) {
            fftz2(is, l, m, n, FFTBLOCK, FFTBLOCKPAD, s, 0, s, yo);
            if (l == m) {
                for (int j = 0; j < n; ++j)
                    System.arraycopy(s, yo + 2 * FFTBLOCKPAD * j, s, 2 * FFTBLOCKPAD * j, 2 * FFTBLOCK);
                return;
            }
            fftz2(is, l + 1, m, n, FFTBLOCK, FFTBLOCKPAD, s, yo, s, 0);
        }
    }

    /** FFTs along the first dimension of x (d1 x d2 x d3) into xout (may be x). */
    void cffts1(int is, int[] d, double[] x, double[] xout) {
        final int d1 = d[0], d2 = d[1], d3 = d[2], fb = FFTBLOCK, pad = FFTBLOCKPAD;
        final int logd1 = Npb.ilog2(d1);
        final double[] y = scratch;
        for (int k = 0; k < d3; ++k)
            for (int jj = 0; jj <= d2 - fb; jj += fb) {
                for (int j = 0; j < fb; ++j)
                    for (int i = 0; i < d1; ++i) {
                        final int from = 2 * (i + d1 * (j + jj + d2 * k)), to = 2 * (j + pad * i);
                        y[to] = x[from];
                        y[to + 1] = x[from + 1];
                    }
                cfftz(is, logd1, d1, 2 * pad * d1);
                for (int j = 0; j < fb; ++j)
                    for (int i = 0; i < d1; ++i) {
                        final int to = 2 * (i + d1 * (j + jj + d2 * k)), from = 2 * (j + pad * i);
                        xout[to] = y[from];
                        xout[to + 1] = y[from + 1];
                    }
            }
    }

    /** FFTs along the second dimension, FFTBLOCK lines of the first at a time. */
    void cffts2(int is, int[] d, double[] x, double[] xout) {
        final int d1 = d[0], d2 = d[1], d3 = d[2], fb = FFTBLOCK, pad = FFTBLOCKPAD;
        final int logd2 = Npb.ilog2(d2);
        final double[] y = scratch;
        for (int k = 0; k < d3; ++k)
            for (int ii = 0; ii <= d1 - fb; ii += fb) {
                for (int j = 0; j < d2; ++j)
                    System.arraycopy(x, 2 * (ii + d1 * (j + d2 * k)), y, 2 * pad * j, 2 * fb);
                cfftz(is, logd2, d2, 2 * pad * d2);
                for (int j = 0; j < d2; ++j)
                    System.arraycopy(y, 2 * pad * j, xout, 2 * (ii + d1 * (j + d2 * k)), 2 * fb);
            }
    }

    /** FFTs along the third dimension, FFTBLOCK lines of the first at a time. */
    void cffts3(int is, int[] d, double[] x, double[] xout) {
        final int d1 = d[0], d2 = d[1], d3 = d[2], fb = FFTBLOCK, pad = FFTBLOCKPAD;
        final int logd3 = Npb.ilog2(d3);
        final double[] y = scratch;
        for (int j = 0; j < d2; ++j)
            for (int ii = 0; ii <= d1 - fb; ii += fb) {
                for (int k = 0; k < d3; ++k)
                    System.arraycopy(x, 2 * (ii + d1 * (j + d2 * k)), y, 2 * pad * k, 2 * fb);
                cfftz(is, logd3, d3, 2 * pad * d3);
                for (int k = 0; k < d3; ++k)
                    System.arraycopy(y, 2 * pad * k, xout, 2 * (ii + d1 * (j + d2 * k)), 2 * fb);
            }
    }

    // -------------------------------------------------------------- transposes --

    /** xin (n1 x n2) -> xout (n2 x n1), blocked by TRANSBLOCK where both sides allow it. */
    void transpose2Local(int n1, int n2, double[] xin, double[] xout) {
        if (n1 < TRANSBLOCK || n2 < TRANSBLOCK) {
            if (n1 >= n2) {
                for (int j = 0; j < n2; ++j)
                    for (int i = 0; i < n1; ++i) {
                        xout[2 * (j + n2 * i)] = xin[2 * (i + n1 * j)];
                        xout[2 * (j + n2 * i) + 1] = xin[2 * (i + n1 * j) + 1];
                    }
            } else {
                for (int i = 0; i < n1; ++i)
                    for (int j = 0; j < n2; ++j) {
                        xout[2 * (j + n2 * i)] = xin[2 * (i + n1 * j)];
                        xout[2 * (j + n2 * i) + 1] = xin[2 * (i + n1 * j) + 1];
                    }
            }
            return;
        }
        final double[] z = tblock; // z[ii][jj], TRANSBLOCK x TRANSBLOCKPAD complex
        for (int j = 0; j < n2; j += TRANSBLOCK)
            for (int i = 0; i < n1; i += TRANSBLOCK) {
                for (int jj = 0; jj < TRANSBLOCK; ++jj)
                    for (int ii = 0; ii < TRANSBLOCK; ++ii) {
                        final int to = 2 * (ii * TRANSBLOCKPAD + jj), from = 2 * (i + ii + n1 * (j + jj));
                        z[to] = xin[from];
                        z[to + 1] = xin[from + 1];
                    }
                for (int ii = 0; ii < TRANSBLOCK; ++ii)
                    System.arraycopy(z, 2 * ii * TRANSBLOCKPAD, xout, 2 * (j + n2 * (i + ii)), 2 * TRANSBLOCK);
            }
    }

    /** The 1-D layout's exchange: block p of xin to rank p. */
    void transpose2Global(double[] xin, double[] xout) {
        final int count = 2 * (ntdivnp / np);
        npb.world.Alltoall(xin, 0, count, MPI.DOUBLE, xout, 0, count, MPI.DOUBLE);
    }

    /** xin (n2, n1/np, np senders) -> xout (n2 np, n1/np). */
    void transpose2Finish(int n1, int n2, double[] xin, double[] xout) {
        final int n1p = n1 / np;
        for (int p = 0; p < np; ++p)
            for (int j = 0; j < n1p; ++j)
                System.arraycopy(xin, 2 * n2 * (j + n1p * p), xout, 2 * (p * n2 + n2 * np * j), 2 * n2);
    }

    void transposeXyZ(int l1, double[] xin, double[] xout) {
        final int n1 = dims[l1][0] * dims[l1][1], n2 = dims[l1][2];
        transpose2Local(n1, n2, xin, xout);
        transpose2Global(xout, xin);
        transpose2Finish(n1, n2, xin, xout);
    }

    void transposeXYz(int l1, double[] xin, double[] xout) {
        final int n1 = dims[l1][0], n2 = dims[l1][1] * dims[l1][2];
        transpose2Local(n1, n2, xin, xout);
        transpose2Global(xout, xin);
        transpose2Finish(n1, n2, xin, xout);
    }

    /** dir 1: x1 (physical) -> x2 (spectrum); dir -1: x1 (spectrum) -> x2. x1 is overwritten. */
    void fft(int dir, double[] x1, double[] x2) {
        if (dir == 1) {
            if (!slabs) {
                cffts1(1, dims[0], x1, x1);
                cffts2(1, dims[1], x1, x1);
                cffts3(1, dims[2], x1, x2);
            } else {
                cffts1(1, dims[0], x1, x1);
                cffts2(1, dims[1], x1, x1);
                transposeXyZ(1, x1, x2);
                cffts1(1, dims[2], x2, x2);
            }
        } else {
            if (!slabs) {
                cffts3(-1, dims[2], x1, x1);
                cffts2(-1, dims[1], x1, x1);
                cffts1(-1, dims[0], x1, x2);
            } else {
                cffts1(-1, dims[2], x1, x1);
                transposeXYz(2, x1, x2);
                cffts2(-1, dims[1], x2, x2);
                cffts1(-1, dims[0], x2, x2);
            }
        }
    }

    // ------------------------------------------------- set-up, evolve, checksum --

    static int freq(int g, int n) {
        return g < n / 2 ? g : g - n;
    }

    /** exp(-4 alpha pi^2 (kx^2 + ky^2 + kz^2)) in the spectrum's layout (phase 3). */
    void computeIndexmap() {
        final double ap = -4.0 * ALPHA * PI * PI;
        final int d0 = dims[2][0], d1 = dims[2][1], d2 = dims[2][2];
        final int xs = xstart[2], ys = ystart[2], zs = zstart[2];
        if (!slabs) { // twiddle(x, y, z)
            for (int i = 0; i < d0; ++i) {
                final int ii = freq(i + xs, nx);
                for (int j = 0; j < d1; ++j) {
                    final int jj = freq(j + ys, ny);
                    final int ij2 = jj * jj + ii * ii;
                    for (int k = 0; k < d2; ++k) {
                        final int kk = freq(k + zs, nz);
                        twiddle[i + d0 * (j + d1 * k)] = Math.exp(ap * (double) (kk * kk + ij2));
                    }
                }
            }
        } else { // twiddle(z, x, y)
            for (int i = 0; i < d1; ++i) {
                final int ii = freq(i + xs, nx);
                for (int j = 0; j < d2; ++j) {
                    final int jj = freq(j + ys, ny);
                    final int ij2 = jj * jj + ii * ii;
                    for (int k = 0; k < d0; ++k) {
                        final int kk = freq(k + zs, nz);
                        twiddle[k + d0 * (i + d1 * j)] = Math.exp(ap * (double) (kk * kk + ij2));
                    }
                }
            }
        }
    }

    /** u0 = u0 * twiddle, u1 = u0. */
    void evolve() {
        final double[] a = u0, b = u1, tw = twiddle;
        for (int i = 0; i < ntdivnp; ++i) {
            final double re = a[2 * i] * tw[i], im = a[2 * i + 1] * tw[i];
            a[2 * i] = re;
            a[2 * i + 1] = im;
            b[2 * i] = re;
            b[2 * i + 1] = im;
        }
    }

    /** The initial field (phase 1): each local z plane's rows in one vranlc call. */
    void initialConditions(double[] u) {
        final int d2 = dims[0][1], d3 = dims[0][2];
        final long first = (long) zstart[0] * ny + ystart[0];
        long start = Npb.mul46(Npb.jump(Npb.A, 2L * nx * first), Npb.SEED);
        final long an = Npb.jump(Npb.A, 2L * nx * ny);
        for (int k = 0; k < d3; ++k) {
            Npb.vranlc(2 * nx * d2, start, Npb.A, u, 2 * nx * d2 * k);
            if (k != d3 - 1) start = Npb.mul46(an, start);
        }
    }

    void checksum(int it, double[] u) {
        final int[] d = dims[0];
        double[] chk = new double[2], all = new double[2];
        for (int j = 1; j <= 1024; ++j) {
            final int q = j % nx, r = 3 * j % ny, s = 5 * j % nz;
            if (q >= xstart[0] && q <= xend[0] && r >= ystart[0] && r <= yend[0] && s >= zstart[0]
                && s <= zend[0]) {
                final int at = 2 * ((q - xstart[0]) + d[0] * ((r - ystart[0]) + d[1] * (s - zstart[0])));
                chk[0] += u[at];
                chk[1] += u[at + 1];
            }
        }
        final double ntotal = (double) nx * ny * nz;
        chk[0] /= ntotal;
        chk[1] /= ntotal;
        npb.world.Reduce(chk, 0, all, 0, 2, MPI.DOUBLE, MPI.SUM, 0);
        if (npb.rank == 0) {
            sums[it][0] = all[0];
            sums[it][1] = all[1];
        }
    }

    void setupAndForward() {
        computeIndexmap();
        initialConditions(u1);
        fftInit(dims[0][0]);
        fft(1, u1, u0);
    }

    void setup(int c) {
        np = npb.nranks;
        if (!Npb.isPowerOfTwo(np)) throw Npb.fail("ft needs a power-of-two number of ranks, got %d", np);
        if (np > nz)
            throw Npb.fail("ft class %c in Java runs on at most nz = %d ranks (slabs; NPB's 2-D "
                + "layout beyond is not written), got %d", npb.className, nz, np);
        slabs = np > 1;
        final int[] n = {nx, ny, nz};
        final int[][] order = slabs ? new int[][] {{0, 1, 2}, {0, 1, 2}, {2, 0, 1}}
                                    : new int[][] {{0, 1, 2}, {0, 1, 2}, {0, 1, 2}};
        for (int ph = 0; ph < 3; ++ph) {
            for (int k = 0; k < 3; ++k) dims[ph][k] = n[order[ph][k]];
            if (dims[ph][2] % np != 0 || dims[ph][2] < np)
                throw Npb.fail("ft class %c (%dx%dx%d) cannot be laid out in slabs on %d ranks",
                    npb.className, nx, ny, nz, np);
            dims[ph][2] /= np;
        }
        final int me = npb.rank;
        for (int ph = 0; ph < 3; ++ph) {
            xstart[ph] = 0;
            xend[ph] = nx - 1;
            ystart[ph] = 0;
            yend[ph] = ny - 1;
            zstart[ph] = 0;
            zend[ph] = nz - 1;
        }
        if (slabs) {
            for (int ph = 0; ph < 2; ++ph) {
                zstart[ph] = me * nz / np;
                zend[ph] = (me + 1) * nz / np - 1;
            }
            ystart[2] = me * ny / np;
            yend[2] = (me + 1) * ny / np - 1;
        }
        for (int ph = 0; ph < 3; ++ph)
            for (int k = 0; k < 2; ++k)
                if (dims[ph][k] % FFTBLOCK != 0)
                    throw Npb.fail("ft class %c on %d ranks: an extent of %d is not a multiple of the "
                        + "FFT block %d", npb.className, np, dims[ph][k], FFTBLOCK);
        long points = (long) nx * ny * nz / np;
        if (2 * points + 6 > Integer.MAX_VALUE - 8)
            throw Npb.fail("ft class %c on %d ranks: %d points per rank exceed a Java array",
                npb.className, np, points);
        ntdivnp = (int) points;
        maxdim = Math.max(nx, Math.max(ny, nz));
    }

    Npb.Result run() {
        int c = CLASSES.indexOf(npb.className);
        nx = DIMS[c][0];
        ny = DIMS[c][1];
        nz = DIMS[c][2];
        niter = DIMS[c][3];
        setup(c);
        npb.header("{\"nx\":" + nx + ",\"ny\":" + ny + ",\"nz\":" + nz + ",\"niter\":" + niter
            + ",\"layout\":\"" + (slabs ? 1 : 0) + "d\",\"grid\":[1," + np + "],\"fftblock\":"
            + FFTBLOCK + "}");
        // As NPB: three complex arrays and the real twiddle array, padded by 3 points.
        u0 = new double[2 * (ntdivnp + 3)];
        u1 = new double[2 * (ntdivnp + 3)];
        u2 = new double[2 * (ntdivnp + 3)];
        twiddle = new double[ntdivnp];
        roots = new double[2 * (maxdim + 1)];
        scratch = new double[2 * FFTBLOCKPAD * maxdim * 2];
        tblock = new double[2 * TRANSBLOCK * TRANSBLOCKPAD];
        sums = new double[niter][2];

        setupAndForward(); // untimed: everything up to the forward FFT once
        npb.world.Barrier();
        double t0 = Npb.now();
        setupAndForward();
        for (int it = 0; it < niter; ++it) {
            evolve();
            fft(-1, u1, u2);
            checksum(it, u2);
        }
        double tmax = npb.maxOverRanks(Npb.now() - t0);
        // Every rank judges the same sums (rank 0's), untimed.
        double[] flat = new double[2 * niter];
        for (int it = 0; it < niter; ++it) {
            flat[2 * it] = sums[it][0];
            flat[2 * it + 1] = sums[it][1];
        }
        npb.world.Bcast(flat, 0, 2 * niter, MPI.DOUBLE, 0);
        for (int it = 0; it < niter; ++it) {
            sums[it][0] = flat[2 * it];
            sums[it][1] = flat[2 * it + 1];
        }

        Npb.Result res = new Npb.Result();
        res.timeS = tmax;
        res.iterations = niter;
        final double n = (double) nx * ny * nz;
        res.mopsTotal = 1e-6 * n * (14.8157 + 7.19641 * Math.log(n)
            + (5.23518 + 7.21113 * Math.log(n)) * niter) / tmax;
        for (int it = 0; it < niter; ++it) {
            res.add("checksum[" + (it + 1) + "].real", sums[it][0], CHECKSUMS[c][it][0], TOLERANCE);
            res.add("checksum[" + (it + 1) + "].imag", sums[it][1], CHECKSUMS[c][it][1], TOLERANCE);
        }
        return res;
    }
}
