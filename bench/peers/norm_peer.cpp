// norm_peer (C, compiled as C++ since normApi.h uses C++ defaults) drives NORM (Debian libnorm-dev, 1.5.9) through stacktool
// bench's work: one sender writing M messages of S bytes into a NORM
// stream (8 KB segments) on a multicast address over loopback, receivers
// counting them. Two modes, both at a fixed transmit rate (NORM_RATE bits/s,
// 1 Gbit/s by default): "fixed" (no feedback but NAKs) and "ack" (every
// receiver an acking node, the sender waiting on a watermark every quarter
// of its stream buffer: ACK-based flow control that always delivers).
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
enum { SEGMENT = 8000, BLOCK = 64, STREAM_BUF = 16 << 20 };

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

static int sender(int ack, int k, long m, int size) {
	NormInstanceHandle inst = NormCreateInstance(false);
	NormSessionHandle s = session(inst, 1);
	NormSetTxSocketBuffer(s, 8 << 20);
	double rate = getenv("NORM_RATE") ? atof(getenv("NORM_RATE")) : 1e9;
	NormSetTxRate(s, rate);
	NormSetFlowControl(s, 0); // no timer-based holding of the buffer
	if (ack) {
		// ACK-based flow control: every receiver acknowledges the
		// watermarks the sender sets; the sender never runs more than
		// one watermark ahead. NORM_CC=1 adds NORM's congestion control.
		if (getenv("NORM_CC") && atoi(getenv("NORM_CC"))) NormSetCongestionControl(s, true);
		for (int i = 0; i < k; i++) NormAddAckingNode(s, 2 + i);
	}
	NormSetGrttEstimate(s, 0.001);
	if (!NormStartSender(s, (NormSessionId)rand(), 64 << 20, SEGMENT, BLOCK, 0)) {
		fprintf(stderr, "norm_peer: NormStartSender failed\n");
		return 1;
	}
	NormObjectHandle st = NormStreamOpen(s, STREAM_BUF, NULL, 0);
	char *buf = (char *)calloc(1, size);
	long mark = STREAM_BUF / 4, since = 0;
	int waiting = 0; // a watermark is pending
	double t0 = now();
	NormEvent ev;
	for (long i = 0; i < m; i++) {
		unsigned int off = 0;
		while (off < (unsigned)size) {
			off += NormStreamWrite(st, buf + off, size - off);
			if (off < (unsigned)size) {
				if (!wait(inst, &ev)) return 1;
				if (ev.type == NORM_TX_WATERMARK_COMPLETED) waiting = 0;
			}
		}
		NormStreamMarkEom(st);
		since += size;
		if (ack && since >= mark) {
			while (waiting) { // at most one watermark outstanding
				if (!wait(inst, &ev)) return 1;
				if (ev.type == NORM_TX_WATERMARK_COMPLETED) {
					if (NormGetAckingStatus(s, NORM_NODE_ANY) != NORM_ACK_SUCCESS) NormResetWatermark(s);
					else waiting = 0;
				}
			}
			NormStreamFlush(st, true, NORM_FLUSH_ACTIVE);
			NormSetWatermark(s, st, true);
			waiting = 1;
			since = 0;
		}
	}
	NormStreamFlush(st, true, NORM_FLUSH_ACTIVE);
	double secs = now() - t0;
	printf("peer=norm-%s role=send cast=%ld seconds=%.3f rate=%.0f cpu_s=%.3f\n", ack ? "ack" : "fixed", m, secs, m / secs, cpu());
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
	if (!NormStartReceiver(s, 64 << 20)) {
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
			unsigned int n = sizeof buf;
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
