package event

import "testing"

func TestIDStrings(t *testing.T) {
	for got, want := range map[string]string{
		NodeID(7).String(): "n7", NoNode.String(): "n-", NodeID(4294967295).String(): "n4294967295",
		GroupID(12).String(): "g12", NoGroup.String(): "g-",
	} {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}
