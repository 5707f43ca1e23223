package experiment

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/transport/sim"
)

// This file maps the scenario's network settings (loss, faults, capacity)
// onto transport/sim.

// ParseLoss parses a loss model in the simulator's syntax: none, uniform:P,
// bursty:P,b or markov:P,m (Ricochet section 5). nil means no loss.
func ParseLoss(s string) (sim.LossModel, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	return sim.ParseLoss(s)
}

// Fault is one scheduled fault (sim.Fault).
type Fault = sim.Fault

// Fault kinds, as the simulator names them.
const (
	FaultCrash     = sim.FaultCrash
	FaultFreeze    = sim.FaultFreeze
	FaultPartition = sim.FaultPartition
	FaultHeal      = sim.FaultHeal
	FaultCut       = sim.FaultCut
)

// ParseFault parses a fault: crash:NODE@TIME, freeze:NODE@TIME+DURATION,
// partition:1,2|3,4@TIME, cut:1,2|3,4@TIME or heal@TIME.
func ParseFault(s string) (Fault, error) { return sim.ParseFault(s) }

// ParseCapacity parses a per-node capacity, applied to sending and
// receiving alike: comma-separated items, each one of
//
//	Npps      packets per second
//	SIZE      bytes per second (e.g. 100MB, 1GB)
//	buf=N     receive buffer in packets; arrivals beyond it are dropped
//	          (the datacenter loss the papers describe)
//	unicast-first
//	          packets sent to the node alone wait in a buffer of their own
//	          that the node empties before the multicast one (QSM's second
//	          socket and priority queues; sim.Capacity.UnicastFirst)
//
// for example "20000pps", "20000pps,100MB,buf=512". "", none and unlimited
// mean no limit.
func ParseCapacity(s string) (sim.Capacity, error) {
	var c sim.Capacity
	s = strings.TrimSpace(s)
	if s == "" || s == "none" || s == "unlimited" {
		return c, nil
	}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		switch {
		case strings.HasPrefix(item, "buf="):
			n, err := strconv.Atoi(strings.TrimPrefix(item, "buf="))
			if err != nil || n < 1 || n > 1<<24 {
				return c, fmt.Errorf("capacity %q: receive buffer %q must be a number of packets in [1, 16M]", s, item)
			}
			c.RecvBuffer = n
		case item == "unicast-first":
			c.UnicastFirst = true
		case strings.HasSuffix(item, "pps"):
			n, err := strconv.ParseFloat(strings.TrimSuffix(item, "pps"), 64)
			if err != nil || n <= 0 || n > 1e9 {
				return c, fmt.Errorf("capacity %q: %q must be a positive packet rate such as 20000pps", s, item)
			}
			c.SendPPS, c.RecvPPS = n, n
		default:
			n, err := compose.ParseSize(item)
			if err != nil || n <= 0 {
				return c, fmt.Errorf("capacity %q: %q is neither Npps, a byte rate such as 100MB, buf=N nor unicast-first", s, item)
			}
			c.SendBps, c.RecvBps = float64(n), float64(n)
		}
	}
	return c, nil
}
