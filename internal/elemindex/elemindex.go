// Package elemindex finds which element of a slice a pointer points to.
package elemindex

import "unsafe"

// Of is the index in s of the element p points to, if p points into s's elements: a pointer
// handed on one at a time (a record, a change) found again in its batch without a search.
func Of[T any](s []T, p *T) (int, bool) {
	if len(s) == 0 || p == nil {
		return 0, false
	}
	size := unsafe.Sizeof(s[0])
	off := uintptr(unsafe.Pointer(p)) - uintptr(unsafe.Pointer(&s[0])) // wraps above len when p is below
	if size == 0 || off%size != 0 || off/size >= uintptr(len(s)) {
		return 0, false
	}
	return int(off / size), true
}
