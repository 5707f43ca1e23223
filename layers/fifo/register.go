package fifo

import (
	"fmt"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
)

func init() {
	compose.Register(compose.LayerInfo{
		Name:        "fifo",
		BufferBound: bufferBound,
		Summary: "Delivers each sender's messages to a group in the order they were sent. The layer below numbers " +
			"each sender's casts and says where a sender's stream starts for a member that joined; receivers hold early " +
			"arrivals in a bounded reorder buffer until the reliable layer below fills the gap.",
		Params: []compose.Param{
			{Name: "max_reorder", Type: compose.Int, Default: "4096", Doc: "messages held per sender while waiting for an earlier one; left at its default, raised to what the sequencing layer below may hand up past a gap (its window) when that is more (stacktool check -v says fitted)", Min: 1, Max: 1 << 24},
			{Name: "max_reorder_bytes", Type: compose.Size, Default: "16MB", Doc: "bytes held per sender while waiting for an earlier one, each message counted with its buffer (at least 1.5 KB and headers; a lone larger message is still held); the default holds reliable's whole default window of messages up to about 2 KB, and left at its default it is raised to hold the window of a sequencing layer below of small messages when that is more. " +
				"On overflow of either bound the missing messages at the head of the stream are given up and reported lost (counters overflow, skipped; " +
				"late counts those that arrive afterwards) and the held ones delivered in order: the stream never waits for a message it dropped", Min: 1, Max: 1 << 40},
		},
		FitSpread: fitSpread,
		Needs:     []compose.Property{compose.Reliable, compose.Sequenced},
		Gives:     []compose.Property{compose.FIFO},
		Counters:  compose.CountersOf(counters{}),
		New: func(p compose.Params) (stack.Layer, error) {
			return New(p.Int("max_reorder"), int64(p.Int("max_reorder_bytes"))), nil
		},
	})
}

// counters are what fifo counts: its registration documents them from these
// tags (compose.CountersOf) and Init binds them (stack.Context.BindCounters).
type counters struct {
	Delivered *stack.Counter `counter:"delivered" doc:"messages delivered up in order"`
	Reordered *stack.Counter `counter:"reordered" doc:"messages that arrived early and were held for the gap before them"`
	Peak      *stack.Counter `counter:"peak_buffer_bytes" kind:"peak" role:"buffer_peak" doc:"most bytes held out of order at once"`
	BufBytes  *stack.Counter `counter:"buffer_bytes" kind:"gauge" doc:"bytes held out of order at the end"`
	Released  *stack.Counter `counter:"released" doc:"held messages let go when their sender left the view"`
	Malformed *stack.Counter `counter:"malformed" doc:"casts whose sequence number and stream start from the layer below did not fit together"`
	Overflow  *stack.Counter `counter:"overflow" doc:"times a stream's reorder bounds overflowed and its head gap was given up"`
	NonMember *stack.Counter `counter:"non_member" doc:"messages from senders outside the view"`
	Skipped   *stack.Counter `counter:"skipped" doc:"messages given up on overflow (reported lost)"`
	Late      *stack.Counter `counter:"late" doc:"messages that arrived after they were given up"`
}

// fitSpread fits fifo's bounds to a layer below that hands up n-1
// messages of a sender's stream past a gap (offsets 1 to n-1, each within
// max_reorder), each counted at least event.HeldCost(0) against
// max_reorder_bytes: a bound left at its default is raised to hold them,
// so fifo never gives up a gap the layer below is still repairing; a bound
// the spec set lower stays (a memory limit chosen over completeness) and
// is noted. Messages larger than HeldCost(0) can still overflow the bytes
// bound at run time: the memory bound working, counted as overflow.
func fitSpread(p compose.Params, n int) (compose.Params, string) {
	why := fmt.Sprintf("raised from its default to hold the %d messages per sender the layer below may hand up past a gap", n-1)
	if p.Int("max_reorder") < n && !p.Given("max_reorder") {
		p = p.Fit("max_reorder", fmt.Sprint(n), why)
	}
	need := int64(n-1) * event.HeldCost(0)
	if int64(p.Int("max_reorder_bytes")) < need && !p.Given("max_reorder_bytes") {
		const mb = 1000 * 1000
		p = p.Fit("max_reorder_bytes", fmt.Sprintf("%dMB", (need+mb-1)/mb), why)
	}
	holds := min(int64(p.Int("max_reorder")-1), int64(p.Int("max_reorder_bytes"))/event.HeldCost(0))
	if holds >= int64(n-1) {
		return p, ""
	}
	return p, fmt.Sprintf("fifo(max_reorder=%s, max_reorder_bytes=%s) holds %d small messages per sender: past that it gives up gaps the layer below is still repairing and reports those messages lost",
		p.Text("max_reorder"), p.Text("max_reorder_bytes"), holds)
}

// HoldsCompact marks the layer as a stack.CompactHolder: a message it
// keeps past the event that brought it up is Compact's result, so received
// messages may share the transport's read buffers.
func (*Layer) HoldsCompact() {}
