package s3server

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// sysProcAttr kills the server when the test process dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// clockTicks is the unit of /proc's CPU times (USER_HZ, 100 on Linux).
const clockTicks = 100

// processCPU is the user and system CPU time process pid has used, from
// /proc/PID/stat (fields 14 and 15, counted after the command's closing
// parenthesis: the command itself may hold spaces and parentheses).
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("s3server: /proc/%d/stat: no command", pid)
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, fmt.Errorf("s3server: /proc/%d/stat: %d fields", pid, len(f)+2)
	}
	var ticks int64
	for _, k := range f[11:13] { // utime, stime
		n, err := strconv.ParseInt(k, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("s3server: /proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}
