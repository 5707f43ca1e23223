package experiment

import (
	"context"
	"runtime"
	"sync"
)

// Parallel calls do(i) for every i in [0, n) on at most workers goroutines
// (GOMAXPROCS when workers is 0 or less; see Workers) and returns when
// every call it started has returned. Once ctx is done it starts no more
// calls; those running see ctx themselves. It is the worker pool soak and
// sweep share: do writes its result into slot i, so the output does not
// depend on which worker finished first.
func Parallel(ctx context.Context, n, workers int, do func(i int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(Workers(workers), n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				do(i)
			}
		}()
	}
feed:
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
}

// Workers is the number of runs to go at once for a requested count:
// GOMAXPROCS for 0 or less, else the count.
func Workers(n int) int {
	if n <= 0 {
		return runtime.GOMAXPROCS(0)
	}
	return n
}
