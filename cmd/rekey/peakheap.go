package main

import (
	"bytes"
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"time"
)

// watchPeakHeap keeps a heap profile of the time the live heap (as of the last GC) reached its
// high, and writes it to path when stop is called: what a command holds when its memory peaks,
// which an end-of-run profile no longer shows. A heap profile describes the heap as of two
// collections before it is taken, so the profile of a new high waits for two more collections.
func watchPeakHeap(path string) (stop func()) {
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}}
		var best bytes.Buffer
		high, due, pending := uint64(0), uint64(0), false
		take := func() {
			best.Reset()
			pprof.Lookup("heap").WriteTo(&best, 0)
			pending = false
		}
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				if pending {
					take()
				}
				if best.Len() > 0 {
					os.WriteFile(path, best.Bytes(), 0o644)
				}
				return
			case <-t.C:
			}
			metrics.Read(sample)
			live, cycles := sample[0].Value.Uint64(), sample[1].Value.Uint64()
			if live > high+high/20 {
				high, due, pending = live, cycles+2, true
			}
			if pending && cycles >= due {
				take()
			}
		}
	}()
	return func() { close(done); <-finished }
}
