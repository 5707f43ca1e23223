package main

import (
	"bytes"
	"encoding/csv"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/layercast/layercast/experiment/sweep"
)

// TestCompareOut: compare --out writes what sweep writes (one CSV row per
// stack, results.json, an SVG and a PNG per metric, the PNG a bar per
// stack in its colour), and the table names the better stack per metric:
// under 5% loss, ricochet's LEC sends several control packets per message
// where the baseline's NAKs send far fewer.
func TestCompareOut(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	tab, err := runCLI(t, "compare", "../../specs/baseline.stack", "../../specs/ricochet.stack",
		"--nodes", "8", "--groups-per-node", "2", "--group-size", "4", "--duration", "1s", "--loss", "uniform:5%", "--out", dir)
	if err != nil {
		t.Fatalf("compare: %v\n%s", err, tab)
	}
	if !strings.Contains(tab, "better stack per metric:") ||
		!regexpMatch(`Control packets per message: baseline, [0-9.]+x lower than ricochet`, tab) {
		t.Errorf("table does not name the better stack per metric:\n%s", tab)
	}
	recs := readCSV(t, filepath.Join(dir, "results.csv"))
	if len(recs) != 3 || recs[1][0] != "baseline" || recs[2][0] != "ricochet" {
		t.Fatalf("results.csv rows %v; want a header and one row per stack", recs)
	}
	if _, err := os.Stat(filepath.Join(dir, "results.json")); err != nil {
		t.Error(err)
	}
	checkCharts(t, dir)
	img := readPNG(t, filepath.Join(dir, "control_packets_per_msg.png"))
	for i, name := range []string{"baseline", "ricochet"} {
		if n := colourPixels(img, sweep.Palette[i]); n < 200 {
			t.Errorf("PNG has %d pixels of %s's colour, want a bar", n, name)
		}
	}
}

// readCSV reads a whole CSV file.
func readCSV(t *testing.T, name string) [][]string {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil || len(recs) == 0 {
		t.Fatalf("%s: %v, %d records", name, err, len(recs))
	}
	return recs
}

// readPNG decodes a PNG file.
func readPNG(t *testing.T, name string) image.Image {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s does not decode: %v", name, err)
	}
	return img
}

// checkCharts checks that dir holds a non-empty SVG and PNG per metric.
func checkCharts(t *testing.T, dir string) {
	t.Helper()
	for _, m := range sweep.Metrics {
		for _, ext := range []string{".svg", ".png"} {
			if st, err := os.Stat(filepath.Join(dir, m.Key+ext)); err != nil || st.Size() == 0 {
				t.Errorf("chart %s%s missing or empty: %v", m.Key, ext, err)
			}
		}
	}
}

// A verdict says by how much, relative to the next best: a ratio from
// twice on, a percentage below, and "the same" within 0.1%.
func TestVerdictText(t *testing.T) {
	thr, lat := sweep.Metrics[0], sweep.Metrics[2]
	for _, c := range []struct {
		v    sweep.Verdict
		want string
	}{
		{sweep.Verdict{Metric: thr, Best: "a", Next: "b", BestValue: 1100, NextValue: 1000}, "Throughput per receiver: a, 10.0% higher than b (1100 vs 1000 msgs/s)"},
		{sweep.Verdict{Metric: lat, Best: "a", Next: "b", BestValue: 2, NextValue: 10}, "Delivery latency, 99th percentile: a, 5.0x lower than b (2.000 vs 10.000 ms)"},
		{sweep.Verdict{Metric: lat, Best: "a", Next: "b", BestValue: 9, NextValue: 10}, "Delivery latency, 99th percentile: a, 10.0% lower than b (9.000 vs 10.000 ms)"},
		{sweep.Verdict{Metric: thr, Best: "a", Next: "b", BestValue: 1000.2, NextValue: 1000}, "Throughput per receiver: the same for every stack, within 0.1% (1000 msgs/s)"},
	} {
		if got := c.v.String(); got != c.want {
			t.Errorf("%+v.String() = %q, want %q", c.v, got, c.want)
		}
	}
}

// timeLeft extrapolates the pace so far.
func TestTimeLeft(t *testing.T) {
	if got, want := timeLeft(10*time.Second, 0.25), "up to about 30s left"; got != want {
		t.Errorf("timeLeft(10s, 0.25) = %q, want %q", got, want)
	}
	if got := timeLeft(time.Second, 0); got != "time left unknown" {
		t.Errorf("timeLeft(1s, 0) = %q", got)
	}
}

func regexpMatch(re, s string) bool { return regexp.MustCompile(re).MatchString(s) }

// Every file a command's help names as an example exists (compare's used
// to name specs/reliable.stack, which never did).
func TestHelpExamplesNameFilesThatExist(t *testing.T) {
	re := regexp.MustCompile(`specs/[\w.-]+`)
	for _, c := range newApp().Commands {
		for _, f := range re.FindAllString(c.Description+" "+c.Usage, -1) {
			if _, err := os.Stat(filepath.Join("..", "..", f)); err != nil {
				t.Errorf("stacktool %s --help names %s: %v", c.Name, f, err)
			}
		}
	}
}

// --progress draws compare's bar with the time left, even to a pipe.
func TestCompareProgressShowsTimeLeft(t *testing.T) {
	app := newApp()
	var out, errw bytes.Buffer
	app.Writer, app.ErrWriter = &out, &errw
	err := app.Run([]string{"stacktool", "compare", "fifo : reliable", "reliable", "--nodes", "8", "--groups-per-node", "2",
		"--group-size", "4", "--duration", "1s", "--progress"})
	if err != nil {
		t.Fatal(err)
	}
	if e := errw.String(); !strings.Contains(e, "compare") || !strings.Contains(e, "left") || !strings.Contains(e, "2/2 runs") {
		t.Errorf("stderr has no progress bar with the time left: %q", e)
	}
}
