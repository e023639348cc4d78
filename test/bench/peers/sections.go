package main

import (
	"fmt"
	"os"
	"regexp"
	"strings"
)

// sectionsMarker separates a section file's goal lines (first) from its
// sections (after): test/bench/io and test/bench/scan write them with -md.
const sectionsMarker = "<!-- sections -->\n"

type sections struct{ goals, body string }

// rootLink is a markdown link target relative to the repository's root,
// written "(@/path)" by the section writers: the report makes it relative
// to where it is written.
var rootLink = regexp.MustCompile(`\]\(@/([^)]*)\)`)

// readSections gathers the W2-W4 files named in list (comma-separated): the
// goal lines of all of them, then their sections in order, with links made
// relative to report. A missing file is said to be missing in the report,
// never silently left out.
func readSections(list, report string) sections {
	var s sections
	for _, path := range strings.Split(list, ",") {
		path = strings.TrimSpace(path)
		if path == "" {
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			s.body += fmt.Sprintf("## (missing: `%s`)\n\n*Not in this report:* %v. `make bench` writes it before this report; `make bench-peers` alone reuses the last one.\n\n", path, err)
			continue
		}
		goals, body, ok := strings.Cut(string(data), sectionsMarker)
		if !ok {
			s.body += fmt.Sprintf("## (unreadable: `%s`)\n\n*Not in this report:* the file has no %q line.\n\n", path, strings.TrimSpace(sectionsMarker))
			continue
		}
		s.goals += goals
		s.body += rootLink.ReplaceAllStringFunc(body, func(m string) string {
			return "](" + relPath(report, rootLink.FindStringSubmatch(m)[1]) + ")"
		})
	}
	return s
}
