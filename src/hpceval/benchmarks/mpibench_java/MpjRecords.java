/*
 * What hpceval's Java programs on MPJ Express (MpiBench.java, the NPB kernels' Npb.java) write
 * in their JSON-lines records alike: numbers and strings as JSON, MPJ Express's version and
 * the JVM's name. Compiled into each program's jar.
 */
final class MpjRecords {
    private MpjRecords() {}

    /** A double as JSON: the shortest text that round-trips (as %.17g does), null for NaN/inf. */
    static String json(double v) {
        if (Double.isNaN(v) || Double.isInfinite(v)) return "null";
        return Double.toString(v);
    }

    /** A JSON string on one line: whitespace folded, non-ASCII replaced, quotes escaped. */
    static String jsonString(String text) {
        String clean = text.trim().replaceAll("\\s+", " ").replaceAll("[^\\x20-\\x7e]", "?");
        return "\"" + clean.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    /** MPJ Express's version as its configuration states it ($MPJ_HOME/conf/mpjexpress.conf). */
    static String mpjVersion() {
        String home = System.getenv("MPJ_HOME");
        if (home == null) return "unknown";
        try {
            for (String line : java.nio.file.Files.readAllLines(
                    java.nio.file.Paths.get(home, "conf", "mpjexpress.conf")))
                if (line.startsWith("mpjexpress.version="))
                    return line.substring("mpjexpress.version=".length()).trim();
        } catch (java.io.IOException e) {
            return "unknown";
        }
        return "unknown";
    }

    /** Every rank's host name gathered to rank 0 as the items of a JSON list ("a","b"); null
     *  on the other ranks. A collective: every rank calls it. */
    static String gatherHosts(mpi.Intracomm world) {
        final int width = 256;
        final int rank = world.Rank(), nranks = world.Size();
        byte[] mine = new byte[width];
        byte[] name = mpi.MPI.Get_processor_name().getBytes(java.nio.charset.StandardCharsets.UTF_8);
        System.arraycopy(name, 0, mine, 0, Math.min(name.length, width - 1));
        byte[] all = new byte[width * nranks];
        world.Gather(mine, 0, width, mpi.MPI.BYTE, all, 0, width, mpi.MPI.BYTE, 0);
        if (rank != 0) return null;
        StringBuilder hosts = new StringBuilder();
        for (int r = 0; r < nranks; ++r) {
            int len = 0;
            while (len < width && all[r * width + len] != 0) ++len;
            String host = new String(all, r * width, len, java.nio.charset.StandardCharsets.UTF_8);
            hosts.append(r > 0 ? "," : "").append(jsonString(host));
        }
        return hosts.toString();
    }

    static String jvmName() {
        return System.getProperty("java.vm.name") + " " + System.getProperty("java.runtime.version");
    }
}
