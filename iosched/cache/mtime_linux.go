package cache

import (
	"syscall"
	"time"
)

// mtimeOf is the modification time of a file's stat.
func mtimeOf(st *syscall.Stat_t) time.Time { return time.Unix(st.Mtim.Unix()) }
