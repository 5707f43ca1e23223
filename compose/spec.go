package compose

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/layercast/layercast/internal/readfile"
)

// Pos is a position in a spec's text: 1-based line and column, the column
// counted in characters (not bytes).
type Pos struct {
	Line, Col int
}

// String prints line:col.
func (p Pos) String() string { return fmt.Sprintf("%d:%d", p.Line, p.Col) }

// Spec is a parsed stack specification: its layers, top first.
type Spec struct {
	// File is the file the spec was read from, or "" for spec text.
	File string
	// Layers lists the layers top first, as written.
	Layers []Call
	// src is the text, kept to quote it in errors found after parsing.
	src string
}

// Call is one layer of a spec with the parameters given to it.
type Call struct {
	Name string
	Args []Arg
	Pos  Pos // of the name
}

// Arg is one name=value parameter of a Call. Value is the text as written,
// without the quotes of a quoted string.
type Arg struct {
	Key, Value       string
	KeyPos, ValuePos Pos
}

// Given returns the call's parameters as name to value text (what NewParams
// takes).
func (c *Call) Given() map[string]string {
	m := make(map[string]string, len(c.Args))
	for _, a := range c.Args {
		m[a.Key] = a.Value
	}
	return m
}

// String prints the spec in its canonical one-line form, for example
//
//	fifo : reliable(nak_delay=20ms) : lec(r=8, c=5)
//
// Parsing the result gives the same layers and parameters back.
func (s *Spec) String() string {
	var b strings.Builder
	for i := range s.Layers {
		if i > 0 {
			b.WriteString(" : ")
		}
		b.WriteString(s.Layers[i].String())
	}
	return b.String()
}

// String prints the call in canonical form: name or name(k=v, k=v).
func (c *Call) String() string {
	if len(c.Args) == 0 {
		return c.Name
	}
	var b strings.Builder
	b.WriteString(c.Name)
	b.WriteByte('(')
	for i, a := range c.Args {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(a.Key)
		b.WriteByte('=')
		b.WriteString(quoteValue(a.Value))
	}
	b.WriteByte(')')
	return b.String()
}

// quoteValue writes v bare when it reads back as the same bare word, and as a
// double-quoted string otherwise.
func quoteValue(v string) string {
	if isBareWord(v) {
		return v
	}
	return strconv.Quote(v)
}

// isBareWord reports whether v can be written unquoted: a number with an
// optional unit (20ms, 50KB, 5%, 0.05, -1) or an identifier (on, off, lru).
func isBareWord(v string) bool {
	if v == "" {
		return false
	}
	for i := 0; i < len(v); i++ {
		if !isWordByte(v[i]) {
			return false
		}
	}
	return true
}

func isIdentStart(r rune) bool {
	return r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
}

func isIdentRune(r rune) bool { return isIdentStart(r) || r >= '0' && r <= '9' }

// isWordByte: the characters of a bare value. Numbers with units and
// identifiers need no more; anything else must be quoted.
func isWordByte(c byte) bool {
	return isIdentRune(rune(c)) || c == '.' || c == '%' || c == '+' || c == '-'
}

// SpecError is an error in a spec, with where it is. Error prints
//
//	file:line:col: message
//	    the offending line
//	    ^ under the column
type SpecError struct {
	File      string // "spec" for spec text given inline
	Line, Col int    // 1-based; Line 0 when the error has no position
	Msg       string
	// Source is the offending line of text ("" when unknown).
	Source string
}

// Error prints the position and message, then the offending line with a
// caret under the column.
func (e *SpecError) Error() string {
	if e.Line == 0 {
		return e.File + ": " + e.Msg
	}
	s := fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
	if e.Source == "" {
		return s
	}
	// Tabs are shown as one space so the caret (counted in characters)
	// stays under the right one.
	line := strings.ReplaceAll(e.Source, "\t", " ")
	pad := e.Col - 1
	if n := utf8.RuneCountInString(line); pad > n {
		pad = n
	}
	return s + "\n    " + line + "\n    " + strings.Repeat(" ", pad) + "^"
}

