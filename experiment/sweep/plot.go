package sweep

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/layercast/layercast/compose"
)

// Palette is the lines' colours, in stack order (Okabe-Ito, told apart by
// colour-blind readers too); glyph shapes and dashes differ as well, so
// lines that coincide stay visible.
var Palette = []color.RGBA{
	{0, 114, 178, 255},   // blue
	{213, 94, 0, 255},    // vermillion
	{0, 158, 115, 255},   // bluish green
	{204, 121, 167, 255}, // reddish purple
	{230, 159, 0, 255},   // orange
	{86, 180, 233, 255},  // sky blue
	{0, 0, 0, 255},       // black
}

// dashes: later lines are dashed, so a line that lies on an earlier one
// leaves it visible through its gaps.
var dashes = [][]vg.Length{nil, {vg.Points(7), vg.Points(4)}, {vg.Points(2), vg.Points(3)}, {vg.Points(9), vg.Points(3), vg.Points(2), vg.Points(3)}}

var glyphs = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.RingGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{}, draw.CrossGlyph{}}

// Chart size and PNG resolution.
const (
	chartW = 7 * vg.Inch
	chartH = 4.5 * vg.Inch
	pngDPI = 110
)

// Axis is how the first parameter's values sit on the x axis.
type Axis struct {
	// X are the positions, one per value; Label is the axis label with its
	// unit.
	X     []float64
	Label string
	// Log: the values span more than 1.5 decades (ratio 32), so the axis
	// is logarithmic.
	Log bool
	// Ticks name the positions with the values as given.
	Ticks []plot.Tick
}

// scenarioAxes names the scenario keys on an axis, with the unit their
// values are converted to.
var scenarioAxes = map[string]string{
	"nodes":           "nodes",
	"groups-per-node": "groups per node, d",
	"group-size":      "group size, s (members)",
	"senders":         "sender nodes",
	"rate":            "rate per sender (msgs/s)",
	"msg-size":        "message size (bytes)",
	"duration":        "sending time (s)",
	"warmup":          "warm-up (s)",
	"drain":           "drain time (s)",
	"latency":         "link latency (ms)",
	"jitter":          "jitter (ms)",
	"loss":            "loss model",
	"capacity":        "capacity per node",
	"max-burst":       "sends per sender per 500 µs step",
}

// numeric converts a value of p to its axis position, or reports that it
// has none (the axis is then categorical).
func numeric(p *Param, v string) (float64, bool) {
	if p.Layer() {
		val, err := p.info.ParseValue(v)
		if err != nil {
			return 0, false
		}
		switch p.info.Type {
		case compose.Int, compose.Size:
			return float64(val.I), true
		case compose.Float:
			return val.F, true
		case compose.Percent:
			return 100 * val.F, true
		case compose.Duration:
			return float64(val.D.Microseconds()) / 1000, true
		}
		return 0, false
	}
	switch p.Name {
	case "duration", "drain", "latency", "jitter":
		d, err := compose.ParseDuration(v)
		if err != nil {
			return 0, false
		}
		if p.Name == "duration" || p.Name == "drain" {
			return d.Seconds(), true
		}
		return float64(d.Microseconds()) / 1000, true
	case "loss":
		// uniform:P is placed at P percent; other models are categories
		pc, ok := strings.CutPrefix(v, "uniform:")
		if !ok {
			return 0, false
		}
		f, err := compose.ParsePercent(pc)
		return 100 * f, err == nil
	case "msg-size":
		n, err := compose.ParseSize(v)
		return float64(n), err == nil
	}
	f, err := strconv.ParseFloat(v, 64)
	return f, err == nil && !math.IsInf(f, 0) && !math.IsNaN(f)
}

