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

    static String jvmName() {
        return System.getProperty("java.vm.name") + " " + System.getProperty("java.runtime.version");
    }
}
