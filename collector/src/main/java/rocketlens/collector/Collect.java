package rocketlens.collector;

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
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.commons.cli.CommandLine;
import org.apache.commons.cli.Options;
import org.apache.commons.cli.PosixParser;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.impl.MQClientAPIImpl;
import org.apache.rocketmq.client.impl.MQClientManager;
import org.apache.rocketmq.common.protocol.ResponseCode;
import org.apache.rocketmq.common.protocol.header.QueryConsumerOffsetRequestHeader;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.common.protocol.body.ConsumerRunningInfo;
import org.apache.rocketmq.common.protocol.heartbeat.SubscriptionData;
import org.apache.rocketmq.common.protocol.route.QueueData;
import org.apache.rocketmq.common.protocol.route.TopicRouteData;
import org.apache.rocketmq.common.protocol.body.ClusterInfo;
import org.apache.rocketmq.common.protocol.body.Connection;
import org.apache.rocketmq.common.protocol.body.ConsumerConnection;
import org.apache.rocketmq.common.protocol.heartbeat.MessageModel;
import org.apache.rocketmq.common.protocol.route.BrokerData;
import org.apache.rocketmq.srvutil.ServerUtil;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;
import org.apache.rocketmq.tools.command.SubCommand;
import org.apache.rocketmq.tools.command.connection.ConsumerConnectionSubCommand;
import org.apache.rocketmq.tools.command.consumer.ConsumerProgressSubCommand;
import org.apache.rocketmq.tools.command.topic.TopicRouteSubCommand;

/**
 * `rocketlens collect` (docs/collect.md): one process polls a RocketMQ 4.x/5.x cluster through its admin
 * interface and writes the landing layout rocketlens reads (docs/landing-mqadmin.md, docs/contract.md §3).
 * Per round and group: mqadmin's own consumerProgress -s true and consumerConnection -b (every broker node)
 * text, produced by mqadmin's SubCommand classes in this JVM (the text is byte for byte what the mqadmin
 * script prints), and one ConsumerRunningInfo fastjson dump per client id.
 *
 * consumerProgress lists only the queues the group committed on a broker, and skips a topic while the
 * broker's merged subscription table of the group lacks it (tests/data/real-cluster/README.md, difference 1);
 * examineConsumeStats(group, topic) has the same check. So per CLUSTERING group and round, for every topic
 * the clients' running info subscribes, the topic's route (once per round) gives its queues, and each queue
 * consumerProgress did not list is asked directly: GET_MAX_OFFSET and QUERY_CONSUMER_OFFSET (0 when never
 * committed, as the broker's consume stats print it) of the broker's master (a slave while it is down).
 * Those land as JSON Lines records (docs/contract.md §3.1) in offsets/.../group=G/STAMP.unlisted.jsonl
 * with the round's ts. A group whose queues are all listed costs only the route look-ups.
 *
 * --namesrv HOST:PORT[;HOST:PORT] --landing DIR [--cluster NAME] [--groups G1,G2 (default: every
 * subscription group of the masters, system groups left out, re-read each round)] [--interval-s 60]
 * [--rounds N] [--stop-file F] [--routes DIR --topics T1,T2 (topicRoute JSON per round, outside the landing)].
 * A line per round on stdout says what it cost; exit 1 when the last round reached no broker.
 */
public final class Collect {
    static final DateTimeFormatter STAMP = DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss'Z'").withZone(ZoneOffset.UTC);
    static final DateTimeFormatter DAY = DateTimeFormatter.ofPattern("yyyy-MM-dd").withZone(ZoneOffset.UTC);

