// Package faultproxy is a reverse proxy that injects latency, throttling, stalls, resets and short bodies in front of an HTTP or S3 server and counts concurrent requests.
package faultproxy

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// Kind is a fault the proxy injects into one request.
type Kind int

const (
	None     Kind = iota
	SlowDown      // 503 with an S3 SlowDown XML body
	Status        // Fault.Status with an S3-style error body, e.g. 403 or 500
	Reset         // after Fault.After body bytes, reset the connection (RST)
	Stall         // after Fault.After body bytes, send nothing until the client gives up or Config.StallFor passes
	Short         // after Fault.After body bytes, close the connection cleanly: a short body
)

func (k Kind) String() string {
	switch k {
	case None:
		return "none"
	case SlowDown:
		return "slowdown"
	case Status:
		return "status"
	case Reset:
		return "reset"
	case Stall:
		return "stall"
	case Short:
		return "short"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Fault is what happens to one request.
type Fault struct {
	Kind   Kind
	Status int           // for Status
	After  int64         // body bytes sent before Reset, Stall or Short; < 0 picks a random point inside the body
	Delay  time.Duration // latency added to Config.Latency for this request
}

// Config sets the faults. Latency applies to every request; the
// probabilities apply to GET requests only, drawn from an RNG seeded with
// Seed, and at most one fault hits a request.
type Config struct {
	Latency  time.Duration // before the request is forwarded
	Jitter   time.Duration // uniform extra latency in [0, Jitter)
	SlowDown float64       // probability of a 503 SlowDown
	Reset    float64       // probability of a reset inside the body
	Stall    float64       // probability of a stall inside the body
	Short    float64       // probability of a short body
	StallFor time.Duration // how long a stall lasts; 0 means until the client disconnects
	// Capacity, when positive, makes the proxy a server that takes that many
	// GETs at once: a GET arriving while Capacity others are being served
	// is answered 503 SlowDown (after the latency), as S3 does under load.
	Capacity int
	// RetryAfter, when positive, is sent as the Retry-After header (whole
	// seconds, at least 1) of every 503 SlowDown.
	RetryAfter time.Duration
	Seed       uint64
	// Rule, when set, decides the fault of each request (n counts requests
	// from 1); returning false falls back to the probabilities.
	Rule func(r *http.Request, n int64) (Fault, bool)
}

// Sample is the number of requests in flight from time T on.
type Sample struct {
	T        time.Time
	InFlight int
}

// Stats counts what the proxy saw and did.
type Stats struct {
	Requests    int64
	InFlight    int // now
	MaxInFlight int // since New or ResetMax
	Faults      map[Kind]int64
	// OverCapacity counts the SlowDowns of Config.Capacity (they are also
	// in Faults[SlowDown]).
	OverCapacity int64
}

// Proxy forwards requests to one upstream, keeping the Host header so that
// S3 signatures stay valid. A Proxy is safe for concurrent use.
type Proxy struct {
	URL string // the proxy's base URL, http://127.0.0.1:PORT

	upstream *url.URL
	srv      *httptest.Server
	tr       *http.Transport
	closing  chan struct{}

	mu       sync.Mutex
	cfg      Config
	rng      *rand.Rand
	n        int64
	cur, max int
	serving  int // GETs admitted under Config.Capacity, not answered yet
	over     int64
	faults   map[Kind]int64
	paths    map[string]int64
	events   []Sample
	// time-weighted in-flight integral of the current window
	winStart, last time.Time
	integral       float64 // in-flight × seconds
	winMax         int
}

const maxEvents = 4 << 20

// New starts a proxy on 127.0.0.1 in front of upstream (a base URL such as
// "http://127.0.0.1:7070"). The caller must Close it.
func New(upstream string, cfg Config) (*Proxy, error) {
	u, err := url.Parse(upstream)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("faultproxy: bad upstream %q", upstream)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 1024
	tr.DisableCompression = true
	now := time.Now()
	p := &Proxy{
		upstream: u, tr: tr, closing: make(chan struct{}),
		faults: map[Kind]int64{}, paths: map[string]int64{},
		winStart: now, last: now,
	}
	p.setConfigLocked(cfg)
	p.srv = httptest.NewUnstartedServer(p)
	p.srv.Start()
	p.URL = p.srv.URL
	return p, nil
}

// SetConfig replaces the configuration; requests already running keep
// their fault. It reseeds the RNG.
func (p *Proxy) SetConfig(cfg Config) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.setConfigLocked(cfg)
}

func (p *Proxy) setConfigLocked(cfg Config) {
	p.cfg = cfg
	p.rng = rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))
}

