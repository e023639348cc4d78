package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"

	"github.com/remote-segments/remote_segments/iosched/store"
	"github.com/remote-segments/remote_segments/scanner"
)

// AllowedPrefixesEnv names the process-wide list of sources a scan may open:
// comma-separated URL or path prefixes. When it is set, every object any scan
// of the process opens (catalog file, listing, chunk) must lie under one of
// them, whatever the query says. Unset or empty: no restriction by this
// list. It is read once per process, like REMOTE_SEGMENTS_MEMORY_LIMIT.
const AllowedPrefixesEnv = "REMOTE_SEGMENTS_ALLOWED_PREFIXES"

// ErrNotAllowed is wrapped by the error of a scan that opens a source the
// process's sandbox does not admit. Its text is DuckDB's own error class
// for a refused file ("Permission Error: cannot access ..."), capitalised as
// DuckDB prints it, so a refusal by either sandbox reads alike to a user.
var ErrNotAllowed = errors.New("Permission Error")

// allowList is a parsed list of allowed prefixes; nil admits everything.
type allowList struct {
	prefixes []string // each normalized by canonicalSource
	raw      string   // as configured, for error messages
}

// processAllowList is the process's REMOTE_SEGMENTS_ALLOWED_PREFIXES, parsed
// at the first scan.
var processAllowList = sync.OnceValues(func() (*allowList, error) {
	return parseAllowList(os.Getenv(AllowedPrefixesEnv))
})

// parseAllowList parses comma-separated prefixes; an empty list (unset
// variable) gives nil, which admits every source. A prefix that cannot be
// normalized is an error, so a typo never silently opens the sandbox.
func parseAllowList(s string) (*allowList, error) {
	var prefixes []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		c, err := canonicalSource(p, nil)
		if err != nil {
			return nil, fmt.Errorf("remote_segments: %s: prefix %q: %v", AllowedPrefixesEnv, p, err)
		}
		prefixes = append(prefixes, c)
	}
	if prefixes == nil {
		return nil, nil
	}
	return &allowList{prefixes: prefixes, raw: s}, nil
}

// admit returns nil when source lies under one of the prefixes, else an
// error wrapping ErrNotAllowed. A nil list admits everything.
func (l *allowList) admit(source string) error {
	if l == nil {
		return nil
	}
	return l.admitVia(source, nil)
}

// admitVia is admit, local paths resolved through memo (nil: none).
func (l *allowList) admitVia(source string, memo *pathMemo) error {
	if l == nil {
		return nil
	}
	c, err := canonicalSource(source, memo)
	if err == nil {
		for _, p := range l.prefixes {
			if under(c, p) {
				return nil
			}
		}
	}
	return fmt.Errorf("%w: %q is not under any prefix of %s (%s)", ErrNotAllowed, source, AllowedPrefixesEnv, l.raw)
}

// under reports whether c equals prefix p or continues it at a path
// boundary: "/data" admits "/data/x" but not "/database".
func under(c, p string) bool {
	if !strings.HasPrefix(c, p) {
		return false
	}
	return len(c) == len(p) || strings.HasSuffix(p, "/") || c[len(p)] == '/'
}

// canonicalSource normalizes a source so that prefixes compare as paths:
// a local path or file:// URL becomes an absolute path, its links resolved
// where it exists and ".." resolved (cleanLocal), so that neither can climb
// out of a prefix; an s3:// URL becomes
// "s3://" + bucket + "/" + key, split where the store splits it (the first
// "/"), case kept (bucket names and keys are case-sensitive); any other URL
// becomes scheme://host followed by its path, scheme and host lower-cased,
// case of the path kept. A URL whose path has a "." or ".." segment is
// refused: a server may resolve it out of the prefix the string starts
// with. A trailing slash is kept (it marks a folder).
func canonicalSource(s string, memo *pathMemo) (string, error) {
	if !strings.Contains(s, "://") {
		return cleanLocal(s, memo)
	}
	scheme, rest, _ := strings.Cut(s, "://")
	if strings.EqualFold(scheme, "s3") {
		bucket, key, _ := strings.Cut(rest, "/")
		if err := store.CheckBucket(bucket); err != nil {
			return "", err
		}
		if err := noDotSegments(key); err != nil {
			return "", err
		}
		return "s3://" + bucket + "/" + key, nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", err
	}
	scheme = strings.ToLower(u.Scheme)
	if scheme == "file" {
		return cleanLocal(u.Path, memo)
	}
	if u.Host == "" {
		return "", fmt.Errorf("no host")
	}
	if err := noDotSegments(u.Path); err != nil {
		return "", err
	}
	p := u.Path
	if p == "" {
		p = "/"
	}
	return scheme + "://" + strings.ToLower(u.Host) + p, nil
}

