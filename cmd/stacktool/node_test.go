package main

import (
	"strings"
	"testing"
	"time"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/testkit"
)

// TestNodeSiteAndPeerBadInput: node refuses a site beyond 63, malformed
// --peer values and a negative --cast-members before it opens a socket.
func TestNodeSiteAndPeerBadInput(t *testing.T) {
	base := []string{"node", "--spec", "hop : ring : gms", "--gms", "127.0.0.1:7000", "--id", "3"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--site", "64"}, "--site 64"},
		{[]string{"--peer", "x=127.0.0.1:7001"}, "want ID=HOST:PORT"},
		{[]string{"--peer", "0=127.0.0.1:7001"}, "want ID=HOST:PORT"},
		{[]string{"--peer", "4"}, "want ID=HOST:PORT"},
		{[]string{"--peer", "4=127.0.0.1"}, "not a UDP address"},
		{[]string{"--peer", "3=127.0.0.1:7003"}, "this node"},
		{[]string{"--cast-members", "-1"}, "--cast-members"},
	} {
		_, err := runCLI(t, append(base, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("stacktool node %v = %v, want an error with %q", c.args, err, c.want)
		}
	}
}

// TestParsePeers: --peer values become pinned address book entries.
func TestParsePeers(t *testing.T) {
	book, err := parsePeers([]string{"1=127.0.0.1:7001", " 4 = 127.0.0.1:7004"}, 3, 100)
	if err != nil || len(book) != 2 || book[1].Port != 7001 || book[4].Port != 7004 {
		t.Errorf("parsePeers = %v, %v; want n1 at port 7001 and n4 at 7004", book, err)
	}
}

// TestNodeClockReadsWallTime: the stack clock of `stacktool node` and `gms`
// reads nanoseconds since the Unix epoch, not since the process started,
// so two processes in turn under one id (a restart, or the next leader of
// a replicated service) read increasing clocks: auth numbers its packets
// from it, and receivers refuse numbers below their replay window.
func TestNodeClockReadsWallTime(t *testing.T) {
	var last event.Time
	for i := range 2 {
		before := time.Now()
		entries, err := compose.BuildString("fifo : reliable")
		if err != nil {
			t.Fatal(err)
		}
		nd, err := newNode(stack.Config{Self: 1, Layers: entries, Transport: &testkit.Transport{}})
		if err != nil {
			t.Fatal(err)
		}
		now := nd.Now()
		nd.Close()
		if now < event.Time(before.UnixNano()) {
			t.Errorf("process %d: the stack clock reads %v, below the wall clock's %d ns since the Unix epoch", i+1, now, before.UnixNano())
		}
		if now <= last {
			t.Errorf("process %d: the stack clock reads %v, not above the one before it (%v)", i+1, now, last)
		}
		last = now
	}
}
