package hop

import "testing"

// TestStartForgetsNumbersAnnouncedPastIt: a stream contiguous up to 304
// holds, from a representative's heartbeat, 320 as the highest number
// announced; that representative's ring never handed 305 to 320 back, and
// the one after it numbers on from 305 and says so (tStart 305). The
// stream must forget 320 (and pass the tStart on), or it waits on those
// numbers, and agreed order with it, until the new numbering reaches 320
// (spread-site-soak seed 297).
func TestStartForgetsNumbersAnnouncedPastIt(t *testing.T) {
	st := newStream(3, 64)
	if changed, _ := st.start(1, 0, 0); !changed {
		t.Fatal("first tStart did not sync the stream")
	}
	st.skip(1, 304, 412, 0)
	if st.contig != 304 {
		t.Fatalf("contig %d after skipping 1..304, want 304", st.contig)
	}
	if !st.beat(&beat{Site: 3, Seq: 320, LTS: 428}) {
		t.Fatal("heartbeat announcing 320 not taken")
	}
	changed, lost := st.start(305, 412, 0)
	if !changed {
		t.Error("tStart 305 below the announced 320 reported no change: it is not passed on")
	}
	if lost[1] > lost[0] {
		t.Errorf("tStart at contig+1 lost %v, want nothing", lost)
	}
	if st.best.Seq != 0 {
		t.Errorf("best announced %d kept after tStart 305", st.best.Seq)
	}
	if changed, _ := st.start(305, 412, 0); changed {
		t.Error("a second tStart 305 reported a change")
	}
}
