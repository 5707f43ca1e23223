package event

import "testing"

// The packet kinds are framed on the wire: their values must never change.
func TestPacketKindWireValues(t *testing.T) {
	for _, c := range []struct {
		k    Kind
		want uint8
	}{{Cast, 1}, {Send, 2}, {Membership, 16}} {
		if uint8(c.k) != c.want {
			t.Errorf("%v = %d, the wire says %d", c.k, uint8(c.k), c.want)
		}
	}
}

// Every named kind is valid and the removed values are not.
func TestKindValid(t *testing.T) {
	for k := Kind(0); k < 255; k++ {
		named := k.String() != "kind?" && k != KindNone
		if k.Valid() != named {
			t.Errorf("kind %d (%v): Valid %v, named %v", k, k, k.Valid(), named)
		}
	}
	for _, gone := range []Kind{6, 7, 8, 17} {
		if gone.Valid() {
			t.Errorf("removed kind %d is valid", gone)
		}
	}
}
