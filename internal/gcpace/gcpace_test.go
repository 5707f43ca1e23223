package gcpace

import (
	"runtime/debug"
	"testing"
)

// percent reads the collector's setting.
func percent() int {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	return p
}

// A raise holds until every overlapping raise is undone, then the setting
// found before it is back; a higher setting, or off, is left alone.
func TestRaiseRestores(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	undo1 := Raise(400)
	if p := percent(); p != 400 {
		t.Fatalf("after Raise(400): %d, want 400", p)
	}
	undo2 := Raise(300)
	undo1()
	undo1() // twice is once
	if p := percent(); p != 400 {
		t.Fatalf("one raise still held: %d, want 400", p)
	}
	undo2()
	if p := percent(); p != 100 {
		t.Fatalf("after both undone: %d, want 100", p)
	}

	debug.SetGCPercent(800)
	Raise(400)()
	if p := percent(); p != 800 {
		t.Fatalf("a higher setting: %d, want 800 kept", p)
	}
	debug.SetGCPercent(-1)
	undo := Raise(400)
	if p := percent(); p != -1 {
		t.Fatalf("off: %d, want -1 kept", p)
	}
	undo()
	if p := percent(); p != -1 {
		t.Fatalf("off after undo: %d, want -1", p)
	}

	debug.SetGCPercent(100)
	undo = Raise(400)
	debug.SetGCPercent(150) // someone else's choice meanwhile
	undo()
	if p := percent(); p != 150 {
		t.Fatalf("changed meanwhile: %d, want 150 kept", p)
	}
}