// errAt builds a SpecError at pos in src.
func errAt(file, src string, pos Pos, format string, args ...any) *SpecError {
	if file == "" {
		file = "spec"
	}
	e := &SpecError{File: file, Line: pos.Line, Col: pos.Col, Msg: fmt.Sprintf(format, args...)}
	if pos.Line > 0 {
		lines := strings.Split(src, "\n")
		if pos.Line <= len(lines) {
			e.Source = strings.TrimRight(lines[pos.Line-1], "\r")
		}
	}
	return e
}

func (s *Spec) errAt(pos Pos, format string, args ...any) *SpecError {
	return errAt(s.File, s.src, pos, format, args...)
}

// Load reads a spec from a file when arg names an existing file or ends in
// .stack (or looks like a path: it has a '/' and no ':' or '('), and
// otherwise parses arg itself as spec text.
func Load(arg string) (*Spec, error) {
	if looksLikeFile(arg) {
		return ParseFile(arg)
	}
	return Parse(arg)
}

func looksLikeFile(arg string) bool {
	if strings.HasSuffix(strings.TrimSpace(arg), ".stack") {
		return true
	}
	if st, err := os.Stat(arg); err == nil && !st.IsDir() {
		return true
	}
	// A spec never holds '/' outside a quoted value, so "specs/typo.stak"
	// is a path whose file is missing, not a spec with a bad character.
	return strings.Contains(arg, "/") && !strings.ContainsAny(arg, ":(\"")
}

// ParseFile reads and parses a spec file. A missing or unreadable file is one
// error naming the file.
func ParseFile(path string) (*Spec, error) {
	data, err := readfile.Read("spec", path)
	if err != nil {
		return nil, err
	}
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("spec file %s is not UTF-8 text", path)
	}
	return parse(path, string(data))
}

// Parse parses spec text. Errors are *SpecError naming the file "spec".
func Parse(src string) (*Spec, error) { return parse("", src) }

func parse(file, src string) (*Spec, error) {
	p := &parser{lx: lexer{src: src, line: 1, col: 1}, file: file}
	p.next()
	sp, err := p.spec()
	if err != nil {
		return nil, err
	}
	sp.File, sp.src = file, src
	return sp, nil
}

// token kinds
const (
	tEOF = iota
	tIdent
	tWord   // a bare value that is not an identifier: 20ms, 5%, 0.05
	tString // a double-quoted string; text holds the unquoted value
	tColon
	tLParen
	tRParen
	tComma
	tEquals
	tBad
)

type token struct {
	kind int
	text string // as written (unquoted for strings)
	pos  Pos
	err  string // for tBad
}

func (t token) describe() string {
	switch t.kind {
	case tEOF:
		return "the end of the spec"
	case tString:
		return strconv.Quote(t.text)
	case tIdent, tWord:
		return t.text
	}
	return "'" + t.text + "'"
}

type lexer struct {
	src       string
	off       int
	line, col int
}

func (l *lexer) peek() (rune, int) {
	if l.off >= len(l.src) {
		return -1, 0
	}
	return utf8.DecodeRuneInString(l.src[l.off:])
}

func (l *lexer) advance() rune {
	r, n := l.peek()
	if n == 0 {
		return -1
	}
	l.off += n
	if r == '\n' {
		l.line++
		l.col = 1
	} else {
		l.col++
	}
	return r
}

