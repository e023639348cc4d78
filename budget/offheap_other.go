//go:build !linux

package budget

import "errors"

// mapHuge maps nothing here: every buffer comes from the Go heap.
func mapHuge(int) ([]byte, error) {
	return nil, errors.New("budget: no mappings of our own on this system")
}

func unmap(*byte, int) {}

func dropPages(*byte, int) {}
