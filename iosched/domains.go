package iosched

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/remote-segments/remote_segments/iosched/store"
)

// Domains holds one Store and one Scheduler per store domain (endpoint and
// credentials), so that concurrent queries reading the same domain share one
// connection pool and one IO queue. A process keeps one Domains; it is safe
// for concurrent use. Queries that ask for other scheduler tuning (request
// size, coalescing, retries, timeouts, hedging) get a scheduler of their own
// for that tuning; parallelism is not part of the tuning: a query sets its
// own share of the shared scheduler (SetQueryLimit), and removes it when it
// ends. Nor is the Tracer: a scheduler outlives the query that opened it and
// serves the queries after it, so its tracer is the registry's, and each
// Event names its query.
//
// A domain lives while someone holds it (Open returns a Hold). When the last
// hold is released the domain stays open, idle, so that the next query finds
// its connections and what its scheduler learned; only the keepIdle most
// recently released idle domains are kept, older ones are closed. So a
// process that meets many endpoints or credentials (a session token per
// user, rotated) does not keep a connection pool for each forever.
type Domains struct {
	opts Options

	mu     sync.Mutex
	m      map[domainKey]*domain
	idle   []*domain // held by nobody, least recently released first
	closed bool
}

// keepIdle is how many domains that nobody holds stay open.
const keepIdle = 16

// domainKey tells domains apart: the store's domain (store.Domain) and
// the scheduler's tuning.
type domainKey struct {
	store  string
	tuning tuningKey
}

type domain struct {
	key  domainKey
	st   store.Store
	s    *Scheduler
	refs int // INVARIANT: refs == 0 exactly when the domain is in Domains.idle
}

// Hold is one claim on a store domain, returned by Open: its Scheduler and
// Store stay open until the claim is released. Release it when done (defer
// h.Release()); releasing twice is safe, and a released Hold's Scheduler and
// Store must not be used again.
type Hold struct {
	Scheduler *Scheduler
	Store     store.Store
	Name      string // the object's name in Store

	d        *Domains
	dom      *domain
	released atomic.Bool
}

// Release gives the claim back. The domain's last release leaves it open but
// idle; it is closed when more than keepIdle domains are idle. Release is
// nil-safe and idempotent.
func (h *Hold) Release() {
	if h == nil || h.released.Swap(true) {
		return
	}
	h.d.release(h.dom)
}

// NewDomains returns an empty registry whose schedulers are created with
// opts, where Open's options leave fields zero; opts.Tracer traces every
// scheduler's GETs. A zero opts.Parallelism means DefaultLocalParallelism
// for local files and DefaultParallelism for remote stores.
func NewDomains(opts Options) *Domains {
	return &Domains{opts: opts, m: map[domainKey]*domain{}}
}

// Open returns a hold on rawURL's domain, creating its scheduler and store on
// first use (sizing the store's connection pool to the parallelism), with the
// object's name within the store. Store options only matter on first use of
// a domain; the domain key includes the endpoint and credentials. A query
// that asks for its own scheduler tuning passes it: non-zero fields of
// tuning override the registry's options (Parallelism aside), and a domain
// has one scheduler per distinct tuning (a zero tuning: the registry's).
// On failure, returns the store's error naming the URL, and no hold. Open
// panics if tuning sets a Tracer (see Domains).
func (d *Domains) Open(rawURL string, so store.Options, tuning Options) (*Hold, error) {
	if tuning.Tracer != nil {
		panic("iosched: a query's tuning sets a Tracer; the registry's traces every query (NewDomains)")
	}
	storeKey, name, err := store.DomainName(rawURL, so)
	if err != nil {
		return nil, err
	}
	o := d.opts.merge(tuning)
	key := domainKey{store: storeKey, tuning: o.tuningKey()}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, ErrClosed
	}
	dom := d.m[key]
	if dom == nil {
		if o.Parallelism <= 0 {
			o.Parallelism = DefaultParallelism
			if key.store == "file" {
				o.Parallelism = DefaultLocalParallelism
			}
		}
		if key.store == "file" {
			// A second read of a local file meets the same page cache and
			// disk as the first: it cannot win, and on a busy machine
			// (where a read looks stalled) it only doubles the work.
			o.NoHedge = true
		}
		if so.MaxConns <= 0 {
			so.MaxConns = o.Parallelism + o.Parallelism/8 + 1 // room for hedges
		}
		st, stName, err := store.Open(rawURL, so)
		if err != nil {
			return nil, err
		}
		name = stName
		dom = &domain{key: key, st: st, s: New(o)}
		d.m[key] = dom
	} else if dom.refs == 0 {
		d.idle = slices.DeleteFunc(d.idle, func(x *domain) bool { return x == dom })
	}
	dom.refs++
	return &Hold{Scheduler: dom.s, Store: dom.st, Name: name, d: d, dom: dom}, nil
}

// release drops one hold on dom and closes the least recently released idle
// domains beyond keepIdle.
func (d *Domains) release(dom *domain) {
	d.mu.Lock()
	dom.refs--
	if dom.refs < 0 {
		d.mu.Unlock()
		panic("iosched: domain released more often than held")
	}
	var evict []*domain
	if dom.refs == 0 && !d.closed {
		d.idle = append(d.idle, dom)
		if n := len(d.idle) - keepIdle; n > 0 {
			evict = slices.Clone(d.idle[:n])
			d.idle = slices.Delete(d.idle, 0, n)
			for _, e := range evict {
				delete(d.m, e.key)
			}
		}
	}
	d.mu.Unlock()
	// Closing waits for the scheduler's workers: not under d.mu.
	for _, e := range evict {
		e.s.Close()
		e.st.Close()
	}
}

// Len reports how many domains are open (held or idle).
func (d *Domains) Len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.m)
}

// Close closes every scheduler and then every store, held or not.
func (d *Domains) Close() error {
	d.mu.Lock()
	d.closed = true
	doms := d.m
	d.m = map[domainKey]*domain{}
	d.idle = nil
	d.mu.Unlock()
	var errs []error
	for _, dom := range doms {
		errs = append(errs, dom.s.Close())
	}
	for _, dom := range doms {
		errs = append(errs, dom.st.Close())
	}
	return errors.Join(errs...)
}

// merge returns o with the non-zero fields of t (Parallelism and Tracer
// excepted: they are not a query's to set).
func (o Options) merge(t Options) Options {
	if t.RequestSize != 0 {
		o.RequestSize = t.RequestSize
	}
	if t.CoalesceGap != 0 {
		o.CoalesceGap = t.CoalesceGap
	}
	if t.Retries != 0 {
		o.Retries = t.Retries
	}
	if t.FirstByteTimeout != 0 {
		o.FirstByteTimeout = t.FirstByteTimeout
	}
	if t.IdleTimeout != 0 {
		o.IdleTimeout = t.IdleTimeout
	}
	if t.NoHedge {
		o.NoHedge = true
	}
	return o
}

// tuningKey tells apart schedulers of one domain with different tuning. It
// is a value, not a text: every chunk's open looks its domain up.
type tuningKey struct {
	requestSize, coalesceGap      int64
	retries                       int
	firstByteTimeout, idleTimeout time.Duration
	noHedge                       bool
}

func (o Options) tuningKey() tuningKey {
	w := o.withDefaults()
	return tuningKey{requestSize: w.RequestSize, coalesceGap: w.CoalesceGap, retries: w.Retries,
		firstByteTimeout: w.FirstByteTimeout, idleTimeout: w.IdleTimeout, noHedge: w.NoHedge}
}
