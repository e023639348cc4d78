package cache

// Entries this process has checked: an entry read in place (larger than
// readWholeMax, read through the store of local files, maybe mapped) is
// checked after the read by summing all its bytes (Check), which costs
// more than the rest of a warm scan of large chunks on a small machine.
// A process remembers the entries it found true together with the
// status of their pack when it read them (device, inode, size and change
// time), and does not sum such an entry again while a stat of its pack
// before the read and one after it both give that status: a pack is
// never written once in place, and a write to it, a truncation, or a
// file put in its place by any process changes that status.
//
// What it gives up: a disk that returns other bytes than were written,
// with no write through the file system (the page cache dropped, the
// medium failing), is caught at the first read of each process but not
// at later ones, as it is not for the local files a scan reads. The
// checksum is there for torn fills and for writes to the directory, not
// as a defence against someone who may write to it (who could write a
// true checksum as well).
//
// A change time is as fine as the file system's clock (a tick of a few
// milliseconds on Linux, a second or two on some): a write in the same
// tick as the change a status was taken after would leave it as it was.
// So a status is remembered only if the read began at least a tick after
// its change time (settled), as git treats a file as racily clean.
//
// A touch (recency, see touch) sets a pack's times and so its change
// time: the next read of each of its entries sums it again, at most once
// per touchEvery per pack.

import (
	"sync"
	"syscall"
	"time"
)

// packState is what a stat of a pack tells of whether its bytes changed.
type packState struct {
	dev, ino uint64
	size     int64
	ctime    int64 // nanoseconds since 1970
}

func stateOf(st *syscall.Stat_t) packState {
	return packState{dev: uint64(st.Dev), ino: st.Ino, size: st.Size, ctime: ctimeOf(st)}
}

// settled reports whether a read that began at start, after the stat
// that gave s, read bytes that any later write would give another change
// time than s's: start is at least tick after it, tick being at least a
// tick of the file system's clock. A change time in whole seconds is
// taken as a clock of seconds (two, as FAT's).
func (s packState) settled(start time.Time, tick time.Duration) bool {
	if s.ctime%int64(time.Second) == 0 {
		tick = max(tick, 2*time.Second)
	}
	return start.UnixNano()-s.ctime >= int64(tick)
}

// settleTick is the tick settled is given (Cache.settle): more than the
// coarsest tick of a Linux file system's clock (10 ms at HZ=100).
const settleTick = 100 * time.Millisecond

// maxCheckedPacks bounds the packs whose checked entries a process
// remembers (a few dozen bytes each, and one per entry); past it one is
// forgotten for each new one.
const maxCheckedPacks = 1 << 14

// checkedEntries are the entries this process checked, by pack.
type checkedEntries struct {
	mu sync.Mutex
	m  map[uint64]*checkedPack
}

// checkedPack is the entries of one pack checked while it had state.
type checkedPack struct {
	state   packState
	entries map[int64]int64 // the header's offset: the length
}

// has reports whether the entry at at was checked while its pack had
// state s.
func (ce *checkedEntries) has(at place, s packState) bool {
	ce.mu.Lock()
	defer ce.mu.Unlock()
	p := ce.m[at.pack]
	return p != nil && p.state == s && p.entries[at.off] == at.length
}

// add notes that the entry at at was checked while its pack had state s.
// The entries noted under another state of the pack are forgotten.
func (ce *checkedEntries) add(at place, s packState) {
	ce.mu.Lock()
	defer ce.mu.Unlock()
	p := ce.m[at.pack]
	if p == nil || p.state != s {
		if ce.m == nil {
			ce.m = map[uint64]*checkedPack{}
		}
		if p == nil && len(ce.m) >= maxCheckedPacks {
			for k := range ce.m { // one of them, as the map's order has it
				delete(ce.m, k)
				break
			}
		}
		p = &checkedPack{state: s, entries: map[int64]int64{}}
		ce.m[at.pack] = p
	}
	p.entries[at.off] = at.length
}

// forget forgets the entry at at (it failed a check).
func (ce *checkedEntries) forget(at place) {
	ce.mu.Lock()
	defer ce.mu.Unlock()
	if p := ce.m[at.pack]; p != nil {
		delete(p.entries, at.off)
	}
}
