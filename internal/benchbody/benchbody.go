// Package benchbody makes the delivery body the benchmarks send and store: `hookverify bench`
// and the stores' testing.B benchmarks measure the same rows.
package benchbody

import (
	mrand "math/rand/v2"
	"strings"
)

// words and hex runs make up the text of a bench body. Real deliveries are JSON whose keys
// and common values repeat and whose ids, hashes and timestamps do not; PostgreSQL compresses
// a GitHub push payload of 2 KiB by about 1.5, and this text by about as much (but not a
// repeated letter, which it shrinks 40 times, making each stored body and every rewrite of
// its row on lease and ack that much cheaper than real ones: 8-25 % more deliveries a second
// taken in and drained in the eighth session's runs).
var words = strings.Fields(`id node_id name full_name private owner login avatar_url url html_url
	type site_admin description fork created_at updated_at pushed_at ref before after repository
	sender commits message timestamp author committer email added removed modified distinct
	head_commit compare pusher organization installation true false null https api github com`)

// JSON returns a JSON body of exactly size bytes (at least 13): {"bench":"TEXT"}, TEXT
// the same pseudo-random words and hex runs in every run, or with repetitive one letter
// repeated.
func JSON(size int, repetitive bool) []byte {
	const open, end = `{"bench":"`, `"}`
	text := make([]byte, 0, size)
	if repetitive {
		text = append(text, strings.Repeat("x", size-len(open)-len(end))...)
	} else {
		r := mrand.New(mrand.NewPCG(1, 2))
		for len(text) < size-len(open)-len(end) {
			if r.IntN(5) == 0 {
				for range 6 + r.IntN(20) {
					text = append(text, "0123456789abcdef"[r.IntN(16)])
				}
			} else {
				text = append(text, words[r.IntN(len(words))]...)
			}
			text = append(text, ' ')
		}
		text = text[:size-len(open)-len(end)]
	}
	return append(append([]byte(open), text...), end...)
}
