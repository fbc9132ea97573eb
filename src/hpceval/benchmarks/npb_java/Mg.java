/*
 * NPB MG in Java: V-cycle multigrid on a periodic nx^3 grid. v is zero except +1 at the ten
 * largest and -1 at the ten smallest values of the NPB generator's field over the whole grid
 * (zran3); from u = 0, r = v - A u, then nit times one V-cycle (mg3P: rprj3 restrictions to the
 * 2^3 level, psinv there, then interp, resid and psinv on the way up) and a new residual; the
 * L2 norm of the final residual, rnm2, is verified. As NPB's MPI MG and hpceval's mg.c: the
 * ranks form a pi0 x pi1 x pi2 grid (NPB's split), every rank owns one block of every level
 * plus one ghost layer, refreshed after every stencil by face exchanges axis by axis (comm3;
 * on one rank NPB's comm1p copies with its buffers). As mg.c beyond 8 ranks (NPB keeps idle
 * ranks on the coarse levels that have fewer points than ranks along an axis): below the
 * finest level l0 where every rank still owns a point per axis, level l0's residual is
 * gathered on every rank (Allgather of the blocks), the coarser levels are computed on every
 * rank on the whole grid, and each rank adds its own block of the level-l0 correction. Up to
 * 8 ranks l0 is the coarsest level and every level is distributed.
 * Arrays: x fastest; a level with interior n has m = n + 2 points per axis.
 */
import mpi.MPI;
import mpi.Request;

final class Mg {
    static final int NTOP = 10;
    static final double TOLERANCE = 1e-8;
    static final String CLASSES = "SWABC";
    static final int[] NX = {32, 128, 256, 256, 512};
    static final int[] NIT = {4, 4, 4, 20, 20};
    static final double[] RNM2 = {0.5307707005734e-04, 0.6467329375339e-05, 0.2433365309069e-05,
        0.1800564401355e-05, 0.5706732285740e-06};

    /** One level of this rank: interior n, stored m = n + 2 per axis, global first index. */
    static final class Level {
        final int[] n = new int[3], m = new int[3], start = new int[3];
        int size, gn;
        boolean distributed; // false: the whole grid on every rank (below l0)

        int idx(int i1, int i2, int i3) {
            return i1 + m[0] * (i2 + m[1] * i3);
        }
    }

    final Npb npb;
    int nx, nit, lt;
    final double[] ac = new double[4], cc = new double[4];
    final int[] pi = new int[3], coord = new int[3];
    final int[][] neighbour = new int[3][2];
    Level[] lev;
    double[][] u, r;
    double[] v;
    double[][] faceSend = new double[2][], faceRecv = new double[2][];
    double[][] c1p = new double[4][];
    int c1pLen;
    double[] t1, t2, t3;
    int l0; // the coarsest level distributed over the ranks
    Level full; // level l0's whole grid (when l0 > 1)
    double[] rFull, uFull, gatherSend, gatherRecv;

    Mg(Npb npb) {
        this.npb = npb;
    }

    static void rankGrid(int np, int[] pi) {
        int p = Npb.ilog2(np);
        int dx = p / 3, dy = (p - dx) / 2;
        pi[0] = 1 << dx;
        pi[1] = 1 << dy;
        pi[2] = np / (pi[0] * pi[1]);
    }

    int rankOf(int[] c) {
        return c[0] + pi[0] * (c[1] + pi[1] * c[2]);
    }

