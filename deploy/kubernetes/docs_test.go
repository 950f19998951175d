package kubernetes

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// The recipe in docs/operations.md waits for each Job to end before the next step. `kubectl wait
// --for=condition=complete` on a Job that fails (an index that exited 1 with rejects or 2, or one
// out of retries: the recipe's normal outcome when rows are rejected) does not return until its
// --timeout, 24 hours for the shards, and then says only "timed out". The wait must end on either
// outcome. Before, the recipe waited for complete alone.
func TestRecipeWaitsForAJobToEndEitherWay(t *testing.T) {
	text, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	waits := 0
	for _, line := range strings.Split(string(text), "\n") {
		if !strings.Contains(line, "kubectl ") || !regexp.MustCompile(`\bjob[/ ]rekey-orders`).MatchString(line) {
			continue
		}
		if strings.Contains(line, "kubectl wait") && strings.Contains(strings.ToLower(line), "--for=condition=complete") {
			t.Errorf("docs/operations.md: %q waits until its timeout when the Job fails", strings.TrimSpace(line))
		}
		if strings.Contains(line, "Complete") && strings.Contains(line, "Failed") {
			waits++
		}
	}
	if waits < 2 {
		t.Errorf("docs/operations.md: %d waits for the migrate and merge Jobs to end (Complete or Failed), want 2", waits)
	}
}
