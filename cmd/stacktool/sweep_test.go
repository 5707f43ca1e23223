package main

import (
	"bytes"
	"encoding/json"
	"image"
	"image/color"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/layercast/layercast/experiment/sweep"
)

// colourPixels counts the pixels of img within a small distance of c (the
// lines are anti-aliased, their centres keep the colour).
func colourPixels(img image.Image, c color.RGBA) int {
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			d := absDiff(int(r>>8), int(c.R)) + absDiff(int(g>>8), int(c.G)) + absDiff(int(bl>>8), int(c.B))
			if d <= 24 {
				n++
			}
		}
	}
	return n
}

func absDiff(a, b int) int {
	if a < b {
		return b - a
	}
	return a - b
}

// TestSweepWritesResultsAndPlots is issue 14's check on a small scenario:
// one CSV row per (stack, value, seed), results.json with every run, an SVG
// and a PNG per metric, and the PNG shows two lines in two colours.
func TestSweepWritesResultsAndPlots(t *testing.T) {
	dir := t.TempDir()
	app := newApp()
	var stdout, stderr bytes.Buffer
	app.Writer, app.ErrWriter = &stdout, &stderr
	err := app.Run([]string{"stacktool", "sweep", "../../specs/baseline.stack", "../../specs/ricochet.stack",
		"--param", "groups-per-node=2,8", "--nodes", "8", "--duration", "1s", "--seeds", "2", "--out", dir})
	if err != nil {
		t.Fatalf("sweep: %v", err)
	}
	// The table: one row per stack and value, means with a spread.
	for _, want := range []string{"baseline", "ricochet", "groups-per-node", "±"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, stdout.String())
		}
	}
	// stderr is no terminal: no progress bar, only the final summary.
	if e := stderr.String(); strings.ContainsAny(e, "\r\x1b") || strings.Count(e, "\n") != 1 || !strings.Contains(e, "sweep: 8 runs") {
		t.Errorf("stderr is not one summary line: %q", e)
	}

	recs := readCSV(t, filepath.Join(dir, "results.csv"))
	head := recs[0]
	col := map[string]int{}
	for i, h := range head {
		col[h] = i
	}
	for _, want := range []string{"stack", "spec", "groups-per-node", "seed", "throughput_msgs_per_s", "delivered_fraction", "control_packets_per_msg"} {
		if _, ok := col[want]; !ok {
			t.Fatalf("results.csv header %v lacks %q", head, want)
		}
	}
	seen := map[string]bool{}
	for _, r := range recs[1:] {
		key := r[col["stack"]] + "|" + r[col["groups-per-node"]] + "|" + r[col["seed"]]
		if seen[key] {
			t.Errorf("results.csv has (stack, value, seed) %s twice", key)
		}
		seen[key] = true
		if r[col["delivered_fraction"]] != "1" {
			t.Errorf("row %s: delivered_fraction %s, want 1 on a loss-free network", key, r[col["delivered_fraction"]])
		}
	}
	for _, st := range []string{"baseline", "ricochet"} {
		for _, v := range []string{"2", "8"} {
			for _, s := range []string{"1", "2"} {
				if !seen[st+"|"+v+"|"+s] {
					t.Errorf("results.csv has no row for %s at groups-per-node=%s seed %s", st, v, s)
				}
			}
		}
	}
	if len(recs) != 1+8 {
		t.Errorf("results.csv has %d rows, want 8 (2 stacks x 2 values x 2 seeds)", len(recs)-1)
	}

	data, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var out sweep.Output
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("results.json: %v", err)
	}
	if len(out.Runs) != 8 || len(out.Points) != 4 {
		t.Errorf("results.json: %d runs and %d points, want 8 and 4", len(out.Runs), len(out.Points))
	}
	for _, r := range out.Runs {
		if r.Report == nil || r.Report.MessagesSent == 0 {
			t.Errorf("results.json: run %s %v seed %d has no report or sent nothing", r.Stack, r.Values, r.Seed)
		}
	}

	checkCharts(t, dir)
	svg, _ := os.ReadFile(filepath.Join(dir, "control_packets_per_msg.svg"))
	for _, want := range []string{"<svg", "baseline", "ricochet", "groups per node"} {
		if !strings.Contains(string(svg), want) {
			t.Errorf("control_packets_per_msg.svg lacks %q", want)
		}
	}

	// Ricochet sends repairs, the baseline does not: their control lines
	// are apart, so both colours show as lines, not just legend swatches.
	img := readPNG(t, filepath.Join(dir, "control_packets_per_msg.png"))
	b := img.Bounds()
	if b.Dx() < 400 || b.Dy() < 250 {
		t.Errorf("PNG is %dx%d, too small to read", b.Dx(), b.Dy())
	}
	for i, name := range []string{"baseline", "ricochet"} {
		// a legend swatch is ~45x2 pixels plus a glyph; a line across the
		// chart is hundreds of pixels long and 2-3 wide
		n := colourPixels(img, sweep.Palette[i])
		t.Logf("%s: %d pixels", name, n)
		if n < 600 {
			t.Errorf("PNG: %d pixels of %s's colour %v, want a line (>= 600)", n, name, sweep.Palette[i])
		}
	}
	if n := colourPixels(img, sweep.Palette[2]); n > 0 {
		t.Errorf("PNG: %d pixels of a third line's colour, but there are two stacks", n)
	}
}

