package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// secondSignalKey is the context key under which signalContext keeps the second signal's
// context.
type secondSignalKey struct{}

// secondSignalCause is the cause of the second signal's context: the signal.
type secondSignalCause struct{ sig os.Signal }

func (c secondSignalCause) Error() string { return fmt.Sprintf("second signal (%v)", c.sig) }

// signalContext returns a context that ends at the process's first SIGTERM or SIGINT, and
// carries another (secondSignal) that ends at the second: serve then cuts its drain short,
// the worker its command's --grace. One watch counts both. With two (a watch of its own that a
// command started after looking at the first's context), a signal coming between the look and
// the watch was counted by neither, and a third signal was needed.
func signalContext() (context.Context, func()) {
	first, endFirst := context.WithCancel(context.Background())
	second, endSecond := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		for n := 1; ; n++ {
			select {
			case sig := <-sigs:
				if n == 1 {
					endFirst()
				} else {
					endSecond(secondSignalCause{sig})
				}
			case <-done:
				return
			}
		}
	}()
	return context.WithValue(first, secondSignalKey{}, second), func() {
		signal.Stop(sigs)
		close(done)
		endFirst()
		endSecond(context.Canceled)
	}
}

// secondSignal returns the context that ends at the process's second SIGTERM or SIGINT, when
// ctx comes from signalContext (Main's); otherwise one that never ends.
func secondSignal(ctx context.Context) context.Context {
	if second, ok := ctx.Value(secondSignalKey{}).(context.Context); ok {
		return second
	}
	return context.Background()
}

// secondSignalName names the signal that ended second, for the log.
func secondSignalName(second context.Context) string {
	if c, ok := context.Cause(second).(secondSignalCause); ok {
		return c.sig.String()
	}
	return ""
}
