package cluster_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/layercast/layercast/cluster"
)

// The channels carry exactly what the callbacks get, in the same order,
// while a slow reader keeps them full: every member gets every message of
// each of its groups in order through the Deliveries channel, every view
// arrives, and every drop the network reports.
func TestChannelsCarryWhatCallbacksDo(t *testing.T) {
	const n = 60
	c, err := cluster.New("fifo : reliable : lec(r=4, c=2)", cluster.WithLoss("5%"), cluster.WithSeed(9),
		cluster.WithChanBuffer(8))
	if err != nil {
		t.Fatal(err)
	}
	members := 0
	for _, g := range overlapping {
		if err := c.Group(g.name, g.members...); err != nil {
			t.Fatal(err)
		}
		members += len(g.members)
	}
	var byCallback []cluster.Delivery
	var viewsCB, lossesCB int
	c.OnDeliver(func(d cluster.Delivery) {
		d.Payload = append([]byte(nil), d.Payload...)
		byCallback = append(byCallback, d)
	})
	c.OnView(func(cluster.View) { viewsCB++ })
	c.OnLoss(func(cluster.Loss) { lossesCB++ })
	deliveries, views, losses := c.Deliveries(), c.Views(), c.Losses()
	runErr := make(chan error, 1)
	go func() {
		defer c.Close()
		if err := c.Start(); err != nil {
			runErr <- err
			return
		}
		for i := 0; i < n; i++ {
			for _, g := range overlapping {
				for _, from := range g.members {
					if err := c.CastWait(from, g.name, []byte(fmt.Sprint(i))); err != nil {
						runErr <- err
						return
					}
				}
			}
			_ = c.Run(5 * time.Millisecond)
		}
		runErr <- c.RunUntilQuiet()
	}()
	var got []cluster.Delivery
	nviews, nlosses, full := 0, 0, 0
	for deliveries != nil || views != nil || losses != nil {
		select {
		case d, ok := <-deliveries:
			if !ok {
				deliveries = nil
				continue
			}
			if len(deliveries) == cap(deliveries)-1 {
				full++ // the channel was full when this one was taken
			}
			got = append(got, d)
			if len(got)%50 == 0 {
				time.Sleep(time.Millisecond) // a slow reader
			}
		case _, ok := <-views:
			if !ok {
				views = nil
				continue
			}
			nviews++
		case _, ok := <-losses:
			if !ok {
				losses = nil
				continue
			}
			nlosses++
		}
	}
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, g := range overlapping {
		want += n * len(g.members) * (len(g.members) - 1)
	}
	if len(got) != want || len(byCallback) != want {
		t.Fatalf("deliveries: %d through the channel, %d through the callback, want %d", len(got), len(byCallback), want)
	}
	next := map[string]int{}
	for i, d := range got {
		cb := byCallback[i]
		if d.Node != cb.Node || d.From != cb.From || d.Group != cb.Group || string(d.Payload) != string(cb.Payload) || d.At != cb.At {
			t.Fatalf("delivery %d: channel %+v, callback %+v", i, d, cb)
		}
		k := fmt.Sprint(d.Node, d.Group, d.From)
		if string(d.Payload) != fmt.Sprint(next[k]) {
			t.Fatalf("node %d got %q from %d in %s, want %d", d.Node, d.Payload, d.From, d.Group, next[k])
		}
		next[k]++
	}
	if nviews != members || viewsCB != members {
		t.Errorf("views: %d through the channel, %d through the callback, want %d", nviews, viewsCB, members)
	}
	if nlosses == 0 || nlosses != lossesCB {
		t.Errorf("losses: %d through the channel, %d through the callback, want the same and more than 0", nlosses, lossesCB)
	}
	t.Logf("%d deliveries, the channel full at %d reads", len(got), full)
}

