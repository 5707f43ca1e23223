package main

import (
	"strconv"
	"strings"
	"testing"

	"github.com/layercast/layercast/testbed/etcdtest"
)

// TestGMSEtcdFlags: bad --etcd flags are bad input (exit 2); an etcd that
// does not answer is a failed run (exit 1), one line, no wait for ever.
func TestGMSEtcdFlags(t *testing.T) {
	free := etcdtest.FreePorts(t, 1)[0] // nothing listens there
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"gms", "--listen", "127.0.0.1:0", "--etcd", " , "}, 2, "--etcd"},
		{[]string{"gms", "--listen", "127.0.0.1:0", "--etcd", "127.0.0.1:2379", "--etcd-ttl", "0"}, 2, "--etcd-ttl"},
		{[]string{"gms", "--listen", "127.0.0.1:0", "--etcd", "127.0.0.1:2379", "--etcd-prefix", "gms"}, 2, "--etcd-prefix"},
		{[]string{"gms", "--listen", "127.0.0.1:0", "--etcd", "127.0.0.1:" + strconv.Itoa(free)}, 1, "not reachable"},
	} {
		_, err := runCLI(t, c.args...)
		if got := exitCode(err); got != c.code || err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("stacktool %s: exit %d (%v), want %d and one line containing %q", strings.Join(c.args, " "), got, err, c.code, c.want)
		}
	}
}
