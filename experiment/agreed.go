package experiment

import (
	"fmt"
	"slices"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
)

// agreedOrder is the property of a stack that delivers every group's
// messages in one order at every member (layers/hop declares it).
const agreedOrder = compose.Property("agreed")

// orderLog records, per (group, receiver), the order in which the receiver
// delivered the group's messages, for the agreed-order checker. It records
// only when the run's stack promises agreed order (TrackOrder).
type orderLog struct {
	on   bool
	seqs map[[2]uint32][]uint64 // (group, receiver) -> (sender<<40 | index) in delivery order
}

// TrackOrder makes the collector record every receiver's delivery order, so
// that the report counts agreed_violations.
func (c *Collector) TrackOrder() {
	c.order.on = true
	c.order.seqs = map[[2]uint32][]uint64{}
}

func (o *orderLog) record(g event.GroupID, rx, tx event.NodeID, index uint64) {
	if o.on {
		k := [2]uint32{uint32(g), uint32(rx)}
		o.seqs[k] = append(o.seqs[k], uint64(tx)<<40|index&(1<<40-1))
	}
}

// violations counts deliveries out of agreed order: per group, the
// receiver that delivered most is the reference, and a delivery at another
// receiver is a violation when it comes after one that the reference
// delivered later (messages the reference did not deliver are not
// judged).
func (o *orderLog) violations() int64 {
	if !o.on {
		return 0
	}
	by := map[uint32][][]uint64{}
	keys := make([][2]uint32, 0, len(o.seqs))
	for k := range o.seqs {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]uint32) int {
		if a[0] != b[0] {
			return int(a[0]) - int(b[0])
		}
		return int(a[1]) - int(b[1])
	})
	for _, k := range keys {
		by[k[0]] = append(by[k[0]], o.seqs[k])
	}
	var n int64
	for _, lists := range by {
		ref := lists[0]
		for _, l := range lists[1:] {
			if len(l) > len(ref) {
				ref = l
			}
		}
		pos := make(map[uint64]int, len(ref))
		for i, m := range ref {
			pos[m] = i
		}
		for _, l := range lists {
			hi := -1
			for _, m := range l {
				p, ok := pos[m]
				if !ok {
					continue
				}
				if p < hi {
					n++
				}
				hi = max(hi, p)
			}
		}
	}
	return n
}

// agreedBroken is the broken-promise line for agreed order, or "".
func agreedBroken(r *Report) string {
	if r.AgreedViolations > 0 && slices.Contains(r.Promises, string(agreedOrder)) {
		return fmt.Sprintf("%d deliveries out of agreed order (the stack gives agreed order)", r.AgreedViolations)
	}
	return ""
}
