package fsregistry

import (
	"context"
	"runtime"
	"sync"
)

// readAll calls read(i) for i in [0,n) on a bounded pool of workers. It
// returns ctx's error if ctx ends first; every worker has returned by then.
func readAll(ctx context.Context, names []string, read func(i int)) error {
	n := len(names)
	workers := min(n, max(4, runtime.GOMAXPROCS(0)*4), 32)
	if n < 16 {
		workers = 1
	}
	if workers <= 1 {
		for i := range n {
			if err := ctx.Err(); err != nil {
				return err
			}
			read(i)
		}
		return nil
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				read(i)
			}
		}()
	}
	var err error
feed:
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
			err = ctx.Err()
			break feed
		}
	}
	close(next)
	wg.Wait()
	return err
}