func (l *lexer) next() token {
	// Skip white space and comments.
	for {
		r, _ := l.peek()
		if r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\f' || r == '\v' {
			l.advance()
			continue
		}
		if r == '#' {
			for r != '\n' && r != -1 {
				l.advance()
				r, _ = l.peek()
			}
			continue
		}
		break
	}
	pos := Pos{l.line, l.col}
	start := l.off
	r, _ := l.peek()
	switch {
	case r == -1:
		return token{kind: tEOF, pos: pos}
	case r == ':' || r == '(' || r == ')' || r == ',' || r == '=':
		l.advance()
		kind := map[rune]int{':': tColon, '(': tLParen, ')': tRParen, ',': tComma, '=': tEquals}[r]
		return token{kind: kind, text: string(r), pos: pos}
	case r == '"':
		l.advance()
		for {
			c, _ := l.peek()
			switch c {
			case -1, '\n':
				return token{kind: tBad, pos: pos, err: "unterminated string: a closing '\"' is missing on this line"}
			case '\\':
				l.advance()
				if c2, _ := l.peek(); c2 != -1 && c2 != '\n' {
					l.advance()
				}
				continue
			}
			l.advance()
			if c == '"' {
				break
			}
		}
		raw := l.src[start:l.off]
		v, err := strconv.Unquote(raw)
		if err != nil {
			return token{kind: tBad, pos: pos, err: fmt.Sprintf("bad escape in string %s (use \\\" for a quote, \\\\ for a backslash)", raw)}
		}
		return token{kind: tString, text: v, pos: pos}
	case r < utf8.RuneSelf && isWordByte(byte(r)):
		for {
			c, _ := l.peek()
			if c == -1 || c >= utf8.RuneSelf || !isWordByte(byte(c)) {
				break
			}
			l.advance()
		}
		text := l.src[start:l.off]
		kind := tWord
		if isIdent(text) {
			kind = tIdent
		}
		return token{kind: kind, text: text, pos: pos}
	}
	l.advance()
	return token{kind: tBad, text: string(r), pos: pos, err: fmt.Sprintf("unexpected character %q", r)}
}

// isIdent: a layer or parameter name, [A-Za-z_][A-Za-z0-9_]*.
func isIdent(s string) bool {
	for i, r := range s {
		if i == 0 && !isIdentStart(r) || !isIdentRune(r) {
			return false
		}
	}
	return s != ""
}

type parser struct {
	lx   lexer
	tok  token
	file string
}

func (p *parser) next() { p.tok = p.lx.next() }

// peek returns the token after the current one without consuming it.
func (p *parser) peek() token {
	lx := p.lx
	return lx.next()
}

func (p *parser) fail(pos Pos, format string, args ...any) error {
	return errAt(p.file, p.lx.src, pos, format, args...)
}

// bad reports a lexical error if the current token is one.
func (p *parser) bad() error {
	if p.tok.kind == tBad {
		return p.fail(p.tok.pos, "%s", p.tok.err)
	}
	return nil
}

// spec := layer { ':' layer } EOF
func (p *parser) spec() (*Spec, error) {
	sp := &Spec{}
	if p.tok.kind == tEOF {
		return nil, &SpecError{File: fileName(p.file), Msg: "empty spec: no layers (write them top first, e.g. fifo : reliable)"}
	}
	var colon token
	for {
		if err := p.bad(); err != nil {
			return nil, err
		}
		switch p.tok.kind {
		case tIdent:
		case tColon:
			if len(sp.Layers) == 0 {
				return nil, p.fail(p.tok.pos, "stray ':' before the first layer")
			}
			return nil, p.fail(p.tok.pos, "stray ':': two colons with no layer between them")
		case tEOF:
			return nil, p.fail(colon.pos, "stray ':' at the end: a layer must follow it")
		case tWord, tString:
			return nil, p.fail(p.tok.pos, "expected a layer name, found %s (names are letters, digits and _, starting with a letter)", p.tok.describe())
		default:
			return nil, p.fail(p.tok.pos, "expected a layer name, found %s", p.tok.describe())
		}
		c, err := p.call()
		if err != nil {
			return nil, err
		}
		sp.Layers = append(sp.Layers, c)
		if p.tok.kind == tBad && strings.Contains(";|/>", p.tok.text) && p.tok.text != "" {
			return nil, p.fail(p.tok.pos, "layers are separated by ':', not '%s'", p.tok.text)
		}
		if err := p.bad(); err != nil {
			return nil, err
		}
		switch p.tok.kind {
		case tEOF:
			return sp, nil
		case tColon:
			colon = p.tok
			p.next()
		case tIdent:
			if p.peek().kind == tEquals {
				return nil, p.fail(p.tok.pos, "parameters go in parentheses after the layer: %s(%s=...)", c.Name, p.tok.text)
			}
			return nil, p.fail(p.tok.pos, "expected ':' between layers %s and %s", c.Name, p.tok.text)
		case tComma:
			return nil, p.fail(p.tok.pos, "layers are separated by ':', not ','")
		case tRParen:
			return nil, p.fail(p.tok.pos, "unmatched ')' after layer %s", c.Name)
		case tEquals:
			return nil, p.fail(p.tok.pos, "'=' after layer %s: parameters go in parentheses, e.g. %s(name=value)", c.Name, c.Name)
		default:
			return nil, p.fail(p.tok.pos, "expected ':' or the end of the spec after layer %s, found %s", c.Name, p.tok.describe())
		}
	}
}

