package units

import (
	"testing"
	"time"
)

func TestParsePercent(t *testing.T) {
	for _, c := range []struct {
		in   string
		want float64
		ok   bool
	}{
		{"5%", 0.05, true}, {" 0.05 ", 0.05, true}, {"100 %", 1, true}, {"0", 0, true},
		{"101%", 0, false}, {"-1%", 0, false}, {"1.5", 0, false}, {"NaN", 0, false}, {"five", 0, false}, {"%", 0, false},
	} {
		got, err := ParsePercent(c.in)
		if (err == nil) != c.ok || (c.ok && got != c.want) {
			t.Errorf("ParsePercent(%q) = %v, %v; want %v, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
	// ParseFraction leaves the range to the caller
	if f, err := ParseFraction("150%"); err != nil || f != 1.5 {
		t.Errorf("ParseFraction(150%%) = %v, %v", f, err)
	}
}

func TestParseSize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1500", 1500, true}, {"50KB", 50000, true}, {"1MiB", 1 << 20, true}, {"1.5 kB", 1500, true}, {"2GB", 2e9, true},
		{"1TB", 0, false}, {"KB", 0, false}, {"99999999999GB", 0, false}, {"", 0, false},
	} {
		got, err := ParseSize(c.in)
		if (err == nil) != c.ok || (c.ok && got != c.want) {
			t.Errorf("ParseSize(%q) = %v, %v; want %v, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
}

func TestParseDuration(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"0", 0, true}, {"20ms", 20 * time.Millisecond, true}, {"2s", 2 * time.Second, true},
		{"5", 0, false}, {"-1s", 0, false}, {"soon", 0, false},
	} {
		got, err := ParseDuration(c.in)
		if (err == nil) != c.ok || (c.ok && got != c.want) {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
}

// The report roundings keep three or six decimals, halves up, and convert
// between nanoseconds, milliseconds and durations at microsecond precision.
func TestReportRounding(t *testing.T) {
	for _, c := range []struct {
		got, want float64
	}{
		{Round3(1.23456), 1.235}, {Round3(1.2344), 1.234}, {Round3(7), 7},
		{Round6(0.1234564), 0.123456}, {Round6(0.1234566), 0.123457},
		{Ms(1234567), 1.235}, {Ms(1234499), 1.234}, {Ms(0), 0},
	} {
		if c.got != c.want {
			t.Errorf("got %v, want %v", c.got, c.want)
		}
	}
	if d := MsDuration(1.2345678); d != 1235*time.Microsecond {
		t.Errorf("MsDuration(1.2345678) = %v, want 1.235ms", d)
	}
}
