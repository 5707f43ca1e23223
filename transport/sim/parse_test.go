package sim

import (
	"fmt"
	"strings"
	"testing"
)

// checkParse checks a parser of flag text against two tables: each good
// input parses and prints as its value; each bad one is refused with one
// line of error that contains its value.
func checkParse[T any](t *testing.T, name string, parse func(string) (T, error), good, bad map[string]string) {
	t.Helper()
	for in, want := range good {
		v, err := parse(in)
		if err != nil {
			t.Errorf("%s(%q): %v", name, in, err)
		} else if got := fmt.Sprint(v); got != want {
			t.Errorf("%s(%q) = %s, want %s", name, in, got, want)
		}
	}
	for in, want := range bad {
		v, err := parse(in)
		if err == nil {
			t.Errorf("%s(%q) = %v, want an error", name, in, v)
		} else if !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s(%q) error %q, want one line containing %q", name, in, err, want)
		}
	}
}

func TestParseLoss(t *testing.T) {
	checkParse(t, "ParseLoss", ParseLoss, map[string]string{
		"uniform:5%":    "uniform:5%",
		"uniform:0.05":  "uniform:5%",
		" bursty:1%,10": "bursty:1%,10",
		"markov:1%,10":  "markov:1%,10",
		"markov:2%,2.5": "markov:2%,2.5",
	}, map[string]string{
		"uniform:150%":  "loss rate 150% is outside 0% to 100%",
		"unifrom:5%":    `unknown loss model "unifrom"; use uniform, bursty or markov`,
		"uniform:-1%":   "loss rate -1% is outside 0% to 100%",
		"uniform:abc":   `loss rate "abc" is not a percentage`,
		"uniform":       "needs a rate",
		"uniform:5%,3":  "uniform takes only a rate",
		"bursty:1%":     "needs a burst length",
		"bursty:1%,x":   "not a whole number",
		"bursty:1%,0":   "burst length 0 must be at least 1",
		"bursty:95%,10": "is impossible",
		"markov:1%,0.5": "must be at least 1",
		"markov:1%,NaN": "must be at least 1",
		"markov:99%,10": "is impossible",
		"":              "empty loss model",
	})
	if m, err := ParseLoss("none"); m != nil || err != nil {
		t.Errorf("ParseLoss(none) = %v, %v; want nil, nil", m, err)
	}
}

func TestParseFault(t *testing.T) {
	checkParse(t, "ParseFault", ParseFault, map[string]string{
		"crash:3@2s":             "crash:3@2s",
		"crash:n3@2s":            "crash:3@2s",
		"freeze:3@2s+500ms":      "freeze:3@2s+500ms",
		"partition:1,2|3,4@1s":   "partition:1,2|3,4@1s",
		" partition: 1, 2 |3@0 ": "partition:1,2|3@0s",
		"heal@3s":                "heal@3s",
		"cut:1,2|3@1s":           "cut:1,2|3@1s",
	}, map[string]string{
		"crash:3":            "has no time",
		"crash@1s":           "needs a node",
		"crash:x@1s":         `node "x" is not a node number`,
		"crash:0@1s":         `node "0" is not a node number`,
		"crash:3@soon":       "want a duration with a unit",
		"crash:3@-1s":        "negative",
		"freeze:3@1s":        "freeze needs a duration",
		"freeze:3@1s+0":      "must be more than 0",
		"freeze:3@1s+abc":    "want a duration",
		"partition:@1s":      "needs node sets",
		"partition:1,2|2@1s": "node 2 is in two sets",
		"heal:1@1s":          "heal takes no argument",
		"cut:1,2@1s":         "a cut needs at least two node sets",
		"cut:@1s":            "needs node sets: cut:",
		"crahs:3@1s":         `unknown fault "crahs"`,
	})
}

func TestParseCapacity(t *testing.T) {
	c, err := ParseCapacity("send_pps=20000, send_bps=125MB, send_queue=512, high_water=256, recv_pps=1e4, recv_bps=50KiB, recv_buffer=1000, recv_buffer_bytes=2MiB")
	want := Capacity{SendPPS: 20000, SendBps: 125e6, SendQueue: 512, HighWater: 256, RecvPPS: 1e4, RecvBps: 50 * 1024, RecvBuffer: 1000, RecvBufferBytes: 2 << 20}
	if err != nil || c != want {
		t.Errorf("ParseCapacity = %+v, %v; want %+v", c, err, want)
	}
	if c, err := ParseCapacity("unlimited"); err != nil || c != (Capacity{}) {
		t.Errorf("ParseCapacity(unlimited) = %+v, %v", c, err)
	}
	checkParse(t, "ParseCapacity", ParseCapacity, nil, map[string]string{
		"":                    "empty capacity",
		"recv_pps":            "is not key=value",
		"recv_ppps=10":        `unknown key "recv_ppps"`,
		"recv_pps=-1":         "not a number",
		"recv_buffer=1.5":     "not a whole number",
		"send_bps=10Mb":       `unknown unit "Mb"`,
		"recv_buffer_bytes=x": "not a size",
	})
}
