package main

import (
	"strings"
	"testing"
)

// TestGMSIndirectFlag: --indirect out of gms_service's range is bad input
// (exit 2), one line naming the flag.
func TestGMSIndirectFlag(t *testing.T) {
	for _, v := range []string{"-1", "65"} {
		args := []string{"gms", "--listen", "127.0.0.1:0", "--indirect", v}
		_, err := runCLI(t, args...)
		if got := exitCode(err); got != 2 || err == nil || !strings.Contains(err.Error(), "--indirect") || strings.Contains(err.Error(), "\n") {
			t.Errorf("stacktool %s: exit %d (%v), want 2 and one line naming --indirect", strings.Join(args, " "), got, err)
		}
	}
}
