package vsync

import (
	"fmt"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/internal/units"
	"github.com/layercast/layercast/stack"
)

// ViewSynchrony is the property vsync gives: members that install the same
// two consecutive views of a group delivered the same messages in the
// first. The run reports check it (experiment's vsync_violations) for any
// stack that gives it.
const ViewSynchrony compose.Property = "view-synchrony"

func init() {
	compose.Register(compose.LayerInfo{
		Name: "vsync",
		Summary: "View-synchronous flush (Isis/Ensemble vsync, JGroups FLUSH): members that install the same two consecutive " +
			"views of a group delivered the same messages in the first. A new view is held back while the application is " +
			"blocked (Block, and back-pressure on casts, which wait and are never dropped); every survivor reports how far it " +
			"delivered each old-view sender's stream (FIFO, so a count is a cut); the cut is the most any survivor delivered, " +
			"and for each sender the lowest-numbered survivor that has it sends the others what they lack (whoever has it, not " +
			"only the sender). Each survivor delivers up to the cut and reports again if that changed; once every survivor's " +
			"latest report says it delivered the same, counting the same survivors (a removal learned during the flush is reported again), it discards old-view casts past the cut, passes the view up and Unblock " +
			"(the application hears Block and Unblock through stack.BlockReporter). A node readmitted to a group is told exactly which casts it missed (event.Lost per sender).",
		Params: []compose.Param{
			{Name: "max_bytes", Type: compose.Size, Default: "16MB", Doc: "bytes held per node: delivered messages kept until stable (every member delivered them) for re-sending in a flush, and casts waiting for a flush or a view; past it the oldest kept message is let go (counter unkept)", Min: 1 << 10, Max: 1 << 40},
			{Name: "stable_interval", Type: compose.Duration, Default: "200ms", Doc: "how often members gossip how far they delivered, while they keep or deliver messages"},
			{Name: "flush_timeout", Type: compose.Duration, Default: "5s", Doc: "a flush that made no progress (no report, no old-view cast arrived) for this long installs its view with what the node has (counter flush_timeouts); 0 waits for ever"},
		},
		Needs:      []compose.Property{compose.Reliable, compose.FIFO, compose.Views},
		Gives:      []compose.Property{ViewSynchrony},
		Properties: map[compose.Property]string{ViewSynchrony: "view synchrony"},
		Counters:   compose.CountersOf(counters{}),
		Summarize:  summarize,
		New: func(p compose.Params) (stack.Layer, error) {
			cfg := Config{MaxBytes: int64(p.Int("max_bytes")), StableInterval: p.Duration("stable_interval"), FlushTimeout: p.Duration("flush_timeout")}
			return compose.NewIfValid(cfg, New)
		},
	})
}

// Check reports a configuration that cannot work.
func (c Config) Check() error {
	switch {
	case c.MaxBytes <= 0:
		return fmt.Errorf("vsync: max_bytes must be positive, got %d", c.MaxBytes)
	case c.StableInterval <= 0:
		return fmt.Errorf("vsync: stable_interval must be positive, got %v", c.StableInterval)
	case c.FlushTimeout < 0:
		return fmt.Errorf("vsync: flush_timeout must not be negative, got %v", c.FlushTimeout)
	}
	return nil
}

// counters are what vsync counts: its registration documents them from
// these tags (compose.CountersOf) and Init binds them.
type counters struct {
	Delivered     *stack.Counter `counter:"delivered" doc:"casts delivered up, each in the view it was cast in"`
	Flushes       *stack.Counter `counter:"flushes" doc:"view changes flushed (the view passed up once every survivor delivered up to the cut)"`
	FlushNs       *stack.Counter `counter:"flush_ns" kind:"ns" doc:"time from a view's arrival to its installation after the flush, summed"`
	Restarts      *stack.Counter `counter:"holder_changes" doc:"times the survivor chosen to re-send a sender's messages was removed during the flush and the next one that had them took over"`
	CutShort      *stack.Counter `counter:"cut_short" doc:"messages up to a cut that no survivor left could re-send (told lost)"`
	Timeouts      *stack.Counter `counter:"flush_timeouts" doc:"flushes given up after flush_timeout (the view installed with what the node had)"`
	Reports       *stack.Counter `counter:"reports" doc:"flush reports sent"`
	CatchingUp    *stack.Counter `counter:"catching_up_reports" doc:"flush reports sent again while old-view casts still brought this node nearer the cut (at most one per third of flush_timeout), so that members that agreed do not give the flush up on a survivor still catching up"`
	Resent        *stack.Counter `counter:"resent" doc:"old-view messages sent again to the survivors that lacked them"`
	BeyondCut     *stack.Counter `counter:"discarded_beyond_cut" doc:"old-view casts discarded because no survivor had delivered them (past the cut)"`
	Late          *stack.Counter `counter:"late" doc:"casts of a view already settled that arrived late (copies, or past the cut)"`
	SkippedView   *stack.Counter `counter:"skipped_view" doc:"casts of a view this node skipped or missed, told lost to the application"`
	ToldLost      *stack.Counter `counter:"told_lost" doc:"messages the application was told it will not get (event.Lost): missed while out of the group, or of a skipped view"`
	Queued        *stack.Counter `counter:"queued_casts" doc:"casts held back while the group flushed or had no view (sent afterwards, never dropped)"`
	Duplicates    *stack.Counter `counter:"duplicates" doc:"copies of casts already delivered (a re-sent one, or the original after it)"`
	OldViews      *stack.Counter `counter:"old_views" doc:"views from below no newer than one seen"`
	OtherOld      *stack.Counter `counter:"other_old_view" doc:"survivors' reports from another old view (they skipped a view): not part of this node's cut"`
	ResendMissing *stack.Counter `counter:"resend_missing" doc:"messages this node should have sent again but had let go (max_bytes)"`
	Overflow      *stack.Counter `counter:"overflow" doc:"casts of a future view dropped because max_bytes was full"`
	Unkept        *stack.Counter `counter:"unkept" doc:"kept messages let go before they were stable, to stay within max_bytes"`
	Stable        *stack.Counter `counter:"stable" doc:"kept messages let go once every member had delivered them"`
	Gossips       *stack.Counter `counter:"gossips" doc:"stability gossips sent"`
	NonMember     *stack.Counter `counter:"non_member" doc:"casts from senders outside the view"`
	Malformed     *stack.Counter `counter:"malformed" doc:"packets whose vsync header or body did not decode"`
	Bytes         *stack.Counter `counter:"buffer_bytes" kind:"gauge" doc:"bytes held at the end"`
	Peak          *stack.Counter `counter:"peak_buffer_bytes" kind:"peak" role:"buffer_peak" doc:"most bytes held at once (kept, waiting and queued)"`
}

// summarize gives the mean flush time and a note on flushes given up.
func summarize(c compose.Counters) compose.Summary {
	var s compose.Summary
	t := c.Total
	if n := t["flushes"] + t["flush_timeouts"]; n > 0 {
		s.Ratio("flush_ms_mean", units.Ms(float64(t["flush_ns"])/float64(n)))
	}
	if n := t["flush_timeouts"]; n > 0 {
		s.Notef("%d flushes gave up after flush_timeout: those views were installed without agreement", n)
	}
	if n := t["resend_missing"]; n > 0 {
		s.Notef("%d messages could not be sent again in a flush: max_bytes let them go", n)
	}
	return s
}
