package arrowipc

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/endian"
	"github.com/apache/arrow-go/v18/arrow/ipc"
)

// HeadGuess is how much of a stream's beginning the first read for its
// schema asks for: a schema message of a few hundred columns fits.
const HeadGuess = 64 << 10

// maxSchemaMessage bounds the schema message HeadSchema asks for more bytes
// of: a length beyond it is garbage, not a schema.
const maxSchemaMessage = 64 << 20

// HeadSchema reads the schema of the Arrow IPC stream (or file) whose
// first bytes are head: its first message, which a stream must begin with
// (a file, after its magic). It returns need > 0, and no schema, when head
// ends before that message does: the message ends need bytes into the
// chunk. The schema is marked native, as Decode's is. Malformed bytes are
// an error wrapping ErrMalformed.
func HeadSchema(head []byte) (schema *arrow.Schema, need int64, err error) {
	defer func() {
		if r := recover(); r != nil {
			repanicFault(r)
			schema, need, err = nil, 0, recoveredError("arrow IPC schema", r)
		}
	}()
	start := int64(0)
	if bytes.HasPrefix(head, fileMagic) {
		start = 8 // the magic, padded to 8 bytes
	}
	pos := start
	if int64(len(head)) < pos+8 {
		return nil, pos + 8, nil
	}
	metaLen := int64(int32(binary.LittleEndian.Uint32(head[pos:])))
	pos += 4
	if uint32(metaLen) == 0xFFFFFFFF { // the continuation token
		metaLen = int64(int32(binary.LittleEndian.Uint32(head[pos:])))
		pos += 4
	}
	if metaLen <= 0 || metaLen > maxSchemaMessage {
		return nil, 0, fmt.Errorf("%w: the first message's metadata length is %d: not an Arrow IPC stream", ErrMalformed, metaLen)
	}
	if end := pos + metaLen; end > int64(len(head)) {
		return nil, end, nil
	}
	msg, err := parseMessage(fb(head[pos : pos+metaLen]))
	if err != nil {
		return nil, 0, fmt.Errorf("%w: the first message: %w", ErrMalformed, err)
	}
	if msg.kind != headerSchema || msg.bodyLen != 0 {
		return nil, 0, fmt.Errorf("%w: the first message is not a schema (header type %d)", ErrMalformed, msg.kind)
	}
	// arrow-go reads the schema from the message alone: a stream of it.
	r, err := ipc.NewReaderFromMessageReader(&memMessages{data: head[start : pos+metaLen]}, ipc.WithEnsureNativeEndian(false))
	if err != nil {
		return nil, 0, libraryError("not an Arrow IPC stream", err)
	}
	defer r.Release()
	schema = r.Schema()
	if err := CheckSupported(schema); err != nil {
		return nil, 0, err
	}
	return schema.WithEndianness(endian.NativeEndian), 0, nil
}
