/*
 * MpiBench: hpceval's MPI micro-benchmark in Java, against the mpiJava 1.2 API that MPJ Express
 * implements. Same command line, patterns, sample loop and JSON-lines records as mpibench.c
 * (docs/mpibench.md); the differences are documented in docs/java.md:
 *  - the header names program "mpibench-java" and carries the JVM, the MPJ version and device;
 *  - before any warm-up, every point's first iteration is timed once in the fresh JVM
 *    ("first_iteration_us", interpreted code), then a JIT warm-up runs every size until
 *    --jit-warmup-s is spent, so that the samples measure JIT-compiled code.
 *
 * Build: javac -cp mpj.jar -d classes MpiBench.java MpjRecords.java
 */

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import mpi.Datatype;
import mpi.Intracomm;
import mpi.MPI;
import mpi.Op;
import mpi.Request;

public final class MpiBench {
    static final String VERSION = "1.0";
    static final int MAX_SIZE = 1024 * 1024 * 1024;
    static final int DEFAULT_LARGEST_SIZE = 4 * 1024 * 1024;
    static final int MIN_WARMUP_ITERATIONS = 2;
    static final int MIN_WARMUP_CHUNKS = 3;
    static final int MAX_LOOPS = 1 << 30;
    static final int ABORT_CODE = 2;
    static final int TAG_PING = 1, TAG_PONG = 2, TAG_RIGHTWARD = 3, TAG_LEFTWARD = 4;

    static final String[] PATTERNS = {
        "pingpong", "pingping", "sendrecv", "exchange", "bcast", "reduce",
        "allreduce", "alltoall", "allgather", "barrier", "natural_ring", "random_ring",
    };
    static final int PINGPONG = 0, PINGPING = 1, SENDRECV = 2, EXCHANGE = 3, BCAST = 4,
        REDUCE = 5, ALLREDUCE = 6, ALLTOALL = 7, ALLGATHER = 8, BARRIER = 9,
        NATURAL_RING = 10, RANDOM_RING = 11;
    static final String[] STOP_NAMES = {"none", "ci", "budget", "max_samples"};
    static final int STOP_NONE = 0, STOP_CI = 1, STOP_BUDGET = 2, STOP_MAX_SAMPLES = 3;

    /** An error in the command line or the run: reported once by rank 0, then Abort. */
    static final class BenchError extends RuntimeException {
        BenchError(String message) {
            super(message);
        }
    }

    // Options (defaults as mpibench.c).
    int pattern = -1;
    int[] sizes;
    double targetRci = 0.02, budgetS = 1.0, warmupS = 0.05, sampleS = 0.001, jitWarmupS = 0.5;
    int minSamples = 10, maxSamples = 1000;
    int pairA = 0, pairB = 1;
    long seed = 1;
    String device = "unknown"; // MPJ's device, read from the starter's arguments

    // Run state.
    Intracomm world;
    int rank, nranks, left, right;
    byte[] sendbuf, recvbuf;
    float[] sendFloats, recvFloats; // reductions sum floats, as mpibench.c sums MPI_FLOAT
    double tick;

    static boolean isCollective(int p) {
        return p >= BCAST && p <= BARRIER;
    }

    static boolean sumsFloats(int p) {
        return p == REDUCE || p == ALLREDUCE;
    }

    static int minRanks(int p) {
        return isCollective(p) ? 1 : 2;
    }

    // ------------------------------------------------------------------ options --

    static long parseInteger(String name, String text, long lo, long hi) {
        try {
            if (text.isEmpty() || Character.isWhitespace(text.charAt(0)) || text.startsWith("+"))
                throw new NumberFormatException();
            long v = Long.parseLong(text);
            if (v < lo || v > hi) throw new NumberFormatException();
            return v;
        } catch (NumberFormatException e) {
            throw new BenchError("--" + name + " needs an integer in [" + lo + ", " + hi
                + "], got '" + clip(text) + "'");
        }
    }

