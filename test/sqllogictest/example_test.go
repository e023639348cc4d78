package sqllogictest_test

import (
	"fmt"
	"strings"

	"github.com/remote-segments/remote_segments/test/sqllogictest"
)

func ExampleParse() {
	f, err := sqllogictest.Parse("example.test", strings.NewReader(`# name: example.test
# group: [remote_segments]

statement error
SELECT * FROM remote_segments('x')
----
does not exist

statement ok
LOAD '${EXT}'

query IT rowsort
SELECT segment_id, count(*) FROM remote_segments('${DATA}/chunks') GROUP BY ALL
----
s0	10
s1	12
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(f.Name, f.Group)
	for _, r := range f.Records {
		fmt.Printf("line %d: %s %q expected %q%s\n", r.Line, r.Kind, r.SQL, r.ErrorMessage, strings.Join(r.Expected, "|"))
	}
	// Output:
	// example.test [remote_segments]
	// line 4: statement "SELECT * FROM remote_segments('x')" expected "does not exist"
	// line 9: statement "LOAD '${EXT}'" expected ""
	// line 12: query "SELECT segment_id, count(*) FROM remote_segments('${DATA}/chunks') GROUP BY ALL" expected ""s0	10|s1	12
}
