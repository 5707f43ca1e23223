// Package etcdstore replicates the membership service on etcd (issue 15
// item 2): several `stacktool gms --etcd` instances elect one leader with
// etcd's election (go.etcd.io/etcd/client/v3/concurrency); the leader runs
// the ordinary service state machine and saves its state under the
// election's fence before it acknowledges a request or sends a view; a new
// leader loads that state and goes on from it, so view numbers never go
// back and no node is removed by the failover.
//
// Keys, under Config.Prefix (default DefaultPrefix):
//
//	PREFIX/election/<lease>  the candidates (etcd's election; the value is the instance's address)
//	PREFIX/state             the service's state: Magic, then msgpack of membership.ServiceState
//
// A save is a transaction that writes the state only while the saver's
// election key still exists with its revision: an instance whose lease
// expired (it was cut off from etcd, or frozen) cannot overwrite what its
// successor wrote, and its failed save halts its service.
//
// How nodes find the leader: every instance is given the same service
// address (--listen); only the leader binds it, so nodes configured with
// that one address (stacktool node --gms ADDR) follow every failover with
// no change. On one machine (and in the tests) the kernel lets only one
// process hold the address at a time; across machines the address must
// move with the leader (a floating IP), which this package does not do.
package etcdstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/layercast/layercast/internal/wirecodec"
	"github.com/layercast/layercast/membership"
)

// DefaultPrefix is where the service keeps its keys unless told otherwise.
const DefaultPrefix = "/layercast/gms"

// Magic starts every saved state: a format version, so that a later format
// is told apart rather than misread.
const Magic = "LCGMS1\n"

// MaxStateBytes bounds a saved state: etcd refuses requests above 1.5 MiB
// by default (--max-request-bytes). A service whose state outgrows it
// stops with an error saying so rather than losing it.
const MaxStateBytes = 1 << 20

// ErrMalformed is wrapped by Decode's errors.
var ErrMalformed = errors.New("etcdstore: malformed saved state")

// ErrNotLeader is wrapped by the error of a save made after this instance
// lost the leadership.
var ErrNotLeader = errors.New("etcdstore: no longer the leader")

// Encode returns st's saved form (Magic, then msgpack), or an error if it
// exceeds MaxStateBytes.
func Encode(st *membership.ServiceState) ([]byte, error) {
	c := codecs.Get().(*wirecodec.Codec)
	b := append([]byte(Magic), c.Encode(st)...) // a copy: c's buffer goes back to the pool
	codecs.Put(c)
	if len(b) > MaxStateBytes {
		return nil, fmt.Errorf("etcdstore: membership state of %d bytes exceeds %d (etcd's request limit)", len(b), MaxStateBytes)
	}
	return b, nil
}

// Decode parses a saved state. Bad input is an error wrapping ErrMalformed,
// never a panic; the state's own consistency is checked where it is
// restored (membership.RestoreIndex, the service's Restore).
func Decode(b []byte) (*membership.ServiceState, error) {
	if len(b) > MaxStateBytes {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrMalformed, len(b), MaxStateBytes)
	}
	if !bytes.HasPrefix(b, []byte(Magic)) {
		return nil, fmt.Errorf("%w: no %q header (another program's key, or a newer format)", ErrMalformed, strings.TrimSpace(Magic))
	}
	c := codecs.Get().(*wirecodec.Codec)
	defer codecs.Put(c)
	st := &membership.ServiceState{}
	if err := c.Decode(b[len(Magic):], st); err != nil {
		return nil, err
	}
	return st, nil
}

// codecs holds reusable codecs: Encode and Decode may run on several
// goroutines (the leader's saves, a standby's loads), and a Codec is not
// safe for concurrent use.
var codecs = sync.Pool{New: func() any {
	return wirecodec.New(wirecodec.Options{Name: "etcdstore", Malformed: ErrMalformed})
}}

// Config sets up a replicated service instance.
type Config struct {
	// Endpoints are etcd's client URLs (e.g. http://127.0.0.1:2379).
	Endpoints []string
	// Prefix is the key prefix (default DefaultPrefix): instances with the
	// same prefix form one service.
	Prefix string
	// Name is what this instance announces as leader (its address).
	Name string
	// TTL is the lease of the instance's election key, in seconds
	// (default 2; etcd rounds shorter leases up to its own minimum): a
	// leader that dies is replaced about TTL after its last keep-alive.
	TTL int
	// Timeout bounds each etcd call: the first contact, a load, a save
	// (default 2 s).
	Timeout time.Duration
	// Log receives the instance's own lines (nil: none).
	Log *slog.Logger
}

// Lead is what the leader does: serve the membership service from state
// (nil: none saved yet), saving through store, until ctx ends (the
// leadership is lost or the instance stops). Its error ends this term
// (the instance campaigns again); ctx's end is not an error.
type Lead func(ctx context.Context, state *membership.ServiceState, store membership.Store) error