// A full channel holds the cluster back instead of growing: with nobody
// reading, the simulated run waits at the delivery that does not fit, and
// goes on, losing nothing, once the reader comes.
func TestChannelFullStopsTheCluster(t *testing.T) {
	const size, casts = 4, 20
	c, err := cluster.New("fifo : reliable", cluster.WithChanBuffer(size))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Group("g", 1, 2, 3); err != nil {
		t.Fatal(err)
	}
	var delivered atomic.Int64
	c.OnDeliver(func(cluster.Delivery) { delivered.Add(1) })
	deliveries := c.Deliveries()
	runErr := make(chan error, 1)
	go func() {
		if err := c.Start(); err != nil {
			runErr <- err
			return
		}
		for i := 0; i < casts; i++ {
			if err := c.CastWait(1, "g", []byte(fmt.Sprint(i))); err != nil {
				runErr <- err
				return
			}
		}
		runErr <- c.RunUntilQuiet()
	}()
	deadline := time.Now().Add(20 * time.Second)
	for len(deliveries) < size {
		if time.Now().After(deadline) {
			t.Fatalf("the channel holds %d after 20 s, want it full (%d)", len(deliveries), size)
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // time for the run to go on, were it not held
	if got := delivered.Load(); got != size+1 {
		t.Errorf("with the channel full and nobody reading, %d deliveries happened, want %d (those it holds and the one waiting)", got, size+1)
	}
	select {
	case err := <-runErr:
		t.Fatalf("the run ended (%v) while its channel was full and unread", err)
	default:
	}
	next := map[int]int{}
	for i := 0; i < 2*casts; i++ {
		select {
		case d := <-deliveries:
			if string(d.Payload) != fmt.Sprint(next[d.Node]) {
				t.Fatalf("node %d got %q, want %d", d.Node, d.Payload, next[d.Node])
			}
			next[d.Node]++
		case <-time.After(20 * time.Second):
			t.Fatalf("only %d of %d deliveries came once the reader was back", i, 2*casts)
		}
	}
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}
	c.Close()
	if d, ok := <-deliveries; ok {
		t.Errorf("after Close the channel still gave %+v, want it closed and empty", d)
	}
}

// A program that uses only callbacks never waits on a channel: channels
// nobody asked for are not filled.
func TestChannelsNotAskedForNeverFill(t *testing.T) {
	c, err := cluster.New("fifo : reliable", cluster.WithChanBuffer(1))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Group("g", 1, 2, 3); err != nil {
		t.Fatal(err)
	}
	got := 0
	c.OnDeliver(func(cluster.Delivery) { got++ })
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		if err := c.CastWait(1, "g", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- c.RunUntilQuiet() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("RunUntilQuiet waited on a channel nobody asked for")
	}
	if got != 100 {
		t.Errorf("delivered %d, want 100", got)
	}
	c.Close()
}

// What a node's stack gives up reaches the application, through OnGap and
// Gaps alike: fifo(max_reorder=2) under 10% loss skips messages, and the
// gaps count exactly what its skipped counter says.
func TestGapsReportWhatWasGivenUp(t *testing.T) {
	c, err := cluster.New("fifo(max_reorder=2) : reliable", cluster.WithLoss("10%"), cluster.WithSeed(2))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Group("g", 1, 2, 3, 4); err != nil {
		t.Fatal(err)
	}
	byCallback := 0
	c.OnGap(func(g cluster.Gap) {
		if g.Group != "g" || g.Node == g.From || (g.Bounded && g.Count != int(g.End-g.First)) {
			t.Errorf("gap %+v", g)
		}
		byCallback += g.Count
	})
	gaps := c.Gaps()
	byChannel := make(chan int)
	go func() {
		n := 0
		for g := range gaps {
			n += g.Count
		}
		byChannel <- n
	}()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200; i++ {
		for _, from := range []int{1, 2} {
			if err := c.CastWait(from, "g", []byte("x")); err != nil {
				t.Fatal(err)
			}
		}
		_ = c.Run(5 * time.Millisecond)
	}
	if err := c.RunUntilQuiet(); err != nil {
		t.Fatal(err)
	}
	skipped := c.Metrics().Sum("fifo", "skipped")
	c.Close()
	got := <-byChannel
	if skipped == 0 || int64(byCallback) != skipped || int64(got) != skipped {
		t.Errorf("gaps count %d by callback, %d by channel; fifo skipped %d: want the same, more than 0", byCallback, got, skipped)
	}
	t.Logf("%d messages given up", skipped)
}
