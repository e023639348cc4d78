package iosched

// Reading a task's bytes: a mapping when the store maps and the span asked
// for one, else one GET through getRange into the span's buffer.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/remote-segments/remote_segments/iosched/store"
)

// mapRange answers t, a whole span that asked for a mapping, with one from
// a store that maps (a local file): no copy, and the pages are faulted in
// here, in the IO worker. It reports false when the store does not map or
// the mapping failed: the caller then reads the range (whose error, if the
// range is bad, is the one to report).
//
// Whether a span is mapped or read is decided once, by its first attempt,
// under the span's alloc: the same Once that buffer uses to choose the
// memory a read goes into. A span that fell back to reading has its bytes,
// or some of them, in that memory, and its retries read on into it: it is
// never mapped later, and a mapping never stands beside a buffer already
// chosen.
func (s *Scheduler) mapRange(id int, t *task) bool {
	sp := t.sp
	mp, ok := sp.st.(store.Mapper)
	if !ok {
		return false
	}
	mapped := false
	sp.alloc.Do(func() {
		start := time.Now()
		m, err := mp.MapRange(t.b.ctx, sp.name, t.off, t.length)
		if err != nil {
			if sp.length >= 0 {
				sp.buf = s.readBuffer(t)
			}
			return
		}
		s.issued.Add(1)
		t.b.issued.Add(1)
		sp.mapTo(m) // the caller's from now on
		sp.buf = m[:len(m):len(m)]
		s.account(id, t, "MAP", t.off, t.length, start, int64(len(m)), nil)
		mapped = true
	})
	if !mapped {
		return false
	}
	t.buf = sp.buf
	t.done = int64(len(sp.buf))
	return true
}

// buffer returns t's slice of its span's buffer, chosen once per span (see
// readBuffer and mapRange). It is called once the response headers are in,
// so that clearing megabytes overlaps with the body's arrival instead of
// delaying the request; and it is not called under b.mu, which would
// serialize the workers.
func (s *Scheduler) buffer(t *task) []byte {
	if t.buf == nil {
		sp := t.sp
		sp.alloc.Do(func() { sp.buf = s.readBuffer(t) })
		t.buf = sp.buf[t.partAt : t.partAt+t.length]
	}
	return t.buf
}

// readBuffer makes the buffer t's span is read into: the request's own
// Buffer when the span is that one request and the Buffer is long enough,
// else one from the first request's Alloc or a new one. Call it only in
// the span's alloc.
func (s *Scheduler) readBuffer(t *task) []byte {
	sp := t.sp
	if len(sp.members) == 1 {
		if into := t.b.reqs[sp.members[0].index].Buffer; int64(len(into)) >= sp.length {
			return into[:sp.length:sp.length]
		}
	}
	if alloc := t.b.reqs[sp.members[0].index].Alloc; alloc != nil {
		return alloc(int(sp.length))[:sp.length:sp.length]
	}
	return make([]byte, sp.length)
}

// readToEndHint bounds the buffer a read to the end of an object starts
// with when the store gave the body's length: past it, the buffer grows
// as the bytes arrive.
const readToEndHint = 64 << 20

// getRange is the one read path: it makes one GET of length bytes of t's
// object at off (length < 0: to the end of the object) under a watchdog,
// and reports it to the stats and the tracer as name ("GET" or "hedge").
// A known length is read into into(), called once the store has answered
// (so that clearing a large buffer overlaps the body's arrival); a body
// that ends early is ErrShortBody. To the end, the bytes go into a buffer
// that grows. It returns the bytes read, also on failure (a retry resumes
// after them). The attempt is canceled with ErrTimeout when no first byte
// arrives within FirstByteTimeout or no further byte within IdleTimeout;
// hs, if not nil, hears of every byte (the hedge's watch). A nil cancel
// (a local read: see attempt) sets no watchdog.
func (s *Scheduler) getRange(ctx context.Context, cancel context.CancelCauseFunc, id int, t *task, name string, off, length int64, into func() []byte, hs *hedge) ([]byte, error) {
	start := time.Now()
	s.issued.Add(1)
	t.b.issued.Add(1)
	var progress func(int)
	if cancel != nil {
		var sawByte atomic.Bool
		watchdog := time.AfterFunc(s.o.FirstByteTimeout, func() {
			if sawByte.Load() {
				cancel(fmt.Errorf("%w: no byte for %v", ErrTimeout, s.o.IdleTimeout))
			} else {
				cancel(fmt.Errorf("%w: no first byte within %v", ErrTimeout, s.o.FirstByteTimeout))
			}
		})
		defer watchdog.Stop()
		progress = func(m int) {
			if m > 0 {
				if !sawByte.Swap(true) {
					s.lat.addFirstByte(time.Since(start))
				}
				watchdog.Reset(s.o.IdleTimeout)
				if hs != nil {
					hs.progress(m)
				}
			}
		}
	}
	data, headers, err := s.readBody(ctx, t, off, length, into, progress, name != "hedge")
	if err != nil {
		err = s.cause(ctx, err)
	} else if len(data) > 0 {
		s.model.add(headers, time.Since(start), int64(len(data)))
	}
	s.account(id, t, name, off, length, start, int64(len(data)), err)
	return data, err
}

