package spans

import "testing"

func TestFormat(t *testing.T) {
	for _, c := range []struct {
		in             []uint32
		sep, one, span string
		want           string
	}{
		{nil, ",", "%d", "%d-%d", ""},
		{[]uint32{7}, ",", "%d", "%d-%d", "7"},
		{[]uint32{5, 1, 2, 3}, ",", "%d", "%d-%d", "1-3,5"},
		{[]uint32{1, 3, 4, 5, 9, 10}, " ", "#%d", "#%d..#%d", "#1 #3..#5 #9..#10"},
		{[]uint32{2, 2, 3}, ",", "%d", "%d-%d", "2,2-3"}, // a repeat breaks a run
	} {
		in := append([]uint32(nil), c.in...)
		if got := Format(c.in, c.sep, c.one, c.span); got != c.want {
			t.Errorf("Format(%v, %q, %q, %q) = %q, want %q", c.in, c.sep, c.one, c.span, got, c.want)
		}
		for i := range in {
			if in[i] != c.in[i] {
				t.Errorf("Format sorted its argument: %v, was %v", c.in, in)
			}
		}
	}
}