// Run campaigns for leadership and runs lead while it holds it, again and
// again, until ctx ends. It returns an error only if etcd cannot be
// reached at the start or the configuration is bad.
func Run(ctx context.Context, cfg Config, lead Lead) error {
	if len(cfg.Endpoints) == 0 {
		return fmt.Errorf("etcdstore: no etcd endpoints")
	}
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	cfg.Prefix = strings.TrimRight(cfg.Prefix, "/")
	if cfg.TTL <= 0 {
		cfg.TTL = 2
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 2 * time.Second
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: cfg.Endpoints, DialTimeout: cfg.Timeout, Logger: zap.NewNop()})
	if err != nil {
		return fmt.Errorf("etcd %v: %w", cfg.Endpoints, err)
	}
	defer cli.Close()
	// clientv3.New dials lazily: ask once so that a wrong address is an
	// error now rather than a silent wait.
	cctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	_, err = cli.Get(cctx, cfg.Prefix+"/state", clientv3.WithCountOnly())
	cancel()
	if err != nil {
		return fmt.Errorf("etcd %v not reachable: %w", cfg.Endpoints, err)
	}
	for ctx.Err() == nil {
		if err := term(ctx, cli, cfg, log, lead); err != nil && ctx.Err() == nil {
			log.Warn("leadership ended", "err", err)
			select { // do not spin on a persistent error
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
	return nil
}

// term campaigns once and, once elected, leads until the leadership or ctx
// ends.
func term(ctx context.Context, cli *clientv3.Client, cfg Config, log *slog.Logger, lead Lead) error {
	sess, err := concurrency.NewSession(cli, concurrency.WithTTL(cfg.TTL), concurrency.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("etcd session: %w", err)
	}
	defer sess.Close() // revokes the lease: a successor is elected at once
	el := concurrency.NewElection(sess, cfg.Prefix+"/election")
	if lr, err := el.Leader(ctx); err == nil && len(lr.Kvs) > 0 {
		log.Info("following", "leader", string(lr.Kvs[0].Value))
	}
	start := time.Now()
	if err := el.Campaign(ctx, cfg.Name); err != nil {
		return fmt.Errorf("campaign: %w", err)
	}
	waited := time.Since(start)
	lctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		select {
		case <-sess.Done():
			log.Warn("etcd lease lost: stepping down")
			stop()
		case <-lctx.Done():
		}
	}()
	st := &Store{cli: cli, key: cfg.Prefix + "/state", fence: el.Key(), rev: el.Rev(), timeout: cfg.Timeout, lost: stop}
	state, err := st.Load(lctx)
	if err != nil {
		return err
	}
	nodes := 0
	if state != nil {
		nodes = len(state.Nodes)
	}
	log.Info("elected leader", "campaigned", waited.Round(time.Millisecond), "saved_nodes", nodes, "saved_groups", groupsOf(state))
	err = lead(lctx, state, st)
	rctx, cancel := context.WithTimeout(context.Background(), cfg.Timeout)
	_ = el.Resign(rctx)
	cancel()
	if lctx.Err() != nil && ctx.Err() == nil && err == nil {
		return errors.New("leadership lost")
	}
	return err
}

func groupsOf(st *membership.ServiceState) int {
	if st == nil {
		return 0
	}
	return len(st.Index.Views)
}

// Store saves a leader's state in etcd, fenced by its election key.
type Store struct {
	cli     *clientv3.Client
	key     string
	fence   string // the leader's election key
	rev     int64  // and its create revision
	timeout time.Duration
	lost    func() // ends the term: called when a save fails
	// Saves and Bytes count what was written.
	Saves, Bytes atomic.Int64
}

// Load reads the saved state (nil if there is none).
func (s *Store) Load(ctx context.Context) (*membership.ServiceState, error) {
	cctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	r, err := s.cli.Get(cctx, s.key)
	if err != nil {
		return nil, fmt.Errorf("etcd get %s: %w", s.key, err)
	}
	if len(r.Kvs) == 0 {
		return nil, nil
	}
	st, err := Decode(r.Kvs[0].Value)
	if err != nil {
		return nil, fmt.Errorf("etcd key %s: %w", s.key, err)
	}
	return st, nil
}

// Save writes st if this instance is still the leader; otherwise, or if
// etcd does not answer in time, it returns an error and ends the term.
func (s *Store) Save(st *membership.ServiceState) error {
	b, err := Encode(st)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
		var r *clientv3.TxnResponse
		r, err = s.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(s.fence), "=", s.rev)).
			Then(clientv3.OpPut(s.key, string(b))).Commit()
		cancel()
		if err == nil && !r.Succeeded {
			err = ErrNotLeader
		}
	}
	if err != nil {
		s.lost()
		return err
	}
	s.Saves.Add(1)
	s.Bytes.Add(int64(len(b)))
	return nil
}

var _ membership.Store = (*Store)(nil)
