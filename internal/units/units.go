// Package units parses the quantities people type in specs, flags and
// scenario files: percentages, byte sizes and durations. It is shared by
// compose (layer parameters) and the transports (loss models), which may
// not import compose.
package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ParseFraction parses "5%" or a fraction "0.05" into 0.05, with no range
// check (see ParsePercent). NaN is refused.
func ParseFraction(t string) (float64, error) {
	s := strings.TrimSpace(t)
	var f float64
	var err error
	if strings.HasSuffix(s, "%") {
		f, err = strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(s, "%")), 64)
		f /= 100
	} else {
		f, err = strconv.ParseFloat(s, 64)
	}
	if err != nil || math.IsNaN(f) {
		return 0, fmt.Errorf("want a percentage such as 5%% or 0.05, got %q", t)
	}
	return f, nil
}

// ParsePercent parses "5%" or a fraction "0.05" into 0.05. Values outside
// 0..100% are refused.
func ParsePercent(t string) (float64, error) {
	f, err := ParseFraction(t)
	if err != nil {
		return 0, err
	}
	if f < 0 || f > 1 {
		return 0, fmt.Errorf("percentage %q is outside 0%% to 100%%", t)
	}
	return f, nil
}

// ParseDuration parses a duration with a unit (ns, us, ms, s, m, h); a bare 0
// is allowed; negative durations are refused.
func ParseDuration(t string) (time.Duration, error) {
	if t == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(t)
	if err != nil {
		return 0, fmt.Errorf("want a duration with a unit such as 20ms or 2s, got %q", t)
	}
	if d < 0 {
		return 0, fmt.Errorf("duration %q is negative", t)
	}
	return d, nil
}

// sizeUnits are the multipliers ParseSize knows.
var sizeUnits = map[string]float64{"": 1, "B": 1, "KB": 1e3, "kB": 1e3, "MB": 1e6, "GB": 1e9, "KiB": 1024, "MiB": 1 << 20, "GiB": 1 << 30}

// ParseSize parses a byte count with an optional unit: B, KB (1000), MB,
// GB, KiB (1024), MiB, GiB.
func ParseSize(t string) (int64, error) {
	s := strings.TrimSpace(t)
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	num, unit := s[:i], strings.TrimSpace(s[i:])
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("want a size such as 1500, 50KB or 1MiB, got %q", t)
	}
	mult := sizeUnits[unit]
	if mult == 0 {
		return 0, fmt.Errorf("unknown size unit %q in %q (use B, KB, MB, GB, KiB, MiB, GiB)", unit, t)
	}
	if f*mult >= 1<<62 { // past what an int64 holds, with room to spare
		return 0, fmt.Errorf("size %q is too large", t)
	}
	return int64(f * mult), nil
}
