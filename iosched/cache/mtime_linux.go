package cache

import (
	"syscall"
	"time"
)

// mtimeOf is the modification time of a file's stat.
func mtimeOf(st *syscall.Stat_t) time.Time { return time.Unix(st.Mtim.Unix()) }

// ctimeOf is the change time of a file's stat, in nanoseconds since 1970.
func ctimeOf(st *syscall.Stat_t) int64 { return st.Ctim.Nano() }