    public static void main(String[] argv) throws Exception {
        Map<String, String> a = new HashMap<>();
        for (int i = 0; i < argv.length; i++) {
            if (!argv[i].startsWith("--")) throw new IllegalArgumentException("unexpected argument " + argv[i]);
            a.put(argv[i].substring(2), i + 1 < argv.length && !argv[i + 1].startsWith("--") ? argv[++i] : "true");
        }
        String ns = a.getOrDefault("namesrv", "127.0.0.1:9876");
        System.setProperty(MixAll.NAMESRV_ADDR_PROPERTY, ns);   // what mqadmin's -n does
        if (!a.containsKey("landing")) throw new IllegalArgumentException("--landing is required");
        Path landing = Path.of(a.get("landing"));
        Path routes = a.containsKey("routes") ? Path.of(a.get("routes")) : null;
        String cluster = a.getOrDefault("cluster", "DefaultCluster");
        String[] fixedGroups = a.getOrDefault("groups", "").isEmpty() ? null : a.get("groups").split(",");
        String[] topics = a.getOrDefault("topics", "").isEmpty() ? new String[0] : a.get("topics").split(",");
        long interval = Long.parseLong(a.getOrDefault("interval-s", "60")) * 1000;
        int rounds = Integer.parseInt(a.getOrDefault("rounds", String.valueOf(Integer.MAX_VALUE)));
        Path stop = a.containsKey("stop-file") ? Path.of(a.get("stop-file")) : null;
        boolean lastFailed = false;
        PrintStream stdout = System.out;

        DefaultMQAdminExt admin = new DefaultMQAdminExt(5000);
        admin.setNamesrvAddr(ns);
        admin.setInstanceName("rocketlens-collect-" + ProcessHandle.current().pid());
        admin.start();
        // the admin's own client instance (same client id): the per-queue offset RPCs below
        MQClientAPIImpl api = MQClientManager.getInstance().getOrCreateMQClientInstance(admin).getMQClientAPIImpl();
        try {
            long next = System.currentTimeMillis();
            for (int round = 1; round <= rounds; round++) {
                if (stop != null && Files.exists(stop)) break;
                long t0 = System.currentTimeMillis();
                Instant now = Instant.ofEpochMilli(t0);
                String stamp = STAMP.format(now);
                String day = DAY.format(now);
                long[] ms = new long[5];
                int files = 0;
                int extraRows = 0;
                long tsMs = (t0 / 1000) * 1000;   // the ts the STAMP of the text files gives
                Map<String, TopicRouteData> routeCache = new HashMap<>();

                // every broker node the name server lists now (a dead master drops out)
                TreeMap<String, String> nodes = new TreeMap<>();   // addr -> brokerName
                long c0 = System.currentTimeMillis();
                TreeSet<String> masters = new TreeSet<>();
                try {
                    ClusterInfo ci = admin.examineBrokerClusterInfo();
                    for (BrokerData bd : ci.getBrokerAddrTable().values()) {
                        for (String addr : bd.getBrokerAddrs().values()) nodes.put(addr, bd.getBrokerName());
                        String master = bd.getBrokerAddrs().get(MixAll.MASTER_ID);
                        if (master != null) masters.add(master);
                    }
                } catch (Exception e) {
                    stdout.println("round " + round + " " + stamp + " failed: cannot list the brokers through the name server "
                        + ns + ": " + firstLine(e) + " (check --namesrv and that the name server runs)");
                }
                lastFailed = nodes.isEmpty();
                String[] groups = fixedGroups != null ? fixedGroups : discoverGroups(admin, masters, stdout);
                ms[1] += System.currentTimeMillis() - c0;

                for (String g : lastFailed ? new String[0] : groups) {
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
                    TreeSet<String> subscribed = new TreeSet<>();
                    boolean broadcasting = false;
                    try {
                        ConsumerConnection cc = admin.examineConsumerConnectionInfo(g);
                        for (Connection c : cc.getConnectionSet()) ids.add(c.getClientId());
                        broadcasting = cc.getMessageModel() == MessageModel.BROADCASTING;
                    } catch (Exception e) {
                        stdout.println("collect: " + g + " connections: " + firstLine(e));
                    }
                    for (String id : ids) {
                        try {
                            ConsumerRunningInfo info = admin.getConsumerRunningInfo(g, id, false);
                            for (SubscriptionData sd : info.getSubscriptionSet()) subscribed.add(sd.getTopic());
                            String json = info.toJson();
                            land(landing.resolve("running_info/date=" + day + "/cluster=" + cluster + "/group=" + g + "/client=" + id),
                                stamp + ".json", json + "\n");
                            files++;
                        } catch (Exception e) {
                            stdout.println("collect: " + g + " running info of " + id + ": " + firstLine(e));
                        }
                    }
                    ms[2] += System.currentTimeMillis() - r0;
                    long s0 = System.currentTimeMillis();
                    StringBuilder extra = new StringBuilder();
                    TreeSet<String> listed = listedQueues(prog);
                    // a broadcasting group keeps its offsets in the clients: the broker's 0 would read as a backlog
                    for (String t : broadcasting ? new TreeSet<String>() : subscribed) {
                        TopicRouteData route = routeCache.computeIfAbsent(t, k -> {
                            try {
                                return admin.examineTopicRouteInfo(k);
                            } catch (Exception e) {
                                stdout.println("collect: route of " + k + ": " + firstLine(e));
                                return null;
                            }
                        });
                        if (route == null) continue;
                        for (QueueData qd : route.getQueueDatas()) {
                            // the node that answers: the master, else (master down) the lowest-id slave
                            Map.Entry<Long, String> node = route.getBrokerDatas().stream()
                                .filter(bd -> bd.getBrokerName().equals(qd.getBrokerName()))
                                .map(bd -> new TreeMap<>(bd.getBrokerAddrs()).firstEntry())
                                .filter(java.util.Objects::nonNull).findFirst().orElse(null);
                            for (int i = 0; i < qd.getReadQueueNums(); i++) {
                                if (listed.contains(t + "|" + qd.getBrokerName() + "|" + i)) continue;
                                if (node == null) continue;
                                MessageQueue mq = new MessageQueue(t, qd.getBrokerName(), i);
                                long brokerOffset, consumerOffset;
                                try {
                                    brokerOffset = api.getMaxOffset(node.getValue(), mq, 5000);
                                    QueryConsumerOffsetRequestHeader h = new QueryConsumerOffsetRequestHeader();
                                    h.setConsumerGroup(g);
                                    h.setTopic(t);
                                    h.setQueueId(i);
                                    try {
                                        consumerOffset = api.queryConsumerOffset(node.getValue(), h, 5000);
                                    } catch (MQBrokerException e) {
                                        if (e.getResponseCode() != ResponseCode.QUERY_NOT_FOUND) throw e;
                                        consumerOffset = 0;   // never committed: 0, as the broker's consume stats print it
                                    }
                                } catch (Exception e) {
                                    stdout.println("collect: " + g + " offsets of " + mq + ": " + firstLine(e));
                                    continue;
                                }
                                extra.append(String.format("{\"ts\":%d,\"cluster\":\"%s\",\"group\":\"%s\",\"topic\":\"%s\","
                                        + "\"broker_name\":\"%s\",\"queue_id\":%d,\"broker_offset\":%d,\"consumer_offset\":%d,"
                                        + "\"broker_id\":%d}%n", tsMs, cluster, g, t, qd.getBrokerName(), i, brokerOffset,
                                    consumerOffset, node.getKey()));
                                extraRows++;
                            }
                        }
                    }
                    if (extra.length() > 0) {
                        land(landing.resolve("offsets/date=" + day + "/cluster=" + cluster + "/group=" + g), stamp + ".unlisted.jsonl",
                            extra.toString());
                        files++;
                    }
                    ms[4] += System.currentTimeMillis() - s0;
                }
                long t1 = System.currentTimeMillis();
                for (String t : routes == null ? new String[0] : topics) {
                    land(routes.resolve(stamp), t + ".json", run(new TopicRouteSubCommand(), "topicRoute", "-t", t));
                }
                ms[3] += System.currentTimeMillis() - t1;
                if (lastFailed) {   // the failure line is out; nothing landed this round
                    if (round < rounds) next = waitFor(next + interval, stop);   // no wait after the last round
                    continue;
                }
                long wall = System.currentTimeMillis() - t0;
                stdout.printf("round %d %s groups=%d nodes=%d files=%d wall_ms=%d progress_ms=%d connections_ms=%d running_info_ms=%d "
                        + "per_topic_ms=%d per_topic_rows=%d routes_ms=%d per_group_ms=%.0f%n",
                    round, stamp, groups.length, nodes.size(), files, wall, ms[0], ms[1], ms[2], ms[4], extraRows, ms[3],
                    (double) (wall - ms[3]) / Math.max(1, groups.length));
                stdout.flush();
                if (round < rounds) next = waitFor(next + interval, stop);   // no wait after the last round
            }
        } finally {
            admin.shutdown();
        }
        System.exit(lastFailed ? 1 : 0);
    }

