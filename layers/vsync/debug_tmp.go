package vsync

import (
	"fmt"
	"os"
)

var debugOn = os.Getenv("VSYNC_DEBUG") != ""

func (l *Layer) dbg(format string, args ...any) {
	if debugOn {
		fmt.Fprintf(os.Stderr, "%v %v: %s\n", l.Ctx.Now(), l.self, fmt.Sprintf(format, args...))
	}
}
