package reproduce

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/layercast/layercast/experiment/sweep"
)

// WriteFiles writes, for every experiment, sweep's files into DIR/ID
// (results.csv, results.json, METRIC.svg and METRIC.png per measured
// figure) and the findings into DIR/findings.json; it returns the files.
func (o *Outcome) WriteFiles(dir string) ([]string, error) {
	var files []string
	for i, e := range o.Planned.Paper.Experiments {
		sub := filepath.Join(dir, e.ID)
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return files, err
		}
		pl := o.Planned.Plans[i]
		fs, err := sweep.WriteAll(sub, pl, o.Results[i], sweep.Aggregate(pl, o.Results[i]))
		files = append(files, fs...)
		if err != nil {
			return files, err
		}
	}
	f, err := os.Create(filepath.Join(dir, "findings.json"))
	if err != nil {
		return files, err
	}
	if err := o.WriteJSON(f); err != nil {
		f.Close()
		return files, err
	}
	return append(files, f.Name()), f.Close()
}

// WriteJSON writes the findings as a JSON array.
func (o *Outcome) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(o.Findings)
}

// WriteText prints the findings as a table (paper beside ours), then a
// paragraph for each figure that does not hold, saying why.
func (o *Outcome) WriteText(w io.Writer) error {
	p := o.Planned.Paper
	mode := "full size"
	if o.Planned.Opts.Quick {
		mode = "QUICK: scaled down (fewer nodes, groups and seconds; see each experiment's Quick), so figures are indicative"
	}
	runs := 0
	for _, pl := range o.Planned.Plans {
		runs += len(pl.Jobs)
	}
	fmt.Fprintf(w, "%s: %d experiments, %d runs, %s\n\n", p.Title, len(p.Experiments), runs, mode)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "experiment\tmetric\tpaper\tours\tholds")
	for _, f := range o.Findings {
		id, _, _ := strings.Cut(f.Experiment, ":")
		holds := "yes"
		switch {
		case len(f.Broken) > 0:
			holds = "NO: promise broken"
		case !f.Holds && f.Known != "":
			holds = "no (known deviation)"
		case !f.Holds:
			holds = "NO"
		case f.Known != "":
			holds = "yes (was a known deviation)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", id, f.Metric, f.PaperFigure, f.OursText, holds)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	for _, e := range p.Experiments {
		fmt.Fprintf(w, "%s: %s\n", e.ID, e.Title)
	}
	var held, known, failed int
	for _, f := range o.Findings {
		switch {
		case f.Failed():
			failed++
		case !f.Holds:
			known++
		default:
			held++
		}
	}
	if known+failed > 0 {
		fmt.Fprintln(w, "\nWhat does not hold, and why (measured on these runs):")
	}
	for _, f := range o.Findings {
		if f.Holds && len(f.Broken) == 0 {
			continue
		}
		id, _, _ := strings.Cut(f.Experiment, ":")
		fmt.Fprintf(w, "- %s, %s: paper %s, ours %s (rule: %s).\n", id, f.Metric, f.PaperFigure, f.OursText, f.Rule)
		if f.Known != "" {
			fmt.Fprintf(w, "  Known deviation: %s\n", f.Known)
		}
		if f.Why != "" {
			fmt.Fprintf(w, "  Why: %s\n", f.Why)
		}
		for _, b := range f.Broken {
			fmt.Fprintf(w, "  PROMISE BROKEN: %s\n", b)
		}
	}
	_, err := fmt.Fprintf(w, "\n%d of %d figures hold in shape; %d known deviation(s); %d failure(s)\n", held, len(o.Findings), known, failed)
	return err
}
