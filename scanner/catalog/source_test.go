package catalog

import "testing"

func TestSegmentAndChunkID(t *testing.T) {
	tests := []struct{ path, segment, chunk string }{
		{"/d/segment=s1/chunk-2.arrow", "s1", "chunk-2"},
		{"/d/segment=a/x/y/part.ipc", "a", "part"},
		{"/data/seg7/part-0001.arrow", "seg7", "part-0001"},
		{"rel/p.arrows", "rel", "p"},
		{"s3://bkt/seg/x.arrow", "seg", "x"},
		{"s3://bkt/x.arrow", "", "x"},
		{"https://h:8080/d/segment=9/x.arrow?sig=abc", "9", "x"},
		{"file:///a/b/c.ipc", "b", "c"},
	}
	for _, tt := range tests {
		if got := segmentOf(tt.path); got != tt.segment {
			t.Errorf("segmentOf(%q) = %q, want %q", tt.path, got, tt.segment)
		}
		if got := chunkIDOf(tt.path); got != tt.chunk {
			t.Errorf("chunkIDOf(%q) = %q, want %q", tt.path, got, tt.chunk)
		}
	}
}