// NewAxis places the values of p: numbers where every value is one
// (converted to the unit of the label), otherwise evenly spaced categories.
func NewAxis(p *Param) Axis {
	a := Axis{Label: p.Name}
	if l, ok := scenarioAxes[p.Name]; ok {
		a.Label = l
	} else if p.Layer() {
		switch p.info.Type {
		case compose.Duration:
			a.Label += " (ms)"
		case compose.Size:
			a.Label += " (bytes)"
		case compose.Percent:
			a.Label += " (%)"
		}
	}
	xs := make([]float64, len(p.Values))
	numericAll := true
	for i, v := range p.Values {
		x, ok := numeric(p, v)
		numericAll = numericAll && ok
		xs[i] = x
	}
	if numericAll && p.Name == "loss" {
		a.Label = "uniform loss rate (%)"
	}
	if !numericAll {
		for i := range xs {
			xs[i] = float64(i)
		}
	} else {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, x := range xs {
			lo, hi = min(lo, x), max(hi, x)
		}
		a.Log = lo > 0 && hi/lo >= 32
	}
	a.X = xs
	for i, v := range p.Values {
		if numericAll && p.Name == "loss" {
			v = strings.TrimPrefix(v, "uniform:")
		}
		a.Ticks = append(a.Ticks, plot.Tick{Value: xs[i], Label: v})
	}
	return a
}

// Series is one line of a chart: a stack (and the values of the other
// parameters) across the first parameter's values.
type Series struct {
	Label string
	X     []float64
	Mean  []float64
	SD    []float64
	Color color.RGBA
}

// errPoints carries a series' points with its error bars.
type errPoints struct{ s *Series }

func (e errPoints) Len() int                    { return len(e.s.X) }
func (e errPoints) XY(i int) (float64, float64) { return e.s.X[i], e.s.Mean[i] }
func (e errPoints) YError(i int) (float64, float64) {
	return e.s.SD[i], e.s.SD[i]
}

// seriesFor builds one metric's series: one per stack and combination of
// the other parameters' values, in row order.
func seriesFor(pl *Plan, rows []Row, m Metric, ax Axis) []*Series {
	var out []*Series
	byKey := map[string]*Series{}
	first := pl.Config.Params[0]
	for _, r := range rows {
		label := r.Stack
		var rest []string
		for _, p := range pl.Config.Params[1:] {
			rest = append(rest, p.Name+"="+r.Values[p.Name])
		}
		if len(rest) > 0 {
			label += " (" + strings.Join(rest, ", ") + ")"
		}
		s := byKey[label]
		if s == nil {
			s = &Series{Label: label, Color: Palette[len(out)%len(Palette)]}
			byKey[label] = s
			out = append(out, s)
		}
		xi := 0
		for i, v := range first.Values {
			if v == r.Values[first.Name] {
				xi = i
			}
		}
		st := r.Metrics[m.Key]
		s.X = append(s.X, ax.X[xi])
		s.Mean = append(s.Mean, st.Mean)
		s.SD = append(s.SD, st.SD)
	}
	return out
}

// Chart draws one metric: one line per series, x the first parameter's
// values, error bars of one sample standard deviation when there are
// several seeds.
func Chart(pl *Plan, rows []Row, m Metric) (*plot.Plot, error) {
	if len(pl.Config.Params) == 0 {
		return barChart(pl, rows, m)
	}
	ax := NewAxis(&pl.Config.Params[0])
	p, seeds := newPlot(pl, m)
	p.X.Label.Text = ax.Label
	if ax.Log {
		p.X.Label.Text += " (log scale)"
	}
	p.X.Tick.Marker = plot.ConstantTicks(ax.Ticks)
	if ax.Log {
		p.X.Scale = plot.LogScale{}
	}
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.ThumbnailWidth = 0.4 * vg.Inch

	lo, hi := 0.0, 0.0
	for i, s := range seriesFor(pl, rows, m, ax) {
		pts := errPoints{s}
		line, sc, err := plotter.NewLinePoints(pts)
		if err != nil {
			return nil, fmt.Errorf("chart %s: %v", m.Key, err)
		}
		line.Color, line.Width = s.Color, vg.Points(2)
		line.Dashes = dashes[i%len(dashes)]
		sc.Color, sc.Shape, sc.Radius = s.Color, glyphs[i%len(glyphs)], vg.Points(3.5)
		p.Add(line, sc)
		if seeds > 1 {
			eb, err := plotter.NewYErrorBars(pts)
			if err != nil {
				return nil, fmt.Errorf("chart %s: %v", m.Key, err)
			}
			eb.Color, eb.Width = s.Color, vg.Points(1.5)
			p.Add(eb)
		}
		p.Legend.Add(s.Label, line, sc)
		for j := range s.X {
			lo, hi = min(lo, s.Mean[j]-s.SD[j]), max(hi, s.Mean[j]+s.SD[j])
		}
	}
	// Start the y axis at zero, as the papers do, with room for the legend.
	p.Y.Min = lo
	p.Y.Max = hi * 1.25
	if p.Y.Max <= p.Y.Min {
		p.Y.Max = p.Y.Min + 1
	}
	// Room around the first and last values, so their points and error
	// bars are not cut by the frame.
	xlo, xhi := ax.X[0], ax.X[0]
	for _, x := range ax.X {
		xlo, xhi = min(xlo, x), max(xhi, x)
	}
	if ax.Log {
		p.X.Min, p.X.Max = xlo/1.3, xhi*1.3
	} else {
		pad := max(0.05*(xhi-xlo), 0.5*math.Abs(xlo), 1e-9)
		if xhi > xlo {
			pad = 0.05 * (xhi - xlo)
		}
		p.X.Min, p.X.Max = xlo-pad, xhi+pad
	}
	return p, nil
}

