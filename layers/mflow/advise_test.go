package mflow

import (
	"bytes"
	"strings"
	"testing"
)

func TestParamsTool(t *testing.T) {
	w, err := parseWorkload("10", "1KB", "1000", "2ms", "50KB")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := printParams(&out, w); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ack_thresh  45000 bytes", "= 46000, less one 1000-byte message", "efficiency  0.8333", "equation 7's bound: 0.8364", "ack_thresh=45000"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("mflow-params output lacks %q:\n%s", want, out.String())
		}
	}
	if err := printParams(&out, mustWorkload(t, "10", "1000", "1000", "30ms", "50000")); err == nil || !strings.Contains(err.Error(), "no ack_thresh avoids delay") {
		t.Errorf("window smaller than a round trip: err = %v", err)
	}
	for _, bad := range [][5]string{
		{"x", "1000", "1000", "2ms", "50000"},
		{"1", "1000", "1000", "2ms", "50000"},
		{"4", "1KX", "1000", "2ms", "50000"},
		{"4", "1000", "fast", "2ms", "50000"},
		{"4", "1000", "-3", "2ms", "50000"},
		{"4", "1000", "1000", "2", "50000"},
		{"4", "1000", "1000", "2ms", "0"},
	} {
		_, err := parseWorkload(bad[0], bad[1], bad[2], bad[3], bad[4])
		if err == nil || !strings.HasPrefix(err.Error(), "--") || strings.Contains(err.Error(), "\n") {
			t.Errorf("parseWorkload(%q) = %v, want one line naming the flag", bad, err)
		}
	}
}

// parseWorkload reads the tool's flags as stacktool mflow-params gets them.
func parseWorkload(n, size, rate, delay, window string) (Workload, error) {
	p, err := paramsTool.Parse(map[string]string{"n": n, "size": size, "rate": rate, "delay": delay, "window": window})
	if err != nil {
		return Workload{}, err
	}
	return workloadOf(p)
}

func mustWorkload(t *testing.T, n, size, rate, delay, window string) Workload {
	t.Helper()
	w, err := parseWorkload(n, size, rate, delay, window)
	if err != nil {
		t.Fatal(err)
	}
	return w
}
