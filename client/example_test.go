package client_test

import (
	"context"
	"log"
	"net/http"
	"os"
	"strings"

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
// DUPLICATE with the same key, so the refund happens at most once.
func ExampleConn_Verify() {
	conn, err := client.Dial("127.0.0.1:7700")
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	http.HandleFunc("/hooks/shop-stripe", func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		resp, err := conn.Verify(ctx, "shop-stripe", r)
		if err != nil {
			http.Error(w, "try again later", http.StatusServiceUnavailable)
			return
		}
		if v := resp.GetVerdict(); v == hookverifyv1.Verdict_VERDICT_ACCEPTED || v == hookverifyv1.Verdict_VERDICT_DUPLICATE {
			refund, _ := http.NewRequestWithContext(context.WithoutCancel(ctx), "POST", "https://api.payments.example/v1/refunds", strings.NewReader(`{"charge":"ch_1"}`))
			refund.Header.Set("Idempotency-Key", resp.GetOperationKey())
			if _, err := http.DefaultClient.Do(refund); err != nil {
				log.Print(err) // the inbox holds the event; a worker can retry with the same key
			}
		}
		w.WriteHeader(int(resp.GetReply().GetStatus()))
		w.Write(resp.GetReply().GetBody())
	})
}
