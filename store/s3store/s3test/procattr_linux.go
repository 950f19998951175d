package s3test

import "syscall"

// procAttr kills the server with the test process, should the test binary die before its
// cleanups run (a panic, a -timeout): no versitygw is left listening.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
