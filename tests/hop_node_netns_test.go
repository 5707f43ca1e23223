package tests

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestNodeSiteNetns: `stacktool node --site` over UDP in a network
// namespace (loopback only). Two sites of two `stacktool node` processes
// each (n1, n2 in site 1; n3, n4 in site 2) run Spread's stack, every one
// casting, each told the others' addresses with --peer. Every node
// delivers the messages of the three others, those of the far site
// included, and the representative of site 1 (n1) sent them over a Hop
// link: its hop counters show data sent on the link and heartbeats, which a
// single site (every node in site 0, as without --site) never sends.
func TestNodeSiteNetns(t *testing.T) {
	ns := newNetns(t)
	bin := stacktool(t)
	const svcAddr, statAddr, port, n = "127.0.0.1:7680", "127.0.0.1:7689", 7680, 4
	ns.startService(t, bin, svcAddr, "--view-interval", "100ms", "--fd-timeout", "2s")
	nodes := map[int]*proc{}
	for i := 1; i <= n; i++ {
		args := []string{"node", "--spec", hopUDPSpec, "--gms", svcAddr, "--join", "g",
			"--id", strconv.Itoa(i), "--site", strconv.Itoa((i + 1) / 2), "--listen", fmt.Sprintf("127.0.0.1:%d", port+i),
			"--cast", "20", "--cast-members", "4", "--report", "200ms"}
		for j := 1; j <= n; j++ {
			if j != i {
				args = append(args, "--peer", fmt.Sprintf("%d=127.0.0.1:%d", j, port+j))
			}
		}
		if i == 1 {
			args = append(args, "--stat", statAddr)
		}
		nodes[i] = start(t, fmt.Sprintf("node%d", i), ns.command(bin, args...))
	}
	for i := 1; i <= n; i++ {
		nodes[i].waitFor(t, viewRe("g", "n1 n2 n3 n4", ""), 20*time.Second, "view with all 4 members")
	}
	// Every node delivers at least 20 messages (a second's worth) of each
	// of the three others.
	for i := 1; i <= n; i++ {
		var want []string
		for j := 1; j <= n; j++ {
			if j != i {
				want = append(want, fmt.Sprintf(`n%d:(?:[2-9]\d|\d{3,})\b`, j))
			}
		}
		re := regexp.MustCompile(`msg=delivered .*from="?` + strings.Join(want, " "))
		nodes[i].waitFor(t, re, 30*time.Second, "20 deliveries of every other node")
	}
	out, err := ns.command(bin, "stat", statAddr, "--json").CombinedOutput()
	if err != nil {
		t.Fatalf("stat: %v\n%s", err, out)
	}
	var doc struct {
		Layers []struct {
			Layer    string `json:"layer"`
			Counters []struct {
				Name  string `json:"name"`
				Value int64  `json:"value"`
			} `json:"counters"`
		} `json:"layers"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("stat --json: %v\n%s", err, out)
	}
	hop := map[string]int64{}
	for _, l := range doc.Layers {
		if l.Layer == "hop" {
			for _, c := range l.Counters {
				hop[c.Name] = c.Value
			}
		}
	}
	if hop["data_sent"] == 0 || hop["heartbeats_sent"] == 0 {
		t.Errorf("n1 (site 1's representative): hop data_sent %d, heartbeats_sent %d, want both > 0 (a Hop link to site 2)",
			hop["data_sent"], hop["heartbeats_sent"])
	}
}
