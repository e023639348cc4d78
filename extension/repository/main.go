// Command repository writes a DuckDB extension repository: the layout that
// `INSTALL remote_segments FROM '<repository>'` reads,
//
//	<out>/<duckdb version>/<platform>/remote_segments.duckdb_extension.gz
//	<out>/.well-known/duckdb-extension-repo.json   the public key (DuckDB 2.0)
//
// with every file signed by an RSA key (created on first use, kept outside
// the repository and never committed):
//
//	go run ./extension/repository -out build/repository -key build/repository-key.pem \
//	    -versions v1.4.4,v1.5.6,v2.0.0 -ext linux_amd64=build/release/remote_segments.duckdb_extension \
//	    -ext-v2 linux_amd64=build/release/v2.0.0/remote_segments.duckdb_extension
//
// The portable file (C API v1.2.0) goes under every version; the 2.0 edition,
// where given, replaces it under the versions of -v2-versions: it is built
// for exactly that engine (ABI C_STRUCT_UNSTABLE) and has what the portable
// file cannot (progress, settings, pruning). The repository is written beside
// -out and renamed into place, so a server never sees half of it.
package main

import (
	"bytes"
	"compress/gzip"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// The metadata block DuckDB reads at the end of an extension file: a 22-byte
// header, eight 32-byte fields, the 256-byte signature (extension/footer).
const (
	headerSize    = 22
	fieldSize     = 32
	fieldCount    = 8
	signatureSize = 256
	footerSize    = headerSize + fieldCount*fieldSize + signatureSize

	fieldExtVersion = 4
	fieldAPI        = 5
	fieldPlatform   = 6

	// DuckDB hashes the signed part in pieces of this size, then hashes the
	// concatenated piece hashes (scripts/compute-extension-hash.sh in DuckDB).
	hashPiece = 1 << 20

	// rsaBits gives the 256-byte signature the footer has room for.
	rsaBits = 2048

	extensionName = "remote_segments"
)

var header = append(append([]byte{0x00, 0x93, 0x04, 0x10}, "duckdb_signature"...), 0x80, 0x04)

type platformFiles map[string]string // platform -> file

func (p platformFiles) String() string { return "" }

func (p platformFiles) Set(s string) error {
	platform, file, ok := strings.Cut(s, "=")
	if !ok || platform == "" || file == "" {
		return fmt.Errorf("want PLATFORM=FILE, got %q", s)
	}
	p[platform] = file
	return nil
}

// config is what one repository is written from.
type config struct {
	out        string
	keyFile    string
	versions   []string
	v2Versions []string
	ext        platformFiles
	extV2      platformFiles
	extVersion string // when set, the extension version written into every file's metadata
}

func main() {
	c := config{ext: platformFiles{}, extV2: platformFiles{}}
	versions := flag.String("versions", "", "comma-separated DuckDB versions (v1.4.4,...) the portable file goes under")
	v2Versions := flag.String("v2-versions", "v2.0.0", "comma-separated DuckDB versions the 2.0 edition goes under, replacing the portable file")
	flag.StringVar(&c.out, "out", "build/repository", "repository directory to write (replaced)")
	flag.StringVar(&c.keyFile, "key", "build/repository-key.pem", "RSA private key (PEM) the files are signed with; created when missing")
	flag.StringVar(&c.extVersion, "ext-version", "", "extension version written into each file's metadata (default: keep the built one)")
	flag.Var(c.ext, "ext", "PLATFORM=FILE: the portable extension file of a platform (repeatable)")
	flag.Var(c.extV2, "ext-v2", "PLATFORM=FILE: the 2.0 edition of a platform (repeatable)")
	flag.Parse()
	c.versions = splitList(*versions)
	c.v2Versions = splitList(*v2Versions)
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		out = append(out, f)
	}
	return out
}

