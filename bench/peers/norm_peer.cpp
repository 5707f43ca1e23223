// norm_peer (C, compiled as C++ since normApi.h uses C++ defaults) drives NORM (Debian libnorm-dev, 1.5.9) through stacktool
// bench's work: one sender writing M messages of S bytes into a NORM
// stream on a multicast address over loopback, receivers reading them one
// message at a time. Two modes, both paced at NORM_RATE bits/s (default
// 4 Gbit/s) in NORM_SEGMENT-byte segments (default 60000): "fixed" (no
// feedback but NAKs; NORM's default timer-based flow control) and "ack"
// (every receiver an acking node, the sender never more than its stream
// buffer ahead of the slowest, as NRL's examples/normStreamer.cpp does it:
// ACK-based flow control that always delivers). NORM_STREAM_BUF,
// NORM_MARK_DIV (a watermark per 1/N of the buffer), NORM_BACKOFF and
// NORM_CC=1 (NORM's congestion control) tune the sender; NORM_RX_BUF the
// receivers.
//
//   norm_peer send|recv MODE ID K M S LOSS_PERCENT
//
// Each process prints one line: peer=norm-MODE role=... delivered=N of=M
// seconds=T rate=R cpu_s=C. LOSS_PERCENT drops at the receiver
// (NormSetRxLoss).
#include <normApi.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static double cpu(void) {
	struct rusage u;
	getrusage(RUSAGE_SELF, &u);
	return u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6 + u.ru_stime.tv_sec + u.ru_stime.tv_usec / 1e6;
}

// wait takes the next event, sleeping on the instance's descriptor between
// looks (NormGetNextEvent's own blocking wait stalled here under load); it
// returns false after a minute without one.
static bool wait(NormInstanceHandle inst, NormEvent *ev) {
	struct pollfd pfd = {NormGetDescriptor(inst), POLLIN, 0};
	for (int i = 0; i < 600; i++) {
		if (NormGetNextEvent(inst, ev, false)) return true;
		poll(&pfd, 1, 100);
	}
	return false;
}

static const char *addr = "239.255.77.1";
static const unsigned short port = 6003;
enum { BLOCK = 64 };

// envf is a tuning knob from the environment (the script passes them on).
static double envf(const char *k, double d) {
	const char *v = getenv(k);
	return v && *v ? atof(v) : d;
}

static NormSessionHandle session(NormInstanceHandle inst, NormNodeId id) {
	NormSessionHandle s = NormCreateSession(inst, addr, port, id);
	if (s == NORM_SESSION_INVALID) {
		fprintf(stderr, "norm_peer: NormCreateSession failed\n");
		exit(1);
	}
	NormSetRxPortReuse(s, true, NULL, NULL, 0);
	NormSetMulticastInterface(s, "lo");
	NormSetLoopback(s, true);
	NormSetTTL(s, 1);
	NormSetRxSocketBuffer(s, 8 << 20);
	return s;
}

// The sender's ACK-based flow control, as NRL's own streaming example
// (examples/normStreamer.cpp) does it: count the stream segments written
// and not yet acknowledged, never more than the stream buffer holds
// (less a block), and ask every acking node for an ACK (a watermark)
// each time another 1/NORM_MARK_DIV of the buffer is written, one
// request outstanding at a time; a completed watermark frees that much.
struct acker {
	NormSessionHandle s;
	NormObjectHandle st;
	unsigned max, thresh, count, remain, segment;
	bool pending;
	long resets;
};

static void handle(acker *a, const NormEvent &ev) {
	if (ev.type != NORM_TX_WATERMARK_COMPLETED) return;
	if (NormGetAckingStatus(a->s, NORM_NODE_ANY) != NORM_ACK_SUCCESS) {
		a->resets++;
		NormResetWatermark(a->s); // ask again: every receiver must have it
		return;
	}
	if (a->pending) {
		a->pending = false;
		a->count -= a->thresh;
	}
}

