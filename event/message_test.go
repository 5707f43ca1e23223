package event

import (
	"bytes"
	"testing"
)

func TestPrependConsumeRoundTrip(t *testing.T) {
	m := NewMessage()
	defer m.Release()
	m.SetPayload([]byte("payload"))
	copy(m.Prepend(2), "L2")
	copy(m.Prepend(3), "L1x")
	if got := string(m.Bytes()); got != "L1xL2payload" {
		t.Fatalf("Bytes() = %q, want %q", got, "L1xL2payload")
	}
	h, err := m.Consume(3)
	if err != nil || string(h) != "L1x" {
		t.Fatalf("Consume(3) = %q, %v", h, err)
	}
	h, _ = m.Consume(2)
	if string(h) != "L2" || string(m.Bytes()) != "payload" {
		t.Fatalf("after consuming headers: %q / %q", h, m.Bytes())
	}
	if _, err := m.Consume(100); err != ErrShort {
		t.Fatalf("Consume past the end = %v, want ErrShort", err)
	}
}

func TestPrependBeyondHeadroomGrows(t *testing.T) {
	m := NewMessage()
	defer m.Release()
	m.SetPayload([]byte("p"))
	big := bytes.Repeat([]byte{7}, Headroom+50)
	copy(m.Prepend(len(big)), big)
	copy(m.Prepend(1), "h")
	want := append(append([]byte("h"), big...), 'p')
	if !bytes.Equal(m.Bytes(), want) {
		t.Fatalf("after growing, Bytes() differs (len %d, want %d)", m.Len(), len(want))
	}
}

func TestRetainRelease(t *testing.T) {
	p := &Pool{}
	m := p.FromBytes([]byte("abc"))
	m.Retain()
	m.Release()
	if string(m.Bytes()) != "abc" {
		t.Fatal("message changed while still referenced")
	}
	c := m.Clone()
	m.Release()
	if string(c.Bytes()) != "abc" {
		t.Fatalf("Clone = %q", c.Bytes())
	}
	c.Release()
	defer func() {
		if recover() == nil {
			t.Fatal("double Release did not panic")
		}
	}()
	c.Release()
}

func TestGroupByName(t *testing.T) {
	if _, err := GroupByName(""); err == nil {
		t.Error("empty name accepted")
	}
	if _, err := GroupByName(string(make([]byte, MaxGroupName+1))); err == nil {
		t.Error("too long name accepted")
	}
	g, _ := GroupByName("7")
	if g != 7 {
		t.Errorf("GroupByName(\"7\") = %v, want 7", g)
	}
	a, _ := GroupByName("prices")
	b, _ := GroupByName("prices")
	c, _ := GroupByName("orders")
	if a != b || a == c || a < 1<<31 {
		t.Errorf("hashed ids: %v %v %v", a, b, c)
	}
}

func BenchmarkMessagePath(b *testing.B) {
	p := &Pool{}
	payload := make([]byte, 1024)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		m := p.FromBytes(payload)
		m.Prepend(8)
		m.Prepend(10)
		_, _ = m.Consume(10)
		_, _ = m.Consume(8)
		m.Release()
	}
}
