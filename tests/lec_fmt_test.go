package tests

import "fmt"

func fmtFigures(f lecFigures) string {
	return fmt.Sprintf("dropped %d, lec recovered %d (%.2f%%, %d by two-repair XOR), mean recovery %.1f ms, xors/data %.3f, wall %.1fs",
		f.dropped, f.recovered, f.pct, f.xor2, f.latencyMs, f.xorsPerData, f.wall)
}