    void setup() {
        rankGrid(npb.nranks, pi);
        coord[0] = npb.rank % pi[0];
        coord[1] = (npb.rank / pi[0]) % pi[1];
        coord[2] = npb.rank / (pi[0] * pi[1]);
        for (int ax = 0; ax < 3; ++ax) {
            int[] c = coord.clone();
            c[ax] = (coord[ax] + pi[ax] - 1) % pi[ax];
            neighbour[ax][0] = rankOf(c);
            c[ax] = (coord[ax] + 1) % pi[ax];
            neighbour[ax][1] = rankOf(c);
        }
        lt = Npb.ilog2(nx);
        l0 = Math.max(Npb.ilog2(Math.max(pi[0], Math.max(pi[1], pi[2]))), 1);
        lev = new Level[lt + 1];
        u = new double[lt + 1][];
        r = new double[lt + 1][];
        for (int k = 1; k <= lt; ++k) {
            lev[k] = level(1 << k, k >= l0);
            u[k] = new double[lev[k].size];
            r[k] = new double[lev[k].size];
        }
        int widest = lev[lt].m[0];
        if (l0 > 1) {
            full = level(1 << l0, false);
            rFull = new double[full.size];
            uFull = new double[full.size];
            Level L = lev[l0];
            int block = L.n[0] * L.n[1] * L.n[2];
            gatherSend = new double[block];
            gatherRecv = new double[block * npb.nranks];
            widest = Math.max(widest, full.m[0]);
        }
        Level T = lev[lt];
        v = new double[T.size];
        int face = 0;
        for (int ax = 0; ax < 3; ++ax) face = Math.max(face, T.size / T.m[ax]);
        for (int d = 0; d < 2; ++d) {
            faceSend[d] = new double[face];
            faceRecv[d] = new double[face];
        }
        if (npb.nranks == 1) {
            c1pLen = 2 * T.m[0] * T.m[0];
            for (int b = 0; b < 4; ++b) c1p[b] = new double[c1pLen];
        }
        t1 = new double[widest + 1];
        t2 = new double[widest + 1];
        t3 = new double[widest + 1];
    }

    /** A level of gn points per axis: this rank's block, or the whole grid. */
    Level level(int gn, boolean distributed) {
        Level L = new Level();
        L.gn = gn;
        L.distributed = distributed;
        for (int ax = 0; ax < 3; ++ax) {
            L.n[ax] = distributed ? gn / pi[ax] : gn;
            L.start[ax] = distributed ? coord[ax] * L.n[ax] : 0;
            L.m[ax] = L.n[ax] + 2;
        }
        L.size = L.m[0] * L.m[1] * L.m[2];
        return L;
    }

    // ------------------------------------------------------------------- comm3 --

    /** Packs (or unpacks) plane p normal to ax: x faces interior y, z; y faces all x, interior
     *  z; z faces everything (edges and corners right after the three axes, as NPB's comm3). */
    static void faceCopy(Level L, double[] x, int ax, int p, double[] buf, boolean unpack) {
        final int m0 = L.m[0], m1 = L.m[1], n1 = L.n[1], n2 = L.n[2];
        if (ax == 0) {
            int k = 0;
            for (int i3 = 1; i3 <= n2; ++i3)
                for (int i2 = 1; i2 <= n1; ++i2, ++k) {
                    int at = p + m0 * (i2 + m1 * i3);
                    if (unpack) x[at] = buf[k];
                    else buf[k] = x[at];
                }
        } else if (ax == 1) {
            for (int i3 = 1; i3 <= n2; ++i3) {
                int row = L.idx(0, p, i3), b = (i3 - 1) * m0;
                if (unpack) System.arraycopy(buf, b, x, row, m0);
                else System.arraycopy(x, row, buf, b, m0);
            }
        } else {
            int plane = L.idx(0, 0, p);
            if (unpack) System.arraycopy(buf, 0, x, plane, m0 * m1);
            else System.arraycopy(x, plane, buf, 0, m0 * m1);
        }
    }

    static int faceCount(Level L, int ax) {
        if (ax == 0) return L.n[1] * L.n[2];
        if (ax == 1) return L.m[0] * L.n[2];
        return L.m[0] * L.m[1];
    }

    /** Ghost exchange along ax with both neighbours (NPB's give3/take3). */
    void exchange(Level L, double[] x, int ax) {
        final int count = faceCount(L, ax);
        final int lower = neighbour[ax][0], upper = neighbour[ax][1];
        Request[] req = new Request[4];
        req[0] = npb.world.Irecv(faceRecv[0], 0, count, MPI.DOUBLE, lower, 200 + ax);
        req[1] = npb.world.Irecv(faceRecv[1], 0, count, MPI.DOUBLE, upper, 100 + ax);
        faceCopy(L, x, ax, 1, faceSend[0], false);
        faceCopy(L, x, ax, L.n[ax], faceSend[1], false);
        req[2] = npb.world.Isend(faceSend[0], 0, count, MPI.DOUBLE, lower, 100 + ax);
        req[3] = npb.world.Isend(faceSend[1], 0, count, MPI.DOUBLE, upper, 200 + ax);
        Request.Waitall(req);
        faceCopy(L, x, ax, 0, faceRecv[0], true);
        faceCopy(L, x, ax, L.n[ax] + 1, faceRecv[1], true);
    }

