package rocketlens.realcluster;

import java.util.Random;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.selector.SelectMessageQueueByHash;
import org.apache.rocketmq.common.message.Message;

/**
 * A producer of a seed case: --topic T[,T2..] (round robin) --rate MSG_PER_S (all topics) --truth FILE --name N [--seconds S]
 * [--hash] (SelectMessageQueueByHash on the key) [--hot-key K --hot-share 0.8] [--special-key K --special-at N]
 * (the N-th message carries key K, e.g. the slow message). Every send is a truth line.
 */
public final class SeedProducer {
    public static void main(String[] argv) throws Exception {
        Args a = new Args(argv);
        String[] topics = a.need("topic").split(",");
        Truth truth = new Truth(a.need("truth"), "producer", a.need("name"));
        DefaultMQProducer p = new DefaultMQProducer("P_" + a.need("name"));
        p.setNamesrvAddr(a.get("namesrv", "127.0.0.1:9876"));
        p.setClientIP("127.0.0.1");
        p.setInstanceName(a.need("name"));
        p.setSendMsgTimeout(3000);
        p.start();
        truth.set("client_id", p.getDefaultMQProducerImpl().getmQClientFactory().getClientId());
        truth.write("start", "topic", String.join(",", topics));
        Runtime.getRuntime().addShutdownHook(new Thread(() -> { p.shutdown(); truth.write("stopped"); }));

        double rate = a.d("rate", 5);
        long end = System.currentTimeMillis() + a.l("seconds", 1_000_000) * 1000;
        String hot = a.get("hot-key", null);
        double hotShare = a.d("hot-share", 0.8);
        String special = a.get("special-key", null);
        long specialAt = a.l("special-at", -1);
        boolean hash = a.has("hash");
        Random rnd = new Random(a.l("seed", 7));
        SelectMessageQueueByHash selector = new SelectMessageQueueByHash();
        long n = 0;
        long t0 = System.nanoTime();
        while (System.currentTimeMillis() < end) {
            String topic = topics[(int) (n % topics.length)];
            String key = (hot != null && rnd.nextDouble() < hotShare) ? hot : "k" + rnd.nextInt(100_000);
            if (special != null && n == specialAt) key = special;
            Message m = new Message(topic, "t", key, ("m" + n + " " + key).getBytes());
            try {
                SendResult r = hash ? p.send(m, selector, key) : p.send(m);
                truth.write("sent", "topic", topic, "broker", r.getMessageQueue().getBrokerName(),
                    "queue", r.getMessageQueue().getQueueId(), "offset", r.getQueueOffset(), "msg_id", r.getMsgId(),
                    "keys", key, "status", r.getSendStatus().name(), "seq", n);
            } catch (Exception e) {
                truth.write("send_failed", "topic", topic, "keys", key, "seq", n, "error", String.valueOf(e).split("\n")[0]);
            }
            n++;
            long due = t0 + (long) (n * 1e9 / rate);
            long wait = due - System.nanoTime();
            if (wait > 0) Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
        }
        truth.write("done", "sent", n);
        System.exit(0);
    }
}
