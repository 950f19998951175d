// Package libs holds the benchmarks of the code rekey keeps for something a well-kept library
// also does, each next to that library on the same input: the reason the code is kept (issue
// 11.7). The comment above each piece of such code names its benchmark, here or in its package.
//
//	go test ./bench/libs -run XXX -bench . -benchmem
package libs