    /** NPB's single-rank periodic update with its buffers' memory traffic. */
    void comm1p(Level L, double[] x, int ax) {
        java.util.Arrays.fill(c1p[1], 0.0);
        java.util.Arrays.fill(c1p[3], 0.0);
        faceCopy(L, x, ax, L.n[ax], c1p[2], false);
        faceCopy(L, x, ax, 1, c1p[0], false);
        for (int i = 0; i < c1pLen; ++i) {
            c1p[3][i] = c1p[2][i];
            c1p[1][i] = c1p[0][i];
        }
        faceCopy(L, x, ax, L.n[ax] + 1, c1p[1], true);
        faceCopy(L, x, ax, 0, c1p[3], true);
    }

    /** A whole-grid level's periodic ghosts, in place. */
    static void periodicCopy(Level L, double[] x, int ax) {
        final int m0 = L.m[0], m1 = L.m[1], n0 = L.n[0], n1 = L.n[1], n2 = L.n[2];
        if (ax == 0) {
            for (int i3 = 1; i3 <= n2; ++i3)
                for (int i2 = 1; i2 <= n1; ++i2) {
                    int row = L.idx(0, i2, i3);
                    x[row] = x[row + n0];
                    x[row + n0 + 1] = x[row + 1];
                }
        } else if (ax == 1) {
            for (int i3 = 1; i3 <= n2; ++i3) {
                System.arraycopy(x, L.idx(0, n1, i3), x, L.idx(0, 0, i3), m0);
                System.arraycopy(x, L.idx(0, 1, i3), x, L.idx(0, n1 + 1, i3), m0);
            }
        } else {
            System.arraycopy(x, L.idx(0, 0, n2), x, L.idx(0, 0, 0), m0 * m1);
            System.arraycopy(x, L.idx(0, 0, 1), x, L.idx(0, 0, n2 + 1), m0 * m1);
        }
    }

    void comm3(Level L, double[] x) {
        for (int ax = 0; ax < 3; ++ax) {
            if (!L.distributed) periodicCopy(L, x, ax);
            else if (npb.nranks == 1) comm1p(L, x, ax);
            else exchange(L, x, ax);
        }
    }

    // ---------------------------------------------------------------- stencils --

    /** r = v - A u on the interior (a1 = 0 left out, as NPB), then r's halo. */
    void resid(Level L, double[] uu, double[] vv, double[] rr) {
        final int m0 = L.m[0], n0 = L.n[0], n1 = L.n[1], n2 = L.n[2];
        final int sy = m0, sz = m0 * L.m[1];
        final double a0 = ac[0], a2 = ac[2], a3 = ac[3];
        final double[] u1 = t1, u2 = t2;
        for (int i3 = 1; i3 <= n2; ++i3)
            for (int i2 = 1; i2 <= n1; ++i2) {
                final int o = sy * i2 + sz * i3;
                for (int i1 = 0; i1 < m0; ++i1) {
                    u1[i1] = uu[o - sy + i1] + uu[o + sy + i1] + uu[o - sz + i1] + uu[o + sz + i1];
                    u2[i1] = uu[o - sy - sz + i1] + uu[o + sy - sz + i1] + uu[o - sy + sz + i1]
                        + uu[o + sy + sz + i1];
                }
                for (int i1 = 1; i1 <= n0; ++i1)
                    rr[o + i1] = vv[o + i1] - a0 * uu[o + i1] - a2 * (u2[i1] + u1[i1 - 1] + u1[i1 + 1])
                        - a3 * (u2[i1 - 1] + u2[i1 + 1]);
            }
        comm3(L, rr);
    }

