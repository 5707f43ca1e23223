package stack_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/testkit"
)

// logLayer logs one line when it starts, if anyone listens.
type logLayer struct{ stack.Base }

func (l *logLayer) Init(ctx *stack.Context) error {
	l.Ctx = ctx
	if ctx.Logging() {
		ctx.Logf("digest from %v: %v", event.NodeID(2), []int{2, 10, 0})
	}
	return nil
}

// TestSlogLogger: a stack's log lines reach slog at the chosen level with
// the layer as an attribute, and not at all (Logging false) when the
// logger's level is above it.
func TestSlogLogger(t *testing.T) {
	for _, lv := range []slog.Level{slog.LevelDebug, slog.LevelInfo} {
		var buf bytes.Buffer
		lg := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: lv}))
		log := stack.SlogLogger(lg, slog.LevelDebug)
		if (log != nil) != (lv == slog.LevelDebug) {
			t.Fatalf("handler level %v: logger %v, want one only at debug", lv, log != nil)
		}
		_, err := stack.New(stack.Config{Self: 1, Transport: &testkit.Transport{}, Log: log, Clock: stack.ClockFunc(func() event.Time { return 0 }),
			Layers: []stack.Entry{{Name: "reliable", Layer: &logLayer{}}}})
		if err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		if lv == slog.LevelDebug && !strings.Contains(out, `level=DEBUG msg="digest from n2: [2 10 0]" layer=reliable t=0s`) {
			t.Errorf("debug output %q lacks the layer's line as a record", out)
		}
		if lv == slog.LevelInfo && out != "" {
			t.Errorf("info output %q, want nothing", out)
		}
	}
}
