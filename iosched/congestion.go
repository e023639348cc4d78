package iosched

// Throttling: how the effective parallelism (the limit) follows the store.
//
// S3 answers 503 SlowDown in two situations that need opposite reactions.
// Under load-correlated throttling a prefix really is over its request
// rate: fewer requests in flight, fewer throttled answers, and backing off
// is right. Random throttling (a partition moving, one busy front end) hits
// a share of requests whatever their number: backing off only empties the
// pipe, and halving per throttle (TCP Reno, Lance's AIMD, the AWS SDKs'
// adaptive mode, which cuts its send rate by 30 % per throttle) drives 64
// requests in flight down to about 1 under 5 % random 503s. TCP learned the
// same about packet loss that is not congestion: loss-tolerant controllers
// react to the loss rate rather than to each loss, and an undo (Eifel,
// F-RTO) takes back a reaction that the following round shows was spurious.
//
// The controller works in rounds. A round ends after max(limit, minRound)
// answers to GETs sent during it; its throttled share f is compared with
// the background share bg (what random throttling costs anyway, learned):
//
//   - f − bg ≥ severeExcess: the store refuses a large part of what we
//     send. Cut at once to the concurrency it did serve, the limit less
//     the throttled answers beyond the background: a server that takes
//     16 of 64 requests gets 16, in one step. (Meanwhile each throttled
//     answer has held one GET back until the round ends: debt.)
//   - f above bg + tolerance + two standard errors of the round, in two
//     rounds in a row (three until bg was learned from learnRounds
//     rounds): the same cut. One noisy round does nothing.
//   - The round after a cut tests it. If the throttled share fell to at
//     most bg + (f−bg)/4, throttling followed our load and the cut stays.
//     If it fell less, the cut stays and the round is judged as any other
//     (it may cut further). If it did not fall (the excess kept at least
//     3/4 of itself, and the share is at most maxBg), our load was not the
//     cause: the cut is undone and bg moves half-way to the share. The
//     testing round is twice as long, for a steadier verdict.
//   - Otherwise, at the parallelism, bg follows f slowly (an EMA with gain
//     bgGain); below it only an undo moves bg, or load-correlated
//     throttling would creep into it. The limit grows by one per
//     AIMDInterval since the last kept cut, up to the parallelism.
//
// Answers that are neither a success nor a throttle (resets, timeouts) say
// nothing about load and are not counted. Answers to GETs sent before the
// current round began describe an older limit and are ignored.

import (
	"math"
	"time"
)

const (
	minRound     = 32   // answers a round needs at least
	severeExcess = 0.25 // throttled share above the background that cuts at once
	tolerance    = 0.02 // share above the background a round may show for free
	maxBg        = 0.25 // a larger share is never taken for background noise
	bgGain       = 1.0 / 8
	learnRounds  = 8 // rounds at the parallelism before bg counts as known
)

// congestion is the throttling controller of one scheduler. It is not safe
// for concurrent use: the scheduler calls it under its mutex.
type congestion struct {
	p, limit int
	minLimit int // lowest limit so far

	roundStart time.Time
	n, t       int // answers and throttled answers of the round
	// debt holds back one GET per throttled answer of the round (beyond
	// the background's share) until the round ends (effective): a
	// throttled slot is not refilled at once,
	// as TCP's fast recovery deflates its window per loss, so a store
	// refusing most of what we send is not sent more while the round
	// that measures it runs.
	debt  int
	above int // consecutive rounds above the margin

	testing  bool // this round tests the last cut
	cutFrom  int  // limit before it
	cutShare float64

	bg       float64
	learned  int // rounds bg learned from
	lastGrow time.Time
	interval time.Duration

	cuts, undos int64
}

func newCongestion(p int, interval time.Duration, now time.Time) *congestion {
	return &congestion{p: p, limit: p, minLimit: p, roundStart: now, lastGrow: now, interval: interval}
}

// answer records the outcome of a GET sent at issued: throttled or served.
func (c *congestion) answer(issued, now time.Time, throttled bool) {
	if issued.Before(c.roundStart) {
		return
	}
	c.n++
	if throttled {
		c.t++
		c.debt++
	}
	need := max(c.limit, minRound)
	if c.testing {
		need *= 2 // a verdict on a cut needs a steadier share
	}
	if c.n >= need {
		c.endRound(now)
	}
}

func (c *congestion) endRound(now time.Time) {
	f := float64(c.t) / float64(c.n)
	excess := f - c.bg
	// The window the store served: the limit less the throttled answers
	// beyond the background (the debt has held them back all round).
	served := float64(c.limit) - max(0, float64(c.t)-c.bg*float64(c.n))
	margin := tolerance + 2*math.Sqrt(max(c.bg, 0.02)*(1-c.bg)/float64(c.n))
	c.roundStart, c.n, c.t, c.debt = now, 0, 0, 0
	if c.testing {
		c.testing = false
		switch {
		case excess <= (c.cutShare-c.bg)/4:
			c.lastGrow = now // the cut helped: it stays
			c.above = 0
			if excess <= margin {
				return
			}
		case excess < (c.cutShare-c.bg)*3/4:
			// It fell some: part of the throttling was ours; keep the cut
			// and judge this round as any other (it may cut further).
			c.lastGrow = now
			c.above = 0
		case f <= maxBg:
			// The share did not fall with our load: not ours to fix.
			c.setLimit(c.cutFrom)
			c.bg += (f - c.bg) / 2
			c.undos++
			c.above = 0
			c.lastGrow = now
			return
		}
	}
	switch {
	case excess >= severeExcess:
		c.cut(served, f, now)
	case excess > margin:
		// Two rounds in a row; three while the background is barely
		// learned (a new domain), when a round of random throttling alone
		// looks like excess.
		need := 2
		if c.learned < learnRounds {
			need = 3
		}
		if c.above++; c.above >= need {
			c.cut(served, f, now)
		}
	default:
		c.above = 0
		// Only at the parallelism is the share the background: below it
		// we are probing for the store's capacity, and the share there
		// would carry load-correlated throttling into bg round by round
		// (there only an undo moves it).
		if c.limit >= c.p {
			c.bg += bgGain * (min(f, maxBg) - c.bg)
			c.learned++
		}
	}
}

