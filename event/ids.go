package event

import (
	"fmt"
	"strconv"
	"time"
)

// NodeID names a process (a stack) in the system. NoNode (0) means "none":
// the peer of a multicast event, or an unknown source.
type NodeID uint32

// NoNode is the zero NodeID, used where an event has no single peer.
const NoNode NodeID = 0

// ServiceNode is the node id the membership service runs under unless a
// spec picks another (layers/gms uses the same value). It prints as
// "gms service" in reports and logs.
const ServiceNode NodeID = 0xFFFFFFF0

// String prints a node as n<id>, and ServiceNode as "gms service".
func (n NodeID) String() string {
	if n == ServiceNode {
		return "gms service"
	}
	return idString('n', uint32(n))
}

// idString prints an id as its prefix and number, or the prefix and "-"
// for the zero id.
func idString(prefix byte, id uint32) string {
	if id == 0 {
		return string(prefix) + "-"
	}
	return string(prefix) + strconv.FormatUint(uint64(id), 10)
}

// GroupID names a multicast group. Every data event carries its group, because
// one stack serves all the groups its node belongs to. NoGroup (0) marks events
// that belong to no group (point-to-point control, timers).
type GroupID uint32

// NoGroup is the zero GroupID.
const NoGroup GroupID = 0

// String prints a group as g<id>.
func (g GroupID) String() string { return idString('g', uint32(g)) }

// MaxGroupName is the longest group name GroupByName accepts.
const MaxGroupName = 200

// GroupByName maps an application's group name to its GroupID with 32-bit
// FNV-1a. The name must be 1 to MaxGroupName bytes. Numeric names ("7") map
// to that number, so simulated groups and named groups share one space.
func GroupByName(name string) (GroupID, error) {
	if name == "" {
		return NoGroup, fmt.Errorf("group name is empty")
	}
	if len(name) > MaxGroupName {
		return NoGroup, fmt.Errorf("group name is %d bytes long; at most %d allowed", len(name), MaxGroupName)
	}
	if n, err := strconv.ParseUint(name, 10, 32); err == nil && n != 0 {
		return GroupID(n), nil
	}
	h := uint32(2166136261)
	for i := 0; i < len(name); i++ {
		h ^= uint32(name[i])
		h *= 16777619
	}
	h |= 1 << 31 // keep hashed names apart from small numeric ids
	return GroupID(h), nil
}

// Time is a point on a stack's clock in nanoseconds: virtual time in the
// simulator, time since the runner started on a real network. Layers read it
// only through their Context.
type Time int64

// Add returns t+d.
func (t Time) Add(d time.Duration) Time { return t + Time(d) }

// Sub returns t-u as a duration.
func (t Time) Sub(u Time) time.Duration { return time.Duration(t - u) }

// Duration returns t as a duration since time zero.
func (t Time) Duration() time.Duration { return time.Duration(t) }

// String prints t as a duration since time zero.
func (t Time) String() string { return time.Duration(t).String() }

// Never is a Time later than any real deadline.
const Never Time = 1<<63 - 1
