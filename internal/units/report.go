package units

import "time"

// Round3 rounds f to three decimal places (halves up), so a report prints
// the same figure on every run and platform.
func Round3(f float64) float64 { return float64(int64(f*1e3+0.5)) / 1e3 }

// Round6 rounds f to six decimal places (halves up), for report ratios.
func Round6(f float64) float64 { return float64(int64(f*1e6+0.5)) / 1e6 }

// Ms converts nanoseconds to milliseconds rounded to the microsecond.
func Ms(ns float64) float64 { return float64(int64(ns/1e3+0.5)) / 1e3 }

// MsDuration turns milliseconds (as reports keep them) back into a
// duration rounded to the microsecond, for the notes people read.
func MsDuration(ms float64) time.Duration {
	return time.Duration(ms * float64(time.Millisecond)).Round(time.Microsecond)
}