    /** u = u + C r on the interior (the smoother; c3 = 0 left out), then u's halo. */
    void psinv(Level L, double[] rr, double[] uu) {
        final int m0 = L.m[0], n0 = L.n[0], n1 = L.n[1], n2 = L.n[2];
        final int sy = m0, sz = m0 * L.m[1];
        final double c0 = cc[0], c1 = cc[1], c2 = cc[2];
        final double[] r1 = t1, r2 = t2;
        for (int i3 = 1; i3 <= n2; ++i3)
            for (int i2 = 1; i2 <= n1; ++i2) {
                final int o = sy * i2 + sz * i3;
                for (int i1 = 0; i1 < m0; ++i1) {
                    r1[i1] = rr[o - sy + i1] + rr[o + sy + i1] + rr[o - sz + i1] + rr[o + sz + i1];
                    r2[i1] = rr[o - sy - sz + i1] + rr[o + sy - sz + i1] + rr[o - sy + sz + i1]
                        + rr[o + sy + sz + i1];
                }
                for (int i1 = 1; i1 <= n0; ++i1)
                    uu[o + i1] = uu[o + i1] + c0 * rr[o + i1] + c1 * (rr[o + i1 - 1] + rr[o + i1 + 1] + r1[i1])
                        + c2 * (r2[i1] + r1[i1 - 1] + r1[i1 + 1]);
            }
        comm3(L, uu);
    }

    /** Restriction: coarse point j = weighted 27-point average around fine point 2j. */
    void rprj3(Level F, double[] rr, Level C, double[] s) {
        final int m0 = F.m[0];
        final int sy = m0, sz = m0 * F.m[1];
        final int c0 = C.n[0], c1 = C.n[1], c2 = C.n[2];
        final double[] x1 = t1, y1 = t2;
        for (int j3 = 1; j3 <= c2; ++j3)
            for (int j2 = 1; j2 <= c1; ++j2) {
                final int o = sy * (2 * j2) + sz * (2 * j3);
                for (int i1 = 1; i1 <= 2 * c0 + 1; ++i1) {
                    x1[i1] = rr[o - sy + i1] + rr[o + sy + i1] + rr[o - sz + i1] + rr[o + sz + i1];
                    y1[i1] = rr[o - sy - sz + i1] + rr[o - sy + sz + i1] + rr[o + sy - sz + i1]
                        + rr[o + sy + sz + i1];
                }
                final int so = C.idx(0, j2, j3);
                for (int j1 = 1; j1 <= c0; ++j1) {
                    final int i1 = 2 * j1;
                    s[so + j1] = 0.5 * rr[o + i1] + 0.25 * (rr[o + i1 - 1] + rr[o + i1 + 1] + x1[i1])
                        + 0.125 * (x1[i1 - 1] + x1[i1 + 1] + y1[i1]) + 0.0625 * (y1[i1 - 1] + y1[i1 + 1]);
                }
            }
        comm3(C, s);
    }

    /** Prolongation: u += trilinear interpolation of the coarse z over the whole fine block. */
    void interp(Level C, double[] zz, Level F, double[] uu) {
        final int mm0 = C.m[0], mm1 = C.m[1], mm2 = C.m[2];
        final int zy = mm0, zs = mm0 * mm1, uy = F.m[0], uz = F.m[0] * F.m[1];
        final double[] z1 = t1, z2 = t2, z3 = t3;
        for (int i3 = 0; i3 < mm2 - 1; ++i3)
            for (int i2 = 0; i2 < mm1 - 1; ++i2) {
                final int zc = zy * i2 + zs * i3;
                for (int i1 = 0; i1 < mm0; ++i1) {
                    z1[i1] = zz[zc + zy + i1] + zz[zc + i1];
                    z2[i1] = zz[zc + zs + i1] + zz[zc + i1];
                    z3[i1] = zz[zc + zy + zs + i1] + zz[zc + zs + i1] + z1[i1];
                }
                final int p00 = uy * (2 * i2) + uz * (2 * i3), p10 = p00 + uy, p01 = p00 + uz,
                    p11 = p00 + uy + uz;
                for (int i1 = 0; i1 < mm0 - 1; ++i1) {
                    uu[p00 + 2 * i1] += zz[zc + i1];
                    uu[p00 + 2 * i1 + 1] += 0.5 * (zz[zc + i1 + 1] + zz[zc + i1]);
                    uu[p10 + 2 * i1] += 0.5 * z1[i1];
                    uu[p10 + 2 * i1 + 1] += 0.25 * (z1[i1] + z1[i1 + 1]);
                    uu[p01 + 2 * i1] += 0.5 * z2[i1];
                    uu[p01 + 2 * i1 + 1] += 0.25 * (z2[i1] + z2[i1 + 1]);
                    uu[p11 + 2 * i1] += 0.25 * z3[i1];
                    uu[p11 + 2 * i1 + 1] += 0.125 * (z3[i1] + z3[i1 + 1]);
                }
            }
    }

