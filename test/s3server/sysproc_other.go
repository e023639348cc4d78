//go:build !linux

package s3server

import (
	"errors"
	"syscall"
	"time"
)

func sysProcAttr() *syscall.SysProcAttr { return nil }

func processCPU(int) (time.Duration, error) {
	return 0, errors.New("s3server: a process's CPU time is read on Linux only")
}
