package tests

import (
	"os"
	"strings"
	"testing"
	"time"
)

// embedChanProgram runs cluster's channels over UDP: 3 nodes on their own
// sockets in one process, a slow reader that must still get every message
// in order, then a cluster whose reader never reads, which must hold back
// (the channel stays at its bound) and still stop on Close; then a node
// that joins a group and leaves it again.
const embedChanProgram = `package main

import (
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/layercast/layercast/cluster"
	_ "github.com/layercast/layercast/layers/all"
)

func fail(f string, a ...any) { fmt.Printf("FAIL: "+f+"\n", a...); os.Exit(1) }

func main() {
	const n, size = 200, 4
	c, err := cluster.New("fifo : reliable", cluster.WithUDP("lo"), cluster.WithChanBuffer(size))
	if err != nil {
		fail("%v", err)
	}
	groups := map[string][]int{"a": {1, 2, 3}, "b": {2, 3}}
	for _, g := range []string{"a", "b"} {
		c.Group(g, groups[g]...)
	}
	deliveries, views := c.Deliveries(), c.Views()
	result := make(chan string)
	go func() { // a slow reader
		next, got, nviews := map[string]int{}, 0, 0
		for deliveries != nil || views != nil {
			select {
			case d, ok := <-deliveries:
				if !ok {
					deliveries = nil
					continue
				}
				k := fmt.Sprint(d.Node, d.Group, d.From)
				if string(d.Payload) != fmt.Sprint(next[k]) {
					result <- fmt.Sprintf("node %d got %q from %d in %s, want %d", d.Node, d.Payload, d.From, d.Group, next[k])
					return
				}
				next[k]++
				if got++; got%20 == 0 {
					time.Sleep(time.Millisecond)
				}
			case _, ok := <-views:
				if !ok {
					views = nil
					continue
				}
				nviews++
			}
		}
		result <- fmt.Sprint(got, " ", nviews)
	}()
	if err := c.Start(); err != nil {
		fail("%v", err)
	}
	for i := 0; i < n; i++ {
		for g, ms := range groups {
			for _, from := range ms {
				if err := c.CastWait(from, g, []byte(fmt.Sprint(i))); err != nil {
					fail("%v", err)
				}
			}
		}
	}
	if err := c.RunUntilQuiet(); err != nil {
		fail("%v", err)
	}
	c.Close()
	want := fmt.Sprint(n*(3*2+2*1), " ", 5)
	if got := <-result; got != want {
		fail("slow reader: got %s, want %s deliveries and views", got, want)
	}

	// Nobody reads: the channel stays at its bound and Close still returns.
	c2, err := cluster.New("fifo : reliable", cluster.WithUDP("lo"), cluster.WithChanBuffer(size))
	if err != nil {
		fail("%v", err)
	}
	c2.Group("g", 1, 2, 3)
	var delivered atomic.Int64
	c2.OnDeliver(func(cluster.Delivery) { delivered.Add(1) })
	d2 := c2.Deliveries()
	if err := c2.Start(); err != nil {
		fail("%v", err)
	}
	for i := 0; i < 50; i++ {
		if err := c2.Cast(1, "g", []byte(fmt.Sprint(i))); err != nil {
			fail("cast %d: %v", i, err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(d2) < size && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	if len(d2) != size || delivered.Load() > size+2 {
		fail("unread channel holds %d (bound %d), %d delivered: want it full and at most one more waiting at each of nodes 2 and 3", len(d2), size, delivered.Load())
	}
	closed := make(chan struct{})
	go func() { c2.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		fail("Close did not return while nodes waited for the reader")
	}
	left := 0
	for range d2 {
		left++
	}
	if left != size {
		fail("after Close the channel gave %d, want the %d it held", left, size)
	}

	// Join and Leave over UDP: node 3 joins "a", gets what 1 casts there,
	// leaves, and gets nothing more.
	c3, err := cluster.New("fifo : reliable", cluster.WithUDP("lo"))
	if err != nil {
		fail("%v", err)
	}
	c3.Group("a", 1, 2)
	c3.Group("b", 2, 3)
	d3 := c3.Deliveries()
	if err := c3.Start(); err != nil {
		fail("%v", err)
	}
	if err := c3.Join(3, "a"); err != nil {
		fail("join: %v", err)
	}
	cast := func(from int) {
		for i := 0; i < 5; i++ {
			if err := c3.CastWait(from, "a", []byte("x")); err != nil {
				fail("cast: %v", err)
			}
		}
		if err := c3.RunUntilQuiet(); err != nil {
			fail("%v", err)
		}
	}
	cast(1)
	if err := c3.Leave(3, "a"); err != nil {
		fail("leave: %v", err)
	}
	cast(1)
	c3.Close()
	got3 := map[int]int{}
	for d := range d3 {
		got3[d.Node]++
	}
	if got3[2] != 10 || got3[3] != 5 {
		fail("join then leave over UDP: node 2 got %d (want 10), node 3 got %d (want the 5 cast while it was a member)", got3[2], got3[3])
	}
	fmt.Println("ok:", want, "delivered and views to a slow reader; an unread channel held at", size, "; join and leave over UDP")
}
`