    static double parseReal(String name, String text) {
        double v;
        try {
            if (text.isEmpty() || Character.isWhitespace(text.charAt(0))
                || text.matches(".*[a-zA-Z].*") && !text.matches("[-+0-9.]+[eE][-+]?[0-9]+"))
                throw new NumberFormatException();
            v = Double.parseDouble(text);
        } catch (NumberFormatException e) {
            v = Double.NaN;
        }
        if (!(v >= 0) || Double.isInfinite(v))
            throw new BenchError("--" + name + " needs a finite number >= 0, got '" + clip(text) + "'");
        return v;
    }

    static String clip(String text) {
        return text.length() > 64 ? text.substring(0, 64) : text;
    }

    void parseOptions(String[] args) {
        for (int i = 0; i < args.length; ++i) {
            String arg = args[i];
            if (!arg.startsWith("--"))
                throw new BenchError("unexpected argument '" + clip(arg) + "' (options start with --)");
            String name = arg.substring(2);
            String value = null;
            int eq = name.indexOf('=');
            if (eq >= 0) {
                value = name.substring(eq + 1);
                name = name.substring(0, eq);
            }
            if (!List.of("pattern", "sizes", "target-rci", "budget", "min-samples", "max-samples",
                    "warmup-s", "sample-s", "pair", "seed", "jit-warmup-s").contains(name))
                throw new BenchError("unknown option '" + clip(arg) + "' (options: --pattern --sizes"
                    + " --target-rci --budget --min-samples --max-samples --warmup-s --sample-s"
                    + " --pair --seed --jit-warmup-s)");
            if (value == null) {
                if (i + 1 >= args.length) throw new BenchError("option --" + name + " needs a value");
                value = args[++i];
            }
            switch (name) {
                case "pattern":
                    pattern = List.of(PATTERNS).indexOf(value);
                    if (pattern < 0)
                        throw new BenchError("unknown pattern '" + clip(value) + "' (expected one of: "
                            + String.join(" ", PATTERNS) + ")");
                    break;
                case "sizes": {
                    String[] items = value.split(",", -1);
                    sizes = new int[items.length];
                    for (int k = 0; k < items.length; ++k)
                        sizes[k] = (int) parseInteger("sizes", items[k], 0, MAX_SIZE);
                    break;
                }
                case "target-rci": targetRci = parseReal(name, value); break;
                case "budget": budgetS = parseReal(name, value); break;
                case "warmup-s": warmupS = parseReal(name, value); break;
                case "sample-s": sampleS = parseReal(name, value); break;
                case "jit-warmup-s": jitWarmupS = parseReal(name, value); break;
                case "min-samples": minSamples = (int) parseInteger(name, value, 1, Integer.MAX_VALUE); break;
                case "max-samples": maxSamples = (int) parseInteger(name, value, 1, Integer.MAX_VALUE); break;
                case "seed": seed = Long.parseUnsignedLong(checkSeed(value)); break;
                default: { // pair
                    String[] ab = value.split(",", -1);
                    if (ab.length != 2)
                        throw new BenchError("unparseable --pair '" + clip(value) + "' (expected two ranks A,B)");
                    pairA = (int) parseInteger("pair", ab[0], 0, Integer.MAX_VALUE);
                    pairB = (int) parseInteger("pair", ab[1], 0, Integer.MAX_VALUE);
                    if (pairA == pairB)
                        throw new BenchError("--pair " + pairA + "," + pairB + " names the same rank twice");
                }
            }
        }
    }

    static String checkSeed(String text) {
        try {
            if (text.isEmpty() || !Character.isDigit(text.charAt(0))) throw new NumberFormatException();
            Long.parseUnsignedLong(text);
            return text;
        } catch (NumberFormatException e) {
            throw new BenchError("--seed needs an integer in [0, 2^64), got '" + clip(text) + "'");
        }
    }

