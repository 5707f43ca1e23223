package main

import (
	"strings"
	"testing"
)

// A layer's tool (mflow's mflow-params) runs as a stacktool command through
// the registry, with its flags, defaults and required flags.
func TestLayerToolCommand(t *testing.T) {
	out, err := runCLI(t, "mflow-params", "--n", "10", "--size", "1KB", "--rate", "1000", "--delay", "2ms")
	if err != nil {
		t.Fatalf("mflow-params: %v\n%s", err, out)
	}
	// --window defaults to 50000 bytes: equation 6 gives 46000, less one message.
	if !strings.Contains(out, "ack_thresh  45000 bytes") {
		t.Errorf("mflow-params output:\n%s", out)
	}
	if out, err := runCLI(t, "mflow-params", "--n", "10", "--size", "1KB", "--rate", "1000"); err == nil || !strings.Contains(err.Error()+out, "--delay is required") {
		t.Errorf("missing --delay: err %v, output %q", err, out)
	}
}
