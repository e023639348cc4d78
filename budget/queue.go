package budget

// waiter is a Reserve call parked in a queue, or an Extend call parked in
// a level's growers.
type waiter struct {
	n int64
	// at is the budget whose queue holds the waiter; nil once the root
	// granted it. It changes only with the locks of both the old and the new
	// level held, and the waiting goroutine reads it with its whole chain
	// locked.
	at         *Budget
	origin     *Budget       // the budget the request was made on
	ready      chan struct{} // closed when the last level grants the request
	prev, next *waiter
}

// waitQueue is an intrusive FIFO list of waiters.
type waitQueue struct {
	head, tail *waiter
	len        int
}

func (q *waitQueue) pushBack(w *waiter) {
	w.prev, w.next = q.tail, nil
	if q.tail == nil {
		q.head = w
	} else {
		q.tail.next = w
	}
	q.tail = w
	q.len++
}

func (q *waitQueue) remove(w *waiter) {
	if w.prev == nil {
		q.head = w.next
	} else {
		w.prev.next = w.next
	}
	if w.next == nil {
		q.tail = w.prev
	} else {
		w.next.prev = w.prev
	}
	w.prev, w.next = nil, nil
	q.len--
}