    void validate() {
        if (pattern < 0)
            throw new BenchError("missing --pattern NAME (one of: " + String.join(" ", PATTERNS) + ")");
        String name = PATTERNS[pattern];
        if (nranks < minRanks(pattern))
            throw new BenchError("pattern " + name + " needs at least " + minRanks(pattern)
                + " ranks, got " + nranks);
        if ((pattern == PINGPONG || pattern == PINGPING) && (pairA >= nranks || pairB >= nranks))
            throw new BenchError("--pair " + pairA + "," + pairB + " is outside the ranks [0, " + nranks + ")");
        if (sizes == null) {
            List<Integer> list = new ArrayList<>();
            list.add(0);
            if (pattern != BARRIER)
                for (int s = sumsFloats(pattern) ? 4 : 1; s <= DEFAULT_LARGEST_SIZE; s *= 2) list.add(s);
            sizes = list.stream().mapToInt(Integer::intValue).toArray();
        }
        if (sumsFloats(pattern))
            for (int s : sizes)
                if (s % 4 != 0)
                    throw new BenchError("size " + s + " is not a multiple of 4 (" + name + " sums MPI.FLOAT elements)");
        long most = 0;
        for (int s : sizes) most = Math.max(most, (long) s * Math.max(2, nranks));
        if (most > Integer.MAX_VALUE - 8)
            throw new BenchError("size " + most / Math.max(2, nranks) + " with " + nranks
                + " ranks needs a buffer larger than a Java array");
    }

    // ---------------------------------------------------------- communication --

