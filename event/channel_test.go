package event

import "testing"

func TestChannelID(t *testing.T) {
	g := ChannelOf(7)
	if g.Kind() != GroupChannel || g.Group() != 7 || g.String() != "g7" || uint64(g) != 7 {
		t.Fatalf("ChannelOf(7) = %#x kind %v group %v %q", uint64(g), g.Kind(), g.Group(), g)
	}
	r := Channel(RegionChannel, 7)
	if r == g || r.Kind() != RegionChannel || r.ID() != 7 || r.Group() != NoGroup || r.String() != "region7" {
		t.Fatalf("region 7 = %#x %q group %v", uint64(r), r, r.Group())
	}
	if s := Channel(SiteChannel, 1<<31); !s.Valid() || s.ID() != 1<<31 || s.String() != "site2147483648" {
		t.Fatalf("site = %q", s)
	}
	for _, bad := range []ChannelID{Channel(NumChannelKinds, 1), ChannelID(1 << 40)} {
		if bad.Valid() {
			t.Errorf("%#x valid", uint64(bad))
		}
	}
}
