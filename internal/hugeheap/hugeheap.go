// Package hugeheap backs the Go heap with transparent huge pages where the kernel offers them
// only on request (THP "madvise" mode, the default of many distributions).
//
// A migrate's heap is mostly large, short-lived buffers (batches, column buffers, pages) that
// are touched once the heap first grows to its working size. With 4 KiB pages every first touch
// is a page fault, and on virtual machines that return freed memory to the host (free page
// reporting) each fault also goes to the host: warming a 400 MiB heap measured ~1.5 s there,
// with 2 MiB pages 0.04-0.3 s. The Go runtime no longer asks for huge pages itself (it did in
// Go 1.21.0 and stopped), so Reserve does it for the address range the heap will grow into.
//
// The cost, and why the runtime stopped (golang/go#61718, #64332): the advice stays on the range,
// and the kernel's khugepaged refills 2 MiB pages the runtime has partly given back, so the
// resident size stays near the heap's high-water mark instead of shrinking with it; and with
// defrag "madvise" a fault in the range may wait for the kernel to compact memory. For a batch
// command whose heap grows to its budget and stays there until it exits that is a good trade;
// for a process that runs for days (replicate) it is not.
package hugeheap

import (
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
)

// Reserve makes the next n bytes of heap the process allocates eligible for huge pages: it
// allocates one n-byte object (fresh memory from the kernel: nothing is touched), advises its
// address range MADV_HUGEPAGE, and frees it. The range stays mapped for the heap, with the advice
// on it, and the runtime's page allocator hands it out for what the process allocates next
// (lowest addresses first). Nothing happens under GODEBUG=disablethp=1, where the kernel does not
// offer huge pages on request only, under strict overcommit accounting (the object is committed
// memory there), or on 32-bit and non-Linux systems; n is capped at the runtime's memory limit
// and at half the memory the process may have (the machine's or its cgroup's). Only the first
// call in a process acts: a later one would find the heap's free pages used and clear them all.
// It returns the bytes advised.
func Reserve(n int64) int64 {
	if strconv.IntSize < 64 || disabled(os.Getenv("GODEBUG")) || !offered() {
		return 0
	}
	if n = min(n, debug.SetMemoryLimit(-1), memTotal()/2); n < 4<<20 || !once.CompareAndSwap(false, true) {
		return 0
	}
	b := make([]byte, n) // a large object: whole pages, fresh from the kernel, untouched
	if err := advise(b); err != nil {
		return 0
	}
	runtime.KeepAlive(b)
	runtime.GC() // free the object: its pages go back to the heap, advised
	return n
}

var once atomic.Bool

// disabled tells whether a GODEBUG value sets disablethp (the last setting wins, as in the runtime).
func disabled(godebug string) bool {
	off := false
	for _, kv := range strings.Split(godebug, ",") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(kv), "disablethp="); ok {
			off = v != "0"
		}
	}
	return off
}

// offered tells whether the kernel gives huge pages to advised ranges only (mode "madvise": under
// "always" the heap has them already), and commits memory on first touch rather than on
// allocation (vm.overcommit_memory 0 or 1).
func offered() bool {
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || !strings.Contains(string(mode), "[madvise]") {
		return false
	}
	commit, err := os.ReadFile("/proc/sys/vm/overcommit_memory")
	return err == nil && strings.TrimSpace(string(commit)) != "2"
}

// memTotal is the memory the process may have, in bytes: the machine's, or its cgroup's limit
// when lower (0 when unknown).
func memTotal() int64 {
	total := machineMemory()
	if max, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if limit, err := strconv.ParseInt(strings.TrimSpace(string(max)), 10, 64); err == nil && limit < total {
			return limit
		}
	}
	return total
}

func machineMemory() int64 {
	info, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(info), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}