    /** rnm2 (root mean square over the whole grid) and rnmu (max norm), plane sums in order. */
    double[] norm2u3(Level L, double[] rr) {
        double sum = 0.0, mx = 0.0;
        for (int i3 = 1; i3 <= L.n[2]; ++i3) {
            double s = 0.0;
            for (int i2 = 1; i2 <= L.n[1]; ++i2) {
                final int row = L.idx(0, i2, i3);
                for (int i1 = 1; i1 <= L.n[0]; ++i1) {
                    s += rr[row + i1] * rr[row + i1];
                    mx = Math.max(mx, Math.abs(rr[row + i1]));
                }
            }
            sum += s;
        }
        double[] in = {sum}, out = new double[1], inMax = {mx}, outMax = new double[1];
        npb.world.Allreduce(in, 0, out, 0, 1, MPI.DOUBLE, MPI.SUM);
        npb.world.Allreduce(inMax, 0, outMax, 0, 1, MPI.DOUBLE, MPI.MAX);
        double points = (double) nx * nx * nx;
        return new double[] {Math.sqrt(out[0] / points), outMax[0]};
    }

    // ------------------------------------------------- coarse levels on every rank --

    /** Level l0's residual gathered on every rank into the whole-grid copy. */
    void gatherL0() {
        final Level L = lev[l0];
        final int n0 = L.n[0], n1 = L.n[1], n2 = L.n[2], block = n0 * n1 * n2;
        int k = 0;
        for (int i3 = 1; i3 <= n2; ++i3)
            for (int i2 = 1; i2 <= n1; ++i2)
                for (int i1 = 1; i1 <= n0; ++i1) gatherSend[k++] = r[l0][L.idx(i1, i2, i3)];
        npb.world.Allgather(gatherSend, 0, block, MPI.DOUBLE, gatherRecv, 0, block, MPI.DOUBLE);
        for (int q = 0; q < npb.nranks; ++q) {
            final int c0 = q % pi[0], c1 = (q / pi[0]) % pi[1], c2 = q / (pi[0] * pi[1]);
            k = block * q;
            for (int i3 = 1; i3 <= n2; ++i3)
                for (int i2 = 1; i2 <= n1; ++i2)
                    for (int i1 = 1; i1 <= n0; ++i1)
                        rFull[full.idx(c0 * n0 + i1, c1 * n1 + i2, c2 * n2 + i3)] = gatherRecv[k++];
        }
        comm3(full, rFull);
    }

    /** This rank's block of level l0 (ghosts included) += the whole-grid interpolation. */
    void scatterL0(double[] uu) {
        final Level L = lev[l0];
        final int g = full.gn;
        for (int i3 = 0; i3 < L.m[2]; ++i3)
            for (int i2 = 0; i2 < L.m[1]; ++i2)
                for (int i1 = 0; i1 < L.m[0]; ++i1) {
                    // The point's global index, folded into the periodic whole grid (1..g).
                    int f1 = (L.start[0] + i1 - 1 + g) % g + 1;
                    int f2 = (L.start[1] + i2 - 1 + g) % g + 1;
                    int f3 = (L.start[2] + i3 - 1 + g) % g + 1;
                    uu[L.idx(i1, i2, i3)] += uFull[full.idx(f1, f2, f3)];
                }
    }

