package iosched

// The queue and its fairness: one sub-queue per query, served round-robin;
// within a query the lowest Priority.Seq first; a retried task keeps its
// place. dispatchLocked starts a worker per free slot while work is queued.

import (
	"container/heap"
	"slices"
	"sync"
	"time"
)

type taskState int

const (
	planned taskState = iota // not queued yet
	queued
	backingOff
	running
	finished
)

// task is one GET-sized piece of work: a whole span or one part of a split
// span.
type task struct {
	b      *Batch
	sp     *span
	off    int64 // in the object
	partAt int64 // offset within the span
	length int64 // < 0: to the end
	buf    []byte
	done   int64 // bytes already in buf: a retry resumes after them
	// version is the object's version (store.RangeVersioner) as the answer
	// that holds the task's first bytes gave it, "" if none did; vmu
	// guards it (a hedge reads it beside the task's own GET).
	vmu     sync.Mutex
	version string

	prio     Priority
	order    int64
	index    int // in its query heap
	state    taskState
	attempts int
	spent    int // retry-budget tokens its retries took
	broken   int // failures that were not throttles (resets, short bodies, timeouts)
	// brokenRun counts those failures in a row (any other outcome ends a run).
	brokenRun int
	// quietSince is when the task last read a byte, or its first attempt
	// began: the stall clock of run's free retries; stalls counts the
	// watch's ends in a row since then.
	quietSince time.Time
	stalls     int
	enqueued   time.Time
	timer      *time.Timer
}

type queryQueue struct {
	id    uint64
	tasks taskHeap
}

type taskHeap []*task

func (h taskHeap) Len() int { return len(h) }
func (h taskHeap) Less(i, j int) bool {
	if h[i].prio.Seq != h[j].prio.Seq {
		return h[i].prio.Seq < h[j].prio.Seq
	}
	return h[i].order < h[j].order
}
func (h taskHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}
func (h *taskHeap) Push(x any) {
	t := x.(*task)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *taskHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	t.index = -1
	return t
}

func (s *Scheduler) pushLocked(t *task, now time.Time) {
	q := s.queues[t.prio.Query]
	if q == nil {
		q = s.spare
		s.spare = nil
		if q == nil {
			q = &queryQueue{}
		}
		q.id = t.prio.Query
		s.queues[q.id] = q
		s.ring = append(s.ring, q)
	}
	t.state = queued
	t.enqueued = now
	heap.Push(&q.tasks, t)
	s.queued++
}

// popLocked takes the next task: the head of the next query in turn that
// is below its share (SetQueryLimit, shareLocked); nil when there is none.
func (s *Scheduler) popLocked(now time.Time) *task {
	if s.queued == 0 {
		return nil
	}
	var q *queryQueue
	for range len(s.ring) {
		if s.rr >= len(s.ring) {
			s.rr = 0
		}
		c := s.ring[s.rr]
		if s.queryRunning[c.id] < s.shareLocked(c.id) {
			q = c
			break
		}
		s.rr++
	}
	if q == nil {
		return nil // every query with queued work runs its share
	}
	s.queryRunning[q.id]++
	t := heap.Pop(&q.tasks).(*task)
	s.queued--
	if q.tasks.Len() == 0 {
		s.dropQueueLocked(s.rr)
	} else {
		s.rr++
	}
	t.state = running
	w := now.Sub(t.enqueued)
	s.queueWait.add(w)
	t.b.queueWait.Add(int64(w))
	return t
}

// dropQueueLocked drops the empty queue s.ring[i]; it is the spare one
// that the next query with work takes (a query whose tasks run as fast
// as they come, one at a time, empties its queue at every task).
func (s *Scheduler) dropQueueLocked(i int) {
	s.spare = s.ring[i]
	delete(s.queues, s.ring[i].id)
	s.ring = slices.Delete(s.ring, i, i+1)
	if s.rr > i {
		s.rr--
	}
}

func (s *Scheduler) removeLocked(t *task) {
	q := s.queues[t.prio.Query]
	heap.Remove(&q.tasks, t.index)
	s.queued--
	if q.tasks.Len() == 0 {
		s.dropQueueLocked(slices.Index(s.ring, q))
	}
}

// dispatchLocked starts workers while slots are free and work is queued.
func (s *Scheduler) dispatchLocked() {
	now := time.Now()
	s.growLocked(now)
	for s.inflight < min(s.cc.effective(), s.p) && s.queued > 0 {
		id := slices.Index(s.busy[:s.p], false)
		// INVARIANT: fewer than p slots below p are busy when inflight < p.
		t := s.popLocked(now)
		if t == nil {
			return
		}
		s.accountLocked(now)
		s.busy[id] = true
		s.inflight++
		if n := len(s.idle); n > 0 {
			w := s.idle[n-1] // the last to go idle: its stack is the warmest
			s.idle[n-1] = nil
			s.idle = s.idle[:n-1]
			w <- workItem{id: id, t: t} // buffered: never blocks
			continue
		}
		s.wg.Add(1)
		s.workers.Add(1)
		go s.worker(id, t)
	}
}

// idleKeep is how long a worker without a task waits for one before it
// exits. A scan's requests come in bursts (a chunk's ranges, then the next
// chunk once the budget lets it) with gaps far shorter than this; a new
// goroutine per burst grew its stack through the store's request path
// again each time.
const idleKeep = 100 * time.Millisecond

// workItem is a task handed to an idle worker, with its slot.
type workItem struct {
	id int
	t  *task
}

// idleWait waits for a task on w, a worker's channel that is on s.idle,
// for at most idleKeep or until Close; timer is the worker's own, stopped.
// It returns the task and its slot, or a nil task: the worker exits.
func (s *Scheduler) idleWait(w chan workItem, timer *time.Timer) (int, *task) {
	timer.Reset(idleKeep)
	defer timer.Stop()
	select {
	case it := <-w:
		return it.id, it.t
	case <-timer.C:
	case <-s.quit:
	}
	s.mu.Lock()
	if i := slices.Index(s.idle, w); i >= 0 {
		s.idle = slices.Delete(s.idle, i, i+1)
		s.mu.Unlock()
		return 0, nil
	}
	s.mu.Unlock()
	// Not on the list any more: dispatchLocked took it, and a task is on
	// its way (or there).
	it := <-w
	return it.id, it.t
}

// worker runs tasks in slot id until the queue is empty or the slot is no
// longer allowed (parallelism or AIMD limit lowered), then waits idle for
// the next (idleWait).
func (s *Scheduler) worker(id int, t *task) {
	defer s.wg.Done()
	var w chan workItem
	var timer *time.Timer // idleWait's, made once: a worker may go idle after every task
	for t != nil {
		q := t.prio.Query
		s.run(id, t)
		s.mu.Lock()
		if s.queryRunning[q]--; s.queryRunning[q] <= 0 {
			delete(s.queryRunning, q)
		}
		now := time.Now()
		s.growLocked(now)
		t = nil
		if id < s.p && s.inflight <= min(s.cc.effective(), s.p) && s.queued > 0 {
			t = s.popLocked(now)
		}
		if t == nil {
			s.accountLocked(now)
			s.inflight--
			s.busy[id] = false
			idle := !s.closed
			if idle {
				if w == nil {
					w = make(chan workItem, 1)
					timer = time.NewTimer(idleKeep)
					timer.Stop()
				}
				s.idle = append(s.idle, w)
			}
			s.dispatchLocked() // may hand this worker the next task
			s.mu.Unlock()
			if idle {
				id, t = s.idleWait(w, timer)
			}
			continue
		}
		s.mu.Unlock()
	}
}
