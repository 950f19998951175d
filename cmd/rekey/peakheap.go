package main

import (
	"bytes"
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"time"
)

// watchPeakHeap keeps a heap profile taken each time the live heap (as of the last GC) reaches a
// new high, and writes the highest to path when stop is called: what a command holds when its
// memory peaks, which an end-of-run profile no longer shows.
func watchPeakHeap(path string) (stop func()) {
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		var best bytes.Buffer
		high := uint64(0)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				if best.Len() > 0 {
					os.WriteFile(path, best.Bytes(), 0o644)
				}
				return
			case <-t.C:
			}
			metrics.Read(sample)
			if live := sample[0].Value.Uint64(); live > high+high/20 {
				high = live
				best.Reset()
				pprof.Lookup("heap").WriteTo(&best, 0)
			}
		}
	}()
	return func() { close(done); <-finished }
}
