// Command footer appends DuckDB's extension metadata to a shared library,
// turning it into a loadable .duckdb_extension file.
//
// The metadata is a WebAssembly custom section named "duckdb_signature": a
// 22-byte header, eight 32-byte NUL-padded fields, and a 256-byte signature
// (all zero: the extension is unsigned and loads with -unsigned).
//
//	go run ./extension/footer -in lib.so -out x.duckdb_extension -version v0.1.0
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
)

const (
	fieldSize     = 32
	signatureSize = 256
)

// header opens the custom section: id 0, section size 531 (LEB128 93 04),
// name length 16, the name, and the payload size 512 (LEB128 80 04).
var header = append(append([]byte{0x00, 0x93, 0x04, 0x10}, "duckdb_signature"...), 0x80, 0x04)

// Footer returns the metadata block for the given fields, with ABI type
// C_STRUCT (the stable C API).
func Footer(extVersion, apiVersion, platform string) ([]byte, error) {
	return FooterABI("C_STRUCT", extVersion, apiVersion, platform)
}

// FooterABI is Footer with the ABI type: C_STRUCT, or C_STRUCT_UNSTABLE for
// a file tied to one DuckDB release (the V2 C API of DuckDB 2.0.0, whose
// apiVersion is that release, "v2.0.0").
func FooterABI(abi, extVersion, apiVersion, platform string) ([]byte, error) {
	fields := []string{"", "", "", abi, extVersion, apiVersion, platform, "4"}
	var b bytes.Buffer
	b.Write(header)
	for _, f := range fields {
		if len(f) > fieldSize {
			return nil, fmt.Errorf("footer: field %q longer than %d bytes", f, fieldSize)
		}
		var field [fieldSize]byte
		copy(field[:], f)
		b.Write(field[:])
	}
	b.Write(make([]byte, signatureSize))
	return b.Bytes(), nil
}

func main() {
	in := flag.String("in", "", "shared library to read")
	out := flag.String("out", "", "extension file to write")
	version := flag.String("version", "v0.1.0", "extension version")
	api := flag.String("api", "v1.2.0", "C extension API version the library targets")
	platform := flag.String("platform", "linux_amd64", "DuckDB platform name")
	abi := flag.String("abi", "C_STRUCT", "ABI type: C_STRUCT, or C_STRUCT_UNSTABLE for a file tied to one DuckDB release")
	flag.Parse()
	if err := runABI(*in, *out, *abi, *version, *api, *platform); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(in, out, version, api, platform string) error {
	return runABI(in, out, "C_STRUCT", version, api, platform)
}

func runABI(in, out, abi, version, api, platform string) error {
	if in == "" || out == "" {
		return fmt.Errorf("footer: -in and -out are required")
	}
	lib, err := os.ReadFile(in)
	if err != nil {
		return fmt.Errorf("footer: %w", err)
	}
	meta, err := FooterABI(abi, version, api, platform)
	if err != nil {
		return err
	}
	tmp := out + ".tmp"
	if err := os.WriteFile(tmp, append(lib, meta...), 0o755); err != nil {
		return fmt.Errorf("footer: %w", err)
	}
	return os.Rename(tmp, out)
}
