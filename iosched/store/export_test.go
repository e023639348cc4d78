package store

// SetListBounds lowers the bounds of List for a test; the returned func
// restores them.
func SetListBounds(objects, pages int) (restore func()) {
	o, p := maxListObjects, maxListPages
	maxListObjects, maxListPages = objects, pages
	return func() { maxListObjects, maxListPages = o, p }
}

// SetListFolderHook has a local listing call f with each folder it is
// about to read; the returned func restores the hook.
func SetListFolderHook(f func(path string)) (restore func()) {
	old := listFolderHook
	listFolderHook = f
	return func() { listFolderHook = old }
}
