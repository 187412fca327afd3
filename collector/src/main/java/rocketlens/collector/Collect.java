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
import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.remoting.RPCHook;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
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
 * --namesrv HOST:PORT[;HOST:PORT] --landing DIR [--cluster NAME] [--groups G1,GLOB* (names or globs * ? [..];
 * default: every subscription group of the masters, system groups left out, re-read each round; a glob is
 * matched against that list each round)] [--interval-ms 60000 | --interval-s 60] [--rounds N | --until-ms EPOCH]
 * [--stop-file F] [--routes DIR --topics T1,T2 (topicRoute JSON per round, outside the landing)].
 * ACL: the env vars ROCKETLENS_COLLECT_ACCESS_KEY / ROCKETLENS_COLLECT_SECRET_KEY (never argv) sign every
 * admin request (AclClientRPCHook); both values are masked in everything landed or printed (redact).
 * Every file lands as a hidden temp file in its folder, then is renamed (land): a reader never sees half a file.
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
        List<String> patterns = a.getOrDefault("groups", "").isEmpty() ? List.of() : List.of(a.get("groups").split(","));
        boolean anyGlob = patterns.stream().anyMatch(Collect::isGlob);
        String[] fixedGroups = patterns.isEmpty() || anyGlob ? null : patterns.toArray(new String[0]);
        String[] topics = a.getOrDefault("topics", "").isEmpty() ? new String[0] : a.get("topics").split(",");
        long interval = a.containsKey("interval-ms") ? Long.parseLong(a.get("interval-ms"))
            : Long.parseLong(a.getOrDefault("interval-s", "60")) * 1000;
        int rounds = Integer.parseInt(a.getOrDefault("rounds", String.valueOf(Integer.MAX_VALUE)));
        long until = Long.parseLong(a.getOrDefault("until-ms", String.valueOf(Long.MAX_VALUE)));
        String ak = System.getenv("ROCKETLENS_COLLECT_ACCESS_KEY");
        String sk = System.getenv("ROCKETLENS_COLLECT_SECRET_KEY");
        RPCHook hook = null;
        if (ak != null && !ak.isEmpty() && sk != null && !sk.isEmpty()) {
            hook = new AclClientRPCHook(new SessionCredentials(ak, sk));
            SECRETS.add(ak);
            SECRETS.add(sk);
        }
        Path stop = a.containsKey("stop-file") ? Path.of(a.get("stop-file")) : null;
        boolean lastFailed = false;
        PrintStream stdout = System.out;

        DefaultMQAdminExt admin = hook == null ? new DefaultMQAdminExt(5000) : new DefaultMQAdminExt(hook, 5000);
        HOOK = hook;
        admin.setNamesrvAddr(ns);
        admin.setInstanceName("rocketlens-collect-" + ProcessHandle.current().pid());
        admin.start();
        // the admin's own client instance (same client id): the per-queue offset RPCs below
        MQClientAPIImpl api = MQClientManager.getInstance().getOrCreateMQClientInstance(admin).getMQClientAPIImpl();
        try {
            long next = System.currentTimeMillis();
            for (int round = 1; round <= rounds; round++) {
                if (stop != null && Files.exists(stop)) break;
                if (System.currentTimeMillis() >= until) break;   // --until: no round starts at or after it
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
                    stdout.println(redact("round " + round + " " + stamp + " failed: cannot list the brokers through the name server "
                        + ns + ": " + firstLine(e) + " (check --namesrv and that the name server runs)"));
                }
                lastFailed = nodes.isEmpty();
                String[] groups = fixedGroups != null ? fixedGroups : select(discoverGroups(admin, masters, stdout), patterns);
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
                                String minOffset;   // null when the broker does not answer: unknown, never 0
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
                                try {
                                    minOffset = String.valueOf(api.getMinOffset(node.getValue(), mq, 5000));
                                } catch (Exception e) {
                                    stdout.println("collect: " + g + " min offset of " + mq + ": " + firstLine(e));
                                    minOffset = "null";
                                }
                                extra.append(String.format("{\"ts\":%d,\"cluster\":\"%s\",\"group\":\"%s\",\"topic\":\"%s\","
                                        + "\"broker_name\":\"%s\",\"queue_id\":%d,\"broker_offset\":%d,\"consumer_offset\":%d,"
                                        + "\"broker_id\":%d,\"min_offset\":%s}%n", tsMs, cluster, g, t, qd.getBrokerName(), i,
                                    brokerOffset, consumerOffset, node.getKey(), minOffset));
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
                    if (round < rounds) next = waitFor(Math.min(next + interval, until), stop);   // none after the last round; none past --until
                    continue;
                }
                long wall = System.currentTimeMillis() - t0;
                stdout.printf("round %d %s groups=%d nodes=%d files=%d wall_ms=%d progress_ms=%d connections_ms=%d running_info_ms=%d "
                        + "per_topic_ms=%d per_topic_rows=%d routes_ms=%d per_group_ms=%.0f%n",
                    round, stamp, groups.length, nodes.size(), files, wall, ms[0], ms[1], ms[2], ms[4], extraRows, ms[3],
                    (double) (wall - ms[3]) / Math.max(1, groups.length));
                stdout.flush();
                if (round < rounds) next = waitFor(Math.min(next + interval, until), stop);   // none after the last round; none past --until
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
            cmd.execute(cl, options, HOOK);
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

    /** Writes ``text`` (ACL credentials masked) to ``dir/file`` atomically: a hidden temp file in the same
     *  folder (readers skip names starting with a dot), then one rename; a reader sees no file or the whole. */
    static void land(Path dir, String file, String text) throws Exception {
        Files.createDirectories(dir);
        Path tmp = dir.resolve("." + file + ".tmp");
        Files.writeString(tmp, redact(text), StandardCharsets.UTF_8);
        Files.move(tmp, dir.resolve(file), StandardCopyOption.ATOMIC_MOVE);
    }

    static String firstLine(Throwable e) {
        return redact(String.valueOf(e).split("\n")[0]);
    }

    /** The ACL hook the admin and mqadmin's sub commands sign with (null = no ACL) and the values to mask. */
    static RPCHook HOOK;
    static final List<String> SECRETS = new ArrayList<>();

    /** ``text`` with every ACL credential replaced by ``***`` (a broker's ACL error may echo the access key). */
    static String redact(String text) {
        for (String secret : SECRETS) text = text.replace(secret, "***");
        return text;
    }

    static boolean isGlob(String pattern) {
        return pattern.indexOf('*') >= 0 || pattern.indexOf('?') >= 0 || pattern.indexOf('[') >= 0;
    }

    /** A --groups glob as a regex, fnmatch's rules (jobs/collect.py): * any run, ? one sign, [abc] / [!abc]. */
    static Pattern globRegex(String glob) {
        StringBuilder re = new StringBuilder();
        for (int i = 0; i < glob.length(); i++) {
            char c = glob.charAt(i);
            if (c == '*') re.append(".*");
            else if (c == '?') re.append('.');
            else if (c == '[' && glob.indexOf(']', i + 1) > i + 1) {   // names hold no \\ ^ [ ]: the set is safe as is
                int end = glob.indexOf(']', i + 1);
                String set = glob.substring(i + 1, end);
                re.append('[').append(set.startsWith("!") ? "^" + set.substring(1) : set).append(']');
                i = end;
            } else re.append(Pattern.quote(String.valueOf(c)));
        }
        return Pattern.compile(re.toString());
    }

    /** The discovered groups some pattern matches (a glob, or a name equal to it), plus every plain name given
     *  (a name is collected even when the masters do not list it: it answers "not online" as mqadmin does). */
    static String[] select(String[] discovered, List<String> patterns) {
        if (patterns.isEmpty()) return discovered;
        TreeSet<String> out = new TreeSet<>();
        List<Pattern> globs = new ArrayList<>();
        for (String p : patterns) {
            if (isGlob(p)) globs.add(globRegex(p));
            else out.add(p);
        }
        for (String g : discovered)
            if (globs.stream().anyMatch(re -> re.matcher(g).matches())) out.add(g);
        return out.toArray(new String[0]);
    }
}