// cut lowers the limit to the concurrency the store served and tests the
// cut in the next round.
func (c *congestion) cut(served, f float64, now time.Time) {
	c.cutFrom, c.cutShare = c.limit, f
	c.setLimit(int(math.Round(served)))
	c.testing = true
	c.above = 0
	c.cuts++
	c.lastGrow = now
}

func (c *congestion) setLimit(n int) {
	c.limit = min(max(1, n), c.p)
	c.minLimit = min(c.minLimit, c.limit)
}

// random reports whether throttled answers count as random for their
// retry's back-off: no cut, or a small one, is in force. 5 % random 503s
// now and then trip a cut of a few (64 to 60) that a lucky test round
// keeps; it grows back by one per interval, which outlasts a short scan,
// and its throttles would back off exponentially for nothing. A cut of a
// quarter or more is the store refusing our load.
func (c *congestion) random() bool {
	return c.limit >= c.p-c.p/4
}

// effective is how many GETs may run now: the limit less the round's
// throttled answers beyond what the background share explains (random
// throttling holds nothing back), at least one.
func (c *congestion) effective() int {
	expected := int(math.Ceil((c.bg + tolerance) * float64(c.n)))
	return max(1, c.limit-max(0, c.debt-expected))
}

// grow adds one to the limit per interval since the last change, unless a
// cut is being tested; a test that got too few answers in four intervals
// ends, keeping the cut.
func (c *congestion) grow(now time.Time) {
	if c.testing && now.Sub(c.roundStart) >= 4*c.interval {
		// Too few answers to judge the cut (the work ran out): keep it.
		c.testing = false
		c.roundStart, c.n, c.t, c.debt = now, 0, 0, 0
		c.lastGrow = now
	}
	if c.limit >= c.p || c.testing {
		c.lastGrow = now
		return
	}
	if k := int(now.Sub(c.lastGrow) / c.interval); k > 0 {
		c.setLimit(c.limit + k)
		c.lastGrow = c.lastGrow.Add(time.Duration(k) * c.interval)
	}
}

// setParallelism changes the ceiling: an unthrottled controller follows it,
// a throttled one keeps a lower limit.
func (c *congestion) setParallelism(n int) {
	if c.limit >= c.p || c.limit > n {
		c.limit = n
	}
	c.p = n
	c.minLimit = min(c.minLimit, c.limit)
}

// retryBudget is a token bucket that retries of throttled, reset and timed
// out GETs draw from, as in the AWS SDKs' retry quota: a retry costs
// retryCost tokens (a timeout timeoutCost), a GET that succeeds at its first
// attempt adds one, a retry that succeeds gives its cost back. A store that
// keeps failing empties the bucket and requests fail fast; 5 % throttled
// answers never do, since the successes refill it.
type retryBudget struct {
	tokens, capacity int
}

const (
	retryCost   = 5
	timeoutCost = 10
)

func (r *retryBudget) take(cost int) bool {
	if r.capacity < 0 {
		return true // unlimited
	}
	if r.tokens < cost {
		return false
	}
	r.tokens -= cost
	return true
}

func (r *retryBudget) refund(n int) {
	if r.capacity >= 0 {
		r.tokens = min(r.capacity, r.tokens+n)
	}
}

// The scheduler's side of throttling.

// answerLocked feeds the outcome of a GET sent at issued to the throttling
// controller and tells running batches about a lower limit.
func (s *Scheduler) answerLocked(issued, now time.Time, throttled bool) {
	s.accountLocked(now)
	s.cc.answer(issued, now, throttled)
	s.limitChangedLocked()
}

// growLocked lets the limit grow back (see congestion.grow).
func (s *Scheduler) growLocked(now time.Time) {
	s.cc.grow(now)
}

// limitChangedLocked records the limit in the running batches' minimum.
// Every answer calls it, so it visits the batches only when the limit fell
// below the one they last heard of: a batch records a minimum, which a
// higher limit does not change, and a batch that starts records the limit
// then. Visiting every batch on every answer made each chunk of a scan of
// many small ones cost as many steps as there were chunks in flight.
func (s *Scheduler) limitChangedLocked() {
	if s.cc.limit >= s.notedLimit {
		s.notedLimit = s.cc.limit
		return
	}
	s.notedLimit = s.cc.limit
	for b := range s.batches {
		b.noteLimit(s.cc.limit)
	}
}
