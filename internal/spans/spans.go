// Package spans prints sets of whole numbers with runs of consecutive
// values folded into ranges ("1-3,5", "#1..#3 #5"), for reports and test
// transcripts that list nodes or message numbers.
package spans

import (
	"fmt"
	"slices"
	"strings"
)

// Integer is the whole-number types Format accepts.
type Integer interface {
	~int | ~int32 | ~int64 | ~uint | ~uint16 | ~uint32 | ~uint64
}

// Format sorts a copy of xs and prints each run of consecutive values with
// span (a format taking the run's first and last value) or, for a run of one,
// with single (a format taking the value), joined by sep. Format(
// []int{5, 1, 2, 3}, ",", "%d", "%d-%d") is "1-3,5"; no values give "".
func Format[T Integer](xs []T, sep, single, span string) string {
	xs = slices.Clone(xs)
	slices.Sort(xs)
	var b strings.Builder
	for i := 0; i < len(xs); {
		j := i
		for j+1 < len(xs) && xs[j+1] == xs[j]+1 {
			j++
		}
		if i > 0 {
			b.WriteString(sep)
		}
		if j > i {
			fmt.Fprintf(&b, span, xs[i], xs[j])
		} else {
			fmt.Fprintf(&b, single, xs[i])
		}
		i = j + 1
	}
	return b.String()
}
