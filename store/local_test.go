package store_test

import (
	"testing"

	"github.com/rekey/rekey/store"
	"github.com/rekey/rekey/store/storetest"
)

func TestLocalConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := store.NewLocal(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
