package wait

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestForReturnsOnceTheConditionHolds(t *testing.T) {
	var n atomic.Int64
	go func() {
		for i := 0; i < 5; i++ {
			n.Add(1)
		}
	}()
	For(t, func() bool { return n.Load() == 5 }, "five increments")
}

func TestUntilGivesUpAfterTheTimeout(t *testing.T) {
	if Until(func() bool { return false }, 5*time.Millisecond) {
		t.Fatal("a condition that never holds was reported as met")
	}
}
