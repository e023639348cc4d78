package parquet

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// The codecs a page may be compressed with, its decompressed size bounded
// by what the file has left (pqReader.inflate).

// decompress returns the n bytes src decompresses to under codec.
func (r *pqReader) decompress(codec int32, src []byte, n int32) ([]byte, error) {
	if codec == codecNone || (n == 0 && len(src) == 0) {
		if int(n) != len(src) {
			return nil, fmt.Errorf("uncompressed page of %d bytes says %d", len(src), n)
		}
		return src, nil
	}
	if int64(n) > r.inflate {
		return nil, fmt.Errorf("page decompresses to %d bytes: more than the %d left for a file of %d bytes", n, r.inflate, len(r.data))
	}
	r.inflate -= int64(n)
	var out []byte
	var err error
	switch codec {
	case codecSnappy:
		var dn int
		if dn, err = s2.DecodedLen(src); err == nil {
			if dn != int(n) {
				return nil, fmt.Errorf("SNAPPY page decompresses to %d bytes, its header says %d", dn, n)
			}
			out, err = s2.Decode(make([]byte, n), src)
		}
	case codecGzip:
		var z *gzip.Reader
		if z, err = gzip.NewReader(bytes.NewReader(src)); err == nil {
			out = make([]byte, n)
			if _, err = io.ReadFull(z, out); err == nil {
				var one [1]byte
				if k, _ := z.Read(one[:]); k > 0 {
					err = fmt.Errorf("more than %d bytes", n)
				}
			}
		}
	case codecZstd:
		if r.zstd == nil {
			if r.zstd, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
				zstd.WithDecoderMaxMemory(uint64(r.inflate)+uint64(n)+1)); err != nil {
				return nil, err
			}
		}
		out, err = r.zstd.DecodeAll(src, make([]byte, 0, n))
	case codecLZ4Raw:
		out = make([]byte, n)
		var k int
		if k, err = lz4.UncompressBlock(src, out); err == nil && k != int(n) {
			err = fmt.Errorf("%d bytes", k)
		}
	default:
		return nil, fmt.Errorf("compression codec %s is not supported (UNCOMPRESSED, SNAPPY, GZIP, ZSTD and LZ4_RAW are)", codecName(codec))
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %v", codecName(codec), err)
	}
	if len(out) != int(n) {
		return nil, fmt.Errorf("%s page decompresses to %d bytes, its header says %d", codecName(codec), len(out), n)
	}
	return out, nil
}