// noDotSegments refuses a URL path with a "." or ".." segment.
func noDotSegments(p string) error {
	for _, seg := range strings.Split(p, "/") {
		if seg == "." || seg == ".." {
			return errors.New(`its path has a "." or ".." segment`)
		}
	}
	return nil
}

// cleanLocal is local path p made absolute, as DuckDB's sandbox makes it
// (duckdbLocalPath): the longest prefix that exists has its symbolic
// links resolved and ".." in the rest is resolved as text. A prefix and a
// source are compared so, so that a link under a prefix to a file
// elsewhere is elsewhere (before, it was judged by its own name, and a
// glob that lists links to files read what they named).
func cleanLocal(p string, memo *pathMemo) (string, error) {
	if p == "" {
		return "", fmt.Errorf("empty path")
	}
	abs, err := memo.local(p)
	if err != nil {
		return "", err
	}
	if strings.HasSuffix(p, "/") && !strings.HasSuffix(abs, "/") {
		abs += "/"
	}
	return abs, nil
}

// Sandboxes is what one bind's scan may reach: the process's
// REMOTE_SEGMENTS_ALLOWED_PREFIXES (env) and DuckDB's sandbox as the bind's
// client context reports it (db); nil admits all. While either is set the
// query is not trusted with the process's reach: the README's "Sandbox"
// and test/RELIABILITY.md's threat model say who is trusted with what.
type Sandboxes struct {
	env  *allowList
	db   *duckdbSandbox
	memo *pathMemo // where the bind's local folders resolve, for both
}

// DuckDBAccess is DuckDB's file sandbox as a bind's client context reports
// it: the settings enable_external_access, allowed_directories and
// allowed_paths.
type DuckDBAccess struct {
	ExternalAccess     bool
	AllowedDirectories []string // as DuckDB reports them (canonical, ending in "/")
	AllowedPaths       []string // as DuckDB reports them (canonical)
}

// NewSandboxes returns the sandboxes of one bind: the process's
// REMOTE_SEGMENTS_ALLOWED_PREFIXES and db, DuckDB's own (nil when the
// engine cannot tell). It fails when the allow-list does not parse.
func NewSandboxes(db *DuckDBAccess) (Sandboxes, error) {
	env, err := processAllowList()
	if err != nil {
		return Sandboxes{}, err
	}
	memo := &pathMemo{dirs: map[string]string{}}
	if db == nil || db.ExternalAccess {
		return Sandboxes{env: env, memo: memo}, nil
	}
	return Sandboxes{env: env, db: &duckdbSandbox{dirs: db.AllowedDirectories, paths: db.AllowedPaths, memo: memo}, memo: memo}, nil
}

// on reports whether any sandbox restricts the scan.
func (s Sandboxes) on() bool { return s.env != nil || s.db != nil }

// admit returns nil when both admit source, env asked first.
func (s Sandboxes) admit(source string) error {
	if err := s.env.admitVia(source, s.memo); err != nil {
		return err
	}
	return s.db.admit(source)
}

// Sources returns the scan's Config.Admit: a source both admit; nil when
// neither restricts anything.
func (s Sandboxes) Sources() func(string) error {
	if !s.on() {
		return nil
	}
	return s.admit
}