func run(c config) error {
	if len(c.versions) == 0 || len(c.ext) == 0 {
		return errors.New("repository: -versions and at least one -ext are required")
	}
	for _, v := range append(append([]string(nil), c.versions...), c.v2Versions...) {
		if !strings.HasPrefix(v, "v") || strings.ContainsAny(v, "/\\") {
			return fmt.Errorf("repository: DuckDB version %q: want the form v1.4.4", v)
		}
	}
	for p := range c.extV2 {
		if _, ok := c.ext[p]; !ok {
			return fmt.Errorf("repository: -ext-v2 for %s without -ext for it", p)
		}
	}
	key, err := loadOrCreateKey(c.keyFile)
	if err != nil {
		return err
	}

	tmp := c.out + ".new"
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("repository: %w", err)
	}
	platforms := make([]string, 0, len(c.ext))
	for p := range c.ext {
		platforms = append(platforms, p)
	}
	sort.Strings(platforms)
	for _, platform := range platforms {
		// One signed, compressed copy per source file; every version
		// directory that serves it gets a hard link.
		written := map[string]string{}
		for _, version := range c.versions {
			src := c.ext[platform]
			if v2, ok := c.extV2[platform]; ok && contains(c.v2Versions, version) {
				src = v2
			}
			dst := filepath.Join(tmp, version, platform, extensionName+".duckdb_extension.gz")
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return fmt.Errorf("repository: %w", err)
			}
			if first, ok := written[src]; ok {
				if err := linkOrCopy(first, dst); err != nil {
					return err
				}
				continue
			}
			if err := writeSigned(src, dst, platform, c.extVersion, key); err != nil {
				return err
			}
			final := filepath.Join(c.out, version, platform, filepath.Base(dst))
			fmt.Printf("repository: %s <- %s\n", final, src)
			written[src] = dst
		}
	}
	if err := writeMetadata(tmp, &key.PublicKey); err != nil {
		return err
	}
	if err := os.RemoveAll(c.out); err != nil {
		return fmt.Errorf("repository: %w", err)
	}
	if err := os.Rename(tmp, c.out); err != nil {
		return fmt.Errorf("repository: %w", err)
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// writeSigned writes src, signed and gzip-compressed, to dst, after checking
// that its metadata names platform.
func writeSigned(src, dst, platform, extVersion string, key *rsa.PrivateKey) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("repository: %w", err)
	}
	if len(b) < footerSize || !bytes.Equal(b[len(b)-footerSize:len(b)-footerSize+headerSize], header) {
		return fmt.Errorf("repository: %s: no DuckDB extension metadata at its end", src)
	}
	if got := field(b, fieldPlatform); got != platform {
		return fmt.Errorf("repository: %s is built for %q, not %s", src, got, platform)
	}
	if extVersion != "" {
		if err := setField(b, fieldExtVersion, extVersion); err != nil {
			return fmt.Errorf("repository: %s: %w", src, err)
		}
	}
	sig, err := sign(b[:len(b)-signatureSize], key)
	if err != nil {
		return fmt.Errorf("repository: %s: %w", src, err)
	}
	copy(b[len(b)-signatureSize:], sig)

	var z bytes.Buffer
	zw, err := gzip.NewWriterLevel(&z, gzip.DefaultCompression)
	if err != nil {
		return fmt.Errorf("repository: %w", err)
	}
	if _, err := zw.Write(b); err != nil {
		return fmt.Errorf("repository: %w", err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("repository: %w", err)
	}
	if err := os.WriteFile(dst, z.Bytes(), 0o644); err != nil {
		return fmt.Errorf("repository: %w", err)
	}
	fmt.Printf("repository: signed %s (%s, C API %s, %s)\n", src, field(b, fieldExtVersion), field(b, fieldAPI), platform)
	return nil
}

func fieldOffset(b []byte, i int) int {
	return len(b) - footerSize + headerSize + i*fieldSize
}

func field(b []byte, i int) string {
	off := fieldOffset(b, i)
	return string(bytes.TrimRight(b[off:off+fieldSize], "\x00"))
}

func setField(b []byte, i int, v string) error {
	if len(v) > fieldSize {
		return fmt.Errorf("metadata field %q longer than %d bytes", v, fieldSize)
	}
	off := fieldOffset(b, i)
	clear(b[off : off+fieldSize])
	copy(b[off:], v)
	return nil
}

