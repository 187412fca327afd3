package rocketlens.realcluster;

import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.LinkedHashMap;
import java.util.Map;

/** The truth side file of one client JVM: one JSON object per line, flushed at once (not part of the landing). */
final class Truth implements AutoCloseable {
    static final long PID = ProcessHandle.current().pid();
    private final BufferedWriter out;
    private final Map<String, Object> base = new LinkedHashMap<>();

    Truth(String file, String role, String name) throws IOException {
        Path p = Path.of(file);
        if (p.getParent() != null) Files.createDirectories(p.getParent());
        out = Files.newBufferedWriter(p, StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        base.put("role", role);
        base.put("name", name);
        base.put("pid", PID);
    }

    void set(String k, Object v) { synchronized (this) { base.put(k, v); } }

    synchronized void write(String ev, Object... kv) {
        StringBuilder sb = new StringBuilder(256).append("{\"ev\":").append(q(ev)).append(",\"ts\":").append(System.currentTimeMillis());
        for (Map.Entry<String, Object> e : base.entrySet()) sb.append(',').append(q(e.getKey())).append(':').append(v(e.getValue()));
        for (int i = 0; i + 1 < kv.length; i += 2) sb.append(',').append(q(String.valueOf(kv[i]))).append(':').append(v(kv[i + 1]));
        sb.append("}\n");
        try { out.write(sb.toString()); out.flush(); } catch (IOException e) { throw new RuntimeException(e); }
    }

    private static String v(Object o) {
        if (o == null) return "null";
        if (o instanceof Number || o instanceof Boolean) return o.toString();
        return q(o.toString());
    }

    private static String q(String s) {
        StringBuilder sb = new StringBuilder(s.length() + 2).append('"');
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') sb.append('\\').append(c);
            else if (c < 0x20) sb.append(String.format("\\u%04x", (int) c));
            else sb.append(c);
        }
        return sb.append('"').toString();
    }

    @Override public synchronized void close() throws IOException { out.close(); }
}
