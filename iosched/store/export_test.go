package store

// SetListBounds lowers the bounds of List for a test; the returned func
// restores them.
func SetListBounds(objects, pages int) (restore func()) {
	o, p := maxListObjects, maxListPages
	maxListObjects, maxListPages = objects, pages
	return func() { maxListObjects, maxListPages = o, p }
}
