package client

import (
	"bytes"
	"io"
	"testing"

	"github.com/hookverify/hookverify/internal/budget"
)

// TestBudgetedBodyHoldsEveryByteRead: once the bytes reserved ahead are used up, every byte
// read is reserved; a read that crosses the end of what was reserved ahead must not leave that
// reservation to be counted again, or the budget holds less than the bodies it stands for.
func TestBudgetedBodyHoldsEveryByteRead(t *testing.T) {
	const ahead, chunk, size = 5000, 3000, 9000
	b := &budgetedBody{ReadCloser: io.NopCloser(bytes.NewReader(make([]byte, size))), budget: budget.New(1 << 20), ahead: ahead}
	if !b.reserve(ahead) {
		t.Fatal("reserve refused")
	}
	p := make([]byte, chunk)
	read := 0
	for {
		n, err := b.Read(p)
		read += n
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if read != size || b.held != size {
		t.Errorf("read %d bytes in reads of %d with %d reserved ahead: %d held, want %d", read, chunk, ahead, b.held, size)
	}
	b.release()
}
