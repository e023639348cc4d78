package budget

// tryReserve charges wire × multiplier bytes without blocking, under the
// same rules as Reserve: the tests' probe of whether a request would be
// admitted now. It fails when anyone is waiting at b or a parent (FIFO: it
// may not jump the queue) or when the bytes are not free; on failure it
// returns nil, false and leaves the budget unchanged (a Reserve with a
// cancelled context would count a wait). It panics like Reserve.
func (b *Budget) tryReserve(wire int64) (*Lease, bool) {
	checkWire(wire)
	b.lock()
	n := reservation(wire, b.mult)
	if b.blockedLevelLocked(n) != nil {
		b.unlock()
		return nil, false
	}
	b.grantBelowLocked(nil, n)
	l := b.newLeaseLocked(wire, n)
	b.unlock()
	return l, true
}
