package udp

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestWakeInArmsAlarm: WakeIn arms the timerfd for a timer due within
// alarmBelow (the runtime alone would fire it up to a millisecond late),
// never before the deadline and at most alarmSlack after it; it leaves
// longer timers and timers already due to the runtime, keeps an alarm
// that still rings in time (a busy node re-arms every step), and Close
// closes the descriptor.
func TestWakeInArmsAlarm(t *testing.T) {
	// Each check reads the clock around a WakeIn: a test goroutine
	// preempted in between (seen under load: 446 us) reads an alarm that
	// moved on, which proves nothing either way. Such a try is made again
	// on a fresh transport; only a try that ran undisturbed is judged.
	const undisturbed = 150 * time.Microsecond
	for try := 0; ; try++ {
		last := try == 30
		tr := open(t, Config{Self: 1}, nil)
		tr.WakeIn(10 * time.Millisecond)
		tr.WakeIn(0)
		if tr.alarm != nil {
			t.Fatalf("WakeIn(10ms) and WakeIn(0) made an alarm; want none")
		}
		before := time.Now()
		tr.WakeIn(300 * time.Microsecond)
		if tr.alarm == nil || tr.alarm.fd < 0 {
			t.Fatalf("WakeIn(300us) made no timerfd: %+v", tr.alarm)
		}
		var cur unix.ItimerSpec
		if err := unix.TimerfdGettime(tr.alarm.fd, &cur); err != nil {
			t.Fatal(err)
		}
		left := time.Duration(cur.Value.Nano())
		spent := time.Since(before)
		at := tr.alarm.at
		// A deadline the alarm still rings in time for (alarmSlack/2
		// before it): kept. Then one 2*alarmSlack before it: re-armed.
		same := at - time.Since(alarmEpoch) - alarmSlack/2
		tr.WakeIn(same)
		kept := tr.alarm.at
		earlier := at - time.Since(alarmEpoch) - 2*alarmSlack
		tr.WakeIn(earlier)
		rearmed := tr.alarm.at
		if !last && (spent > undisturbed || time.Since(before) > undisturbed || earlier <= 0) {
			tr.Close()
			continue
		}
		if left <= 0 || left+spent < 300*time.Microsecond || left > 300*time.Microsecond+alarmSlack {
			t.Errorf("timerfd due in %v (%v after WakeIn), want 300us to 300us+%v after it", left, spent, alarmSlack)
		}
		if kept != at {
			t.Errorf("WakeIn for the same deadline re-armed the alarm (%v -> %v)", at, kept)
		}
		if rearmed >= at {
			t.Errorf("WakeIn for an earlier deadline kept the later alarm")
		}
		tr.Close()
		if err := unix.TimerfdGettime(tr.alarm.fd, &cur); err == nil {
			t.Errorf("the timerfd is still open after Close")
		}
		return
	}
}
