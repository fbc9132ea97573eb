/*
 * hpceval's NAS Parallel Benchmark kernels EP, IS, CG, MG and FT in Java, against the mpiJava 1.2
 * API that MPJ Express implements (docs/java.md). One jar, the kernel chosen by --kernel; the
 * JSON-lines protocol of the C kernels (docs/npb.md: header, result, end, error records), the
 * header naming program "npb-java", MPJ Express's version and device and the JVM.
 *
 * This file holds what every kernel shares: options, the NPB generator (randlc / vranlc in
 * 64-bit integers, as NPB's randi8 build and the C kernels compute it), the timer and the
 * records. Every rank of the multicore device is a thread of one JVM: a kernel keeps its state
 * in instance fields, never in mutable statics.
 *
 * Usage (through MPJRun, which reads options without "--" as its own):
 *   java -jar npb-java.jar --kernel=cg --class=S
 */

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import mpi.Intracomm;
import mpi.MPI;

public final class Npb {
    static final String VERSION = "1.0";
    static final String KERNELS = "ep, is, cg, mg, ft";
    static final int STATUS_ERROR = 2;
    static final int STATUS_UNVERIFIED = 3;

    // ------------------------------------------------------------------ generator --

    /** 5^13, the NPB multiplier, and the common seed 314159265. */
    static final long A = 1220703125L;
    static final long SEED = 314159265L;
    static final long MASK46 = (1L << 46) - 1;
    static final double R46 = 1.0 / 70368744177664.0; // 2^-46

    /** a x mod 2^46: the 64-bit product wraps modulo 2^64, its low 46 bits are exact. */
    static long mul46(long a, long x) {
        return (a * x) & MASK46;
    }

    /** a^e in the generator's arithmetic: the multiplier that jumps e steps. */
    static long jump(long a, long e) {
        long result = 1, base = a;
        while (e > 0) {
            if ((e & 1) != 0) result = mul46(base, result);
            base = mul46(base, base);
            e >>= 1;
        }
        return result;
    }

    /** vranlc: n numbers x <- a x mod 2^46 into y[off..off+n), scaled by 2^-46; returns x. */
    static long vranlc(int n, long x, long a, double[] y, int off) {
        for (int i = 0; i < n; ++i) {
            x = (x * a) & MASK46;
            y[off + i] = R46 * (double) x;
        }
        return x;
    }

    static boolean isPowerOfTwo(int n) {
        return n > 0 && (n & (n - 1)) == 0;
    }

    static int ilog2(int n) {
        int l = 0;
        while ((1 << l) < n) ++l;
        return l;
    }

    /** Seconds of a monotonic clock (MPJ 0.44's MPI.Wtime advances in whole seconds). */
    static double now() {
        return System.nanoTime() * 1e-9;
    }

    // -------------------------------------------------------------------- errors --

