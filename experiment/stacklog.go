package experiment

import (
	"context"

	"github.com/layercast/layercast/stack"
)

// stackLogKey is the context key of WithStackLog.
type stackLogKey struct{}

// WithStackLog returns ctx carrying log, the logger every stack of a
// simulated run started with that context gets (stack.Config.Log): the
// layers' Context.Logf lines, each already prefixed with the virtual time,
// the node and the layer. Without it (or with a nil log) the stacks log
// nothing and layers that ask Context.Logging build no line, so a run
// pays nothing for the switch when it is off (stacktool run --log-level).
func WithStackLog(ctx context.Context, log stack.Logger) context.Context {
	return context.WithValue(ctx, stackLogKey{}, log)
}

// stackLog is the logger WithStackLog put in ctx, nil if none.
func stackLog(ctx context.Context) stack.Logger {
	log, _ := ctx.Value(stackLogKey{}).(stack.Logger)
	return log
}