static int sender(int ack, int k, long m, int size) {
	NormInstanceHandle inst = NormCreateInstance(false);
	NormSessionHandle s = session(inst, 1);
	NormSetTxSocketBuffer(s, 8 << 20);
	double rate = envf("NORM_RATE", 1e9);
	unsigned segment = (unsigned)envf("NORM_SEGMENT", 8000);
	unsigned streamBuf = (unsigned)envf("NORM_STREAM_BUF", 16 << 20);
	NormSetTxRate(s, rate);
	// NRL's examples on a LAN: a 1 ms first GRTT guess and no NACK/ACK
	// backoff (the default backoff factor of 4 GRTTs spreads feedback
	// over time to suppress it in large groups, and here only delays
	// every repair and every watermark ACK).
	NormSetGrttEstimate(s, 0.001);
	NormSetBackoffFactor(s, envf("NORM_BACKOFF", 0));
	if (ack) {
		// ACK-based flow control replaces timer-based flow control.
		NormSetFlowControl(s, 0);
		if (envf("NORM_CC", 0) != 0) NormSetCongestionControl(s, true);
		for (int i = 0; i < k; i++) NormAddAckingNode(s, 2 + i);
	}
	// Fixed rate keeps NORM's default timer-based flow control: data
	// NACKed lately is not purged from the buffer by new writes.
	if (!NormStartSender(s, (NormSessionId)rand(), streamBuf, segment, BLOCK, 0)) {
		fprintf(stderr, "norm_peer: NormStartSender failed\n");
		return 1;
	}
	NormObjectHandle st = NormStreamOpen(s, streamBuf, NULL, 0);
	acker a = {s, st, 0, 0, 0, 0, segment, false, 0};
	a.max = NormGetStreamBufferSegmentCount(streamBuf, segment, BLOCK) - BLOCK;
	a.thresh = a.max / (unsigned)envf("NORM_MARK_DIV", 8);
	char *buf = (char *)calloc(1, size);
	double t0 = now();
	NormEvent ev;
	for (long i = 0; i < m; i++) {
		unsigned off = 0;
		while (off < (unsigned)size) {
			unsigned n = size - off;
			if (ack) {
				while (a.count >= a.max) { // the buffer holds only unacknowledged data
					if (!wait(inst, &ev)) return 1;
					handle(&a, ev);
				}
				unsigned avail = segment * (a.max - a.count) - a.remain;
				if (avail < n) n = avail;
			}
			unsigned w = NormStreamWrite(st, buf + off, n);
			off += w;
			if (ack) {
				unsigned total = w + a.remain;
				a.count += total / segment;
				a.remain = total % segment;
				if (!a.pending && a.count >= a.thresh) {
					NormSetWatermark(s, st, false);
					a.pending = true;
				}
			}
			if (w < n) { // the stream is full: wait for room
				if (!wait(inst, &ev)) return 1;
				if (ack) handle(&a, ev);
			}
		}
		NormStreamMarkEom(st);
		// Take the ACKs that came in, without waiting.
		while (ack && a.pending && NormGetNextEvent(inst, &ev, false)) handle(&a, ev);
	}
	NormStreamFlush(st, true, NORM_FLUSH_ACTIVE);
	double secs = now() - t0;
	printf("peer=norm-%s role=send cast=%ld seconds=%.3f rate=%.0f cpu_s=%.3f watermark_resets=%ld\n", ack ? "ack" : "fixed", m, secs, m / secs, cpu(), a.resets);
	fflush(stdout);
	// Serve repairs until the script stops us.
	double end = now() + 120;
	while (now() < end) {
		if (!wait(inst, &ev)) break;
	}
	return 0;
}

static int receiver(int ack, NormNodeId id, long m, int size, double loss) {
	NormInstanceHandle inst = NormCreateInstance(false);
	NormSessionHandle s = session(inst, id);
	if (loss > 0) NormSetRxLoss(s, loss);
	NormSetDefaultUnicastNack(s, false);
	if (!NormStartReceiver(s, (unsigned)envf("NORM_RX_BUF", 64 << 20))) {
		fprintf(stderr, "norm_peer: NormStartReceiver failed\n");
		return 1;
	}
	long want = m * size, bytes = 0, breaks = 0;
	char buf[65536];
	double first = 0, last = 0, end = now() + (getenv("PEER_TIMEOUT") ? atof(getenv("PEER_TIMEOUT")) : 120);
	NormEvent ev;
	struct pollfd pfd = {NormGetDescriptor(inst), POLLIN, 0};
	long evs[32] = {0};
	while (bytes < want && now() < end) {
		// Take every event waiting, then sleep on the descriptor (with a
		// timeout, to check the deadline).
		if (!NormGetNextEvent(inst, &ev, false)) {
			poll(&pfd, 1, 100);
			continue;
		}
		if (ev.type >= 0 && ev.type < 32) evs[ev.type]++;
		if (ev.type != NORM_RX_OBJECT_UPDATED || NormObjectGetType(ev.object) != NORM_OBJECT_STREAM) continue;
		for (;;) {
			// One message a read, as an application takes them (and as
			// the other stacks deliver them, one callback each); reading
			// the stream in 64 KB chunks would count bytes, not messages.
			unsigned int n = size - bytes % size;
			if (!NormStreamRead(ev.object, buf, &n)) {
				breaks++; // data lost for good: the stream skips ahead
				NormStreamSeekMsgStart(ev.object);
				continue;
			}
			if (n == 0) break;
			if (bytes == 0) first = now();
			bytes += n;
			last = now();
		}
	}
	double secs = last > first ? last - first : 1e-9;
	printf("peer=norm-%s role=recv delivered=%ld of=%ld seconds=%.3f rate=%.0f cpu_s=%.3f breaks=%ld\n",
	       ack ? "ack" : "fixed", bytes / size, m, secs, (bytes / size) / secs, cpu(), breaks);
	fflush(stdout);
	if (getenv("NORM_DEBUG"))
		for (int i = 0; i < 32; i++)
			if (evs[i]) fprintf(stderr, "event %d: %ld\n", i, evs[i]);
	return 0;
}

int main(int argc, char **argv) {
	if (argc != 8) {
		fprintf(stderr, "usage: norm_peer send|recv fixed|ack ID K M S LOSS_PERCENT\n");
		return 2;
	}
	int ack = strcmp(argv[2], "ack") == 0;
	NormNodeId id = (NormNodeId)atoi(argv[3]);
	int k = atoi(argv[4]);
	long m = atol(argv[5]);
	int size = atoi(argv[6]);
	double loss = atof(argv[7]);
	if (k < 1 || m < 1 || size < 1 || size > 65536) {
		fprintf(stderr, "norm_peer: bad arguments\n");
		return 2;
	}
	srand((unsigned)time(NULL) ^ id);
	return strcmp(argv[1], "send") == 0 ? sender(ack, k, m, size) : receiver(ack, id, m, size, loss);
}
