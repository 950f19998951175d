package gen

import (
	"testing"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/sourcetest"
)

// Every generator resumes after any batch with the very rows a clean run generates, and its
// Identity changes with the seed (another input).
func TestSourceConformance(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			open := func(seed int64) func(t *testing.T) pipeline.Source {
				return func(t *testing.T) pipeline.Source {
					src, err := New(Config{Name: name, Rows: 100, Seed: seed, BatchSize: 9, Workers: 3}, nil, nil)
					if err != nil {
						t.Fatal(err)
					}
					return src
				}
			}
			sourcetest.Run(t, sourcetest.Case{Open: open(7), OpenChanged: open(8)})
		})
	}
}
