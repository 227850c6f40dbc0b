package client_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/hookverify/hookverify/client"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/server/protocol"
	"github.com/hookverify/hookverify/server/secretbox"
	"github.com/hookverify/hookverify/storage/sqlite"
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

// exampleServer runs a hookverify server (embedded SQLite, plaintext on loopback, as in
// development) for the examples, with a GitHub endpoint "shop-github" under the secret
// "s3cret", and returns its address and how to stop it.
func exampleServer() (addr string, stop func()) {
	key, err := secretbox.NewKey()
	if err != nil {
		log.Fatal(err)
	}
	keyring, err := secretbox.NewKeyring(key)
	if err != nil {
		log.Fatal(err)
	}
	srv, err := server.New(server.Options{Keyring: keyring, Protocols: protocol.Default(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		log.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "hookverify-example")
	if err != nil {
		log.Fatal(err)
	}
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "hookverify.db"))
	if err != nil {
		log.Fatal(err)
	}
	srv.SetStore(st)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	g := srv.NewGRPCServer()
	go g.Serve(lis)
	conn, err := client.Dial(lis.Addr().String())
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	ctx := context.Background()
	if _, err := conn.Admin.CreateEndpoint(ctx, &hookverifyv1.CreateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{Id: "shop-github", Provider: "github"}}); err != nil {
		log.Fatal(err)
	}
	if _, err := conn.Admin.AddSecret(ctx, &hookverifyv1.AddSecretRequest{EndpointId: "shop-github", Secret: "s3cret"}); err != nil {
		log.Fatal(err)
	}
	return lis.Addr().String(), func() { g.Stop(); st.Close(); os.RemoveAll(dir) }
}

// githubDelivery is a delivery as GitHub sends it, signed with "s3cret".
func githubDelivery(url, deliveryID string, body []byte) *http.Request {
	mac := hmac.New(sha256.New, []byte("s3cret"))
	mac.Write(body)
	req, err := http.NewRequest("POST", url, bytes.NewReader(body))
	if err != nil {
		log.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "push")
	req.Header.Set("X-GitHub-Delivery", deliveryID)
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	return req
}

// An edge in front of a router: the handler on "/hooks/{endpoint}" of an http.ServeMux, next
// to the service's own routes, with an observer for the access log. The second delivery of
// the same event is a DUPLICATE with the same operation key; a forged one is refused.
func ExampleHandler_router() {
	addr, stop := exampleServer()
	defer stop()
	conn, err := client.Dial(addr)
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()

	var keys []string
	mux := http.NewServeMux()
	mux.Handle("POST /hooks/{endpoint}", client.Handler(conn, client.WithObserver(func(r *http.Request, o client.Outcome) {
		fmt.Println(r.Method, r.URL.Path, o.Status, o.Verdict())
		if k := o.Response.GetOperationKey(); k != "" {
			keys = append(keys, k)
		}
	})))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	edge := httptest.NewServer(mux)
	defer edge.Close()

	body := []byte(`{"ref":"refs/heads/main"}`)
	forged := githubDelivery(edge.URL+"/hooks/shop-github", "d-2", body)
	tampered := []byte(`{"ref":"refs/heads/evil"}`)
	forged.Body, forged.ContentLength = io.NopCloser(bytes.NewReader(tampered)), int64(len(tampered))
	for _, req := range []*http.Request{
		githubDelivery(edge.URL+"/hooks/shop-github", "d-1", body),
		githubDelivery(edge.URL+"/hooks/shop-github", "d-1", body), // GitHub's redelivery
		forged,
	} {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		resp.Body.Close()
	}
	fmt.Println("same operation key:", len(keys) == 2 && keys[0] == keys[1])
	// Output:
	// POST /hooks/shop-github 200 VERDICT_ACCEPTED
	// POST /hooks/shop-github 200 VERDICT_DUPLICATE
	// POST /hooks/shop-github 401 VERDICT_REJECTED
	// same operation key: true
}

// A worker: lease what the edge stored, do the work under the operation key, and ack.
func ExampleConn_inboxWorker() {
	addr, stop := exampleServer()
	defer stop()
	conn, err := client.Dial(addr)
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	ctx := context.Background()

	// The edge's side, without HTTP: Verify stores the delivery.
	r := githubDelivery("https://hooks.example.com/hooks/shop-github", "d-7", []byte(`{"ref":"refs/heads/main"}`))
	if _, err := conn.Verify(ctx, "shop-github", r); err != nil {
		log.Fatal(err)
	}

	leased, err := conn.Inbox.Lease(ctx, &hookverifyv1.LeaseRequest{EndpointIds: []string{"shop-github"}, MaxDeliveries: 10,
		VisibilityTimeout: durationpb.New(time.Minute)})
	if err != nil {
		log.Fatal(err)
	}
	var acks []*hookverifyv1.AckRequest
	for _, d := range leased.GetDeliveries() {
		fmt.Printf("%s %s %s\n", d.GetEventId(), d.GetUrl(), d.GetBody())
		acks = append(acks, &hookverifyv1.AckRequest{InboxId: d.GetInboxId(), LeaseToken: d.GetLeaseToken()})
	}
	acked, err := conn.Inbox.AckMany(ctx, &hookverifyv1.AckManyRequest{Acks: acks})
	if err != nil {
		log.Fatal(err)
	}
	for _, res := range acked.GetResults() {
		fmt.Println("ack code", res.GetCode())
	}
	// Output:
	// d-7 https://hooks.example.com/hooks/shop-github {"ref":"refs/heads/main"}
	// ack code 0
}