// WritePlots writes METRIC.svg and METRIC.png into dir for every metric
// and returns the files written.
func WritePlots(dir string, pl *Plan, rows []Row) ([]string, error) {
	var files []string
	for _, m := range pl.metrics() {
		p, err := Chart(pl, rows, m)
		if err != nil {
			return files, err
		}
		svg := vgsvg.New(chartW, chartH)
		p.Draw(draw.New(svg))
		name := filepath.Join(dir, m.Key+".svg")
		if err := writeTo(name, svg); err != nil {
			return files, err
		}
		files = append(files, name)

		img := vgimg.NewWith(vgimg.UseWH(chartW, chartH), vgimg.UseDPI(pngDPI))
		img.SetColor(color.White)
		p.Draw(draw.New(img))
		name = filepath.Join(dir, m.Key+".png")
		if err := writeTo(name, vgimg.PngCanvas{Canvas: img}); err != nil {
			return files, err
		}
		files = append(files, name)
	}
	return files, nil
}

func writeTo(name string, c io.WriterTo) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("%s: %v", name, err)
	}
	return f.Close()
}

// newPlot is a metric's chart with its title and y label (with the unit),
// and the seeds per point.
func newPlot(pl *Plan, m Metric) (*plot.Plot, int) {
	p := plot.New()
	seeds := max(1, pl.Config.Seeds)
	p.Title.Text = m.Title
	if seeds > 1 {
		p.Title.Text += fmt.Sprintf(" (mean ± s.d. over %d seeds)", seeds)
	}
	p.Y.Label.Text = m.Title
	if m.Unit != "" {
		p.Y.Label.Text += " (" + m.Unit + ")"
	}
	return p, seeds
}

// barChart draws one metric of a plan without parameters (a comparison):
// one bar per stack, with an error bar when there are several seeds.
func barChart(pl *Plan, rows []Row, m Metric) (*plot.Plot, error) {
	p, seeds := newPlot(pl, m)
	p.X.Label.Text = "stack"
	p.Add(plotter.NewGrid())
	w := vg.Points(min(60, 360/float64(max(1, len(rows)))))
	var names []string
	hi := 0.0
	for i, r := range rows {
		st := r.Metrics[m.Key]
		bars, err := plotter.NewBarChart(plotter.Values{st.Mean}, w)
		if err != nil {
			return nil, fmt.Errorf("chart %s: %v", m.Key, err)
		}
		bars.XMin = float64(i)
		bars.Color = Palette[i%len(Palette)]
		bars.LineStyle.Width = 0
		p.Add(bars)
		if seeds > 1 {
			eb, err := plotter.NewYErrorBars(errPoints{&Series{X: []float64{float64(i)}, Mean: []float64{st.Mean}, SD: []float64{st.SD}}})
			if err != nil {
				return nil, fmt.Errorf("chart %s: %v", m.Key, err)
			}
			eb.Width = vg.Points(1.5)
			p.Add(eb)
		}
		names = append(names, r.Stack)
		hi = max(hi, st.Mean+st.SD)
	}
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.6, float64(len(rows))-0.4 // whole bars, not cut by the frame
	p.Y.Min, p.Y.Max = 0, hi*1.15
	if p.Y.Max <= 0 {
		p.Y.Max = 1
	}
	return p, nil
}
