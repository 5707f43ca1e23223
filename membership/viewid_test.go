package membership

import (
	"testing"

	"github.com/layercast/layercast/event"
)

// A group whose every member is removed and that forms again under the
// same id goes on numbering its views: an id that went back to 1 would make
// the new views look older than the ones its members hold (seen in the
// issue-8 soak: a removal view id 2, then id 1).
func TestViewIDsNeverGoBack(t *testing.T) {
	x := NewIndex()
	const g = event.GroupID(7)
	x.Join(1, g)
	x.Join(2, g)
	c := x.Commit()
	first := c.Views[0].ID
	x.Remove(1)
	x.Remove(2)
	c = x.Commit()
	emptied := c.Views[0].ID
	x.Join(2, g)
	c = x.Commit()
	if len(c.Views) != 1 {
		t.Fatalf("Commit after the group formed again: %d views, want 1", len(c.Views))
	}
	if again := c.Views[0].ID; again <= emptied || emptied <= first {
		t.Fatalf("view ids %d, %d, then %d after the group formed again; want them to grow", first, emptied, again)
	}
}
