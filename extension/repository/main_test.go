package main

import (
	"bytes"
	"compress/gzip"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeExtension writes a file shaped like an extension: a body of n bytes
// and the metadata block of extension/footer for platform and api.
func fakeExtension(t *testing.T, dir, name string, n int, api, platform string) string {
	t.Helper()
	body := bytes.Repeat([]byte(name), n/len(name)+1)[:n]
	meta := append([]byte(nil), header...)
	for _, f := range []string{"", "", "", "C_STRUCT", "v0.1.0", api, platform, "4"} {
		var field [fieldSize]byte
		copy(field[:], f)
		meta = append(meta, field[:]...)
	}
	meta = append(meta, make([]byte, signatureSize)...)
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, append(body, meta...), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func gunzip(t *testing.T, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// verify checks a signature the way DuckDB does: SHA-256 of the concatenated
// SHA-256 of each 1 MiB piece of everything before the signature, written
// out here from DuckDB's scripts rather than through pieceHash.
func verify(t *testing.T, b []byte, pub *rsa.PublicKey) error {
	t.Helper()
	signed, sig := b[:len(b)-signatureSize], b[len(b)-signatureSize:]
	var concat bytes.Buffer
	for len(signed) > 0 {
		n := min(len(signed), 1<<20)
		h := sha256.Sum256(signed[:n])
		concat.Write(h[:])
		signed = signed[n:]
	}
	digest := sha256.Sum256(concat.Bytes())
	return rsa.VerifyPKCS1v15(pub, crypto.SHA256, digest[:], sig)
}

func TestRepositoryLayoutAndSignatures(t *testing.T) {
	dir := t.TempDir()
	// Three pieces and a bit, so the piece hashing is exercised.
	amd := fakeExtension(t, dir, "amd64.ext", 3<<20+17, "v1.2.0", "linux_amd64")
	amdV2 := fakeExtension(t, dir, "amd64-v2.ext", 1000, "v2.0.0", "linux_amd64")
	arm := fakeExtension(t, dir, "arm64.ext", 2000, "v1.2.0", "linux_arm64")
	out := filepath.Join(dir, "repo")
	c := config{
		out: out, keyFile: filepath.Join(dir, "key.pem"),
		versions: []string{"v1.4.4", "v1.5.6", "v2.0.0"}, v2Versions: []string{"v2.0.0"},
		ext:   platformFiles{"linux_amd64": amd, "linux_arm64": arm},
		extV2: platformFiles{"linux_amd64": amdV2},
	}
	if err := run(c); err != nil {
		t.Fatal(err)
	}
	key, err := loadOrCreateKey(c.keyFile)
	if err != nil {
		t.Fatal(err)
	}

	wantSource := map[string]string{
		"v1.4.4/linux_amd64": amd, "v1.5.6/linux_amd64": amd, "v2.0.0/linux_amd64": amdV2,
		"v1.4.4/linux_arm64": arm, "v1.5.6/linux_arm64": arm, "v2.0.0/linux_arm64": arm,
	}
	for dirName, src := range wantSource {
		got := gunzip(t, filepath.Join(out, dirName, "remote_segments.duckdb_extension.gz"))
		want, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got[:len(got)-signatureSize], want[:len(want)-signatureSize]) {
			t.Errorf("%s: not the file %s (signature aside)", dirName, src)
		}
		if err := verify(t, got, &key.PublicKey); err != nil {
			t.Errorf("%s: signature does not verify: %v", dirName, err)
		}
		got[0] ^= 1
		if verify(t, got, &key.PublicKey) == nil {
			t.Errorf("%s: signature verifies a changed file", dirName)
		}
	}

	var meta struct {
		SignatureKeys []string `json:"signature_keys"`
	}
	b, err := os.ReadFile(filepath.Join(out, ".well-known", "duckdb-extension-repo.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &meta); err != nil || len(meta.SignatureKeys) != 1 {
		t.Fatalf("metadata %s: %v", b, err)
	}
	block, _ := pem.Decode([]byte(meta.SignatureKeys[0]))
	if block == nil || block.Type != "PUBLIC KEY" {
		t.Fatalf("signature key is not a PEM PUBLIC KEY: %q", meta.SignatureKeys[0])
	}
	pub, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil || !key.PublicKey.Equal(pub) {
		t.Fatalf("published key is not the signing key: %v", err)
	}

	// A second run keeps the key: files signed before stay valid.
	if err := run(c); err != nil {
		t.Fatal(err)
	}
	again, err := loadOrCreateKey(c.keyFile)
	if err != nil || !again.Equal(key) {
		t.Fatalf("the key changed between runs (%v)", err)
	}
}

func TestRepositoryRestampsVersion(t *testing.T) {
	dir := t.TempDir()
	amd := fakeExtension(t, dir, "amd64.ext", 100, "v1.2.0", "linux_amd64")
	c := config{out: filepath.Join(dir, "repo"), keyFile: filepath.Join(dir, "key.pem"),
		versions: []string{"v1.5.6"}, ext: platformFiles{"linux_amd64": amd}, extVersion: "v0.1.0-update"}
	if err := run(c); err != nil {
		t.Fatal(err)
	}
	got := gunzip(t, filepath.Join(c.out, "v1.5.6/linux_amd64/remote_segments.duckdb_extension.gz"))
	if v := field(got, fieldExtVersion); v != "v0.1.0-update" {
		t.Fatalf("extension version %q, want v0.1.0-update", v)
	}
	key, err := loadOrCreateKey(c.keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := verify(t, got, &key.PublicKey); err != nil {
		t.Fatalf("the restamped file's signature does not verify: %v", err)
	}
}

func TestRepositoryRefusesWrongPlatform(t *testing.T) {
	dir := t.TempDir()
	arm := fakeExtension(t, dir, "arm64.ext", 100, "v1.2.0", "linux_arm64")
	c := config{out: filepath.Join(dir, "repo"), keyFile: filepath.Join(dir, "key.pem"),
		versions: []string{"v1.5.6"}, ext: platformFiles{"linux_amd64": arm}}
	err := run(c)
	if err == nil || !strings.Contains(err.Error(), `built for "linux_arm64", not linux_amd64`) {
		t.Fatalf("err = %v, want the platform mismatch", err)
	}
	if _, err := os.Stat(c.out); !os.IsNotExist(err) {
		t.Fatalf("a failed run left %s (%v)", c.out, err)
	}
}