// output checks a file the scan writes (the trace parameter) against both:
// DuckDB's sandbox refuses writes as it refuses reads, and a file written
// is as much a place the query reaches as a file read.
func (s Sandboxes) output(param, file string) error {
	if file == "" {
		return nil
	}
	if err := s.admit(file); err != nil {
		return fmt.Errorf("remote_segments: %s: %w", param, err)
	}
	return nil
}

// key names the rule of admit for store domains (store.Options.AdmitKey):
// a store that follows redirects for one sandbox must not serve another.
func (s Sandboxes) key() string {
	if !s.on() {
		return ""
	}
	var b strings.Builder
	if s.env != nil {
		b.WriteString(strings.Join(s.env.prefixes, "\x00"))
	}
	if s.db != nil {
		fmt.Fprintf(&b, "\x01%q\x01%q", s.db.dirs, s.db.paths)
	}
	h := sha256.Sum256([]byte(b.String()))
	return "sandbox-" + hex.EncodeToString(h[:8])
}

// Confine applies the sandboxes to a bound scan's Config: the trace file,
// the cache directory, the redirects of its stores, and the S3 endpoint. chosen says which
// parameters the query chose (readNamedParameters). With no sandbox on it
// changes nothing: the query is then trusted with everything the process
// can reach, including its credentials.
//
// While a sandbox is on, requests signed with the process's credentials
// (REMOTE_SEGMENTS_S3_* in the environment, or the AWS default chain) go
// only to the endpoint the operator chose: an s3_endpoint the query chose
// is refused unless the query also gives its own key and secret (and any
// session token), and then every s3:// object is admitted only when the
// http(s) URLs its requests go to are admitted too, so the endpoint is
// part of what the sandbox admits.
func (s Sandboxes) Confine(cfg *scanner.Config, chosen Chosen) error {
	if err := s.output("trace", cfg.Trace); err != nil {
		return err
	}
	// The cache directory is written, and read back as the chunks' bytes.
	if err := s.output("cache_dir", cfg.CacheDir); err != nil {
		return err
	}
	if !s.on() {
		return nil
	}
	cfg.Store.AdmitRedirect = s.admit
	cfg.Store.AdmitKey = s.key()
	cfg.Admit = s.admit
	if !chosen["s3_endpoint"] {
		return nil
	}
	if !ownCredentials(cfg.Store, chosen) {
		return fmt.Errorf("remote_segments: %w: s3_endpoint %s is the query's, and the scan would sign its requests "+
			"with the process's credentials; while a sandbox is on they go only to the operator's endpoint "+
			"(REMOTE_SEGMENTS_S3_ENDPOINT, AWS_ENDPOINT_URL_S3, or remote_segments_s3_endpoint under lock_configuration): "+
			"leave s3_endpoint out, or give s3_access_key_id and s3_secret_access_key too",
			ErrNotAllowed, quoteEndpoint(cfg.Store.S3Endpoint))
	}
	opts := cfg.Store
	cfg.Admit = func(source string) error {
		if err := s.admit(source); err != nil {
			return err
		}
		if sc, _, ok := strings.Cut(source, "://"); !ok || !strings.EqualFold(sc, "s3") {
			return nil
		}
		urls, err := store.S3RequestURLs(source, opts)
		if err != nil {
			return fmt.Errorf("%w: %q: %v", ErrNotAllowed, source, err)
		}
		for _, u := range urls {
			if err := s.admit(u); err != nil {
				return fmt.Errorf("%w (the requests for %q go there: the query chose s3_endpoint)", err, source)
			}
		}
		return nil
	}
	return nil
}

// ownCredentials reports whether the query chose every credential the
// scan would sign with: a key and a secret, and the session token unless
// it is empty. Otherwise the store would sign with the process's.
func ownCredentials(o store.Options, chosen Chosen) bool {
	return o.S3AccessKeyID != "" && o.S3SecretAccessKey != "" &&
		chosen["s3_access_key_id"] && chosen["s3_secret_access_key"] &&
		(o.S3SessionToken == "" || chosen["s3_session_token"])
}

func quoteEndpoint(e string) string {
	if e == "" {
		return "'' (AWS's)"
	}
	return "'" + store.RedactURL(e) + "'"
}
