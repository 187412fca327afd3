package rocketlens.realcluster;

import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentMap;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueConsistentHash;
import org.apache.rocketmq.client.impl.consumer.ProcessQueue;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * One push consumer (4.9.x client) of a seed case. Records in its truth file what it really received
 * (queue, offset, time, pid, client id), the queues it held (every change of its process-queue table),
 * the slow message taken and finished, and every failure it returned. Runs until SIGTERM, which shuts the
 * consumer down (it leaves the group) before the JVM exits.
 *
 * --group G --topics A[,B] --truth FILE --name N [--instance I] [--broadcast] [--orderly]
 * [--strategy avg|hash] [--slow-key K --slow-ms MS] [--fail] [--consume-ms MS per message] [--threads N]
 * [--consume-timeout-min M] [--persist-ms MS] [--no-client-ip]
 */
public final class SeedConsumer {
    public static void main(String[] argv) throws Exception {
        Args a = new Args(argv);
        String group = a.need("group");
        String[] topics = a.need("topics").split(",");
        Truth truth = new Truth(a.need("truth"), "consumer", a.need("name"));
        truth.set("group", group);
        String slowKey = a.get("slow-key", null);
        long slowMs = a.l("slow-ms", 0);
        boolean fail = a.has("fail");
        long consumeMs = a.l("consume-ms", 0);

        DefaultMQPushConsumer c = new DefaultMQPushConsumer(group);
        c.setNamesrvAddr(a.get("namesrv", "127.0.0.1:9876"));
        if (!a.has("no-client-ip")) c.setClientIP("127.0.0.1");
        if (a.has("instance")) c.setInstanceName(a.get("instance", null));
        if (a.has("broadcast")) setBroadcasting(c);
        if ("hash".equals(a.get("strategy", "avg"))) c.setAllocateMessageQueueStrategy(new AllocateMessageQueueConsistentHash());
        else c.setAllocateMessageQueueStrategy(new AllocateMessageQueueAveragely());
        c.setConsumeThreadMin(a.i("threads", 2));
        c.setConsumeThreadMax(a.i("threads", 2));
        c.setConsumeTimeout(a.l("consume-timeout-min", 15));
        c.setPullInterval(a.l("pull-interval-ms", 0));
        if (a.has("persist-ms")) c.setPersistConsumerOffsetInterval(a.i("persist-ms", 5000));
        for (String t : topics) c.subscribe(t, "*");

        if (a.has("orderly")) {
            c.registerMessageListener((MessageListenerOrderly) (msgs, ctx) -> {
                for (MessageExt m : msgs) recv(truth, m);
                return ConsumeOrderlyStatus.SUCCESS;
            });
        } else {
            c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
                for (MessageExt m : msgs) {
                    recv(truth, m);
                    if (consumeMs > 0) {
                        try { Thread.sleep(consumeMs); } catch (InterruptedException e) { Thread.currentThread().interrupt(); }
                    }
                    if (slowKey != null && slowKey.equals(m.getKeys()) && m.getReconsumeTimes() == 0) {
                        truth.write("slow_taken", "topic", m.getTopic(), "broker", m.getBrokerName(), "queue", m.getQueueId(),
                            "offset", m.getQueueOffset(), "msg_id", m.getMsgId(), "sleep_ms", slowMs);
                        try { Thread.sleep(slowMs); } catch (InterruptedException e) { Thread.currentThread().interrupt(); }
                        truth.write("slow_finished", "topic", m.getTopic(), "broker", m.getBrokerName(), "queue", m.getQueueId(),
                            "offset", m.getQueueOffset(), "msg_id", m.getMsgId(), "interrupted", Thread.currentThread().isInterrupted());
                    }
                    if (fail) {
                        truth.write("fail", "topic", m.getTopic(), "broker", m.getBrokerName(), "queue", m.getQueueId(),
                            "offset", m.getQueueOffset(), "msg_id", m.getMsgId(), "reconsume", m.getReconsumeTimes(),
                            "retry_topic", m.getProperty(MessageConst.PROPERTY_RETRY_TOPIC));
                        return ConsumeConcurrentlyStatus.RECONSUME_LATER;
                    }
                }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
        }
        c.start();
        String clientId = c.getDefaultMQPushConsumerImpl().getmQClientFactory().getClientId();
        truth.set("client_id", clientId);
        truth.write("start", "topics", String.join(",", topics), "model", String.valueOf(c.getMessageModel()),
            "strategy", c.getAllocateMessageQueueStrategy().getName(), "orderly", a.has("orderly"),
            "client_version", org.apache.rocketmq.common.MQVersion.getVersionDesc(org.apache.rocketmq.common.MQVersion.CURRENT_VERSION));

        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            truth.write("stopping");
            c.shutdown();
            truth.write("stopped");
            try { truth.close(); } catch (Exception ignored) { }
        }));

        // the queues this process holds, as its own rebalance left them: a line at each change
        String last = "";
        while (true) {
            ConcurrentMap<MessageQueue, ProcessQueue> pqt = c.getDefaultMQPushConsumerImpl().getRebalanceImpl().getProcessQueueTable();
            TreeSet<String> held = new TreeSet<>();
            for (Map.Entry<MessageQueue, ProcessQueue> e : pqt.entrySet()) {
                if (e.getValue().isDropped()) continue;
                MessageQueue mq = e.getKey();
                held.add(mq.getTopic() + "|" + mq.getBrokerName() + "|" + mq.getQueueId());
            }
            String now = String.join(" ", held);
            if (!now.equals(last)) {
                truth.write("owned", "queues", now);
                last = now;
            }
            Thread.sleep(1000);
        }
    }

    /** MessageModel lives in common.protocol (4.9.x) or remoting.protocol (5.x): one source for both clients. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static void setBroadcasting(DefaultMQPushConsumer c) throws Exception {
        for (String cn : new String[] {"org.apache.rocketmq.remoting.protocol.heartbeat.MessageModel",
                                       "org.apache.rocketmq.common.protocol.heartbeat.MessageModel"}) {
            try {
                Class cls = Class.forName(cn);
                DefaultMQPushConsumer.class.getMethod("setMessageModel", cls).invoke(c, Enum.valueOf(cls, "BROADCASTING"));
                return;
            } catch (ClassNotFoundException | NoSuchMethodException e) {
                // the other client version
            }
        }
        throw new IllegalStateException("no MessageModel class");
    }

    static void recv(Truth truth, MessageExt m) {
        truth.write("recv", "topic", m.getTopic(), "broker", m.getBrokerName(), "queue", m.getQueueId(),
            "offset", m.getQueueOffset(), "msg_id", m.getMsgId(), "keys", m.getKeys(),
            "reconsume", m.getReconsumeTimes(), "store_ts", m.getStoreTimestamp(),
            "retry_topic", m.getProperty(MessageConst.PROPERTY_RETRY_TOPIC), "thread", Thread.currentThread().getName());
    }
}
