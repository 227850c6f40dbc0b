package benchbody

import (
	"bytes"
	"compress/flate"
	"encoding/json"
	"testing"
)

// TestJSON: bench bodies are JSON of exactly the asked size, the same in every run, and
// the default text compresses like a real payload (deflate standing in for PostgreSQL's pglz,
// which stores the default body at about 2/3 of its size), not like one letter repeated.
func TestJSON(t *testing.T) {
	compressed := func(b []byte) int {
		var buf bytes.Buffer
		w, _ := flate.NewWriter(&buf, flate.DefaultCompression)
		w.Write(b)
		w.Close()
		return buf.Len()
	}
	for _, size := range []int{16, 100, 2048, 65536} {
		for _, repetitive := range []bool{false, true} {
			body := JSON(size, repetitive)
			var v struct{ Bench string }
			if len(body) != size || json.Unmarshal(body, &v) != nil || !bytes.Equal(body, JSON(size, repetitive)) {
				t.Errorf("JSON(%d, %v) = %d bytes %.40q..., want that many bytes of JSON, the same each time", size, repetitive, len(body), body)
			}
		}
	}
	if ratio := 2048 / float64(compressed(JSON(2048, false))); ratio < 1.5 || ratio > 3 {
		t.Errorf("the default 2 KiB body compresses %.1f times, want a real payload's 1.5 to 3", ratio)
	}
	if ratio := 2048 / float64(compressed(JSON(2048, true))); ratio < 20 {
		t.Errorf("the repetitive body compresses only %.1f times", ratio)
	}
}
