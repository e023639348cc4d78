package arrowipc

import (
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/remote-segments/remote_segments/test/datagen"
)

// HeadSchema reads, from the first bytes of every format of the
// arrow_types dataset (files and streams, both byte orders, every codec,
// dictionaries), the schema Decode gives for the whole chunk; from too few
// bytes it says how many its first message needs, and that many suffice.
func TestHeadSchemaEveryFormat(t *testing.T) {
	want := datagen.ArrowTypesBatches()
	defer datagen.ReleaseAll(want)
	schema := datagen.ArrowTypesSchema()
	for _, f := range datagen.IPCFormats() {
		t.Run(f.Name(), func(t *testing.T) {
			data, err := datagen.EncodeIPC(schema, want, f)
			if err != nil {
				t.Fatal(err)
			}
			decoded, batches, err := Decode(data, memory.DefaultAllocator)
			if err != nil {
				t.Fatal(err)
			}
			ReleaseAll(batches)
			n := int64(12)
			for range 3 { // the length prefix, then the message
				got, need, err := HeadSchema(data[:n])
				switch {
				case err != nil:
					t.Fatalf("%d bytes: %v", n, err)
				case need == 0 && !got.Equal(decoded):
					t.Errorf("schema %s, Decode's %s", got, decoded)
				case need == 0:
					return
				case need <= n || need > int64(len(data)):
					t.Fatalf("%d bytes: need %d", n, need)
				}
				n = need
			}
			t.Fatalf("no schema from %d bytes", n)
		})
	}
}

// Bytes that begin no stream are ErrMalformed, never a panic or a need.
func TestHeadSchemaGarbage(t *testing.T) {
	for _, head := range [][]byte{
		[]byte("not an arrow stream at all"),
		{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0x80},                      // negative length
		{0xff, 0xff, 0xff, 0xff, 8, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8}, // no flatbuffer
	} {
		if _, need, err := HeadSchema(head); !errors.Is(err, ErrMalformed) || need != 0 {
			t.Errorf("%q: need %d, %v; want ErrMalformed", head, need, err)
		}
	}
}
