package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestFooter(t *testing.T) {
	f, err := Footer("v0.1.0", "v1.2.0", "linux_amd64")
	if err != nil {
		t.Fatal(err)
	}
	if len(f) != 22+8*32+256 {
		t.Fatalf("footer is %d bytes", len(f))
	}
	if !bytes.HasPrefix(f, []byte("\x00\x93\x04\x10duckdb_signature\x80\x04")) {
		t.Fatalf("header %q", f[:22])
	}
	field := func(i int) string { return string(bytes.TrimRight(f[22+32*i:22+32*(i+1)], "\x00")) }
	want := []string{"", "", "", "C_STRUCT", "v0.1.0", "v1.2.0", "linux_amd64", "4"}
	for i, w := range want {
		if got := field(i); got != w {
			t.Errorf("field %d = %q, want %q", i, got, w)
		}
	}
	if _, err := Footer(string(make([]byte, 33)), "v1.2.0", "linux_amd64"); err == nil {
		t.Error("a 33-byte field was accepted")
	}
}

func TestFooterUnstable(t *testing.T) {
	f, err := FooterABI("C_STRUCT_UNSTABLE", "v0.1.0", "v2.0.0", "linux_amd64")
	if err != nil {
		t.Fatal(err)
	}
	field := func(i int) string { return string(bytes.TrimRight(f[22+32*i:22+32*(i+1)], "\x00")) }
	if field(3) != "C_STRUCT_UNSTABLE" || field(5) != "v2.0.0" {
		t.Fatalf("abi %q, api %q", field(3), field(5))
	}
}

func TestRun(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "lib.so"), filepath.Join(dir, "x.duckdb_extension")
	if err := os.WriteFile(in, []byte("ELF..."), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(in, out, "v1", "v1.2.0", "linux_amd64"); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(data, []byte("ELF...")) || len(data) != 6+534 {
		t.Fatalf("output is %d bytes", len(data))
	}
}