// Close stops the proxy, releasing stalled requests.
func (p *Proxy) Close() {
	close(p.closing)
	p.srv.Close()
	p.tr.CloseIdleConnections()
}

// Stats returns counters; the fault map is a copy.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := make(map[Kind]int64, len(p.faults))
	for k, v := range p.faults {
		f[k] = v
	}
	return Stats{Requests: p.n, InFlight: p.cur, MaxInFlight: p.max, Faults: f, OverCapacity: p.over}
}

// Count returns how many requests asked for path.
func (p *Proxy) Count(path string) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.paths[path]
}

// ResetMax restarts the maximum in-flight count from the current count.
func (p *Proxy) ResetMax() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.max = p.cur
}

// StartWindow starts a measurement window of the time-weighted in-flight
// average (and its maximum) now.
func (p *Proxy) StartWindow() {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	p.winStart, p.last, p.integral, p.winMax = now, now, 0, p.cur
}

// Window returns the time-weighted average and the maximum of the in-flight
// count since StartWindow (or New), and the window's length.
func (p *Proxy) Window() (avg float64, max int, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	integral := p.integral + float64(p.cur)*now.Sub(p.last).Seconds()
	d = now.Sub(p.winStart)
	if d > 0 {
		avg = integral / d.Seconds()
	}
	return avg, p.winMax, d
}

// Events returns the in-flight count after every change, oldest first (at
// most 4 Mi samples are kept).
func (p *Proxy) Events() []Sample {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Sample(nil), p.events...)
}

// Average returns the time-weighted average of the in-flight count over
// [from, to], computed from events.
func Average(events []Sample, from, to time.Time) float64 {
	if !to.After(from) {
		return 0
	}
	var integral float64
	cur := 0
	t := from
	for _, e := range events {
		if e.T.After(to) {
			break
		}
		if e.T.After(t) {
			integral += float64(cur) * e.T.Sub(t).Seconds()
			t = e.T
		}
		cur = e.InFlight
	}
	integral += float64(cur) * to.Sub(t).Seconds()
	return integral / to.Sub(from).Seconds()
}

func (p *Proxy) changeLocked(delta int) {
	now := time.Now()
	p.integral += float64(p.cur) * now.Sub(p.last).Seconds()
	p.last = now
	p.cur += delta
	if p.cur > p.max {
		p.max = p.cur
	}
	if p.cur > p.winMax {
		p.winMax = p.cur
	}
	if len(p.events) < maxEvents {
		p.events = append(p.events, Sample{T: now, InFlight: p.cur})
	}
}

// decide draws the fault and the latency of one request; admitted says the
// request holds one of Config.Capacity's places until leave.
func (p *Proxy) decide(r *http.Request) (f Fault, delay time.Duration, admitted bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	p.paths[r.URL.Path]++
	p.changeLocked(+1)
	cfg := p.cfg
	delay = cfg.Latency
	if cfg.Jitter > 0 {
		delay += time.Duration(p.rng.Int64N(int64(cfg.Jitter)))
	}
	ok := false
	if cfg.Rule != nil {
		f, ok = cfg.Rule(r, p.n)
	}
	if !ok && r.Method == http.MethodGet {
		x := p.rng.Float64()
		for _, c := range []struct {
			prob float64
			kind Kind
		}{{cfg.SlowDown, SlowDown}, {cfg.Reset, Reset}, {cfg.Stall, Stall}, {cfg.Short, Short}} {
			if x < c.prob {
				f = Fault{Kind: c.kind, After: -1}
				break
			}
			x -= c.prob
		}
	}
	if f.After < 0 {
		f.After = -1 - p.rng.Int64N(1<<62) // resolved against the body length later
	}
	if cfg.Capacity > 0 && r.Method == http.MethodGet && f.Kind != SlowDown && f.Kind != Status {
		if p.serving >= cfg.Capacity {
			f = Fault{Kind: SlowDown, Delay: f.Delay}
			p.over++
		} else {
			p.serving++
			admitted = true
		}
	}
	if f.Kind != None {
		p.faults[f.Kind]++
	}
	return f, delay + f.Delay, admitted
}