// call := ident [ '(' [ arg { ',' arg } [','] ] ')' ]
func (p *parser) call() (Call, error) {
	c := Call{Name: p.tok.text, Pos: p.tok.pos}
	p.next()
	if p.tok.kind != tLParen {
		return c, nil
	}
	open := p.tok.pos
	p.next()
	seen := map[string]Pos{}
	for {
		if err := p.bad(); err != nil {
			return c, err
		}
		switch p.tok.kind {
		case tRParen:
			p.next()
			return c, nil
		case tEOF:
			return c, p.fail(open, "missing ')' to close the parameters of %s", c.Name)
		case tIdent:
		default:
			return c, p.fail(p.tok.pos, "expected a parameter name in %s(...), found %s", c.Name, p.tok.describe())
		}
		a := Arg{Key: p.tok.text, KeyPos: p.tok.pos}
		if first, dup := seen[a.Key]; dup {
			return c, p.fail(a.KeyPos, "duplicate parameter %s of %s (first set at %d:%d)", a.Key, c.Name, first.Line, first.Col)
		}
		seen[a.Key] = a.KeyPos
		p.next()
		if err := p.bad(); err != nil {
			return c, err
		}
		if p.tok.kind != tEquals {
			if p.tok.kind == tEOF {
				return c, p.fail(open, "missing ')' to close the parameters of %s", c.Name)
			}
			return c, p.fail(p.tok.pos, "expected '=' after parameter %s, found %s (write %s=value)", a.Key, p.tok.describe(), a.Key)
		}
		eq := p.tok.pos
		p.next()
		if err := p.bad(); err != nil {
			return c, err
		}
		switch p.tok.kind {
		case tIdent, tWord, tString:
			a.Value, a.ValuePos = p.tok.text, p.tok.pos
		default:
			return c, p.fail(eq, "missing value for parameter %s after '='", a.Key)
		}
		c.Args = append(c.Args, a)
		p.next()
		if err := p.bad(); err != nil {
			return c, err
		}
		switch p.tok.kind {
		case tComma:
			p.next()
		case tRParen:
		case tEOF:
			return c, p.fail(open, "missing ')' to close the parameters of %s", c.Name)
		case tColon:
			return c, p.fail(p.tok.pos, "missing ')' before ':' to close the parameters of %s", c.Name)
		case tIdent, tWord:
			if isUnit(p.tok.text) && isNumber(a.Value) {
				return c, p.fail(p.tok.pos, "space between %s and its unit %s: write %s%s", a.Value, p.tok.text, a.Value, p.tok.text)
			}
			return c, p.fail(p.tok.pos, "missing ',' between parameters %s and %s", a.Key, p.tok.text)
		default:
			return c, p.fail(p.tok.pos, "expected ',' or ')' after %s=%s, found %s", a.Key, quoteValue(a.Value), p.tok.describe())
		}
	}
}

func fileName(f string) string {
	if f == "" {
		return "spec"
	}
	return f
}

// isUnit: the units values may carry (durations, sizes, percent).
func isUnit(s string) bool {
	switch s {
	case "ns", "us", "ms", "s", "m", "h", "B", "KB", "kB", "MB", "GB", "KiB", "MiB", "GiB", "%":
		return true
	}
	return false
}

// isNumber: a plain number such as 20, 0.05 or -1e3.
func isNumber(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}
