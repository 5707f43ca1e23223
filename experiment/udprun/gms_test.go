package udprun

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
)

func TestServiceOf(t *testing.T) {
	def, err := DefaultService()
	if err != nil || def == event.NoNode {
		t.Fatalf("default service %v, %v", def, err)
	}
	for _, c := range []struct {
		spec string
		want event.NodeID
		err  string
	}{
		{"fifo : reliable : gms", def, ""},
		{"fifo : reliable : gms(service=77, heartbeat=50ms)", 77, ""},
		{"fifo : reliable", 0, "does not end in gms"},
		{"gms : fifo : reliable", 0, "does not end in gms"},
	} {
		sp, err := compose.Parse(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ServiceOf(sp)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: %v, %v; want an error saying %q", c.spec, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: %v, %v; want %v", c.spec, got, err, c.want)
		}
	}
}

func TestParseGroups(t *testing.T) {
	gs, names, err := ParseGroups("news,sports,news,7")
	if err != nil || len(gs) != 3 || names[gs[0]] != "news" || names[gs[1]] != "sports" || gs[2] != 7 {
		t.Errorf("news,sports,news,7: %v %v %v; want three groups in order, news once", gs, names, err)
	}
	for list, want := range map[string]string{
		"":                              "empty",
		"news,,sports":                  "group 2",
		strings.Repeat("x", 300):        "at most 200",
		"a," + strings.Repeat("y", 201): "group 2",
	} {
		if _, _, err := ParseGroups(list); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseGroups(%.20q): %v, want an error mentioning %q", list, err, want)
		}
	}
}

// TestViewsJoined: Views says a node joined only once a view of every
// group it asked for lists it, and forgets a group whose view drops it.
func TestViewsJoined(t *testing.T) {
	v := NewViews(2, []event.GroupID{10, 20})
	joined := func() bool {
		select {
		case <-v.all:
			return true
		default:
			return false
		}
	}
	v.View(&event.ViewInfo{Group: 10, ID: 1, Members: []event.NodeID{1, 2}})
	v.View(&event.ViewInfo{Group: 20, ID: 1, Members: []event.NodeID{1}})
	if joined() || !v.In(10) || v.In(20) {
		t.Fatalf("joined %v, in 10 %v, in 20 %v after a view of 20 without the node", joined(), v.In(10), v.In(20))
	}
	v.View(&event.ViewInfo{Group: 20, ID: 2, Members: []event.NodeID{1, 2}})
	if !joined() {
		t.Fatal("not joined after views of both groups list the node")
	}
	v.View(&event.ViewInfo{Group: 10, ID: 2, Members: []event.NodeID{1}})
	if v.In(10) {
		t.Error("still in group 10 after a view without the node")
	}
	// Join gives up after its wait, and on a cancelled context.
	w := NewViews(3, nil)
	select {
	case <-w.all:
	default:
		t.Error("a node that asks for no group has joined all it asked for")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := NewViews(3, nil).Join(ctx, nil, nil, time.Millisecond); err != nil {
		t.Errorf("no groups: %v", err)
	}
}

func TestWorkerGMSBadArgs(t *testing.T) {
	sc := `{"Rate": 10, "Duration": 1000000000}`
	for _, c := range []struct {
		spec, gms, join, want string
	}{
		{"fifo:reliable:gms", "nowhere:x", "news", "--gms"},
		{"fifo:reliable", "127.0.0.1:7000", "news", "does not end in gms"},
		{"fifo:reliable:gms", "127.0.0.1:7000", "a,,b", "--join"},
	} {
		args := []string{"--id", "1", "--scenario", sc, "--spec", c.spec, "--gms", c.gms, "--join", c.join}
		err := Worker(args, strings.NewReader(""), &strings.Builder{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("worker %v: %v, want an error mentioning %q", args, err, c.want)
		}
	}
}