    /** splitmix64, identical to mpibench.c, so both programs build the same random ring. */
    static long splitmix64(long[] state) {
        state[0] += 0x9E3779B97F4A7C15L;
        long z = state[0];
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    static long uniformBelow(long[] state, long bound) {
        long threshold = Long.remainderUnsigned(-bound, bound);
        long draw;
        do {
            draw = splitmix64(state);
        } while (Long.compareUnsigned(draw, threshold) < 0);
        return Long.remainderUnsigned(draw, bound);
    }

    void setNeighbours() {
        left = (rank + nranks - 1) % nranks;
        right = (rank + 1) % nranks;
        if (pattern != RANDOM_RING) return;
        int[] ring = new int[nranks];
        for (int i = 0; i < nranks; ++i) ring[i] = i;
        long[] state = {seed};
        for (int i = nranks - 1; i > 0; --i) {
            int j = (int) uniformBelow(state, i + 1);
            int t = ring[i];
            ring[i] = ring[j];
            ring[j] = t;
        }
        for (int pos = 0; pos < nranks; ++pos) {
            if (ring[pos] == rank) {
                left = ring[(pos + nranks - 1) % nranks];
                right = ring[(pos + 1) % nranks];
            }
        }
    }

    /** Buffers at the largest size any point needs; 0x3f bytes (0.747f as floats), as in C. */
    void allocate() {
        long send = 1, recv = 1;
        for (int n : sizes) {
            long s = pattern == BARRIER ? 0 : pattern == ALLTOALL ? (long) n * nranks : n;
            long r;
            switch (pattern) {
                case BARRIER: case BCAST: r = 0; break;
                case EXCHANGE: case NATURAL_RING: case RANDOM_RING: r = 2L * n; break;
                case ALLTOALL: case ALLGATHER: r = (long) n * nranks; break;
                default: r = n;
            }
            send = Math.max(send, s);
            recv = Math.max(recv, r);
        }
        if (sumsFloats(pattern)) {
            sendFloats = new float[(int) (send / 4) + 1];
            recvFloats = new float[(int) (recv / 4) + 1];
            java.util.Arrays.fill(sendFloats, Float.intBitsToFloat(0x3f3f3f3f));
        } else {
            sendbuf = new byte[(int) send];
            recvbuf = new byte[(int) recv];
            java.util.Arrays.fill(sendbuf, (byte) 0x3f);
        }
    }

    void runIterations(int n, int iterations, long firstIteration) {
        final Datatype b = MPI.BYTE;
        switch (pattern) {
            case PINGPONG:
                if (rank == pairA) {
                    for (int i = 0; i < iterations; ++i) {
                        world.Send(sendbuf, 0, n, b, pairB, TAG_PING);
                        world.Recv(recvbuf, 0, n, b, pairB, TAG_PONG);
                    }
                } else if (rank == pairB) {
                    for (int i = 0; i < iterations; ++i) {
                        world.Recv(recvbuf, 0, n, b, pairA, TAG_PING);
                        world.Send(sendbuf, 0, n, b, pairA, TAG_PONG);
                    }
                }
                break;
            case PINGPING: {
                int other = rank == pairA ? pairB : rank == pairB ? pairA : -1;
                if (other < 0) break;
                for (int i = 0; i < iterations; ++i) {
                    Request request = world.Isend(sendbuf, 0, n, b, other, TAG_PING);
                    world.Recv(recvbuf, 0, n, b, other, TAG_PING);
                    request.Wait();
                }
                break;
            }
            case SENDRECV:
                for (int i = 0; i < iterations; ++i)
                    world.Sendrecv(sendbuf, 0, n, b, right, TAG_RIGHTWARD,
                        recvbuf, 0, n, b, left, TAG_RIGHTWARD);
                break;
            case EXCHANGE:
                for (int i = 0; i < iterations; ++i) {
                    Request[] requests = {
                        world.Isend(sendbuf, 0, n, b, left, TAG_LEFTWARD),
                        world.Isend(sendbuf, 0, n, b, right, TAG_RIGHTWARD),
                    };
                    world.Recv(recvbuf, 0, n, b, left, TAG_RIGHTWARD);
                    world.Recv(recvbuf, n, n, b, right, TAG_LEFTWARD);
                    Request.Waitall(requests);
                }
                break;
            case NATURAL_RING:
            case RANDOM_RING: // receives posted first, as HPCC does
                for (int i = 0; i < iterations; ++i) {
                    Request[] requests = {
                        world.Irecv(recvbuf, 0, n, b, left, TAG_RIGHTWARD),
                        world.Irecv(recvbuf, n, n, b, right, TAG_LEFTWARD),
                        world.Isend(sendbuf, 0, n, b, left, TAG_LEFTWARD),
                        world.Isend(sendbuf, 0, n, b, right, TAG_RIGHTWARD),
                    };
                    Request.Waitall(requests);
                }
                break;
            default:
                runCollective(n, iterations, firstIteration);
        }
    }

    void runCollective(int n, int iterations, long firstIteration) {
        int root = (int) (firstIteration % nranks);
        int floats = n / 4;
        switch (pattern) {
            case BCAST:
                for (int i = 0; i < iterations; ++i) {
                    world.Bcast(sendbuf, 0, n, MPI.BYTE, root);
                    root = root + 1 == nranks ? 0 : root + 1;
                }
                break;
            case REDUCE:
                for (int i = 0; i < iterations; ++i) {
                    world.Reduce(sendFloats, 0, recvFloats, 0, floats, MPI.FLOAT, MPI.SUM, root);
                    root = root + 1 == nranks ? 0 : root + 1;
                }
                break;
            case ALLREDUCE:
                for (int i = 0; i < iterations; ++i)
                    world.Allreduce(sendFloats, 0, recvFloats, 0, floats, MPI.FLOAT, MPI.SUM);
                break;
            case ALLTOALL:
                for (int i = 0; i < iterations; ++i)
                    world.Alltoall(sendbuf, 0, n, MPI.BYTE, recvbuf, 0, n, MPI.BYTE);
                break;
            case ALLGATHER:
                for (int i = 0; i < iterations; ++i)
                    world.Allgather(sendbuf, 0, n, MPI.BYTE, recvbuf, 0, n, MPI.BYTE);
                break;
            default:
                for (int i = 0; i < iterations; ++i) world.Barrier();
        }
    }

    /** Wall seconds of `iterations` iterations on this rank (> 0: at least one tick). */
    double timeIterations(int n, int iterations, long[] iteration) {
        double start = now();
        runIterations(n, iterations, iteration[0]);
        double elapsed = now() - start;
        iteration[0] += iterations;
        return elapsed > 0 ? elapsed : tick;
    }

    /**
     * Seconds from System.nanoTime. MPJ Express 0.44's MPI.Wtime is System.currentTimeMillis
     * (1 ms steps): a warm-up chunk of fast iterations would time as zero.
     */
    static double now() {
        return System.nanoTime() * 1e-9;
    }

    boolean isTimedRank(int r) {
        if (pattern == PINGPONG) return r == pairA;
        if (pattern == PINGPING) return r == pairA || r == pairB;
        return true;
    }

    /** The slowest rank's value on rank 0 (MPI.MAX over doubles). */
    double slowest(double mine) {
        double[] in = {mine};
        double[] out = {0};
        world.Reduce(in, 0, out, 0, 1, MPI.DOUBLE, MPI.MAX, 0);
        return out[0];
    }

    void broadcast(int[] values) {
        world.Bcast(values, 0, values.length, MPI.INT, 0);
    }

    // ------------------------------------------------------------- statistics --

    static final double[] T975 = {
        12.7062047, 4.30265273, 3.18244631, 2.77644511, 2.57058184, 2.44691185,
        2.36462425, 2.30600414, 2.26215716, 2.22813885, 2.20098516, 2.17881283,
        2.16036866, 2.14478669, 2.13144955, 2.11990530, 2.10981558, 2.10092204,
        2.09302405, 2.08596345, 2.07961384, 2.07387307, 2.06865761, 2.06389856,
        2.05953855, 2.05552944, 2.05183052, 2.04840714, 2.04522964, 2.04227246,
    };

    static double studentT975(int df) {
        if (df < 1) return Double.POSITIVE_INFINITY;
        if (df <= 30) return T975[df - 1];
        double z = 1.959963985, z3 = z * z * z, z5 = z3 * z * z, v = df;
        return z + (z3 + z) / (4 * v) + (5 * z5 + 16 * z3 + 3 * z) / (96 * v * v);
    }

    /** One point's samples (rank 0), with Welford's running mean and squared deviations. */
    static final class Point {
        int size, loops, stop = STOP_NONE, count;
        long warmupIterations;
        double elapsedS, firstIterationUs, mean, m2;
        double[] tMax, tMin, tAvg;

        Point(int size, int capacity) {
            this.size = size;
            tMax = new double[capacity];
            tMin = new double[capacity];
            tAvg = new double[capacity];
        }

        void add(double max, double min, double avg) {
            tMax[count] = max;
            tMin[count] = min;
            tAvg[count] = avg;
            count += 1;
            double delta = max - mean;
            mean += delta / count;
            m2 += delta * (max - mean);
        }

        double relativeCi() {
            double halfWidth = studentT975(count - 1) * Math.sqrt(m2 / (count - 1) / count);
            return mean > 0 ? halfWidth / mean : Double.POSITIVE_INFINITY;
        }
    }

    int decideStop(Point p, double spentS) {
        if (p.count >= minSamples && p.count >= 2 && p.relativeCi() < targetRci) return STOP_CI;
        if (spentS >= budgetS) return STOP_BUDGET;
        if (p.count >= maxSamples) return STOP_MAX_SAMPLES;
        return STOP_NONE;
    }

    // ---------------------------------------------------------------- phases --

    /** Per-iteration divisor of a time: pingpong times round trips, IMB reports half of one. */
    double iterationDivisor() {
        return pattern == PINGPONG ? 2.0 : 1.0;
    }

    /** The first iteration of every point, in the fresh JVM (interpreted code): µs, slowest rank. */
    double[] coldIterations() {
        double[] cold = new double[sizes.length];
        long[] iteration = {0};
        for (int i = 0; i < sizes.length; ++i) {
            world.Barrier();
            double mine = timeIterations(sizes[i], 1, iteration);
            cold[i] = slowest(mine) / iterationDivisor() * 1e6;
        }
        return cold;
    }

    /**
     * JIT warm-up: all sizes in turn, in chunks, until jitWarmupS is spent (rank 0 decides for
     * all). HotSpot compiles a method after ~10^4 invocations or loop back-edges; small sizes
     * reach that within milliseconds, large ones iterate on byte copies that compile as loops.
     */
    void jitWarmUp() {
        double start = now();
        long[] iteration = {0};
        int[] go = {1};
        while (go[0] != 0) {
            for (int n : sizes) timeIterations(n, n <= 65536 ? 64 : 2, iteration);
            if (rank == 0) go[0] = now() - start < jitWarmupS ? 1 : 0;
            broadcast(go);
        }
    }

    static int loopsFor(double perIteration, double sampleS) {
        double loops = Math.floor(sampleS / perIteration + 0.5);
        if (!(loops >= 1)) return 1;
        return loops > MAX_LOOPS ? MAX_LOOPS : (int) loops;
    }

    static int nextChunk(double seconds, double perIteration, int lastChunk) {
        double wanted = Math.ceil(seconds / perIteration);
        double most = 2.0 * lastChunk < MAX_LOOPS ? 2.0 * lastChunk : MAX_LOOPS;
        return !(wanted >= 1) ? 1 : wanted > most ? (int) most : (int) wanted;
    }

    /** mpibench.c's warm_up: growing chunks, loops calibrated on the fastest chunk. */
    void warmUp(Point point, long[] iteration) {
        double start = now();
        long done = 0;
        int chunks = 0, chunk = MIN_WARMUP_ITERATIONS;
        double fastest = Double.POSITIVE_INFINITY;
        for (;;) {
            double slow = slowest(timeIterations(point.size, chunk, iteration));
            done += chunk;
            chunks += 1;
            int[] decision = {0, 0};
            if (rank == 0) {
                double perIteration = slow / chunk;
                fastest = Math.min(fastest, perIteration);
                double remaining = warmupS - (now() - start);
                if (remaining > 0) decision[0] = nextChunk(remaining, perIteration, chunk);
                else if (chunks < MIN_WARMUP_CHUNKS) decision[0] = nextChunk(sampleS, fastest, chunk);
                else decision[1] = loopsFor(fastest, sampleS);
            }
            broadcast(decision);
            if (decision[0] == 0) {
                point.loops = decision[1];
                point.warmupIterations = done;
                return;
            }
            chunk = decision[0];
        }
    }

    void sample(Point point, long[] iteration) {
        double start = now();
        double divisor = point.loops * iterationDivisor();
        double[] mine = new double[1];
        double[] gathered = new double[nranks];
        int[] stop = {STOP_NONE};
        for (;;) {
            world.Barrier();
            mine[0] = timeIterations(point.size, point.loops, iteration) / divisor * 1e6;
            world.Gather(mine, 0, 1, MPI.DOUBLE, gathered, 0, 1, MPI.DOUBLE, 0);
            if (rank == 0) {
                double min = Double.POSITIVE_INFINITY, max = 0, sum = 0;
                int timed = 0;
                for (int r = 0; r < nranks; ++r) {
                    if (!isTimedRank(r)) continue;
                    min = Math.min(min, gathered[r]);
                    max = Math.max(max, gathered[r]);
                    sum += gathered[r];
                    ++timed;
                }
                point.add(max, min, sum / timed);
                stop[0] = decideStop(point, now() - start);
            }
            broadcast(stop);
            if (stop[0] != STOP_NONE) {
                point.stop = stop[0];
                return;
            }
        }
    }

    // ---------------------------------------------------------------- output --

    static String jsonArray(double[] values, int count) {
        StringBuilder sb = new StringBuilder("[");
        for (int i = 0; i < count; ++i) sb.append(i > 0 ? "," : "").append(MpjRecords.json(values[i]));
        return sb.append(']').toString();
    }

    void printHeader() {
        String hosts = MpjRecords.gatherHosts(world);
        if (rank != 0) return;
        StringBuilder sz = new StringBuilder();
        for (int i = 0; i < sizes.length; ++i) sz.append(i > 0 ? "," : "").append(sizes[i]);
        String jvm = MpjRecords.jvmName();
        String library = "MPJ Express " + MpjRecords.mpjVersion() + " (" + device + " device)";
        System.out.println("{\"record\":\"header\",\"program\":\"mpibench-java\",\"version\":\"" + VERSION
            + "\",\"mpi_library\":" + MpjRecords.jsonString(library)
            + ",\"mpj_version\":" + MpjRecords.jsonString(MpjRecords.mpjVersion())
            + ",\"device\":" + MpjRecords.jsonString(device)
            + ",\"jvm\":" + MpjRecords.jsonString(jvm)
            + ",\"java_version\":" + MpjRecords.jsonString(System.getProperty("java.version"))
            + ",\"mpi_standard\":\"1.1\",\"nranks\":" + nranks + ",\"hosts\":[" + hosts
            + "],\"pattern\":\"" + PATTERNS[pattern] + "\",\"pair\":[" + pairA + "," + pairB
            + "],\"sizes\":[" + sz + "],\"target_rci\":" + MpjRecords.json(targetRci)
            + ",\"budget_s\":" + MpjRecords.json(budgetS) + ",\"min_samples\":" + minSamples
            + ",\"max_samples\":" + maxSamples + ",\"warmup_s\":" + MpjRecords.json(warmupS)
            + ",\"sample_s\":" + MpjRecords.json(sampleS) + ",\"jit_warmup_s\":" + MpjRecords.json(jitWarmupS)
            + ",\"seed\":" + Long.toUnsignedString(seed) + ",\"wtick\":" + MpjRecords.json(tick) + "}");
        System.out.flush();
    }

    void printPoint(Point p) {
        System.out.println(String.format(Locale.ROOT,
            "{\"record\":\"point\",\"pattern\":\"%s\",\"size\":%d,\"nranks\":%d,"
                + "\"warmup_iterations\":%d,\"loops\":%d,\"samples\":%d,\"stop\":\"%s\","
                + "\"elapsed_s\":%s,\"first_iteration_us\":%s,\"t_max_us\":%s,\"t_min_us\":%s,"
                + "\"t_avg_us\":%s,\"mpj_version\":%s,\"device\":%s,\"jvm\":%s}",
            PATTERNS[pattern], p.size, nranks, p.warmupIterations, p.loops, p.count,
            STOP_NAMES[p.stop], MpjRecords.json(p.elapsedS), MpjRecords.json(p.firstIterationUs),
            jsonArray(p.tMax, p.count), jsonArray(p.tMin, p.count), jsonArray(p.tAvg, p.count),
            MpjRecords.jsonString(MpjRecords.mpjVersion()), MpjRecords.jsonString(device), MpjRecords.jsonString(MpjRecords.jvmName())));
        System.out.flush();
    }

    void fail(String message) {
        System.out.println("{\"record\":\"error\",\"rank\":" + rank + ",\"message\":" + MpjRecords.jsonString(message) + "}");
        System.out.flush();
        System.err.println("mpibench-java: error: " + message);
        System.err.flush();
    }

    // ------------------------------------------------------------------ main --

    void run(String[] args) {
        double start = now();
        world = MPI.COMM_WORLD;
        rank = world.Rank();
        nranks = world.Size();
        try {
            parseOptions(args);
            validate();
        } catch (BenchError e) {
            // Every rank finds the same error; rank 0 reports it, then the job ends.
            if (rank == 0) fail(e.getMessage());
            world.Barrier();
            throw new ExitRequest();
        }
        tick = 1e-9; // System.nanoTime's unit
        setNeighbours();
        allocate();
        double[] cold = coldIterations();
        printHeader();
        jitWarmUp();
        for (int i = 0; i < sizes.length; ++i) {
            double pointStart = now();
            Point p = new Point(sizes[i], rank == 0 ? maxSamples : 0);
            p.firstIterationUs = cold[i];
            long[] iteration = {0};
            warmUp(p, iteration);
            sample(p, iteration);
            p.elapsedS = now() - pointStart;
            if (rank == 0) printPoint(p);
        }
        if (rank == 0) {
            System.out.println("{\"record\":\"end\",\"status\":\"ok\",\"points\":" + sizes.length
                + ",\"elapsed_s\":" + MpjRecords.json(now() - start) + "}");
            System.out.flush();
        }
    }

    /** A clean stop after an error already reported (every rank throws it, then finalizes). */
    static final class ExitRequest extends RuntimeException {}

    public static void main(String[] argv) throws Exception {
        // MPJ's starters put "rank, configuration, device" before the program's arguments;
        // MPI.Init removes them. The device is the one MPJ really runs (smpdev: multicore).
        String mpjDevice = argv.length > 2 ? argv[2] : "unknown";
        String[] args = MPI.Init(argv);
        MpiBench bench = new MpiBench();
        bench.device = mpjDevice.replaceAll("[^A-Za-z0-9_.-]", "?");
        int status = 0;
        try {
            bench.run(args);
        } catch (ExitRequest e) {
            status = ABORT_CODE;
        } catch (RuntimeException e) {
            bench.fail(e.getClass().getSimpleName() + ": " + e.getMessage());
            status = ABORT_CODE;
        }
        MPI.Finalize();
        if (status != 0) System.exit(status);
    }
}
