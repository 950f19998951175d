//go:build rekeypoison

package file

// Built with -tags rekeypoison, a released batch's memory is overwritten at once: a consumer
// that keeps a record's string (or value) past Batch.Release reads 0xFF bytes in every test, not
// only where a later chunk happens to reuse the buffer first.
const poisonReleased = true
