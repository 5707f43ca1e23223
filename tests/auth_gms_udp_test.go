package tests

import (
	"regexp"
	"syscall"
	"testing"
	"time"
)

// TestAuthGMSOverUDP: `stacktool gms --key-file` and nodes whose specs end
// in auth under gms, as processes over UDP in a network namespace: the
// members install their views (the service's packets and theirs verify) and
// deliver; a node holding another key asks to join and is never admitted,
// and the service counts its packets refused.
func TestAuthGMSOverUDP(t *testing.T) {
	ns := newNetns(t)
	bin := stacktool(t)
	good := authKeyFile(t, authKeyA)
	bad := authKeyFile(t, authKeyB)
	spec := func(key string) string {
		return `fifo : reliable : gms(heartbeat=100ms, fd_timeout=500ms) : auth(key_file="` + key + `")`
	}
	const svcAddr = "127.0.0.1:7500"
	svc := ns.startService(t, bin, svcAddr, "--view-interval", "100ms", "--key-file", good)
	nodes := startMembers(t, ns, bin, spec(good), svcAddr, "news", 3, 7500)
	// A node with the wrong key: its join requests and heartbeats fail the
	// service's check, so no view ever names it.
	intruder := start(t, "node9", ns.command(bin, "node",
		"--spec", spec(bad), "--gms", svcAddr, "--join", "news",
		"--id", "9", "--listen", "127.0.0.1:7509", "--cast", "50", "--report", "200ms", "--wait", "1s"))
	// It gives up: the service never answered it (exit 2).
	select {
	case <-intruder.Done:
	case <-time.After(15 * time.Second):
		t.Fatalf("the intruder still runs after 15s")
	}
	if intruder.Cmd.ProcessState.ExitCode() != 2 {
		t.Errorf("the intruder exited with %v, want 2 (the service did not answer)", intruder.Err)
	}
	with9 := regexp.MustCompile(`msg=view .*members="[^"]*n9`)
	for i := 1; i <= 3; i++ {
		if m := nodes[i].lastMatch(with9); m != nil {
			t.Errorf("node%d installed a view with the intruder: %s", i, m[0])
		}
		if m := nodes[i].lastMatch(deliveredLine); m == nil || m[1] == "0" {
			t.Errorf("node%d delivered nothing (%v)", i, m)
		}
	}
	if m := intruder.lastMatch(regexp.MustCompile(`msg=view `)); m != nil {
		t.Errorf("the intruder installed a view: %s", m[0])
	}
	stopCleanly(t, svc, nodes, 3)
	// The service's final counters: the intruder's packets refused.
	svc.waitFor(t, regexp.MustCompile(`msg=stopped .*bad_tag=[1-9]`), 5*time.Second, "bad tags counted at stop")
}

// TestAuthNodeRestartedUnderItsID: a node of an authenticated group killed
// and started again under its old id (another seed, so another
// incarnation) is admitted again and its new casts are delivered. Its
// sequence numbers start from the clock, above what it sent in its first
// life; the replay window is 64 here and the first life sent hundreds of
// packets, so numbers started from zero would all be refused as replays,
// first by the service (no view would admit it) and then by the members.
func TestAuthNodeRestartedUnderItsID(t *testing.T) {
	ns := newNetns(t)
	bin := stacktool(t)
	key := authKeyFile(t, authKeyA)
	spec := `fifo : reliable : gms(heartbeat=100ms, fd_timeout=500ms) : auth(key_file="` + key + `", window=64)`
	const svcAddr = "127.0.0.1:7600"
	svc := ns.startService(t, bin, svcAddr, "--view-interval", "100ms", "--key-file", key)
	nodes := startMembers(t, ns, bin, spec, svcAddr, "news", 3, 7600)
	time.Sleep(2500 * time.Millisecond) // node3's first life: about 100 casts, and heartbeats
	if err := nodes[3].Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill node3 (pid %d): %v", nodes[3].Cmd.Process.Pid, err)
	}
	<-nodes[3].Done
	without3 := viewRe("news", "n1 n2", "")
	nodes[1].waitFor(t, without3, 10*time.Second, "news view without n3")
	heard := heardFrom(nodes[1])["n3"]
	if heard < 64 {
		t.Fatalf("node1 delivered %d of node3's first casts, want at least 64 (the window) for this test to mean anything", heard)
	}
	mark := len(nodes[1].lines())
	nodes[3] = start(t, "node3-again", ns.command(bin, "node",
		"--spec", spec, "--gms", svcAddr, "--join", "news", "--seed", "99",
		"--id", "3", "--listen", "127.0.0.1:7603", "--cast", "50", "--report", "200ms"))
	with3 := viewRe("news", "n1 n2 n3", "")
	again := false
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end) && !again; time.Sleep(100 * time.Millisecond) {
		for _, l := range nodes[1].lines()[mark:] {
			again = again || with3.MatchString(l)
		}
	}
	if !again {
		t.Fatalf("node1 installed no news view with the restarted n3 within 15s")
	}
	// Its new casts arrive: node1's count from n3 grows past its first life's.
	for end := time.Now().Add(10 * time.Second); heardFrom(nodes[1])["n3"] < heard+20 && time.Now().Before(end); {
		time.Sleep(100 * time.Millisecond)
	}
	if now := heardFrom(nodes[1])["n3"]; now < heard+20 {
		t.Errorf("node1 delivered %d of the restarted node3's casts within 10s, want at least 20", now-heard)
	}
	stopCleanly(t, svc, nodes, 3)
}
