package cabi

import (
	"encoding/binary"
	"math/rand/v2"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// fencedPage returns a page of memory between two pages that may not be
// read: a kernel that reads one byte before or after a buffer placed at
// either end of it ends the test with SIGSEGV.
func fencedPage(t *testing.T) []byte {
	t.Helper()
	ps := os.Getpagesize()
	m, err := unix.Mmap(-1, 0, 3*ps, unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(m) })
	page := m[ps : 2*ps : 2*ps]
	if err := unix.Mprotect(page, unix.PROT_READ|unix.PROT_WRITE); err != nil {
		t.Fatal(err)
	}
	return page
}

// shortStrings returns the offsets of rows strings of 0 to 12 bytes and
// their total length. The first and last rows are of 0 or 1 byte, so that
// strings start at each of the buffer's first 5 bytes and its last 13.
func shortStrings(rng *rand.Rand, rows int) ([]int64, int) {
	offs := make([]int64, rows+1)
	for r := range rows {
		l := rng.IntN(13)
		switch {
		case r == 0 || r == 5 || r == rows-1:
			l = 0
		case r < 5 || r >= rows-13:
			l = 1
		}
		offs[r+1] = offs[r] + int64(l)
	}
	return offs, int(offs[rows])
}

// wantSlot is DuckDB's inline string_t of s: its length, its bytes, zeros.
func wantSlot(s []byte) (w [16]byte) {
	binary.LittleEndian.PutUint32(w[:4], uint32(len(s)))
	copy(w[4:], s)
	return w
}

func narrow(offs []int64) []int32 {
	o := make([]int32, len(offs))
	for i, v := range offs {
		o[i] = int32(v)
	}
	return o
}

// The string kernel writes every short string's slot exactly (its bytes,
// then zeros: DuckDB compares all 16), with 4- and 8-byte offsets, from
// any starting row, skipping NULL rows whatever their offsets say, and
// reads no byte outside the character buffer, wherever the buffer sits:
// it loads 16 bytes around a string where they are inside the buffer.
func TestCopyShortStrings(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	page := fencedPage(t)
	const rows = 300
	for round := range 40 {
		offs, size := shortStrings(rng, rows)
		// The buffer at the page's start, then at its end.
		chars := page[:size:size]
		if round%2 == 1 {
			chars = page[len(page)-size:]
		}
		for i := range chars {
			chars[i] = byte(1 + rng.IntN(255)) // no zero a slot's padding could hide
		}
		var validity []byte
		if round%4 >= 2 {
			validity = make([]byte, (rows+7)/8)
			for r := range rows {
				if rng.IntN(5) != 0 {
					validity[r/8] |= 1 << (r % 8)
				}
			}
		}
		// From the first row to the last in most rounds: those at the
		// buffer's ends.
		p, n := 0, rows
		if round%5 == 4 {
			p = rng.IntN(rows / 2)
			n = rows - p - rng.IntN(4)
		}
		if validity != nil {
			// A NULL row's offsets are never read as a string: make the
			// one after a NULL row nonsense, unless a valid row needs it.
			for r := p; r < p+n; r++ {
				if validity[r/8]&(1<<(r%8)) == 0 && r > 0 && validity[(r-1)/8]&(1<<((r-1)%8)) == 0 {
					offs[r] = -5
				}
			}
		}
		slots := make([][16]byte, n)
		for i := range slots {
			slots[i] = [16]byte{0: 0xee, 15: 0xee} // left alone for a NULL row
		}
		var why int
		if round%3 == 0 {
			why = guardedCopyUTF8(slots, offs, chars, validity, p, n)
		} else {
			why = guardedCopyUTF8(slots, narrow(offs), chars, validity, p, n)
		}
		if why != 0 {
			t.Fatalf("round %d: verdict %d for good offsets", round, why)
		}
		for r := range n {
			i := p + r
			want := [16]byte{0: 0xee, 15: 0xee}
			if validity == nil || validity[i/8]&(1<<(i%8)) != 0 {
				want = wantSlot(chars[offs[i]:offs[i+1]])
			}
			if slots[r] != want {
				t.Fatalf("round %d: row %d (bytes %d to %d of %d): slot %x, want %x", round, i, offs[i], offs[i+1], len(chars), slots[r], want)
			}
		}
	}
}

// Every offset that does not fit the character buffer ends the copy with
// the bad-bytes verdict: negative, decreasing, or past the buffer's end.
func TestCopyBadOffsets(t *testing.T) {
	chars := []byte("abcdefghijklmnopqrstuvwxyz")
	for _, c := range []struct {
		name string
		offs []int64
	}{
		{"negative first", []int64{-1, 3, 6}},
		{"negative later", []int64{0, 3, -2}},
		{"decreasing", []int64{0, 5, 4}},
		{"past the end", []int64{0, 3, 27}},
		{"past the end, short", []int64{26, 27}},
	} {
		for _, wide := range []bool{false, true} {
			slots := make([][16]byte, len(c.offs)-1)
			var why int
			if wide {
				why = guardedCopyUTF8(slots, c.offs, chars, nil, 0, len(slots))
			} else {
				why = guardedCopyUTF8(slots, narrow(c.offs), chars, nil, 0, len(slots))
			}
			if why != guardBadBytes {
				t.Errorf("%s (8-byte offsets %v): verdict %d, want %d (bad bytes)", c.name, wide, why, guardBadBytes)
			}
		}
	}
}

// A string of more than 4 GiB (8-byte offsets) ends the copy with the
// out-of-range verdict: DuckDB's length is 32 bits, and the length cut to
// them would be another, wrong string. The buffer is 5 GiB of address
// space, never touched.
func TestCopyStringOver4GiB(t *testing.T) {
	const size = 5 << 30
	m, err := unix.Mmap(-1, 0, size, unix.PROT_READ, unix.MAP_PRIVATE|unix.MAP_ANON|unix.MAP_NORESERVE)
	if err != nil {
		t.Skipf("cannot reserve 5 GiB of address space: %v", err)
	}
	defer unix.Munmap(m)
	for _, offs := range [][]int64{{0, 1<<32 + 5}, {2, 3, 3 + 1<<32}} {
		slots := make([][16]byte, len(offs)-1)
		if why := guardedCopyUTF8(slots, offs, m, nil, 0, len(slots)); why != guardRange {
			t.Errorf("offsets %v: verdict %d, want %d (out of range); slots %x", offs, why, guardRange, slots)
		}
	}
}