// TestSweepBadInput: every bad input is one error, exit 2, before any run.
func TestSweepBadInput(t *testing.T) {
	dir := t.TempDir()
	base := []string{"sweep", "fifo:reliable", "--nodes", "8", "--duration", "1s"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"sweep", "--param", "nodes=8", "--out", dir}, "at least one spec"},
		{append(base, "--out", dir), "--param"},
		{append(base, "--param", "groups-per-node=2,4"), "--out"},
		{append(base, "--param", "groups-per-node=", "--out", dir), "empty list"},
		{append(base, "--param", "groups-per-node=2,,4", "--out", dir), "empty value"},
		{append(base, "--param", "groups-per-node", "--out", dir), "NAME=V1"},
		{append(base, "--param", "group-per-node=2,4", "--out", dir), "groups-per-node"},
		{append(base, "--param", "nodes=8,x", "--out", dir), "not an integer"},
		{append(base, "--param", "nodes=4,8", "--out", dir), "larger than the number of nodes"},
		{append(base, "--param", "seed=1,2", "--out", dir), "--seeds"},
		{append(base, "--param", "lec.r=4,8", "--out", dir), "no spec has a lec layer"},
		{[]string{"sweep", "fifo:reliable:lec", "--param", "lec.rr=4,8", "--out", dir}, "did you mean \"r\""},
		{[]string{"sweep", "fifo:reliable:lec", "--param", "lec.r=4,-1", "--out", dir}, "lec.r"},
		{[]string{"sweep", "fifo:reliable:lex", "--param", "lec.r=4", "--out", dir}, "lex"},
		{append(base, "--param", "nodes=8,8", "--out", dir), "twice"},
		{append(base, "--param", "loss=bursty:5%,10", "--out", dir), "with ';'"},
		{append(base, "--param", "nodes=8", "--param", "nodes=16", "--out", dir), "twice"},
		{append(base, "--param", "nodes=8", "--seeds", "0", "--out", dir), "--seeds"},
		{append(base, "--param", "nodes=8", "--bogus", "1", "--out", dir), "bogus"},
		{[]string{"sweep", "fifo:reliable", "--param", "nodes=1000,2000", "--rate", "max", "--duration", "1h", "--out", dir}, "refused"},
		{[]string{"sweep", "fifo:reliable", "--param", "msg-size=1000,1001", "--rate", "1000", "--duration", "400s", "--seeds", "1000", "--workers", "2", "--out", dir}, "hours"},
	} {
		_, err := runCLI(t, c.args...)
		if err == nil {
			t.Errorf("stacktool %q succeeded, want an error", c.args)
			continue
		}
		if code := exitCode(err); code != exitInput {
			t.Errorf("stacktool %q: exit %d, want %d (%v)", c.args, code, exitInput, err)
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("stacktool %q: error %q does not mention %q", c.args, err, c.want)
		}
		// a spec error quotes its line with a caret under the column
		if strings.Contains(err.Error(), "\n") && !strings.Contains(err.Error(), "^") {
			t.Errorf("stacktool %q: error is not one line: %q", c.args, err)
		}
	}
}
