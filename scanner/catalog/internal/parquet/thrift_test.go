package parquet

import (
	"runtime"
	"strings"
	"testing"
)

// TestThriftHugeLengths: a list or binary that claims 2^31 elements or
// bytes fails before anything of that size is allocated.
func TestThriftHugeLengths(t *testing.T) {
	for _, tt := range []struct {
		name string
		b    []byte
		want string
	}{
		// Field 2 (schema), a list (0x29) whose header 0xfc has size 15
		// (the count follows as a varint) and elements of type struct.
		{"list", []byte{0x29, 0xfc, 0x80, 0x80, 0x80, 0x80, 0x08, 0x00}, "list of 2147483648 elements"},
		// A list of one struct (0x1c), whose field 4 (name) is a binary
		// (0x48) of 2^31 bytes.
		{"binary", []byte{0x29, 0x1c, 0x48, 0x80, 0x80, 0x80, 0x80, 0x08, 0x00}, "binary of 2147483648 bytes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			footer := tt.b
			data := append([]byte(parquetMagic), footer...)
			data = append(data, byte(len(footer)), 0, 0, 0)
			data = append(data, parquetMagic...)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := readFooter(data)
			runtime.ReadMemStats(&after)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
				t.Fatalf("allocated %d bytes", got)
			}
		})
	}
}
