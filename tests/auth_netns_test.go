package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/testkit"
	"github.com/layercast/layercast/transport/udp"
)

// TestAuthForgedUDPNetns is issue 16 item 5: in a network namespace with
// loopback only, four member processes (`stacktool run ... --network udp`
// with auth under a key file) exchange 15,000 messages while a process
// outside the group floods the group's multicast address with well-formed
// forged packets: frames with no tag, packets sealed under another key,
// tampered and replayed captures of the members' own packets. Every member
// delivers exactly the messages owed, once each, in order, and auth counts
// the forgeries dropped.
func TestAuthForgedUDPNetns(t *testing.T) {
	ns := newNetns(t)
	tool := stacktool(t)
	good := authKeyFile(t, authKeyA)
	bad := authKeyFile(t, authKeyB)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := ns.commandContext(ctx, tool, "run", `fifo:reliable:auth(key_file="`+good+`")`,
		"--network", "udp", "--nodes", "4", "--groups-per-node", "1", "--group-size", "4", "--senders", "1",
		"--rate", "5000", "--duration", "3s", "--drain", "10s", "--json")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The run picks its multicast port; its workers carry it on their
	// command lines (this test's own build of stacktool, so no other run's).
	port := ""
	for end := time.Now().Add(10 * time.Second); port == "" && time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		port = workerPort(tool)
	}
	if port == "" {
		cmd.Wait()
		t.Fatalf("no worker of %s showed its --mcast-port\n%s", tool, stderr.String())
	}
	forger := ns.command(os.Args[0], "-test.run=^TestAuthForgerProcess$", "-test.v")
	forger.Env = append(os.Environ(), "LAYERCAST_AUTH_FORGER="+bad, "LAYERCAST_AUTH_FORGER_PORT="+port)
	var fout bytes.Buffer
	forger.Stdout, forger.Stderr = &fout, &fout
	if err := forger.Start(); err != nil {
		t.Fatal(err)
	}
	ferr := forger.Wait()
	runErr := cmd.Wait()
	t.Logf("forger: %s", fout.String())
	if runErr != nil {
		t.Fatalf("stacktool run: %v\n%s", runErr, stderr.String())
	}
	if ferr != nil {
		t.Fatalf("forger: %v", ferr)
	}
	var r udpReport
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("report: %v\n%s", err, stdout.String())
	}
	a := r.Layers["auth"]
	t.Logf("deliveries %d of %d, %.0f msgs/s, auth %v", r.Deliveries, r.DeliveriesExpected, r.ThroughputMsgsPerS, a)
	if r.DeliveriesExpected != 45000 || r.Deliveries != 45000 || !r.DeliveredAll || r.Duplicates != 0 || r.FIFOViolations != 0 {
		t.Errorf("deliveries %d of %d (delivered_all %v, duplicates %d, fifo violations %d), want 45000 of 45000 exactly once in order",
			r.Deliveries, r.DeliveriesExpected, r.DeliveredAll, r.Duplicates, r.FIFOViolations)
	}
	if a["bad_tag"] == 0 || a["malformed"] == 0 {
		t.Errorf("auth counted no forged packet: %v", a)
	}
}

// workerPort finds a running worker of tool and returns its --mcast-port.
func workerPort(tool string) string {
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		b, err := os.ReadFile("/proc/" + d.Name() + "/cmdline")
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) == 0 || args[0] != tool {
			continue
		}
		for i, a := range args[:len(args)-1] {
			if a == "--mcast-port" {
				return args[i+1]
			}
		}
	}
	return ""
}

// TestAuthForgerProcess is the forger of TestAuthForgedUDPNetns, run in the
// namespace by it (skipped otherwise). For 4 s it multicasts to groups 1-4:
// frames without a tag, packets from nodes 1-4 sealed under the key in
// LAYERCAST_AUTH_FORGER, and captures of the group's real packets, replayed
// as they were and tampered.
func TestAuthForgerProcess(t *testing.T) {
	keyFile := os.Getenv("LAYERCAST_AUTH_FORGER")
	if keyFile == "" {
		t.Skip("run by TestAuthForgedUDPNetns")
	}
	port, err := strconv.Atoi(os.Getenv("LAYERCAST_AUTH_FORGER_PORT"))
	if err != nil {
		t.Fatal(err)
	}
	var wrong [][]byte
	for id := event.NodeID(1); id <= 4; id++ {
		tr := &testkit.Transport{Record: true}
		st, err := stack.New(stack.Config{Self: id, Transport: tr, Clock: stack.ClockFunc(func() event.Time { return 0 }),
			Layers: compose.MustBuild(`fifo : reliable : auth(key_file="` + keyFile + `")`)})
		if err != nil {
			t.Fatal(err)
		}
		for g := event.GroupID(1); g <= 4; g++ {
			st.InstallView(&event.ViewInfo{Group: g, ID: 1, Members: []event.NodeID{1, 2, 3, 4}})
			for k := range 50 {
				_ = st.Cast(g, []byte{byte(k), 1, 2, 3, 4, 5, 6, 7})
			}
		}
		for _, p := range tr.Packets() {
			wrong = append(wrong, slices.Clone(p.Data))
		}
	}
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var caps [][]byte
	for g := event.GroupID(1); g <= 4; g++ {
		c, err := net.ListenMulticastUDP("udp4", lo, udp.GroupAddr(g, port))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		go func() {
			buf := make([]byte, 65536)
			for {
				n, _, err := c.ReadFrom(buf)
				if err != nil {
					return
				}
				mu.Lock()
				if len(caps) < 20000 {
					caps = append(caps, slices.Clone(buf[:n]))
				}
				mu.Unlock()
			}
		}()
	}
	out, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	rng := rand.New(rand.NewPCG(1, 1))
	sent := 0
	for end := time.Now().Add(4 * time.Second); time.Now().Before(end); {
		for range 20 {
			var pkt []byte
			switch sent % 4 {
			case 0:
				pkt = make([]byte, stack.FrameSize+20+rng.IntN(40))
				stack.PutFrame(pkt, stack.Frame{Kind: event.Cast, Group: event.GroupID(1 + rng.IntN(4)), Src: event.NodeID(1 + rng.IntN(4))})
				for j := stack.FrameSize; j < len(pkt); j++ {
					pkt[j] = byte(rng.Uint32())
				}
			case 1:
				pkt = wrong[rng.IntN(len(wrong))]
			default:
				mu.Lock()
				if len(caps) > 0 {
					pkt = slices.Clone(caps[rng.IntN(len(caps))])
				}
				mu.Unlock()
				if pkt == nil {
					pkt = wrong[0]
				} else if sent%4 == 2 {
					pkt[2+rng.IntN(len(pkt)-2)] ^= 1 << rng.IntN(8)
				}
			}
			f, err := stack.ParseFrame(pkt)
			g := event.GroupID(1)
			if err == nil {
				g = f.Group
			}
			if _, err := out.WriteTo(pkt, udp.GroupAddr(g, port)); err == nil {
				sent++
			}
		}
		time.Sleep(time.Millisecond) // about 20,000 packets a second
	}
	mu.Lock()
	t.Logf("forged %d packets, %d captures", sent, len(caps))
	mu.Unlock()
}