func (p *Proxy) leave(admitted bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if admitted {
		p.serving--
	}
	p.changeLocked(-1)
}

func (p *Proxy) sleep(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
	case <-p.closing:
	}
	return false
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f, delay, admitted := p.decide(r)
	// The count drops before net/http flushes the last bytes, so the client
	// cannot see its response end before the proxy counts it as finished.
	defer p.leave(admitted)
	if !p.sleep(r, delay) {
		return
	}
	switch f.Kind {
	case SlowDown:
		p.mu.Lock()
		ra := p.cfg.RetryAfter
		p.mu.Unlock()
		if ra > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(max(1, int(ra/time.Second))))
		}
		writeS3Error(w, http.StatusServiceUnavailable, "SlowDown", "Please reduce your request rate.")
		return
	case Status:
		writeS3Error(w, f.Status, codeOf(f.Status), http.StatusText(f.Status))
		return
	}

	out := r.Clone(r.Context())
	out.URL.Scheme = p.upstream.Scheme
	out.URL.Host = p.upstream.Host
	out.Host = r.Host // keep the signed Host header
	out.RequestURI = ""
	out.Header.Del("Connection")
	resp, err := p.tr.RoundTrip(out)
	if err != nil {
		if r.Context().Err() == nil {
			http.Error(w, "faultproxy: upstream: "+err.Error(), http.StatusBadGateway)
		}
		return
	}
	defer resp.Body.Close()
	h := w.Header()
	for k, v := range resp.Header {
		switch k {
		case "Connection", "Keep-Alive", "Transfer-Encoding", "Content-Length":
			continue
		}
		h[k] = v
	}
	if resp.ContentLength >= 0 {
		h.Set("Content-Length", strconv.FormatInt(resp.ContentLength, 10))
	}
	w.WriteHeader(resp.StatusCode)

	after := int64(-1) // no body fault
	if f.Kind == Reset || f.Kind == Stall || f.Kind == Short {
		after = f.After
		if after < 0 { // random inside the body
			n := max(resp.ContentLength, 1)
			after = (-1 - after) % n
		}
	}
	buf := make([]byte, 32<<10)
	var sent int64
	for {
		if after >= 0 && sent >= after {
			if !p.bodyFault(w, r, f) {
				return
			}
			after = -1 // a finished stall resumes
		}
		chunk := buf
		if after >= 0 && after-sent < int64(len(chunk)) {
			chunk = buf[:after-sent]
		}
		n, err := resp.Body.Read(chunk)
		if n > 0 {
			if _, werr := w.Write(chunk[:n]); werr != nil {
				return
			}
			sent += int64(n)
		}
		if err != nil {
			return
		}
	}
}

// bodyFault applies a mid-body fault; it reports whether to keep sending.
func (p *Proxy) bodyFault(w http.ResponseWriter, r *http.Request, f Fault) bool {
	w.(http.Flusher).Flush() // hijacking drops buffered bytes
	switch f.Kind {
	case Stall:
		p.mu.Lock()
		d := p.cfg.StallFor
		p.mu.Unlock()
		if d <= 0 {
			select {
			case <-r.Context().Done():
			case <-p.closing:
			}
			return false
		}
		return p.sleep(r, d)
	case Reset, Short:
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return false
		}
		if tc, ok := conn.(*net.TCPConn); ok && f.Kind == Reset {
			tc.SetLinger(0) // close sends RST
		}
		conn.Close()
	}
	return false
}

func codeOf(status int) string {
	switch status {
	case 403:
		return "AccessDenied"
	case 404:
		return "NoSuchKey"
	case 429:
		return "SlowDown"
	case 500:
		return "InternalError"
	case 503:
		return "ServiceUnavailable"
	}
	return "Error" + strconv.Itoa(status)
}

func writeS3Error(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"+
		`<Error><Code>`+code+`</Code><Message>`+msg+`</Message><RequestId>faultproxy</RequestId></Error>`)
}
