// Package udprun is the "udp" network of the experiment harness: every node
// of a scenario runs as a separate OS process on this machine (the stacktool
// binary re-executed as `stacktool worker`), over transport/udp with
// multicast on the loopback interface.
//
// The parent and its workers talk over the workers' stdin and stdout, one
// line per message:
//
//	worker: ready ADDR              unicast socket bound at ADDR
//	parent: start EPOCH ID=ADDR,... the shared clock epoch (Unix ns) and the address book
//	worker: joined                  stack built, static views installed
//	parent: go T                    start sending at T (ns since the epoch)
//	worker: done                    sent everything and delivered all it expects
//	parent: stop                    every worker is done (or time is up)
//	worker: report JSON             its WorkerReport, then it exits
//
// Membership is static (views installed at start, as the simulator's static
// source does), unless the worker is given --gms ADDR and --join GROUPS: it
// then joins those groups through that membership service, learns its
// peers' addresses from their traffic (the parent's book may be "-",
// empty), casts at the scenario's Rate over the groups it joined, and
// reports once its views list it; this is how a worker takes part in a
// system of `stacktool node` processes (same channels, udp.GroupAddr at
// --mcast-port). Every worker also stops by itself at its deadline or when
// its stdin closes; the parent kills its children by PID only if they
// overrun.
package udprun

import (
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/transport/udp"
)

// WorkerReport is what a worker prints as its last line (after "report ").
type WorkerReport struct {
	Node event.NodeID `json:"node"`
	// Sent is, per group, how many messages this node cast (indexes 0 to
	// Count-1).
	Sent []SentCount `json:"sent"`
	// Deliveries in delivery order.
	Deliveries []Record `json:"deliveries"`
	// The worker's own check of its deliveries (experiment.StreamCheck, as
	// the collector counts them).
	Delivered      int64 `json:"delivered"`
	Expected       int64 `json:"expected"`
	Duplicates     int64 `json:"duplicates"`
	FIFOViolations int64 `json:"fifo_violations"`
	Foreign        int64 `json:"foreign"`
	// Done says the worker sent and delivered everything before it was
	// stopped.
	Done bool `json:"done"`
	// LastDelivery is when the worker delivered last (ns since the epoch).
	LastDelivery event.Time `json:"last_delivery_ns"`
	// LossData and LossControl are packets the scenario's loss model
	// dropped at this receiver.
	LossData    int64 `json:"loss_data"`
	LossControl int64 `json:"loss_control"`
	// Drops are the data packets of LossData whose experiment message
	// could be read (group, sender, index, and when: Record.At), in the
	// order they were dropped, so the parent can tell recoveries of them
	// from deliveries of packets that were not dropped; at most
	// MaxDropRecords, the rest are counted in LossData only.
	Drops []Record `json:"drops,omitempty"`
	// CPU is the worker's user and system CPU time (ns) when it began its
	// report, after the run: what the stack and the workload cost, without
	// encoding the report (on a receiver of 400,000 messages, a fifth of
	// the process's CPU) or the process's exit, as the peers' drivers
	// count theirs (bench/peers). Zero if unknown.
	CPU       time.Duration         `json:"cpu_ns,omitempty"`
	Layers    []stack.LayerCounters `json:"layers"`
	Net       stack.NetStats        `json:"net"`
	Transport udp.Stats             `json:"transport"`
}

// MaxDropRecords bounds WorkerReport.Drops.
const MaxDropRecords = 1 << 20

// SentCount is how many messages a sender cast to one group.
type SentCount struct {
	Group event.GroupID `json:"g"`
	Count uint64        `json:"n"`
}

// Record is one delivery: the experiment stamp of the payload, when it was
// delivered, and how it was recovered if it was.
type Record struct {
	Group      event.GroupID `json:"g"`
	Sender     event.NodeID  `json:"s"`
	Index      uint64        `json:"i"`
	Sent       event.Time    `json:"t"`
	At         event.Time    `json:"d"`
	By         string        `json:"r,omitempty"`
	Discovered event.Time    `json:"x,omitempty"`
}
