package client_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hookverify/hookverify/client"
)

// TestVerifyRefusesAHostThatIsNotUTF8UnderAPublicURLBase: with a public URL base the Host is
// not part of the forwarded URL, but it is still forwarded as the first header, and protobuf
// strings must be UTF-8. Such a request is the sender's fault (ErrUnforwardable, 400), not a
// failed call to the server.
func TestVerifyRefusesAHostThatIsNotUTF8UnderAPublicURLBase(t *testing.T) {
	t.Parallel()
	f := newFakeServer()
	conn := dial(t, f.start(t), client.WithPublicURLBase("https://pub.example"))
	r := httptest.NewRequest("POST", "/hooks/ep", strings.NewReader("{}"))
	r.Host = "h\xffst.example"
	if req, err := conn.BuildRequest("ep", r); !errors.Is(err, client.ErrUnforwardable) {
		t.Errorf("BuildRequest = url %q, %v; want ErrUnforwardable", req.GetUrl(), err)
	}
	r = httptest.NewRequest("POST", "/hooks/ep", strings.NewReader("{}"))
	r.Host = "h\xffst.example"
	if _, err := conn.Verify(t.Context(), "ep", r); !errors.Is(err, client.ErrUnforwardable) {
		t.Errorf("Verify = %v; want ErrUnforwardable", err)
	}
	if n := f.count("Verify"); n != 0 {
		t.Errorf("the server was called %d times, want none", n)
	}
}

// TestBuildRequestPublicURLBaseGivesAnAbsoluteTargetWithoutPathItsSlash: an absolute-form
// target may have no path ("POST http://b.example?q=1", RFC 9112 3.2.2: an empty path is "/");
// under a public URL base its path and query follow the base after a "/", not glued to it.
func TestBuildRequestPublicURLBaseGivesAnAbsoluteTargetWithoutPathItsSlash(t *testing.T) {
	t.Parallel()
	conn := newConn(t, client.WithPublicURLBase("https://pub.example/pfx"))
	for target, want := range map[string]string{
		"http://b.example?q=1":  "https://pub.example/pfx/?q=1",
		"HTTPS://b.example":     "https://pub.example/pfx/",
		"http://b.example:8080": "https://pub.example/pfx/",
	} {
		r := httptest.NewRequest("POST", "/", strings.NewReader("{}"))
		r.RequestURI = target
		if req, err := conn.BuildRequest("ep", r); err != nil || req.GetUrl() != want {
			t.Errorf("target %q: BuildRequest = url %q, %v; want %q", target, req.GetUrl(), err, want)
		}
	}
}

// TestBuildRequestOfAnInProcessRequestWithoutHostUsesItsURLsHost: a request built in-process
// (a struct literal, or one whose Host a test cleared) may leave r.Host empty, as net/http's
// client does, which then sends r.URL.Host; that is the host it was made for, and forwarded.
func TestBuildRequestOfAnInProcessRequestWithoutHostUsesItsURLsHost(t *testing.T) {
	t.Parallel()
	const u = "https://hooks.example.com:8443/hooks/ep?a=1"
	r, err := http.NewRequest("POST", u, strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	r.Host = ""
	req, err := newConn(t).BuildRequest("ep", r)
	if err != nil || req.GetUrl() != u {
		t.Errorf("BuildRequest = url %q, %v; want %q", req.GetUrl(), err, u)
	}
}

// TestBuildRequestRefusesAnIPvFutureHostWithoutAddress: IPvFuture is "v" 1*HEXDIG "."
// 1*( unreserved / sub-delims / ":" ) (RFC 3986 3.2.2): "[v1.]" names no host and is refused
// like every Host that is not one, while "[v1.a]" is forwarded.
func TestBuildRequestRefusesAnIPvFutureHostWithoutAddress(t *testing.T) {
	t.Parallel()
	conn := newConn(t)
	for _, host := range []string{"[v1.]", "[vF.]:8080"} {
		r := httptest.NewRequest("POST", "/hooks/ep", strings.NewReader("{}"))
		r.Host, r.RequestURI = host, "/hooks/ep"
		if req, err := conn.BuildRequest("ep", r); !errors.Is(err, client.ErrUnforwardable) {
			t.Errorf("Host %q: BuildRequest = url %q, %v; want ErrUnforwardable", host, req.GetUrl(), err)
		}
	}
	r := httptest.NewRequest("POST", "/", strings.NewReader("{}"))
	r.RequestURI = "http://[v1.]/hooks/ep"
	if req, err := conn.BuildRequest("ep", r); !errors.Is(err, client.ErrUnforwardable) {
		t.Errorf("target http://[v1.]/hooks/ep: BuildRequest = url %q, %v; want ErrUnforwardable", req.GetUrl(), err)
	}
	for _, host := range []string{"[v1.a]", "[vF.a:b]:8080"} {
		r := httptest.NewRequest("POST", "/hooks/ep", strings.NewReader("{}"))
		r.Host, r.RequestURI = host, "/hooks/ep"
		if req, err := conn.BuildRequest("ep", r); err != nil || req.GetUrl() != "http://"+host+"/hooks/ep" {
			t.Errorf("Host %q: BuildRequest = url %q, %v", host, req.GetUrl(), err)
		}
	}
}