// readBody sends the GET and reads its body as getRange describes, calling
// progress (if not nil) with each read's byte count; it returns the bytes
// read and how long the store took to answer.
func (s *Scheduler) readBody(ctx context.Context, t *task, off, length int64, into func() []byte, progress func(int), own bool) ([]byte, time.Duration, error) {
	start := time.Now()
	body, version, err := getRangeVersion(ctx, t.sp.st, t.sp.name, off, length)
	if err != nil {
		return nil, 0, err
	}
	headers := time.Since(start)
	defer body.Close()
	if err := t.sameVersion(off, version, own); err != nil {
		return nil, headers, err
	}
	var buf []byte
	if length < 0 {
		// One byte more than the length the answer gave, so that its end
		// is read without growing the buffer to twice its size; the
		// server's word is trusted up to readToEndHint, so that a claimed
		// length sets aside no more than that before bytes arrive.
		n := int64(64 << 10)
		if h, ok := body.(store.LenHint); ok && h.LenHint() >= 0 {
			n = max(n, min(h.LenHint()+1, readToEndHint))
		}
		buf = make([]byte, min(n, s.o.MaxReadToEnd+1))
	} else {
		buf = into()
	}
	n := 0
	for {
		if n == len(buf) {
			if length >= 0 {
				return buf, headers, nil
			}
			if int64(n) > s.o.MaxReadToEnd {
				return buf[:n], headers, fmt.Errorf("%w: more than %d bytes, and no length was given for it (give the chunk's length in a catalog)", ErrTooLarge, s.o.MaxReadToEnd)
			}
			buf = slices.Grow(buf, len(buf))[:min(2*int64(len(buf)), s.o.MaxReadToEnd+1)]
		}
		m, err := body.Read(buf[n:])
		n += m
		if progress != nil {
			progress(m)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return buf[:n], headers, err
		}
	}
	if length >= 0 && n < len(buf) {
		return buf[:n], headers, fmt.Errorf("%w: got %d of %d bytes", ErrShortBody, n, len(buf))
	}
	return buf[:n], headers, nil
}

func (s *Scheduler) account(id int, t *task, name string, off, length int64, start time.Time, n int64, err error) {
	d := time.Since(start)
	s.bytes.Add(n)
	t.b.bytes.Add(n)
	if err == nil {
		if length > 0 {
			s.lat.add(length, d)
		}
		s.mu.Lock()
		s.latency.add(d)
		s.mu.Unlock()
	}
	if tr := s.o.Tracer; tr != nil && traces(tr, t.prio.Query) {
		tr.TraceRequest(Event{Name: name, URL: t.sp.st.URL(t.sp.name), Offset: off, Length: length,
			Query: t.prio.Query, Worker: id, Start: start, Dur: d, Bytes: n, Err: err})
	}
}

// traces reports whether tr wants the Events of query (QueryTracer).
func traces(tr Tracer, query uint64) bool {
	qt, ok := tr.(QueryTracer)
	return !ok || qt.Traces(query)
}

// cause replaces a context error caused by a timeout by the timeout.
func (s *Scheduler) cause(ctx context.Context, err error) error {
	if c := context.Cause(ctx); c != nil && errors.Is(c, ErrTimeout) {
		return c
	}
	return err
}

// getRangeVersion is st's GetRange, with the version of the object the
// answer gives where st tells it (store.RangeVersioner), else "".
func getRangeVersion(ctx context.Context, st store.Store, name string, off, length int64) (io.ReadCloser, string, error) {
	if rv, ok := st.(store.RangeVersioner); ok {
		return rv.GetRangeVersion(ctx, name, off, length)
	}
	body, err := st.GetRange(ctx, name, off, length)
	return body, "", err
}

// sameVersion checks the version v of an answer whose bytes start at off
// in the object. An answer to the task's own GET (own) from the task's
// first byte holds all of its bytes: its version becomes the task's. One
// that goes on after bytes an earlier answer gave (a retry after a body
// cut short, a hedge of the rest) must be of that answer's version, else
// it is ErrChanged: the bytes of two versions of an object, the second
// written between the GETs, would make a range of neither. So must the
// parts of a span read by several tasks, each of the first part's
// version: a part of another fails (and fails again when retried, the
// object having changed since the other parts were read). A version
// either answer does not give ("") is not compared.
func (t *task) sameVersion(off int64, v string, own bool) error {
	t.vmu.Lock()
	var was string
	switch {
	case off == t.off:
		if own {
			t.version = v
		}
	case t.version != "" && v != "" && v != t.version:
		was = t.version
	}
	t.vmu.Unlock()
	if was != "" {
		return Changed(was, v)
	}
	if t.sp.parts > 1 {
		return t.sp.partsVersion.Pin(v)
	}
	return nil
}

// VersionPin holds the version of the first answer of several that must
// all be of one version of an object: the parts of a span here, a chunk's
// requests in the scanner. Its methods are safe for concurrent use.
type VersionPin struct {
	mu      sync.Mutex
	version string
}

// Pin keeps v if it is the first version given, and returns ErrChanged
// (Changed) if an earlier answer gave another. An answer that gives none
// ("") is not compared.
func (p *VersionPin) Pin(v string) error {
	if v == "" {
		return nil
	}
	p.mu.Lock()
	was := p.version
	if was == "" {
		p.version = v
	}
	p.mu.Unlock()
	if was != "" && v != was {
		return Changed(was, v)
	}
	return nil
}

// Changed is ErrChanged naming the version the bytes read so far came
// with and the one an answer gave since.
func Changed(was, now string) error {
	return fmt.Errorf("%w (%s, then %s)", ErrChanged, quoteVersion(was), quoteVersion(now))
}

// quoteVersion is a version for a message: the server's words, so quoted
// with their control characters escaped, and cut to 64 bytes.
func quoteVersion(v string) string {
	if len(v) > 64 {
		v = v[:64] + "…"
	}
	return strconv.Quote(v)
}
