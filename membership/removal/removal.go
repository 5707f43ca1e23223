// Package removal is what a membership service says about each node it
// removed from its groups, and why: the record a run's report lists
// (JSON removals, and a note each in the text report). A service layer
// that keeps such records implements Reporter; the harness asks the
// service node's layers for it and prints what they say, knowing no layer.
package removal

import "github.com/layercast/layercast/event"

// Causes of a removal (Record.Cause).
const (
	// Silent: the failure detector removed a node it heard nothing from,
	// which no member it asked could reach either.
	Silent = "silent"
	// Partitioned: the service heard nothing from the node for long, but
	// members still reached it: cut off from the service only.
	Partitioned = "partitioned"
	// Left: the node said goodbye.
	Left = "left"
	// Restarted: a new life of the node replaced the old one.
	Restarted = "restarted"
	// CutOff: cut off from the wide area. A member's links (hop) cut the
	// node's site off for good while the service still heard both sides,
	// and the node's side of the split was the smaller: it was removed,
	// answering or not, and told to join again.
	CutOff = "cut"
	// Reset: the node's wishes differed from the service's record of it
	// (a lost removal notice, or a service that lost its record); it was
	// told to join again.
	Reset = "reset"
)

// Record is one removal.
type Record struct {
	// Node is the node removed.
	Node event.NodeID `json:"node"`
	// At is when the service removed it (the service's clock).
	At event.Time `json:"-"`
	// AtMs is At in milliseconds (in the simulator, of the run's virtual
	// time, as the report's notes print times).
	AtMs float64 `json:"at_ms"`
	// Cause is one of the constants above.
	Cause string `json:"cause"`
	// Groups is how many groups it was removed from.
	Groups int `json:"groups"`
	// SilentMs is how long the service had heard nothing from it (Silent
	// and Partitioned), and Phi the accrual detector's suspicion level for
	// that silence (0: not computed, too few heartbeats to learn from).
	SilentMs float64 `json:"silent_ms,omitempty"`
	Phi      float64 `json:"phi,omitempty"`
	// WindowMs is the silence after which it was suspected (its adaptive
	// fd timeout) and SuspectMs the probing that followed.
	WindowMs  float64 `json:"window_ms,omitempty"`
	SuspectMs float64 `json:"suspect_ms,omitempty"`
	// HeardBy is the last member that reached it while the service could
	// not (Partitioned), or the member that reported its site cut off
	// (CutOff); 0 otherwise.
	HeardBy event.NodeID `json:"heard_by,omitempty"`
	// Reason says all of it in words, for the text report.
	Reason string `json:"reason"`
}

// Reporter is implemented by a service layer that keeps removal records.
type Reporter interface {
	// Removals returns the records kept, oldest first (the caller must not
	// modify them), and how many older ones were dropped to bound the list.
	Removals() (kept []Record, dropped int64)
}
