package experiment_test

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/experiment"
	_ "github.com/layercast/layercast/layers/all"
	"github.com/layercast/layercast/stack"
)

// zeroPct finds a percentage printed of a zero base: the formatter never
// prints one, it prints "-" (a figure like "4160000.0%" is caught by
// checkDrops' recovered <= dropped instead).
var zeroPct = regexp.MustCompile(`\((\d+\.\d+)%\)`)

// checkDrops asserts what every report promises about its drops: dropped
// is the sum of its causes and of its outcomes, recovered is at most
// dropped, the percentage has a non-zero base, and the table says the same.
func checkDrops(t *testing.T, rep *experiment.Report) {
	t.Helper()
	l := rep.Loss
	if l.Recovered > l.Dropped {
		t.Errorf("recovered %d > dropped %d", l.Recovered, l.Dropped)
	}
	if got := l.DroppedBy.Total(); got != l.Dropped {
		t.Errorf("dropped %d, but dropped_by sums to %d (%+v)", l.Dropped, got, l.DroppedBy)
	}
	o := l.DropOutcome
	if sum := o.Recovered + o.Missing + o.NotOwed + o.Again + o.Untied; sum != l.Dropped || o.Recovered != l.Recovered || o.NotOwed < 0 {
		t.Errorf("drop outcome %+v sums to %d, want dropped %d with recovered %d", o, sum, l.Dropped, l.Recovered)
	}
	if o.Missing > rep.Missing {
		t.Errorf("drop outcome says %d owed messages dropped and never delivered, but only %d owed deliveries are missing", o.Missing, rep.Missing)
	}
	var by int64
	for _, n := range l.RecoveredBy {
		by += n
	}
	if by != l.Recovered {
		t.Errorf("recovered_by sums to %d, recovered %d", by, l.Recovered)
	}
	switch {
	case l.Dropped == 0 && l.RecoveredPct != nil:
		t.Errorf("recovered_pct = %v of nothing dropped, want null", *l.RecoveredPct)
	case l.Dropped > 0 && (l.RecoveredPct == nil || *l.RecoveredPct > 100):
		t.Errorf("recovered_pct = %v with %d of %d recovered", l.RecoveredPct, l.Recovered, l.Dropped)
	}
	var b bytes.Buffer
	if err := experiment.WriteTable(&b, []*experiment.Report{rep}, false); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(b.String(), "\n") {
		if !strings.HasPrefix(line, "recovered deliveries (% of dropped)") {
			continue
		}
		m := zeroPct.FindStringSubmatch(line)
		if l.Dropped == 0 && (m != nil || !strings.HasSuffix(line, "(-)")) {
			t.Errorf("table line %q: want (-) with nothing dropped", line)
		}
		if l.Dropped > 0 && m == nil {
			t.Errorf("table line %q: want a percentage of %d dropped", line, l.Dropped)
		}
	}
}

// TestDropsPartitionHeal is issue 9's Ricochet replay, smaller: a
// partition healed 800 ms later. Every packet it cut is a drop by
// partition, so the recoveries after the heal are of counted drops (before
// the fix: dropped 0, recovered thousands, "(...00000.0%)").
func TestDropsPartitionHeal(t *testing.T) {
	sc := experiment.Default()
	sc.Faults = []string{"partition:1,3,4,5@900ms", "heal@1700ms"}
	rep := runScenario(t, "../specs/ricochet.stack", sc, "nodes", "9", "groups-per-node", "2", "group-size", "3",
		"rate", "300", "msg-size", "64", "duration", "2s", "drain", "2s", "seed", "632")
	checkDrops(t, rep)
	l := rep.Loss
	if l.DroppedBy.Partition == 0 || l.Recovered == 0 {
		t.Fatalf("partition drops %d, recovered %d: the partition cut nothing or nothing came back", l.DroppedBy.Partition, l.Recovered)
	}
	if l.Dropped != l.DroppedBy.Partition {
		t.Errorf("dropped %d, by partition %d: no loss model, nothing else should drop (%+v)", l.Dropped, l.DroppedBy.Partition, l.DroppedBy)
	}
	if rep.DeliveredAll && l.DropOutcome.Missing != 0 {
		t.Errorf("every owed message delivered, yet %d dropped owed messages never delivered", l.DropOutcome.Missing)
	}
}

// TestDropsCrash is the crash run of specs/gms-crash.scenario: packets to
// the crashed node are drops (down) that nobody recovers, and the model's
// drops are recovered; the notes account for every drop.
func TestDropsCrash(t *testing.T) {
	sc := experiment.Default()
	if err := sc.LoadFile("../specs/gms-crash.scenario"); err != nil {
		t.Fatal(err)
	}
	rep := runScenario(t, "../specs/gms.stack", sc)
	checkDrops(t, rep)
	l := rep.Loss
	if l.DroppedBy.Model != l.DroppedByModel || l.DroppedBy.Model == 0 {
		t.Errorf("dropped_by.model %d, dropped_by_model %d: want the same, not 0", l.DroppedBy.Model, l.DroppedByModel)
	}
	if l.DroppedBy.Down == 0 || l.DropOutcome.NotOwed == 0 {
		t.Errorf("dropped_by.down %d, not owed %d: packets to the crashed n3 should be drops to a receiver not owed them", l.DroppedBy.Down, l.DropOutcome.NotOwed)
	}
	if !rep.DeliveredAll || l.DropOutcome.Missing != 0 {
		t.Errorf("delivered_all %v, dropped and missing %d", rep.DeliveredAll, l.DropOutcome.Missing)
	}
	if !slices.ContainsFunc(rep.Notes, func(n string) bool { return strings.Contains(n, "data packets dropped (per receiver)") }) {
		t.Errorf("no note accounts for the drops: %q", rep.Notes)
	}
}

