package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/layercast/layercast/compose"
	_ "github.com/layercast/layercast/layers/all"
	"github.com/layercast/layercast/testbed/layertest"
)

// authKeyFile writes a master key (64 hex digits) into a temporary file.
func authKeyFile(t testing.TB, hexKey string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "group.key")
	if err := os.WriteFile(p, []byte(hexKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const (
	authKeyA = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
	authKeyB = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100"
)

// TestAuthRoundTrip: with auth at the bottom (HMAC and AES-GCM, with and
// without gms), every member delivers every message under loss, and auth
// verified packets and dropped none.
func TestAuthRoundTrip(t *testing.T) {
	key := authKeyFile(t, authKeyA)
	for _, spec := range []string{
		"fifo : reliable : auth(key_file=\"" + key + "\")",
		"fifo : reliable : auth(key_file=\"" + key + "\", crypt=on)",
		"fifo : reliable : gms : auth(key_file=\"" + key + "\")",
	} {
		t.Run(strings.ReplaceAll(spec[:strings.Index(spec, "(")], " ", "")+map[bool]string{true: "_crypt", false: ""}[strings.Contains(spec, "crypt")], func(t *testing.T) {
			rep, _ := simRun(t, spec, "", "loss", "uniform:2%", "duration", "2s")
			if !rep.DeliveredAll || rep.Missing != 0 || rep.Deliveries == 0 {
				t.Errorf("delivered_all = %v, missing %d, deliveries %d", rep.DeliveredAll, rep.Missing, rep.Deliveries)
			}
			if rep.Duplicates != 0 || rep.FIFOViolations != 0 {
				t.Errorf("duplicates %d, fifo violations %d", rep.Duplicates, rep.FIFOViolations)
			}
			a := rep.Layers["auth"]
			if a["verified"] == 0 {
				t.Errorf("auth verified no packet: %v", a)
			}
			for _, c := range []string{"bad_tag", "replayed", "no_key", "malformed", "senders_full"} {
				if a[c] != 0 {
					t.Errorf("auth %s = %d with no forger, want 0 (%v)", c, a[c], a)
				}
			}
		})
	}
}

// TestAuthMustBeBottom: compose refuses auth anywhere but at the bottom and
// says why; a missing or short key file is refused without printing the key.
func TestAuthMustBeBottom(t *testing.T) {
	key := authKeyFile(t, authKeyA)
	layertest.CheckSpec(t, "fifo : auth(key_file=\""+key+"\") : reliable", "auth must be the bottom layer")
	layertest.CheckSpec(t, "fifo : reliable : auth", "key_file")
	short := filepath.Join(t.TempDir(), "short.key")
	os.WriteFile(short, []byte("secretsecret"), 0o600)
	sp, _ := compose.Parse("fifo : reliable : auth(key_file=\"" + short + "\")")
	if err := compose.Check(sp); err == nil || strings.Contains(err.Error(), "secretsecret") {
		t.Errorf("Check(short key) = %v, want an error that does not print the key", err)
	}
	// check -v prints effective parameters: the path, never the contents.
	ls, err := compose.ExplainString("fifo : reliable : auth(key_file=\"" + key + "\")")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls {
		for _, p := range l.Params.Schema() {
			if v := l.Params.Text(p.Name); strings.Contains(strings.ToLower(v), authKeyA[:16]) {
				t.Errorf("explained parameter %s.%s = %q shows the key", l.Info.Name, p.Name, v)
			}
		}
	}
}