    /** A failure every rank reports the same way: error record, exit status 2. */
    static final class Failure extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Failure(String message) {
            super(message);
        }
    }

    static Failure fail(String format, Object... args) {
        return new Failure(String.format(Locale.ROOT, format, args));
    }

    // -------------------------------------------------------------------- a run --

    final Intracomm world;
    final int rank, nranks;
    final String device;
    String kernel = "npb";
    char className;

    Npb(Intracomm world, String device) {
        this.world = world;
        this.rank = world.Rank();
        this.nranks = world.Size();
        this.device = device;
    }

    void parseOptions(String[] args) {
        String k = null, c = null;
        for (String arg : args) {
            if (arg.startsWith("--kernel=")) k = arg.substring(9);
            else if (arg.startsWith("--class=")) c = arg.substring(8);
            else throw fail("unknown argument '%s' (usage: npb-java --kernel=K --class=S|W|A|B|C)",
                clip(arg));
        }
        if (k == null) throw fail("missing --kernel= (one of %s)", KERNELS);
        if (!List.of("ep", "is", "cg", "mg", "ft").contains(k))
            throw fail("invalid kernel '%s' (one of %s)", clip(k), KERNELS);
        kernel = k;
        if (c == null) throw fail("missing --class= (S, W, A, B or C)");
        if (c.length() != 1 || "SWABC".indexOf(c.charAt(0)) < 0)
            throw fail("invalid class '%s' (one of S, W, A, B, C)", clip(c));
        className = c.charAt(0);
    }

    static String clip(String text) {
        return text.length() > 64 ? text.substring(0, 64) : text;
    }

    /** Slowest rank's time (the kernels' official timed section is the max over ranks). */
    double maxOverRanks(double seconds) {
        double[] in = {seconds}, out = new double[1];
        world.Allreduce(in, 0, out, 0, 1, MPI.DOUBLE, MPI.MAX);
        return out[0];
    }

    // ------------------------------------------------------------------- records --

    /** Rank 0 prints the header: kernel, class, ranks, MPJ and JVM, hosts, the problem. */
    void header(String problemJson) {
        String hosts = MpjRecords.gatherHosts(world);
        if (rank != 0) return;
        String library = "MPJ Express " + MpjRecords.mpjVersion() + " (" + device + " device)";
        System.out.println("{\"record\":\"header\",\"program\":\"npb-java\",\"version\":\"" + VERSION
            + "\",\"kernel\":\"" + kernel + "\",\"class\":\"" + className + "\",\"nranks\":" + nranks
            + ",\"threads\":1,\"mpi_library\":" + MpjRecords.jsonString(library)
            + ",\"mpj_version\":" + MpjRecords.jsonString(MpjRecords.mpjVersion()) + ",\"device\":" + MpjRecords.jsonString(device)
            + ",\"jvm\":" + MpjRecords.jsonString(MpjRecords.jvmName())
            + ",\"java_version\":" + MpjRecords.jsonString(System.getProperty("java.version"))
            + ",\"mpi_standard\":\"1.1\",\"hosts\":[" + hosts + "],\"problem\":" + problemJson + "}");
        System.out.flush();
    }

    /** One verified quantity: |computed - reference| <= tolerance |reference|. */
    static final class Quantity {
        final String name;
        final double computed, reference, tolerance;

        Quantity(String name, double computed, double reference, double tolerance) {
            this.name = name;
            this.computed = computed;
            this.reference = reference;
            this.tolerance = tolerance;
        }

        double relativeError() {
            double scale = Math.abs(reference) > 0 ? Math.abs(reference) : 1.0;
            return Math.abs(computed - reference) / scale;
        }

        boolean passed() {
            double e = relativeError();
            return !Double.isNaN(e) && !Double.isInfinite(e) && e <= tolerance;
        }
    }

    /** The tests' way to see a failing verification from a real run: every reference value
     *  multiplied by $HPCEVAL_NPB_JAVA_REFERENCE_SCALE (1 when unset, as in every measurement;
     *  hpceval refuses a result whose references are not the official ones). */
    static final double REFERENCE_SCALE = referenceScale();

    static double referenceScale() {
        String text = System.getenv("HPCEVAL_NPB_JAVA_REFERENCE_SCALE");
        if (text == null || text.isEmpty()) return 1.0;
        try {
            return Double.parseDouble(text);
        } catch (NumberFormatException e) {
            return Double.NaN; // no reference: verification fails
        }
    }

    /** What a kernel hands back: the timed section, the operation count, the quantities. */
    static final class Result {
        double timeS, mopsTotal;
        int iterations;
        boolean verified = true; // kernel-specific checks beyond the quantities
        final List<Quantity> quantities = new ArrayList<>();
        String note;

        void add(String name, double computed, double reference, double tolerance) {
            quantities.add(new Quantity(name, computed, reference * REFERENCE_SCALE, tolerance));
        }
    }

    /** Rank 0 prints the result and end records; returns whether the run verified. */
    boolean report(Result r) {
        boolean passed = r.verified;
        for (Quantity q : r.quantities) passed &= q.passed();
        if (rank != 0) return passed;
        StringBuilder sb = new StringBuilder();
        sb.append("{\"record\":\"result\",\"kernel\":\"").append(kernel).append("\",\"class\":\"")
            .append(className).append("\",\"nranks\":").append(nranks).append(",\"threads\":1")
            .append(",\"time_s\":").append(MpjRecords.json(r.timeS)).append(",\"mops_total\":")
            .append(MpjRecords.json(r.mopsTotal)).append(",\"mops_per_process\":")
            .append(MpjRecords.json(r.mopsTotal / nranks)).append(",\"iterations\":").append(r.iterations)
            .append(",\"verified\":").append(passed).append(",\"verification\":[");
        for (int i = 0; i < r.quantities.size(); ++i) {
            Quantity q = r.quantities.get(i);
            sb.append(i > 0 ? "," : "").append("{\"quantity\":").append(MpjRecords.jsonString(q.name))
                .append(",\"computed\":").append(MpjRecords.json(q.computed))
                .append(",\"reference\":").append(MpjRecords.json(q.reference))
                .append(",\"rel_error\":").append(MpjRecords.json(q.relativeError()))
                .append(",\"tolerance\":").append(MpjRecords.json(q.tolerance))
                .append(",\"passed\":").append(q.passed()).append('}');
        }
        sb.append(']');
        if (r.note != null) sb.append(",\"note\":").append(MpjRecords.jsonString(r.note));
        sb.append(",\"mpj_version\":").append(MpjRecords.jsonString(MpjRecords.mpjVersion()))
            .append(",\"device\":").append(MpjRecords.jsonString(device))
            .append(",\"jvm\":").append(MpjRecords.jsonString(MpjRecords.jvmName())).append('}');
        System.out.println(sb);
        System.out.println("{\"record\":\"end\",\"status\":\"" + (passed ? "ok" : "verification_failed")
            + "\"}");
        System.out.flush();
        return passed;
    }

    void printError(String message) {
        System.out.println("{\"record\":\"error\",\"rank\":" + rank + ",\"message\":"
            + MpjRecords.jsonString(message) + "}");
        System.out.flush();
        System.err.println("npb-java: error: " + message);
        System.err.flush();
    }

    // ---------------------------------------------------------------------- main --

    Result run() {
        switch (kernel) {
            case "ep": return new Ep(this).run();
            case "is": return new Is(this).run();
            case "cg": return new Cg(this).run();
            case "mg": return new Mg(this).run();
            case "ft": return new Ft(this).run();
            default: throw fail("invalid kernel '%s'", kernel);
        }
    }

    public static void main(String[] argv) throws Exception {
        // MPJ's starters put "rank, configuration, device" before the program's arguments;
        // MPI.Init removes them (the device is the one MPJ runs: smpdev for multicore).
        String mpjDevice = argv.length > 2 ? argv[2].replaceAll("[^A-Za-z0-9_.-]", "?") : "unknown";
        String[] args = MPI.Init(argv);
        Npb npb = new Npb(MPI.COMM_WORLD, mpjDevice);
        int status = 0;
        try {
            npb.parseOptions(args);
            // Rank 0's verdict is the run's (it printed the records).
            if (!npb.report(npb.run()) && npb.rank == 0) status = STATUS_UNVERIFIED;
        } catch (Failure e) {
            // Option and rank-count errors are found alike by every rank: rank 0 reports.
            if (npb.rank == 0) npb.printError(e.getMessage());
            status = STATUS_ERROR;
        } catch (RuntimeException | OutOfMemoryError e) {
            npb.printError(e.getClass().getSimpleName() + ": " + e.getMessage());
            // Other ranks may wait for this one forever: end the whole job.
            System.exit(STATUS_ERROR);
        }
        MPI.Finalize();
        if (status != 0) System.exit(status);
    }
}
