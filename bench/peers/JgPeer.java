// JgPeer drives JGroups (Debian libjgroups-java, 2.12, default udp.xml with
// its 64 KB bundling) through stacktool bench's work: one sender casting M
// messages of S bytes to a group of 1 + K members, receivers counting them.
// Multicast stays on loopback (bind_addr 127.0.0.1) in the namespace
// scripts/bench-peers.sh makes.
//
//   java -cp jgroups.jar:. JgPeer send|recv K M S LOSS
//
// Each process prints one line: peer=jgroups role=... delivered=N of=M
// seconds=T rate=R cpu_s=C (the sender: cast=N). LOSS (0 to 1) inserts
// JGroups' own DISCARD above UDP at the receivers.
import java.lang.management.ManagementFactory;
import org.jgroups.JChannel;
import org.jgroups.Message;
import org.jgroups.ReceiverAdapter;
import org.jgroups.protocols.DISCARD;
import org.jgroups.stack.ProtocolStack;

public class JgPeer extends ReceiverAdapter {
    private final long want;
    private long got, first, last;

    private JgPeer(long want) { this.want = want; }

    @Override
    public void receive(Message msg) {
        long now = System.nanoTime();
        synchronized (this) {
            if (got == 0) first = now;
            got++;
            last = now;
            if (got >= want) notifyAll();
        }
    }

    private static double cpu() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime() / 1e9;
    }

    public static void main(String[] a) throws Exception {
        if (a.length != 5) {
            System.err.println("usage: JgPeer send|recv K M S LOSS");
            System.exit(2);
        }
        boolean send = a[0].equals("send");
        int k = Integer.parseInt(a[1]);
        long m = Long.parseLong(a[2]);
        int size = Integer.parseInt(a[3]);
        double loss = Double.parseDouble(a[4]);
        JgPeer me = new JgPeer(m);
        JChannel ch = new JChannel("udp.xml");
        if (!send && loss > 0) {
            DISCARD d = new DISCARD();
            d.setUpDiscardRate(loss);
            ch.getProtocolStack().insertProtocol(d, ProtocolStack.ABOVE, "UDP");
        }
        ch.setReceiver(me);
        ch.connect("layercast-bench");
        long deadline = System.currentTimeMillis() + 30000;
        while (ch.getView().size() < k + 1 && System.currentTimeMillis() < deadline) Thread.sleep(20);
        if (send) {
            Thread.sleep(500); // every receiver has the view
            byte[] buf = new byte[size];
            long t0 = System.nanoTime();
            for (long i = 0; i < m; i++) ch.send(new Message(null, null, buf));
            double secs = (System.nanoTime() - t0) / 1e9;
            System.out.printf("peer=jgroups role=send cast=%d seconds=%.3f rate=%.0f cpu_s=%.3f%n", m, secs, m / secs, cpu());
            System.out.flush();
            // Stay for retransmissions until the script stops us.
            Thread.sleep(Long.parseLong(System.getProperty("linger", "120000")));
        } else {
            long end = System.currentTimeMillis() + Long.parseLong(System.getProperty("timeout", "120000"));
            synchronized (me) {
                while (me.got < m && System.currentTimeMillis() < end) me.wait(100);
            }
            double secs = Math.max(me.last - me.first, 1) / 1e9;
            System.out.printf("peer=jgroups role=recv delivered=%d of=%d seconds=%.3f rate=%.0f cpu_s=%.3f%n", me.got, m, secs, me.got / secs, cpu());
            System.out.flush();
        }
        ch.close();
        System.exit(0);
    }
}
