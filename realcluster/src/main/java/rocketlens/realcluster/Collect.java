package rocketlens.realcluster;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.commons.cli.CommandLine;
import org.apache.commons.cli.Options;
import org.apache.commons.cli.PosixParser;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.protocol.body.ClusterInfo;
import org.apache.rocketmq.common.protocol.body.Connection;
import org.apache.rocketmq.common.protocol.route.BrokerData;
import org.apache.rocketmq.srvutil.ServerUtil;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;
import org.apache.rocketmq.tools.command.SubCommand;
import org.apache.rocketmq.tools.command.connection.ConsumerConnectionSubCommand;
import org.apache.rocketmq.tools.command.consumer.ConsumerProgressSubCommand;
import org.apache.rocketmq.tools.command.topic.TopicRouteSubCommand;

/**
 * One process polls the cluster through RocketMQ's admin interface and writes the landing layout
 * rocketlens reads (docs/landing-mqadmin.md): per round and group, mqadmin's own consumerProgress -s true
 * and consumerConnection -b (every broker node) text, produced by mqadmin's SubCommand classes in this
 * JVM (the text is byte for byte what the mqadmin script prints), and one ConsumerRunningInfo fastjson
 * dump per client id; per round and topic, the topicRoute JSON (outside the landing).
 *
 * --landing DIR --routes DIR --groups G1,G2 --topics T1,T2 [--cluster NAME] [--interval-s 15]
 * [--rounds N] [--stop-file F]. A line per round on stdout says what it cost.
 */
public final class Collect {
    static final DateTimeFormatter STAMP = DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss'Z'").withZone(ZoneOffset.UTC);
    static final DateTimeFormatter DAY = DateTimeFormatter.ofPattern("yyyy-MM-dd").withZone(ZoneOffset.UTC);

