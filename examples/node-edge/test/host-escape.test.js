// A Host whose host holds a %-escape ("Host: a%41b"). RFC 3986 lets a reg-name hold
// escapes, but no provider sends one: the Host names the edge as the provider's HTTP client
// resolved it, a DNS name (an IDN as its xn-- form) or an IP address, and clients decode or
// refuse an escape in a host. The edge forwarded it as the URL's host; hookverify stored a URL
// that Go's url.Parse refuses, and its URL-reading protocols (handshakes, Braintree, Nylas,
// Mailchimp) rejected the delivery as malformed. It is answered 400 without a call, as the Go
// edge (client.Handler) answers it; with publicBaseUrl the Host makes no URL.
'use strict';

const { describe, before, after, beforeEach, test } = require('node:test');
const assert = require('node:assert/strict');
const grpc = require('@grpc/grpc-js');

const { createEdge, loadHookverify } = require('../edge.js');
const h = require('./helpers.js');

describe('edge: a %-escape in the URL\'s host', { timeout: 60000 }, () => {
  let grpcServer;
  let calls;
  const edges = [];
  let addr;

  before(async () => {
    grpcServer = new grpc.Server();
    grpcServer.addService(loadHookverify().VerifierService.service, {
      Verify(call, cb) {
        calls.push(call.request);
        cb(null, { verdict: 'VERDICT_ACCEPTED', event_id: 'e', operation_key: 'op', reply: { status: 200, headers: [], body: Buffer.from('{"status":"accepted"}') } });
      },
    });
    addr = await h.bindLoopback(grpcServer);
  });

  after(async () => {
    for (const edge of edges) await h.closeServer(edge);
    if (grpcServer) grpcServer.forceShutdown();
  });

  beforeEach(() => {
    calls = [];
  });

  const start = async (opts = {}) => {
    const edge = createEdge({ verifierAddr: addr, log: () => {}, ...opts });
    edges.push(edge);
    return h.listen(edge);
  };

  test('a Host or absolute-form authority with a %-escape gets 400 unreadable_request without a call', async () => {
    const url = await start();
    for (const [target, host] of [
      ['/hooks/ep', 'a%41b'], ['/hooks/ep', 'hooks%2eexample.com:8443'], ['/hooks/ep', 'b%C3%BCcher.example'],
      ['http://a%41b/hooks/ep', 'a.example'], ['http://b%C3%BCcher.example/hooks/ep', 'a.example'],
    ]) {
      const { text } = await h.rawExchange(url, [`POST ${target} HTTP/1.1\r\nHost: ${host}\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`]);
      assert.match(text, /^HTTP\/1\.1 400 /, `${target} ${host}: ${text}`);
      assert.ok(text.endsWith('{"status":"rejected","reason":"unreadable_request"}'), `${target} ${host}: ${text}`);
    }
    assert.equal(calls.length, 0);
  });

  test('with publicBaseUrl the Host makes no URL and is forwarded as received', async () => {
    const url = await start({ publicBaseUrl: 'https://hooks.example.com' });
    const { text } = await h.rawExchange(url, ['POST /hooks/ep HTTP/1.1\r\nHost: a%41b\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}']);
    assert.match(text, /^HTTP\/1\.1 200 /, text);
    assert.equal(calls.length, 1);
    assert.equal(calls[0].url, 'https://hooks.example.com/hooks/ep');
  });
});