// sign returns DuckDB's signature of an extension file's signed part (all but
// the signature): RSA PKCS #1 v1.5 over SHA-256 of the concatenated SHA-256
// hashes of its 1 MiB pieces.
func sign(signed []byte, key *rsa.PrivateKey) ([]byte, error) {
	digest := pieceHash(signed)
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, digest[:])
	if err != nil {
		return nil, err
	}
	if len(sig) != signatureSize {
		return nil, fmt.Errorf("signature of %d bytes, the metadata holds %d (want a %d-bit key)", len(sig), signatureSize, rsaBits)
	}
	return sig, nil
}

func pieceHash(signed []byte) [sha256.Size]byte {
	var concat []byte
	for off := 0; off < len(signed); off += hashPiece {
		h := sha256.Sum256(signed[off:min(off+hashPiece, len(signed))])
		concat = append(concat, h[:]...)
	}
	return sha256.Sum256(concat)
}

// loadOrCreateKey reads the RSA private key at path, or creates one there
// (mode 0600) when the file does not exist.
func loadOrCreateKey(path string) (*rsa.PrivateKey, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		key, err := rsa.GenerateKey(rand.Reader, rsaBits)
		if err != nil {
			return nil, fmt.Errorf("repository: %w", err)
		}
		der, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return nil, fmt.Errorf("repository: %w", err)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, fmt.Errorf("repository: %w", err)
		}
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
			return nil, fmt.Errorf("repository: %w", err)
		}
		if err := os.Rename(tmp, path); err != nil {
			return nil, fmt.Errorf("repository: %w", err)
		}
		fmt.Printf("repository: created the signing key %s (keep it private; never commit it)\n", path)
		return key, nil
	}
	if err != nil {
		return nil, fmt.Errorf("repository: %w", err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, fmt.Errorf("repository: %s: no PEM block", path)
	}
	var parsed any
	switch block.Type {
	case "PRIVATE KEY":
		parsed, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		parsed, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("repository: %s: PEM block %q is not a private key", path, block.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("repository: %s: %w", path, err)
	}
	key, ok := parsed.(*rsa.PrivateKey)
	if !ok || key.N.BitLen() != rsaBits {
		return nil, fmt.Errorf("repository: %s: want a %d-bit RSA key", path, rsaBits)
	}
	return key, nil
}

// PublicKeyPEM returns the key as DuckDB reads a repository's key: a PEM
// "PUBLIC KEY" (SubjectPublicKeyInfo) block.
func PublicKeyPEM(pub *rsa.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", err
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})), nil
}

// writeMetadata writes .well-known/duckdb-extension-repo.json, which DuckDB
// 2.0 reads for `CREATE EXTENSION REPOSITORY name WITH PREFIX '<repository>'`,
// and the same key as public-key.pem for USING PUBLIC KEY.
func writeMetadata(dir string, pub *rsa.PublicKey) error {
	pemText, err := PublicKeyPEM(pub)
	if err != nil {
		return fmt.Errorf("repository: %w", err)
	}
	meta, err := json.MarshalIndent(map[string]any{"signature_keys": []string{pemText}}, "", "  ")
	if err != nil {
		return fmt.Errorf("repository: %w", err)
	}
	wk := filepath.Join(dir, ".well-known")
	if err := os.MkdirAll(wk, 0o755); err != nil {
		return fmt.Errorf("repository: %w", err)
	}
	if err := os.WriteFile(filepath.Join(wk, "duckdb-extension-repo.json"), append(meta, '\n'), 0o644); err != nil {
		return fmt.Errorf("repository: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "public-key.pem"), []byte(pemText), 0o644); err != nil {
		return fmt.Errorf("repository: %w", err)
	}
	return nil
}

// linkOrCopy makes dst the same file as src: a hard link, or a copy where the
// file system has none.
func linkOrCopy(src, dst string) error {
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("repository: %w", err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		return fmt.Errorf("repository: %w", err)
	}
	return nil
}
