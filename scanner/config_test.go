package scanner

import "testing"

// TestParseBytes: every unit the error names is read, and the errors say
// what is wrong without repeating what the caller says (params.go: "must
// be a byte size such as …").
func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{
		"0": 0, "17": 17, " 2 KB ": 2000, "1.5MiB": 3 << 19, "3mb": 3e6, "2GB": 2e9, "1TB": 1e12,
		"4KiB": 4 << 10, "5GiB": 5 << 30, "1TiB": 1 << 40, "8k": 8 << 10, "2m": 2 << 20, "1g": 1 << 30, "9B": 9,
	} {
		if got, err := ParseBytes(in); err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"lots":                `"lots" is not a non-negative number with an optional unit`,
		"-5":                  `"-5" is not a non-negative number with an optional unit`,
		"":                    `"" is not a non-negative number with an optional unit`,
		"1PiB":                `"1PiB" has unknown unit "pib" (use B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)`,
		"9e99":                `"9e99" has unknown unit "e99" (use B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)`,
		"8EiB":                `"8EiB" has unknown unit "eib" (use B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)`,
		"9223372036854775807": `"9223372036854775807" is too large`,
	} {
		if _, err := ParseBytes(in); err == nil || err.Error() != want {
			t.Errorf("ParseBytes(%q): error %v, want %s", in, err, want)
		}
	}
}
