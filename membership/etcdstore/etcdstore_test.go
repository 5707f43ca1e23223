package etcdstore

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/membership"
	"github.com/layercast/layercast/testbed/etcdtest"
)

// sampleState is a small state as a service saves it.
func sampleState() *membership.ServiceState {
	x := membership.NewIndex()
	x.JoinMany(1, []event.GroupID{1, 2})
	x.JoinMany(2, []event.GroupID{2})
	x.Commit()
	x.Remove(2)
	return &membership.ServiceState{
		Index: x.State(),
		Nodes: []membership.NodeState{
			{ID: 1, Inc: 77, LastReq: 3, Groups: []event.GroupID{1, 2}, Timeout: int64(time.Second)},
			{ID: 3, Inc: 9, Site: 2, LastReq: 1, Refused: []event.GroupID{8}, Groups: []event.GroupID{2}},
		},
		Sites:   []event.SiteView{{Site: 0, ID: 4, Members: []event.NodeID{1}}},
		SiteIDs: []membership.SiteViewID{{Site: 0, ID: 4}, {Site: 2, ID: 1}},
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	st := sampleState()
	b, err := Encode(st)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, st) {
		t.Fatalf("decoded\n%+v\nwant\n%+v", got, st)
	}
	if _, err := membership.RestoreIndex(&got.Index); err != nil {
		t.Fatalf("decoded state does not restore: %v", err)
	}
}

func TestDecodeRefusesOthers(t *testing.T) {
	for _, b := range [][]byte{nil, []byte("{}"), []byte(Magic), append([]byte(Magic), 0xc1), make([]byte, MaxStateBytes+1)} {
		if _, err := Decode(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("Decode(%.20q): %v, want ErrMalformed", b, err)
		}
	}
}

// FuzzDecode: whatever the key holds, Decode and the restore of what it
// decodes return errors, never panic.
func FuzzDecode(f *testing.F) {
	b, err := Encode(sampleState())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(Magic))
	f.Add(append([]byte(Magic), 0x80))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := Decode(b)
		if err != nil {
			return
		}
		if x, err := membership.RestoreIndex(&st.Index); err == nil {
			x.Commit()
		}
	})
}

func client(t *testing.T, endpoint string) *clientv3.Client {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// A leader that lost its election key cannot overwrite its successor's
// state: its save fails with ErrNotLeader and ends its term.
func TestSaveIsFencedByTheElection(t *testing.T) {
	p := etcdtest.FreePorts(t, 2)
	srv := etcdtest.Start(t, nil, p[0], p[1])
	ctx := context.Background()
	cli := client(t, srv.Endpoint)
	campaign := func(name string) (*concurrency.Session, *concurrency.Election) {
		s, err := concurrency.NewSession(cli, concurrency.WithTTL(5))
		if err != nil {
			t.Fatal(err)
		}
		e := concurrency.NewElection(s, "/t/election")
		if err := e.Campaign(ctx, name); err != nil {
			t.Fatal(err)
		}
		return s, e
	}
	sa, ea := campaign("a")
	lost := false
	a := &Store{cli: cli, key: "/t/state", fence: ea.Key(), rev: ea.Rev(), timeout: 2 * time.Second, lost: func() { lost = true }}
	if err := a.Save(sampleState()); err != nil {
		t.Fatalf("leader's save: %v", err)
	}
	sa.Close() // a's lease is revoked: b may win
	_, eb := campaign("b")
	b := &Store{cli: cli, key: "/t/state", fence: eb.Key(), rev: eb.Rev(), timeout: 2 * time.Second, lost: func() {}}
	next := sampleState()
	next.Nodes = next.Nodes[:1]
	if err := b.Save(next); err != nil {
		t.Fatalf("successor's save: %v", err)
	}
	if err := a.Save(sampleState()); !errors.Is(err, ErrNotLeader) || !lost {
		t.Fatalf("deposed leader's save: %v (term ended: %v), want ErrNotLeader", err, lost)
	}
	got, err := b.Load(ctx)
	if err != nil || !reflect.DeepEqual(got, next) {
		t.Fatalf("state after the deposed leader's save: %+v, %v; want the successor's", got, err)
	}
}

// Two instances: the first leads and saves; when it stops, the second is
// elected and starts from what the first saved.
func TestRunHandsTheStateToTheNextLeader(t *testing.T) {
	p := etcdtest.FreePorts(t, 2)
	srv := etcdtest.Start(t, nil, p[0], p[1])
	type term struct {
		name  string
		state *membership.ServiceState
	}
	terms := make(chan term, 4)
	run := func(ctx context.Context, name string, save *membership.ServiceState, wg *sync.WaitGroup) {
		defer wg.Done()
		err := Run(ctx, Config{Endpoints: []string{srv.Endpoint}, Prefix: "/t2", Name: name, TTL: 2},
			func(ctx context.Context, st *membership.ServiceState, store membership.Store) error {
				terms <- term{name, st}
				if err := store.Save(save); err != nil {
					return err
				}
				<-ctx.Done()
				return nil
			})
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	var wg sync.WaitGroup
	ctxA, stopA := context.WithCancel(context.Background())
	ctxB, stopB := context.WithCancel(context.Background())
	defer stopB()
	wg.Add(2)
	saved := sampleState()
	go run(ctxA, "a", saved, &wg)
	first := <-terms
	go run(ctxB, "b", sampleState(), &wg)
	if first.name != "a" || first.state != nil {
		t.Fatalf("first term: %s with state %v, want a with none", first.name, first.state)
	}
	stopA()
	select {
	case second := <-terms:
		if second.name != "b" || !reflect.DeepEqual(second.state, saved) {
			t.Fatalf("second term: %s with %+v, want b with a's state", second.name, second.state)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("b was not elected within 10s of a's stop")
	}
	stopB()
	wg.Wait()
}

func TestRunRefusesUnreachableEtcd(t *testing.T) {
	p := etcdtest.FreePorts(t, 1) // nothing listens there
	err := Run(context.Background(), Config{Endpoints: []string{"http://127.0.0.1:" + strconv.Itoa(p[0])}, Timeout: 300 * time.Millisecond},
		func(context.Context, *membership.ServiceState, membership.Store) error { return nil })
	if err == nil {
		t.Fatal("Run with no etcd listening succeeded")
	}
}