// Cluster's channels over UDP, in a network namespace made here: a slow
// reader gets every message in order, an unread channel holds the nodes
// back at its bound, and Close ends their wait; Join and Leave work over
// UDP as in the simulator.
func TestEmbedChannelsOnUDP(t *testing.T) {
	ns := newNetns(t)
	bin := buildProgram(t, "_embedchan", "the channels program", embedChanProgram)
	out, err := ns.run(bin, 90*time.Second)
	if err != nil || !strings.HasPrefix(string(out), "ok:") {
		t.Fatalf("channels on UDP: %v\n%s", err, out)
	}
	t.Log(strings.TrimSpace(string(out)))
}

// cluster.ExampleWithUDP, which go test can only compile, run as a program
// in a network namespace made here: it must print what its "On UDP it
// prints:" comment says.
func TestExampleWithUDPRuns(t *testing.T) {
	ns := newNetns(t)
	src, err := os.ReadFile("../cluster/examples_api_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, fn, ok := strings.Cut(string(src), "func ExampleWithUDP() {\n")
	if ok {
		fn, _, ok = strings.Cut(fn, "\n}\n")
	}
	if !ok {
		t.Fatal("cluster/examples_api_test.go has no ExampleWithUDP")
	}
	code, want, ok := strings.Cut(fn, "\t// On UDP it prints:\n")
	if !ok {
		t.Fatal(`ExampleWithUDP has no "// On UDP it prints:" comment to check against`)
	}
	var wantLines []string
	for _, l := range strings.Split(want, "\n") {
		wantLines = append(wantLines, strings.TrimPrefix(strings.TrimSpace(l), "// "))
	}
	imports := []string{`"fmt"`, `"log"`, `"github.com/layercast/layercast/cluster"`, `_ "github.com/layercast/layercast/layers/all"`}
	if strings.Contains(code, "time.") {
		imports = append(imports, `"time"`)
	}
	prog := "package main\n\nimport (\n\t" + strings.Join(imports, "\n\t") + "\n)\n\nfunc main() {\n" + code + "\n}\n"
	bin := buildProgram(t, "_exampleudp", "ExampleWithUDP as a program", prog)
	out, err := ns.run(bin, 60*time.Second)
	if err != nil {
		t.Fatalf("ExampleWithUDP on UDP: %v\n%s", err, out)
	}
	if got, want := strings.TrimSpace(string(out)), strings.Join(wantLines, "\n"); got != strings.TrimSpace(want) {
		t.Errorf("ExampleWithUDP on UDP printed\n%s\nwant\n%s", got, want)
	}
}
