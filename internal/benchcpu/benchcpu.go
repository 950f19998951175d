// Package benchcpu reads the process's CPU time for benchmarks: on a shared machine the CPU time
// of a run is a steadier figure than its wall time, and it counts the collector's work on other
// cores.
package benchcpu

import (
	"syscall"
	"time"
)

// Now is the process's user+system CPU time (0 when getrusage fails).
func Now() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
