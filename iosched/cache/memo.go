package cache

// What a process remembers between hits, so that a hit on an entry it
// found before costs a stat of an open descriptor and one read, not a
// read of the index, a stat of the pack by its name, an open and a close:
// where entries are (the index slots it read or wrote) and the packs it
// read (kept open).
//
// Neither is trusted more than the index on disk is. A pack is never
// written once it is in place, so a remembered slot names either the
// entry's bytes or a pack removed since; the read checks the header and
// the checksum as before. Every Lookup stats the open descriptor: a pack
// no longer in the directory (evicted or removed by any process, or
// replaced under its name) is closed and its slot forgotten, and the
// index on disk is read again, as if nothing were remembered. What the
// process keeps of removed packs is thus bounded: at most maxOpenPacks
// descriptors, each closed once unused for packIdle (or at the next
// Lookup that meets it).

import (
	"io/fs"
	"sync"
	"syscall"
	"time"
)

// maxPlaces bounds the slots a process remembers (about 64 bytes each in
// its map); past it one is forgotten for each new one (the index on disk
// still has them).
const maxPlaces = 1 << 15

// maxOpenPacks bounds the packs a process keeps open; past it the least
// recently read one not being read is closed.
const maxOpenPacks = 64

// packIdle is how long a pack no read touched stays open.
const packIdle = time.Second

// places are the index slots this process remembers.
type places struct {
	mu sync.Mutex
	m  map[[32]byte]place
}

func (ps *places) get(h [32]byte) (place, bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p, ok := ps.m[h]
	return p, ok
}

func (ps *places) put(h [32]byte, p place) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.m == nil {
		ps.m = map[[32]byte]place{}
	}
	if _, ok := ps.m[h]; !ok && len(ps.m) >= maxPlaces {
		for k := range ps.m { // one of them, as the map's order has it
			delete(ps.m, k)
			break
		}
	}
	ps.m[h] = p
}

// forget forgets h's slot if it is p.
func (ps *places) forget(h [32]byte, p place) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if q, ok := ps.m[h]; ok && q == p {
		delete(ps.m, h)
	}
}

// openPacks are the packs this process keeps open for reading.
type openPacks struct {
	mu    sync.Mutex
	m     map[uint64]*openPack
	clock int64         // counts acquires: the order of recency
	swept bool          // a sweep of unused packs is scheduled
	idle  time.Duration // packIdle; shorter in tests
}

// openPack is one pack open for reading. Its descriptor is closed once
// it is dropped and no read holds it (refs), so that a read never meets
// a descriptor number reused by another open.
type openPack struct {
	num     uint64
	path    string
	fd      int
	refs    int
	last    int64 // the clock at its last acquire
	used    bool  // acquired since the last sweep
	dropped bool
}

// acquirePack returns pack num open, held until releasePack. With st
// not nil it also stats the descriptor into st, and fails as a missing
// file if the pack is no longer in the directory. A pack that is not a
// regular file (a link, a FIFO planted under its name) fails.
func (c *Cache) acquirePack(num uint64, st *syscall.Stat_t) (*openPack, error) {
	ps := &c.packs
	ps.mu.Lock()
	if p := ps.m[num]; p != nil {
		ps.hold(p)
		ps.mu.Unlock()
		if st == nil {
			return p, nil
		}
		if err := c.files.fstat(p.fd, st); err != nil || st.Nlink == 0 {
			c.dropPack(num)
			c.releasePack(p)
			return nil, &fs.PathError{Op: "stat", Path: p.path, Err: syscall.ENOENT}
		}
		return p, nil
	}
	ps.mu.Unlock()
	path := c.packPath(num)
	fd, err := c.files.open(path, syscall.O_RDONLY|noFollow, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	var own syscall.Stat_t
	if st == nil {
		st = &own
	}
	if err := c.files.fstat(fd, st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		c.files.close(fd)
		return nil, &fs.PathError{Op: "open", Path: path, Err: syscall.EINVAL}
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if p := ps.m[num]; p != nil { // opened meanwhile by another read
		c.files.close(fd)
		ps.hold(p)
		return p, nil
	}
	if ps.m == nil {
		ps.m = map[uint64]*openPack{}
	}
	if len(ps.m) >= maxOpenPacks {
		var oldest *openPack
		for _, q := range ps.m {
			if q.refs == 0 && (oldest == nil || q.last < oldest.last) {
				oldest = q
			}
		}
		if oldest != nil {
			c.dropLocked(oldest)
		}
	}
	p := &openPack{num: num, path: path, fd: fd}
	ps.m[num] = p
	ps.hold(p)
	if !ps.swept {
		ps.swept = true
		time.AfterFunc(ps.idle, c.sweepPacks)
	}
	return p, nil
}

// hold takes a reference to p; ps.mu is held.
func (ps *openPacks) hold(p *openPack) {
	ps.clock++
	p.refs++
	p.last, p.used = ps.clock, true
}

// releasePack ends a hold of acquirePack.
func (c *Cache) releasePack(p *openPack) {
	ps := &c.packs
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p.refs--
	if p.refs < 0 {
		panic("cache: pack released more often than acquired")
	}
	if p.dropped && p.refs == 0 {
		c.files.close(p.fd)
	}
}

// dropPack closes pack num (once no read holds it): it was removed.
func (c *Cache) dropPack(num uint64) {
	ps := &c.packs
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if p := ps.m[num]; p != nil {
		c.dropLocked(p)
	}
}

// dropLocked takes p out of the open packs and closes it if no read
// holds it; c.packs.mu is held.
func (c *Cache) dropLocked(p *openPack) {
	delete(c.packs.m, p.num)
	p.dropped = true
	if p.refs == 0 {
		c.files.close(p.fd)
	}
}

// sweepPacks closes the packs not acquired since the last sweep, and
// schedules the next while any stays open.
func (c *Cache) sweepPacks() {
	ps := &c.packs
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, p := range ps.m {
		if !p.used && p.refs == 0 {
			c.dropLocked(p)
		}
		p.used = false
	}
	ps.swept = len(ps.m) > 0
	if ps.swept {
		time.AfterFunc(ps.idle, c.sweepPacks)
	}
}

// closePacks closes every open pack (those being read once they are read).
func (c *Cache) closePacks() {
	ps := &c.packs
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, p := range ps.m {
		c.dropLocked(p)
	}
}
