package cabi

import (
	"bytes"
	"runtime/cgo"
	"strings"
	"testing"
)

// A panic while DuckDB deletes a query's state is reported, with where it
// happened, and the handle is deleted all the same; it never reaches the host.
func TestDeleteHandleReportsPanic(t *testing.T) {
	var report bytes.Buffer
	old := panicReports
	panicReports = &report
	t.Cleanup(func() { panicReports = old })

	h := cgo.NewHandle(&scanState{rows: &rowSource{close: func() { panic("close failed") }}})
	deleteHandle(h)
	if got := report.String(); !strings.Contains(got, "rsDeleteHandle") || !strings.Contains(got, "close failed") {
		t.Errorf("report %q: want the exported function and the panic's value", got)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the handle was not deleted after the panic")
			}
		}()
		h.Value() // panics on a deleted handle
	}()
}