    void restrictTo(int k) {
        if (k + 1 == l0 && l0 > 1) {
            gatherL0();
            rprj3(full, rFull, lev[k], r[k]);
        } else {
            rprj3(lev[k + 1], r[k + 1], lev[k], r[k]);
        }
    }

    void prolongateTo(int k) {
        if (k == l0 && l0 > 1) {
            java.util.Arrays.fill(uFull, 0.0);
            interp(lev[k - 1], u[k - 1], full, uFull);
            scatterL0(u[k]);
        } else {
            interp(lev[k - 1], u[k - 1], lev[k], u[k]);
        }
    }

    void mg3p() {
        for (int k = lt - 1; k >= 1; --k) restrictTo(k);
        java.util.Arrays.fill(u[1], 0.0);
        psinv(lev[1], r[1], u[1]);
        for (int k = 2; k <= lt - 1; ++k) {
            java.util.Arrays.fill(u[k], 0.0);
            prolongateTo(k);
            resid(lev[k], u[k], r[k], r[k]);
            psinv(lev[k], r[k], u[k]);
        }
        prolongateTo(lt);
        resid(lev[lt], u[lt], v, r[lt]);
        psinv(lev[lt], r[lt], u[lt]);
    }

    // ------------------------------------------------------------------- zran3 --

    /** Keeps the NTOP largest (ascending) and NTOP smallest (descending) values seen. */
    static void consider(double[] val, long[] idx, int off, double value, long index, boolean top) {
        val[off] = value;
        idx[off] = index;
        for (int i = off; i + 1 < off + NTOP && (top ? val[i] > val[i + 1] : val[i] < val[i + 1]); ++i) {
            double tv = val[i];
            val[i] = val[i + 1];
            val[i + 1] = tv;
            long ti = idx[i];
            idx[i] = idx[i + 1];
            idx[i + 1] = ti;
        }
    }

    void setIfLocal(double[] zz, long index, double value) {
        Level L = lev[lt];
        long n = nx;
        int[] g = {(int) (index % n), (int) ((index / n) % n), (int) (index / (n * n))};
        int[] l = new int[3];
        for (int ax = 0; ax < 3; ++ax) {
            l[ax] = g[ax] - L.start[ax] + 1;
            if (l[ax] < 1 || l[ax] > L.n[ax]) return;
        }
        zz[L.idx(l[0], l[1], l[2])] = value;
    }

