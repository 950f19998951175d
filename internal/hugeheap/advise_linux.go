package hugeheap

import "syscall"

func advise(b []byte) error { return syscall.Madvise(b, 14) } // MADV_HUGEPAGE
