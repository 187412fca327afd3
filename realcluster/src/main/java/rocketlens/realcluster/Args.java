package rocketlens.realcluster;

import java.util.HashMap;
import java.util.Map;

/** --key value / --flag arguments. */
final class Args {
    private final Map<String, String> m = new HashMap<>();

    Args(String[] a) {
        for (int i = 0; i < a.length; i++) {
            if (!a[i].startsWith("--")) throw new IllegalArgumentException("unexpected argument " + a[i]);
            String k = a[i].substring(2);
            if (i + 1 < a.length && !a[i + 1].startsWith("--")) m.put(k, a[++i]); else m.put(k, "true");
        }
    }

    String get(String k, String dflt) { return m.getOrDefault(k, dflt); }
    String need(String k) {
        String v = m.get(k);
        if (v == null) throw new IllegalArgumentException("--" + k + " is required");
        return v;
    }
    int i(String k, int dflt) { return m.containsKey(k) ? Integer.parseInt(m.get(k)) : dflt; }
    long l(String k, long dflt) { return m.containsKey(k) ? Long.parseLong(m.get(k)) : dflt; }
    double d(String k, double dflt) { return m.containsKey(k) ? Double.parseDouble(m.get(k)) : dflt; }
    boolean has(String k) { return m.containsKey(k); }
}
