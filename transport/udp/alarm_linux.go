package udp

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// alarm is a timerfd in the Go runtime's poller. The runtime sleeps in
// epoll_wait with a timeout in whole milliseconds, rounded up: a timer due
// in 300us fires after about 1.1 ms, and any timer up to a millisecond
// late. A timerfd armed for the same moment makes epoll_wait return then,
// and the runtime, awake, runs the timer that is due. Nobody reads the
// descriptor: the poller registers it edge-triggered, and every expiry is
// a new edge.
type alarm struct {
	f  *os.File // keeps the descriptor open and registered with the poller
	fd int
	ts unix.ItimerSpec
	at time.Duration // when it rings, since alarmEpoch
}

// newAlarm makes the timerfd, or returns nil where the kernel has none
// (then timers keep the runtime's granularity).
func newAlarm() *alarm {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil
	}
	// A non-blocking descriptor given to os.NewFile joins the poller.
	return &alarm{f: os.NewFile(uintptr(fd), "alarm"), fd: fd}
}

// wakeIn makes the alarm ring between d and d+alarmSlack from now: an
// alarm already set within that span is kept (no system call), else it is
// set for d+alarmSlack/2.
func (a *alarm) wakeIn(d time.Duration) {
	now := time.Since(alarmEpoch)
	if at := now + d; a.at >= at && a.at <= at+alarmSlack {
		return
	}
	a.at = now + d + alarmSlack/2
	a.set(d + alarmSlack/2)
}

// alarmEpoch is time zero of alarm.at (a monotonic reading).
var alarmEpoch = time.Now()

// set arms the alarm d from now (replacing any earlier setting).
func (a *alarm) set(d time.Duration) {
	a.ts.Value = unix.NsecToTimespec(max(int64(d), 1)) // 0 would disarm it
	_ = unix.TimerfdSettime(a.fd, 0, &a.ts, nil)
}

func (a *alarm) close() { a.f.Close() }
