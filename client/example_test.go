package client_test

import (
	"context"
	"errors"
	"log"
	"net"
	"net/http"
	"os"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hookverify/hookverify/client"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// An edge service: every delivery to /hooks/{endpoint} is verified and answered.
func ExampleHandler() {
	conn, err := client.Dial("127.0.0.1:7700",
		client.WithToken(os.Getenv("HOOKVERIFY_TOKEN")),
		client.WithPublicURLBase("https://hooks.example.com"))
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	mux := http.NewServeMux()
	mux.Handle("/hooks/{endpoint}", client.Handler(conn))
	log.Fatal(http.ListenAndServe(":8080", mux))
}

// The operation key as the Idempotency-Key of a payment API call: a redelivery is answered
// DUPLICATE with the same key, so the refund happens at most once. Without Handler, the
// caller maps errors itself: only a transient failure may ask the provider to retry (a body
// that is too large or cannot be forwarded never passes, however often it comes back), and
// the reply goes back with its headers.
func ExampleConn_Verify() {
	conn, err := client.Dial("127.0.0.1:7700")
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /hooks/shop-stripe", func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		resp, err := conn.Verify(ctx, "shop-stripe", r)
		var netErr net.Error
		switch {
		case errors.Is(err, client.ErrBodyTooLarge):
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
			return
		case errors.Is(err, client.ErrBodyRead) && errors.As(err, &netErr) && netErr.Timeout():
			w.Header().Set("Retry-After", "10") // a slow upload: transient
			http.Error(w, "try again later", http.StatusServiceUnavailable)
			return
		case errors.Is(err, client.ErrBodyRead), errors.Is(err, client.ErrUnforwardable):
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		case err != nil:
			switch status.Code(err) {
			case codes.Unavailable, codes.ResourceExhausted, codes.DeadlineExceeded, codes.Canceled:
				w.Header().Set("Retry-After", "10")
				http.Error(w, "try again later", http.StatusServiceUnavailable)
			default: // the edge is misconfigured (a bad token, say, or ErrBodyConsumed)
				log.Print(err)
				http.Error(w, "internal error", http.StatusInternalServerError)
			}
			return
		}
		if v := resp.GetVerdict(); v == hookverifyv1.Verdict_VERDICT_ACCEPTED || v == hookverifyv1.Verdict_VERDICT_DUPLICATE {
			refund, _ := http.NewRequestWithContext(context.WithoutCancel(ctx), "POST", "https://api.payments.example/v1/refunds", strings.NewReader(`{"charge":"ch_1"}`))
			refund.Header.Set("Idempotency-Key", resp.GetOperationKey()+":refund")
			if res, err := http.DefaultClient.Do(refund); err != nil {
				log.Print(err) // the inbox holds the event; a worker can retry with the same key
			} else {
				res.Body.Close()
			}
		}
		for _, h := range resp.GetReply().GetHeaders() {
			w.Header().Add(h.GetName(), h.GetValue())
		}
		w.WriteHeader(int(resp.GetReply().GetStatus()))
		w.Write(resp.GetReply().GetBody())
	})
	log.Fatal(http.ListenAndServe(":8080", mux))
}
