package iosched

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/remote-segments/remote_segments/iosched/store"
)

// Domains holds one Store and one Scheduler per store domain (endpoint and
// credentials), so that concurrent queries reading the same domain share one
// connection pool and one IO queue. A process keeps one Domains; it is safe
// for concurrent use. Queries that ask for other scheduler tuning (request
// size, coalescing, retries, timeouts, hedging) get a scheduler of their own
// for that tuning; parallelism is not part of the tuning: it is set on the
// shared scheduler (SetParallelism).
type Domains struct {
	opts Options

	mu     sync.Mutex
	m      map[string]*domain
	closed bool
}

type domain struct {
	st store.Store
	s  *Scheduler
}

// NewDomains returns an empty registry whose schedulers are created with
// opts, where Open's options leave fields zero. A zero opts.Parallelism
// means DefaultLocalParallelism for local files and DefaultParallelism for
// remote stores.
func NewDomains(opts Options) *Domains {
	return &Domains{opts: opts, m: map[string]*domain{}}
}

// Open returns the scheduler and store of rawURL's domain, creating them on
// first use (sizing the store's connection pool to the parallelism), and the
// object's name within the store. Store options only matter on first use of
// a domain; the domain key includes the endpoint and credentials.
// On failure, returns the store's error naming the URL.
func (d *Domains) Open(rawURL string, so store.Options) (*Scheduler, store.Store, string, error) {
	return d.OpenTuned(rawURL, so, Options{})
}

// OpenTuned is Open for a query that asks for its own scheduler tuning:
// non-zero fields of tuning override the registry's options (Parallelism
// aside), and a domain has one scheduler per distinct tuning.
func (d *Domains) OpenTuned(rawURL string, so store.Options, tuning Options) (*Scheduler, store.Store, string, error) {
	key, err := store.Domain(rawURL, so)
	if err != nil {
		return nil, nil, "", err
	}
	o := d.opts.merge(tuning)
	key += "|" + o.tuningKey()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, nil, "", ErrClosed
	}
	if dom := d.m[key]; dom != nil {
		name, err := store.Name(rawURL)
		if err != nil {
			return nil, nil, "", err
		}
		return dom.s, dom.st, name, nil
	}
	if o.Parallelism <= 0 {
		o.Parallelism = DefaultParallelism
		if strings.HasPrefix(key, "file|") {
			o.Parallelism = DefaultLocalParallelism
		}
	}
	if so.MaxConns <= 0 {
		so.MaxConns = o.Parallelism + o.Parallelism/8 + 1 // room for hedges
	}
	st, name, err := store.Open(rawURL, so)
	if err != nil {
		return nil, nil, "", err
	}
	dom := &domain{st: st, s: New(o)}
	d.m[key] = dom
	return dom.s, dom.st, name, nil
}

// Close closes every scheduler and then every store.
func (d *Domains) Close() error {
	d.mu.Lock()
	d.closed = true
	doms := d.m
	d.m = map[string]*domain{}
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

// merge returns o with the non-zero fields of t (Parallelism excepted).
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
	if t.Tracer != nil {
		o.Tracer = t.Tracer
	}
	return o
}

// tuningKey tells apart schedulers of one domain with different tuning.
func (o Options) tuningKey() string {
	w := o.withDefaults()
	return fmt.Sprintf("%d/%d/%d/%v/%v/%v", w.RequestSize, w.CoalesceGap, w.Retries, w.FirstByteTimeout, w.IdleTimeout, w.NoHedge)
}
