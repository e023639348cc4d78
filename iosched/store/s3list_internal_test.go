package store

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// xmlPage is a ListBucketResult as encoding/xml reads it: the reference
// parseListPage is compared with.
type xmlPage struct {
	XMLName               xml.Name `xml:"ListBucketResult"`
	IsTruncated           bool
	NextContinuationToken string
	Contents              []struct {
		Key  string
		Size int64
		ETag string
	}
	CommonPrefixes []struct{ Prefix string }
}

func referencePage(doc []byte) (s3Page, error) {
	var x xmlPage
	if err := xml.Unmarshal(doc, &x); err != nil {
		return s3Page{}, err
	}
	p := s3Page{truncated: x.IsTruncated, next: x.NextContinuationToken}
	for _, c := range x.Contents {
		p.objects = append(p.objects, ObjectInfo{Name: c.Key, Size: c.Size, Version: listedVersion(strings.TrimSpace(c.ETag))})
	}
	for _, c := range x.CommonPrefixes {
		p.prefixes = append(p.prefixes, c.Prefix)
	}
	return p, nil
}

func escapeXML(s string) string {
	var b bytes.Buffer
	xml.EscapeText(&b, []byte(s))
	return b.String()
}

// TestParseListPage: pages as S3, MinIO and versitygw write them (pretty
// or not, a namespace, entities and character references in keys, CDATA,
// comments) read as encoding/xml reads them.
func TestParseListPage(t *testing.T) {
	for name, doc := range map[string]string{
		"plain": `<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Name>bkt</Name><Prefix>ds/</Prefix><KeyCount>3</KeyCount><MaxKeys>3</MaxKeys>
  <IsTruncated>true</IsTruncated>
  <Contents>
    <Key>ds/a&amp;b &lt;c&gt; &quot;d&quot; &apos;e&apos;.arrow</Key>
    <LastModified>2026-12-01T10:00:00.000Z</LastModified>
    <ETag>&quot;0123&quot;</ETag>
    <Size> 130000 </Size>
    <Owner><ID>x</ID><DisplayName>y</DisplayName></Owner>
    <StorageClass>STANDARD</StorageClass>
  </Contents>
  <!-- a comment <Contents> -->
  <Contents><Size>0</Size><Key>ds/&#233;&#x65E5;&#x1F600;</Key></Contents>
  <Contents><Key><![CDATA[ds/<raw & text>]]></Key><Size>7</Size></Contents>
  <CommonPrefixes><Prefix>ds/sub/</Prefix></CommonPrefixes>
  <CommonPrefixes><Prefix>ds/ spaced /</Prefix></CommonPrefixes>
  <NextContinuationToken>1/abc+def==</NextContinuationToken>
  <StartAfter>ds/</StartAfter>
</ListBucketResult>
`,
		"empty":        `<ListBucketResult><Name>bkt</Name><IsTruncated>false</IsTruncated></ListBucketResult>`,
		"self-closing": `<ListBucketResult><Prefix/><IsTruncated>false</IsTruncated><Contents><Key>k</Key><Size>1</Size><Owner/></Contents></ListBucketResult>`,
		"attributes":   `<ListBucketResult a='1>2' b="x"><Contents type="a>b"><Key>k</Key><Size>1</Size></Contents></ListBucketResult>`,
	} {
		got, err := parseListPage([]byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want, err := referencePage([]byte(doc))
		if err != nil {
			t.Fatalf("%s: encoding/xml: %v", name, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s:\n got %+v\nwant %+v", name, got, want)
		}
	}
}

// TestParseListPageRandomKeys: keys of any characters, escaped as a server
// escapes them, come back as they were.
func TestParseListPageRandomKeys(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	alphabet := []rune("ab/._-~ +%&<>\"'=?#;:!*()[]{}é日😀\t\u00a0")
	for round := 0; round < 200; round++ {
		var want s3Page
		var b strings.Builder
		b.WriteString("<ListBucketResult>")
		for i := r.IntN(20); i > 0; i-- {
			k := make([]rune, 1+r.IntN(30))
			for j := range k {
				k[j] = alphabet[r.IntN(len(alphabet))]
			}
			o := ObjectInfo{Name: string(k), Size: r.Int64N(1 << 40)}
			want.objects = append(want.objects, o)
			fmt.Fprintf(&b, "<Contents><Key>%s</Key><Size>%d</Size></Contents>", escapeXML(o.Name), o.Size)
		}
		b.WriteString("</ListBucketResult>")
		got, err := parseListPage([]byte(b.String()))
		if err != nil {
			t.Fatalf("%q: %v", b.String(), err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\n got %+v\nwant %+v", b.String(), got, want)
		}
	}
}

// TestParseListPageRefuses: what a listing never holds is an error, never
// a guess: declarations (which could define entities), unknown entities,
// tags that do not match, another document, objects without a key or
// size, sizes that are no size, endless nesting, a document cut short.
func TestParseListPageRefuses(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{`<!DOCTYPE x [<!ENTITY e "evil">]><ListBucketResult><Contents><Key>&e;</Key><Size>1</Size></Contents></ListBucketResult>`, "DOCTYPE"},
		{`<ListBucketResult><Contents><Key>&e;</Key><Size>1</Size></Contents></ListBucketResult>`, "unknown entity"},
		{`<ListBucketResult><Contents><Key>a&amp</Key><Size>1</Size></Contents></ListBucketResult>`, "entity"},
		{`<ListBucketResult><Contents><Key>&#0;</Key><Size>1</Size></Contents></ListBucketResult>`, "names no character"},
		{`<ListBucketResult><Contents><Key>&#xD800;</Key><Size>1</Size></Contents></ListBucketResult>`, "names no character"},
		{`<ListBucketResult><Contents><Key>k</Size><Size>1</Size></Contents></ListBucketResult>`, "closes nothing open"},
		{`<Error><Code>AccessDenied</Code></Error>`, "not a ListBucketResult"},
		{`<ListBucketResult></ListBucketResult><ListBucketResult></ListBucketResult>`, "second document"},
		{`<ListBucketResult><Contents><Size>1</Size></Contents></ListBucketResult>`, "without its Key or Size"},
		{`<ListBucketResult><Contents><Key>k</Key></Contents></ListBucketResult>`, "without its Key or Size"},
		{`<ListBucketResult><Contents><Key>k</Key><Size>-1</Size></Contents></ListBucketResult>`, "object size"},
		{`<ListBucketResult><Contents><Key>k</Key><Size>1e3</Size></Contents></ListBucketResult>`, "object size"},
		{`<ListBucketResult><Contents><Key>k</Key><Size>99999999999999999999</Size></Contents></ListBucketResult>`, "object size"},
		{"<ListBucketResult><Contents><Key>\xff</Key><Size>1</Size></Contents></ListBucketResult>", "not UTF-8"},
		{`<ListBucketResult><IsTruncated>maybe</IsTruncated></ListBucketResult>`, "IsTruncated"},
		{`<ListBucketResult><CommonPrefixes></CommonPrefixes></ListBucketResult>`, "without its Prefix"},
		{`<ListBucketResult>` + strings.Repeat("<a>", 100) + strings.Repeat("</a>", 100) + `</ListBucketResult>`, "nested more than"},
		{`<ListBucketResult><Contents><Key>k</Key><Size>1</Size></Contents>`, "ends before"},
		{`<ListBucketResult><Contents><Key>k`, "ends before"},
		{`<ListBucketResult><Contents <Key>`, "unterminated start tag"},
		{`<ListBucketResult><!-- x`, "unterminated comment"},
		{`<ListBucketResult><Key><![CDATA[x`, "unterminated CDATA"},
		{`junk<ListBucketResult></ListBucketResult>`, "outside"},
		{`<ListBucketResult></ListBucketResult>junk`, "after the document"},
		{``, "ends before"},
		{`<></>`, "without a name"},
	} {
		_, err := parseListPage([]byte(c.doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an error with %q", c.doc, err, c.want)
		}
	}
}

// FuzzParseListPage: never a panic; where both accept a document,
// parseListPage reads what encoding/xml reads.
func FuzzParseListPage(f *testing.F) {
	f.Add([]byte(`<ListBucketResult><IsTruncated>true</IsTruncated><NextContinuationToken>t&amp;</NextContinuationToken><Contents><Key>a&#x41;</Key><Size>3</Size></Contents><CommonPrefixes><Prefix>p/</Prefix></CommonPrefixes></ListBucketResult>`))
	f.Add([]byte(`<?xml version="1.0"?><ListBucketResult xmlns="x"><Contents><Key><![CDATA[<k>]]></Key><Size>0</Size></Contents><!-- c --></ListBucketResult>`))
	f.Add([]byte(`<ListBucketResult><Contents a="'>'"><Key/><Size>1</Size></Contents></ListBucketResult>`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		got, err := parseListPage(doc)
		if err != nil {
			return
		}
		want, err := referencePage(doc)
		if err != nil {
			return // encoding/xml is stricter in places (names, attributes)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\n got %+v\nwant %+v", doc, got, want)
		}
	})
}