    /** Sleeps until the epoch ms ``until`` or until the stop file appears; returns ``until``. */
    static long waitFor(long until, Path stop) throws InterruptedException {
        while (System.currentTimeMillis() < until) {
            if (stop != null && Files.exists(stop)) break;
            Thread.sleep(200);
        }
        return until;
    }

    /** Groups never collected by default: RocketMQ's own (MixAll), present in every broker's subscriptionGroup.json. */
    static final java.util.Set<String> SYSTEM_GROUPS = java.util.Set.of(MixAll.TOOLS_CONSUMER_GROUP,
        MixAll.SCHEDULE_CONSUMER_GROUP, MixAll.FILTERSRV_CONSUMER_GROUP, MixAll.MONITOR_CONSUMER_GROUP,
        MixAll.SELF_TEST_CONSUMER_GROUP, MixAll.ONS_HTTP_PROXY_GROUP, MixAll.CID_ONSAPI_PERMISSION_GROUP,
        MixAll.CID_ONSAPI_OWNER_GROUP, MixAll.CID_ONSAPI_PULL_GROUP, MixAll.DEFAULT_CONSUMER_GROUP);

    /** Every subscription group the masters know (getAllSubscriptionGroup), RocketMQ's own groups left out. */
    static String[] discoverGroups(DefaultMQAdminExt admin, TreeSet<String> masters, PrintStream stdout) {
        TreeSet<String> out = new TreeSet<>();
        for (String addr : masters) {
            try {
                for (String g : admin.getAllSubscriptionGroup(addr, 5000).getSubscriptionGroupTable().keySet())
                    if (!SYSTEM_GROUPS.contains(g) && !MixAll.isSysConsumerGroup(g)) out.add(g);
            } catch (Exception e) {
                stdout.println("collect: subscription groups of " + addr + ": " + firstLine(e));
            }
        }
        return out.toArray(new String[0]);
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

    /** topic|brokerName|queueId of every row of a consumerProgress table (mqadmin's text; names have no blanks). */
    static TreeSet<String> listedQueues(String progress) {
        TreeSet<String> out = new TreeSet<>();
        boolean table = false;
        for (String line : progress.split("\\r?\\n")) {
            if (line.startsWith("#Topic")) {
                table = true;
                continue;
            }
            String[] cells = line.trim().split("\\s+");
            if (!table || cells.length < 7) continue;
            try {
                out.add(cells[0] + "|" + cells[1] + "|" + Integer.parseInt(cells[2]));
            } catch (NumberFormatException e) {
                // a footer or a log line, not a row
            }
        }
        return out;
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