// threeNodeCollector is a collector for three nodes in one group of three,
// fed by hand.
func threeNodeCollector(t *testing.T) *experiment.Collector {
	t.Helper()
	sc := experiment.Default()
	sc.Nodes, sc.GroupsPerNode, sc.GroupSize = 3, 1, 3
	a, err := experiment.Assign(sc)
	if err != nil {
		t.Fatal(err)
	}
	return experiment.NewCollector(sc, a)
}

// TestDropsZeroBase: with nothing dropped the table prints "-" where a
// percentage would be, and the JSON has recovered_pct null; a layer's
// recovery mark without a drop is not counted as recovered.
func TestDropsZeroBase(t *testing.T) {
	c := threeNodeCollector(t)
	buf := make([]byte, experiment.PayloadHeader)
	c.Sent(1, 1, 0)
	experiment.PutStamp(buf, experiment.Stamp{Sender: 1, Group: 1, Index: 0})
	for _, rx := range []event.NodeID{2, 3} {
		d := stack.Delivery{Group: 1, From: 1, Payload: buf, Recovery: event.Recovery{By: "lec"}}
		c.Delivered(rx, &d, 1)
	}
	rep := c.Finish(experiment.Outcome{End: 2})
	checkDrops(t, rep)
	if rep.Loss.Recovered != 0 || rep.Loss.RecoveredWithoutDrop != 2 {
		t.Errorf("recovered %d, without drop %d; want 0 and 2", rep.Loss.Recovered, rep.Loss.RecoveredWithoutDrop)
	}
	j, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(j, []byte(`"recovered_pct":null`)) || !bytes.Contains(j, []byte(`"dropped_by":{"model":0,`)) {
		t.Errorf("JSON loss: %s", j[bytes.Index(j, []byte(`"loss"`)):][:300])
	}
	var b bytes.Buffer
	if err := experiment.WriteTable(&b, []*experiment.Report{rep}, false); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "%)") {
		t.Errorf("a percentage of a zero base in:\n%s", b.String())
	}
	if !regexp.MustCompile(`recovery latency mean / p99 \(ms\) +- / -\n`).MatchString(b.String()) {
		t.Errorf("a recovery latency of no recoveries in:\n%s", b.String())
	}
}

// TestDropsTiedToMessages feeds drops by hand: a retransmission dropped
// again counts as a second drop and one recovery; a drop tied to no
// message counts in dropped only; a message dropped to a receiver that
// never gets it is missing.
func TestDropsTiedToMessages(t *testing.T) {
	c := threeNodeCollector(t)
	buf := make([]byte, experiment.PayloadHeader)
	deliver := func(rx event.NodeID, i uint64, by string) {
		experiment.PutStamp(buf, experiment.Stamp{Sender: 1, Group: 1, Index: i})
		d := stack.Delivery{Group: 1, From: 1, Payload: buf, Recovery: event.Recovery{By: by}}
		c.Delivered(rx, &d, 1)
	}
	for i := uint64(0); i < 3; i++ {
		c.Sent(1, 1, i)
	}
	m := func(i uint64) *experiment.Stamp { return &experiment.Stamp{Sender: 1, Group: 1, Index: i} }
	c.Dropped(experiment.DropModel, 2, m(1))
	c.Dropped(experiment.DropPartition, 2, m(1)) // its retransmission, dropped too
	c.Dropped(experiment.DropModel, 3, m(2))     // never delivered
	c.Dropped(experiment.DropModel, 3, nil)      // a coded repair
	c.DroppedUntied(experiment.DropKernel, 2)
	for i := uint64(0); i < 3; i++ {
		deliver(2, i, map[bool]string{true: "nak"}[i == 1])
	}
	deliver(3, 0, "")
	deliver(3, 1, "")
	rep := c.Finish(experiment.Outcome{End: 2})
	checkDrops(t, rep)
	l := rep.Loss
	want := experiment.DropOutcome{Recovered: 1, Missing: 1, Again: 1, Untied: 3}
	if l.Dropped != 6 || l.DropOutcome != want || l.RecoveredBy["nak"] != 1 {
		t.Errorf("dropped %d, outcome %+v, by %v; want 6, %+v, nak 1", l.Dropped, l.DropOutcome, l.RecoveredBy, want)
	}
	if l.DroppedBy != (experiment.DropCauses{Model: 3, Partition: 1, Kernel: 2}) {
		t.Errorf("dropped_by %+v", l.DroppedBy)
	}
}
