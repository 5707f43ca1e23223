package auth

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"os"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/stack"
)

func init() {
	compose.Register(compose.LayerInfo{
		Name: "auth",
		Summary: "Authenticated groups: every packet carries a 16-byte tag (GMAC, or HMAC-SHA256 with mac=hmac) or, with " +
			"crypt=on, is AES-GCM encrypted, under a key derived from the master key in key_file for the packet's group and view. " +
			"The tag covers the frame the stack writes (group, source, kind) and everything above; packets without a " +
			"valid tag are dropped and counted, replays are refused by a per-sender sequence window, and the previous " +
			"view's key is accepted for a grace period after a view change. Keys rotate with every view of the group: " +
			"views installed below auth (the static membership) and views gms installs above it, which gms hands down " +
			"to auth. The membership service's packets (requests, heartbeats, probes, views) are tagged under a service " +
			"key derived from the same master key (it never rotates: they belong to no group and no view), and replays of " +
			"them are refused by the same windows: the service's stack runs auth_service with the same key_file (added " +
			"by the harness; stacktool gms --key-file over UDP), so a forged join, leave or heartbeat changes no view.",
		Params:    params(true),
		Bottom:    bottom,
		Counters:  compose.CountersOf(counters{}),
		Summarize: summarize,
		New:       build,
		// The membership service hears the members' tagged packets and
		// must tag its own: it runs auth_service under the same key.
		ServiceToo: func(p compose.Params) compose.Call {
			c := compose.Call{Name: "auth_service", Args: []compose.Arg{{Key: "key_file", Value: p.String("key_file")}}}
			for _, name := range []string{"mac", "crypt", "window", "max_senders"} {
				c.Args = append(c.Args, compose.Arg{Key: name, Value: p.Text(name)})
			}
			return c
		},
	})
	compose.Register(compose.LayerInfo{
		Name: "auth_service",
		Summary: "auth in the membership service's own stack, below gms_service: it checks the tags of the members' " +
			"membership packets (requests, heartbeats) under the service key derived from key_file, drops and counts " +
			"the rest, refuses replays, and tags the service's own packets. A member stack holding auth makes the " +
			"service run it with the same key_file.",
		Params:    params(false),
		Bottom:    bottom,
		Role:      compose.ServiceRole,
		Counters:  compose.CountersOf(counters{}),
		Summarize: summarize,
		New:       build,
	})
}

const bottom = "it authenticates the frame the stack writes (group, source, kind) and every byte of the layers " +
	"above, so a layer below it would send and accept packets nothing has covered"

// params is auth's schema; the service's has no grace (its key never rotates).
func params(member bool) []compose.Param {
	ps := []compose.Param{
		{Name: "key_file", Type: compose.String, Default: "", Doc: "file holding the master group key: 64 hex digits, or at least 16 raw bytes (never printed)"},
		{Name: "mac", Type: compose.Enum, Choices: []string{"gmac", "hmac"}, Default: "gmac", Doc: "the tag: gmac (AES-256-GCM over the packet, nothing encrypted; fast where the CPU has AES instructions) or hmac (HMAC-SHA256, truncated to 16 bytes)"},
		{Name: "crypt", Type: compose.Bool, Default: "off", Doc: "encrypt payloads with AES-GCM instead of only tagging them (mac is then unused)"},
		{Name: "window", Type: compose.Int, Default: "4096", Doc: "replay window per sender, in sequence numbers (rounded up to 64)", Min: 64, Max: 1 << 20},
		{Name: "max_senders", Type: compose.Int, Default: "4096", Doc: "most senders with a replay window (only senders whose tag verified get one)", Min: 1, Max: 1 << 20},
	}
	if member {
		ps = append(ps, compose.Param{Name: "grace", Type: compose.Duration, Default: "5s", Doc: "how long the previous view's key is still accepted", Min: 0, Max: 3600})
	}
	return ps
}

// build makes the layer from either schema.
func build(p compose.Params) (stack.Layer, error) {
	key, err := ReadKey(p.String("key_file"))
	if err != nil {
		return nil, err
	}
	cfg := Config{Key: key, Crypt: p.Bool("crypt"), HMAC: p.String("mac") == "hmac", Window: p.Int("window"), MaxSenders: p.Int("max_senders")}
	for _, s := range p.Schema() {
		if s.Name == "grace" {
			cfg.Grace = p.Duration("grace")
		}
	}
	return New(cfg)
}

// summarize notes what auth refused, by cause, when it refused anything.
func summarize(c compose.Counters) compose.Summary {
	var s compose.Summary
	t := c.Total
	if d := t["bad_tag"] + t["replayed"] + t["no_key"] + t["malformed"] + t["senders_full"]; d > 0 {
		s.Notef("%d packets refused (bad tag %d, replayed %d, expired key %d, malformed %d, senders full %d); %d verified",
			d, t["bad_tag"], t["replayed"], t["no_key"], t["malformed"], t["senders_full"], t["verified"])
	}
	return s
}

// ReadKey reads a master key file: 64 hex digits (32 bytes), or raw bytes
// (at least 16). Errors name the path, never the contents.
func ReadKey(path string) ([]byte, error) {
	if path == "" {
		return nil, fmt.Errorf("auth: needs key_file=PATH, a file holding the group's master key")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("auth: key_file: %w", err)
	}
	if t := bytes.TrimSpace(b); len(t) == 64 {
		if k, err := hex.DecodeString(string(t)); err == nil {
			return k, nil
		}
	}
	if len(b) < 16 {
		return nil, fmt.Errorf("auth: key_file %s holds %d bytes; a key needs at least 16 (or 64 hex digits)", path, len(b))
	}
	return b, nil
}

// counters are what auth counts: its registration documents them from these
// tags (compose.CountersOf) and Init binds them (stack.Context.BindCounters).
type counters struct {
	Verified    *stack.Counter `counter:"verified" doc:"packets whose tag verified"`
	BadTag      *stack.Counter `counter:"bad_tag" doc:"packets dropped: tag missing, wrong key or tampered"`
	Replayed    *stack.Counter `counter:"replayed" doc:"packets dropped: sequence number already seen or older than the window (checked before the tag, so a forgery reusing a seen number counts here)"`
	NoKey       *stack.Counter `counter:"no_key" doc:"packets dropped: their view's key has expired (past the grace period)"`
	Malformed   *stack.Counter `counter:"malformed" doc:"packets dropped: auth header short or of another version or mode"`
	SendersFull *stack.Counter `counter:"senders_full" doc:"packets dropped: a new sender while max_senders windows are kept"`
	Membership  *stack.Counter `counter:"membership_verified" doc:"membership-service packets whose tag verified (part of verified)"`
	Rotations   *stack.Counter `counter:"rotations" doc:"view changes that installed a new key"`
}
