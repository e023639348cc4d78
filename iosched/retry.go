package iosched

// Retrying: what a failed attempt costs from the retry budget and how long
// the next one waits.

import (
	"errors"
	"io"
	"math/rand/v2"
	"syscall"
	"time"

	"github.com/remote-segments/remote_segments/iosched/store"
)

// maxBudgetedAttempts bounds the attempts of one GET whose retries come
// from the retry budget, so that one object that is always throttled
// cannot retry for ever while other GETs refill the budget.
const maxBudgetedAttempts = 20

// retryCostOf is what retrying err costs from the retry budget: throttles
// and broken connections retryCost, timeouts timeoutCost; 0 for errors
// retried Options.Retries times instead.
func retryCostOf(err error) int {
	switch {
	case errors.Is(err, ErrTimeout):
		return timeoutCost
	case store.Throttled(err), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF), errors.Is(err, ErrShortBody):
		return retryCost
	}
	return 0
}

// retryDelay is the wait before the next attempt of a GET that failed with
// err after attempts attempts: the back-off of that many attempts, or
// between 0 and Backoff/2 while the throttling is random (see run), or
// what the store asked for with Retry-After if that is longer (capped at
// FirstByteTimeout).
func (s *Scheduler) retryDelay(attempts int, err error, random bool) time.Duration {
	var d time.Duration
	if random {
		d = rand.N(s.o.Backoff/2 + 1)
	} else {
		d = s.backoffDelay(attempts)
	}
	if ra := store.RetryAfter(err); ra > d {
		d = min(ra, s.o.FirstByteTimeout) // the store asked for it; a silly value is capped
	}
	return d
}

// backoffDelay is the n-th retry's wait: between d/2 and d for
// d = min(MaxBackoff, Backoff·2ⁿ⁻¹) ("equal jitter").
func (s *Scheduler) backoffDelay(n int) time.Duration {
	d := s.o.Backoff << min(n-1, 20)
	if d > s.o.MaxBackoff || d <= 0 {
		d = s.o.MaxBackoff
	}
	return d/2 + rand.N(d/2+1)
}
