package benchsvg

import (
	"encoding/xml"
	"io"
	"strings"
	"testing"
)

// A bar with a text is said, not drawn; bars scale to the panel's largest
// figure or whisker; the document is well-formed XML with the names escaped.
func TestChart(t *testing.T) {
	c := Chart{
		Title:  "t & <u>",
		Panels: []Panel{{Title: "MiB/s", Series: []string{"narrow", "wide"}}, {Title: "RSS", Ref: 50, RefLabel: "goal"}},
		Rows: []Row{
			{Name: "a <b>", Group: "rs", Bars: [][]Bar{{{Value: 100, Lo: 50, Hi: 150}, {Value: 75}}, {{Text: "in process"}}}},
			{Name: "c", Group: "peer", Bars: [][]Bar{{{Value: 30}, {Text: "failed"}}, {{Value: 25}}}},
		},
		Groups: []Group{{Key: "rs", Name: "remote_segments", Colour: ColourRS}, {Key: "peer", Name: "peers", Colour: ColourPeer}},
		Note:   "note",
	}
	svg := c.SVG()
	d := xml.NewDecoder(strings.NewReader(svg))
	for {
		if _, err := d.Token(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("not well-formed: %v\n%s", err, svg)
		}
	}
	for _, want := range []string{
		"t &amp; &lt;u&gt;", "a &lt;b&gt;", ">in process</text>", ">failed</text>", ">bars, top to bottom: narrow, wide</text>",
		// 100 of 150 (the whisker) over 300 px; 75 lighter; RSS 25 of the reference 50.
		`width="200.0" height="12" fill="#1f5fbf"/>`, `width="150.0" height="12" fill="#1f5fbf" fill-opacity="0.55"/>`,
		`width="150.0" height="12" fill="#e07b00"/>`, ">goal</text>", ">note</text>",
	} {
		if !strings.Contains(svg, want) {
			t.Errorf("no %q in\n%s", want, svg)
		}
	}
	// Two panels' bars: 3 in the first, 1 in the second (the texts draw none).
	if n := strings.Count(svg, "<rect x=\"290\"") + strings.Count(svg, "<rect x=\"640\""); n != 4 {
		t.Errorf("%d bars, want 4\n%s", n, svg)
	}
}

func TestLink(t *testing.T) {
	if got := Link("test/bench/x.svg"); got != "@/test/bench/x.svg" {
		t.Errorf("Link(relative) = %q", got)
	}
	if got := Link("/tmp/x.svg"); got != "/tmp/x.svg" {
		t.Errorf("Link(absolute) = %q", got)
	}
}
