package reproduce

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/layercast/layercast/experiment"
)

// Field is what an experiment measures in a report: a path into the
// report's JSON form (`stacktool run --json`), or a small arithmetic of
// such paths and numbers evaluated left to right, with spaces around the
// operators: "loss.recovered_by.lec / loss.dropped * 100".
type Field string

// Eval computes the field on a report. A path the report lacks is an
// error naming it (the layer that would set it may not be in the stack).
func (f Field) Eval(r *experiment.Report) (float64, error) {
	data, err := json.Marshal(r)
	if err != nil {
		return 0, err
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		return 0, err
	}
	return f.eval(doc)
}

func (f Field) eval(doc map[string]any) (float64, error) {
	toks := strings.Fields(string(f))
	if len(toks)%2 == 0 {
		return 0, fmt.Errorf("field %q: want OPERAND [OP OPERAND]...", f)
	}
	acc, err := operand(doc, toks[0])
	if err != nil {
		return 0, err
	}
	for i := 1; i < len(toks); i += 2 {
		v, err := operand(doc, toks[i+1])
		if err != nil {
			return 0, err
		}
		switch toks[i] {
		case "+":
			acc += v
		case "-":
			acc -= v
		case "*":
			acc *= v
		case "/":
			if v == 0 {
				return 0, fmt.Errorf("field %q: %s is zero", f, toks[i+1])
			}
			acc /= v
		default:
			return 0, fmt.Errorf("field %q: unknown operator %q", f, toks[i])
		}
	}
	return acc, nil
}

// operand is a number or a dotted path to a number in doc.
func operand(doc map[string]any, tok string) (float64, error) {
	if v, err := strconv.ParseFloat(tok, 64); err == nil {
		return v, nil
	}
	path, optional := strings.CutSuffix(tok, "?")
	var cur any = doc
	for _, part := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if ok {
			cur, ok = m[part]
		}
		if !ok && optional {
			return 0, nil
		}
		if !ok {
			return 0, fmt.Errorf("the report has no field %s", path)
		}
	}
	switch v := cur.(type) {
	case float64:
		return v, nil
	case bool:
		if v {
			return 1, nil
		}
		return 0, nil
	case nil:
		return 0, nil // a null ratio (nothing dropped) reads as zero
	}
	return 0, fmt.Errorf("report field %s is not a number", tok)
}
