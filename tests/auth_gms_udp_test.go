package tests

import (
	"regexp"
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