    public static void main(String[] argv) throws Exception {
        Args a = new Args(argv);
        String ns = a.get("namesrv", "127.0.0.1:9876");
        System.setProperty(MixAll.NAMESRV_ADDR_PROPERTY, ns);   // what mqadmin's -n does
        Path landing = Path.of(a.need("landing"));
        Path routes = Path.of(a.need("routes"));
        String cluster = a.get("cluster", "DefaultCluster");
        String[] groups = a.need("groups").split(",");
        String[] topics = a.get("topics", "").isEmpty() ? new String[0] : a.get("topics", "").split(",");
        long interval = a.l("interval-s", 15) * 1000;
        int rounds = a.i("rounds", Integer.MAX_VALUE);
        Path stop = a.has("stop-file") ? Path.of(a.get("stop-file", null)) : null;
        PrintStream stdout = System.out;

        DefaultMQAdminExt admin = new DefaultMQAdminExt(5000);
        admin.setNamesrvAddr(ns);
        admin.setInstanceName("rocketlens-collect-" + ProcessHandle.current().pid());
        admin.start();
        try {
            long next = System.currentTimeMillis();
            for (int round = 1; round <= rounds; round++) {
                if (stop != null && Files.exists(stop)) break;
                long t0 = System.currentTimeMillis();
                Instant now = Instant.ofEpochMilli(t0);
                String stamp = STAMP.format(now);
                String day = DAY.format(now);
                long[] ms = new long[4];
                int files = 0;

                // every broker node the name server lists now (a dead master drops out)
                TreeMap<String, String> nodes = new TreeMap<>();   // addr -> brokerName
                long c0 = System.currentTimeMillis();
                ClusterInfo ci = admin.examineBrokerClusterInfo();
                for (BrokerData bd : ci.getBrokerAddrTable().values())
                    for (String addr : bd.getBrokerAddrs().values()) nodes.put(addr, bd.getBrokerName());
                ms[1] += System.currentTimeMillis() - c0;

                for (String g : groups) {
                    long p0 = System.currentTimeMillis();
                    String prog = run(new ConsumerProgressSubCommand(), "consumerProgress", "-g", g, "-s", "true");
                    land(landing.resolve("offsets/date=" + day + "/cluster=" + cluster + "/group=" + g), stamp + ".txt", prog);
                    ms[0] += System.currentTimeMillis() - p0;
                    files++;
                    long q0 = System.currentTimeMillis();
                    for (Map.Entry<String, String> n : nodes.entrySet()) {
                        String conn = run(new ConsumerConnectionSubCommand(), "consumerConnection", "-g", g, "-b", n.getKey());
                        land(landing.resolve("connections/date=" + day + "/cluster=" + cluster + "/group=" + g
                            + "/broker_name=" + n.getValue() + "/broker_addr=" + n.getKey()), stamp + ".txt", conn);
                        files++;
                    }
                    ms[1] += System.currentTimeMillis() - q0;
                    long r0 = System.currentTimeMillis();
                    TreeSet<String> ids = new TreeSet<>();
                    try {
                        for (Connection c : admin.examineConsumerConnectionInfo(g).getConnectionSet()) ids.add(c.getClientId());
                    } catch (Exception e) {
                        stdout.println("collect: " + g + " connections: " + firstLine(e));
                    }
                    for (String id : ids) {
                        try {
                            String json = admin.getConsumerRunningInfo(g, id, false).toJson();
                            land(landing.resolve("running_info/date=" + day + "/cluster=" + cluster + "/group=" + g + "/client=" + id),
                                stamp + ".json", json + "\n");
                            files++;
                        } catch (Exception e) {
                            stdout.println("collect: " + g + " running info of " + id + ": " + firstLine(e));
                        }
                    }
                    ms[2] += System.currentTimeMillis() - r0;
                }
                long t1 = System.currentTimeMillis();
                for (String t : topics) {
                    land(routes.resolve(stamp), t + ".json", run(new TopicRouteSubCommand(), "topicRoute", "-t", t));
                }
                ms[3] += System.currentTimeMillis() - t1;
                long wall = System.currentTimeMillis() - t0;
                stdout.printf("round %d %s groups=%d nodes=%d files=%d wall_ms=%d progress_ms=%d connections_ms=%d running_info_ms=%d routes_ms=%d per_group_ms=%.0f%n",
                    round, stamp, groups.length, nodes.size(), files, wall, ms[0], ms[1], ms[2], ms[3], (double) (wall - ms[3]) / groups.length);
                stdout.flush();
                next += interval;
                while (System.currentTimeMillis() < next) {
                    if (stop != null && Files.exists(stop)) break;
                    Thread.sleep(200);
                }
            }
        } finally {
            admin.shutdown();
        }
        System.exit(0);
    }

    /** One mqadmin sub command in this JVM, as MQAdminStartup runs it; its stdout, or its failure as mqadmin prints it. */
    static String run(SubCommand cmd, String name, String... args) {
        PrintStream old = System.out;
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        PrintStream ps = new PrintStream(buf, true, StandardCharsets.UTF_8);
        try {
            System.setOut(ps);
            Options options = ServerUtil.buildCommandlineOptions(new Options());
            CommandLine cl = ServerUtil.parseCmdLine("mqadmin " + name, args, cmd.buildCommandlineOptions(options), new PosixParser());
            cmd.execute(cl, options, null);
        } catch (Throwable e) {
            StringWriter sw = new StringWriter();
            e.printStackTrace(new PrintWriter(sw));
            ps.print(sw);
        } finally {
            System.setOut(old);
        }
        ps.flush();
        return buf.toString(StandardCharsets.UTF_8);
    }

    static void land(Path dir, String file, String text) throws Exception {
        Files.createDirectories(dir);
        Path tmp = dir.resolve("." + file + ".tmp");
        Files.writeString(tmp, text, StandardCharsets.UTF_8);
        Files.move(tmp, dir.resolve(file), StandardCopyOption.ATOMIC_MOVE);
    }

    static String firstLine(Throwable e) {
        return String.valueOf(e).split("\n")[0];
    }
}
