// Package wait lets tests wait for a condition instead of sleeping for a guessed time.
package wait

import (
	"testing"
	"time"
)

// Timeout bounds every wait: long enough for a loaded machine, short enough that a condition that
// never comes fails the test instead of hanging it.
const Timeout = 60 * time.Second

// For polls cond until it holds and fails the test, naming what it waited for, when it still does
// not hold after Timeout. Call it from the test's goroutine.
func For(t testing.TB, cond func() bool, what string) {
	t.Helper()
	if !Until(cond, Timeout) {
		t.Fatalf("waited %s for %s; it never came", Timeout, what)
	}
}

// Until polls cond until it holds (true) or timeout passes (false); for goroutines, which must not
// fail a test themselves.
func Until(cond func() bool, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	pause := 100 * time.Microsecond
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pause)
		if pause < 20*time.Millisecond {
			pause *= 2
		}
	}
	return true
}
