package udp

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestWakeInArmsAlarm: WakeIn arms the timerfd for a timer due within
// alarmBelow (the runtime alone would fire it up to a millisecond late)
// and leaves longer ones to the runtime; Close closes the descriptor.
func TestWakeInArmsAlarm(t *testing.T) {
	tr := open(t, Config{Self: 1}, nil)
	tr.WakeIn(10 * time.Millisecond)
	if tr.alarm != nil {
		t.Fatalf("WakeIn(10ms) made an alarm; want none above %v", alarmBelow)
	}
	tr.WakeIn(300 * time.Microsecond)
	if tr.alarm == nil || tr.alarm.fd < 0 {
		t.Fatalf("WakeIn(300us) made no timerfd: %+v", tr.alarm)
	}
	var cur unix.ItimerSpec
	if err := unix.TimerfdGettime(tr.alarm.fd, &cur); err != nil {
		t.Fatal(err)
	}
	if left := time.Duration(cur.Value.Nano()); left <= 0 || left > 300*time.Microsecond {
		t.Errorf("timerfd due in %v, want within (0, 300us]", left)
	}
	tr.Close()
	if err := unix.TimerfdGettime(tr.alarm.fd, &cur); err == nil {
		t.Errorf("the timerfd is still open after Close")
	}
}
