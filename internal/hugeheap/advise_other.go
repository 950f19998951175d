//go:build !linux

package hugeheap

import "errors"

func advise([]byte) error { return errors.New("huge pages: not supported here") }
