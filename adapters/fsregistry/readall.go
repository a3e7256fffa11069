package fsregistry

import (
	"context"
	"runtime"
	"sync"
)

// readAll calls read(i) for i in [0,n) on a bounded pool of workers (fixed
// of them when fixed > 0, else a size picked from GOMAXPROCS). It returns
// ctx's error if ctx ends first; every worker has returned by then.
func readAll(ctx context.Context, names []string, fixed int, read func(i int)) error {
	n := len(names)
	workers := min(n, max(4, runtime.GOMAXPROCS(0)*4), 32)
	if n < 16 {
		workers = 1
	}
	if fixed > 0 {
		workers = min(n, fixed)
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