    /** The right-hand side: the generator's stream over the whole grid, x fastest, each rank
     *  jumping to its block's rows (NPB's zran3); +1 at the ten largest, -1 at the ten smallest. */
    void zran3(double[] zz) {
        Level L = lev[lt];
        final long n = nx;
        final long a1 = Npb.jump(Npb.A, n);
        final long first = L.start[0] + n * (L.start[1] + n * (long) L.start[2]);
        java.util.Arrays.fill(zz, 0.0);
        for (int i3 = 1; i3 <= L.n[2]; ++i3) {
            long x1 = Npb.mul46(Npb.jump(Npb.A, first + n * n * (i3 - 1)), Npb.SEED);
            for (int i2 = 1; i2 <= L.n[1]; ++i2) {
                Npb.vranlc(L.n[0], x1, Npb.A, zz, L.idx(1, i2, i3));
                x1 = Npb.mul46(a1, x1);
            }
        }
        double[] val = new double[2 * NTOP];
        long[] idx = new long[2 * NTOP];
        for (int i = 0; i < NTOP; ++i) {
            val[i] = 0.0;
            idx[i] = -1;
            val[NTOP + i] = 1.0;
            idx[NTOP + i] = -1;
        }
        for (int i3 = 1; i3 <= L.n[2]; ++i3)
            for (int i2 = 1; i2 <= L.n[1]; ++i2) {
                final int row = L.idx(0, i2, i3);
                final long y = L.start[1] + i2 - 1, zp = L.start[2] + i3 - 1;
                final long rowStart = L.start[0] - 1 + n * (y + n * zp);
                for (int i1 = 1; i1 <= L.n[0]; ++i1) {
                    double value = zz[row + i1];
                    if (value > val[0]) consider(val, idx, 0, value, rowStart + i1, true);
                    if (value < val[NTOP]) consider(val, idx, NTOP, value, rowStart + i1, false);
                }
            }
        final int P = npb.nranks;
        double[] allVal = new double[P * 2 * NTOP];
        long[] allIdx = new long[P * 2 * NTOP];
        npb.world.Allgather(val, 0, 2 * NTOP, MPI.DOUBLE, allVal, 0, 2 * NTOP, MPI.DOUBLE);
        npb.world.Allgather(idx, 0, 2 * NTOP, MPI.LONG, allIdx, 0, 2 * NTOP, MPI.LONG);
        java.util.List<double[]> tops = new java.util.ArrayList<>(), bottoms = new java.util.ArrayList<>();
        for (int q = 0; q < P; ++q)
            for (int i = 0; i < NTOP; ++i) {
                int at = q * 2 * NTOP + i;
                if (allIdx[at] >= 0) tops.add(new double[] {allVal[at], allIdx[at]});
                at += NTOP;
                if (allIdx[at] >= 0) bottoms.add(new double[] {allVal[at], allIdx[at]});
            }
        if (tops.size() < NTOP || bottoms.size() < NTOP)
            throw Npb.fail("internal error: fewer than %d grid points", NTOP);
        java.util.Comparator<double[]> desc = (p, q) -> Double.compare(q[0], p[0]);
        tops.sort(desc);
        bottoms.sort(desc);
        java.util.Arrays.fill(zz, 0.0);
        for (int i = 0; i < NTOP; ++i) setIfLocal(zz, (long) bottoms.get(bottoms.size() - 1 - i)[1], -1.0);
        for (int i = 0; i < NTOP; ++i) setIfLocal(zz, (long) tops.get(i)[1], +1.0);
        comm3(L, zz);
    }

    // -------------------------------------------------------------------- main --

    Npb.Result run() {
        int c = CLASSES.indexOf(npb.className);
        nx = NX[c];
        nit = NIT[c];
        final int P = npb.nranks;
        if (!Npb.isPowerOfTwo(P)) throw Npb.fail("mg needs a power-of-two number of ranks, got %d", P);
        ac[0] = -8.0 / 3.0;
        ac[1] = 0.0;
        ac[2] = 1.0 / 6.0;
        ac[3] = 1.0 / 12.0;
        if (c <= 2) { // S, W, A
            cc[0] = -3.0 / 8.0;
            cc[1] = 1.0 / 32.0;
            cc[2] = -1.0 / 64.0;
        } else {
            cc[0] = -3.0 / 17.0;
            cc[1] = 1.0 / 33.0;
            cc[2] = -1.0 / 61.0;
        }
        npb.header("{\"nx\":" + nx + ",\"ny\":" + nx + ",\"nz\":" + nx + ",\"nit\":" + nit + "}");
        setup();
        Level T = lev[lt];
        double[] uu = u[lt], rr = r[lt];
        // Untimed warm-up as NPB: one residual and one iteration, then back to the start.
        java.util.Arrays.fill(uu, 0.0);
        zran3(v);
        resid(T, uu, v, rr);
        mg3p();
        resid(T, uu, v, rr);
        java.util.Arrays.fill(uu, 0.0);
        zran3(v);

        npb.world.Barrier();
        double t0 = Npb.now();
        resid(T, uu, v, rr);
        double[] norms = norm2u3(T, rr);
        for (int it = 1; it <= nit; ++it) {
            mg3p();
            resid(T, uu, v, rr);
        }
        norms = norm2u3(T, rr);
        double tmax = npb.maxOverRanks(Npb.now() - t0);

        Npb.Result res = new Npb.Result();
        res.timeS = tmax;
        res.mopsTotal = 58.0e-6 * nit * (double) nx * nx * nx / tmax;
        res.iterations = nit;
        res.add("rnm2", norms[0], RNM2[c], TOLERANCE);
        return res;
    }
}
