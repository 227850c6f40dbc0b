// The Node edge's request targets: absolute form, routes, what is forwarded, against a fake VerifierService that records
// what it is sent.
'use strict';

const { describe, before, after, test } = require('node:test');
const assert = require('node:assert/strict');
const grpc = require('@grpc/grpc-js');

const { createEdge, loadHookverify } = require('../edge.js');
const h = require('./helpers.js');

describe('request targets: what reaches hookverify', { timeout: 30000 }, () => {
  let grpcServer;
  let addr;
  const seen = [];
  const edges = [];

  before(async () => {
    grpcServer = new grpc.Server();
    grpcServer.addService(loadHookverify().VerifierService.service, {
      Verify(call, cb) {
        seen.push(call.request);
        cb(null, {
          verdict: 'VERDICT_ACCEPTED', event_id: 'e', operation_key: 'op',
          reply: { status: 200, headers: [{ name: 'Content-Type', value: 'application/json' }], body: Buffer.from('{"status":"accepted"}') },
        });
      },
    });
    addr = await h.bindLoopback(grpcServer);
  });

  after(async () => {
    for (const edge of edges) await h.closeServer(edge);
    if (grpcServer) grpcServer.forceShutdown();
  });

  const startEdge = async (opts = {}) => {
    const edge = createEdge({ verifierAddr: addr, log: () => {}, ...opts });
    edges.push(edge);
    return h.listen(edge);
  };

  // send writes one raw request and returns the status line's code and what Verify got.
  const send = async (url, raw) => {
    seen.length = 0;
    const { text } = await h.rawExchange(url, [raw], { waitMs: 3000 });
    const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]);
    return { status, text, forwarded: seen.slice() };
  };

  // RFC 9112 3.2.2: a server must accept the absolute form of the request target, and its
  // authority, not the Host header, names the host. net/http (the Go edge) routes it on its
  // path and forwards the URL as received; the Node edge matched its route against the whole
  // target, so it answered 404 {"status":"not_found"} to every such request, a 4xx on which
  // providers drop the delivery (and Typeform disables the webhook).
  test('an absolute-form request target is routed on its path and forwarded as received', async () => {
    const url = await startEdge();
    for (const target of ['http://b.example/hooks/ep?x=1&y=%2F', 'HTTPS://b.example:8443/hooks/ep']) {
      const { status, text, forwarded } = await send(url, `POST ${target} HTTP/1.1\r\nHost: a.example\r\nContent-Length: 2\r\n\r\n{}`);
      assert.equal(status, 200, `${target}: ${text}`);
      assert.equal(forwarded.length, 1);
      assert.equal(forwarded[0].url, target);
      assert.equal(forwarded[0].endpoint_id, 'ep');
      assert.equal(forwarded[0].body.toString(), '{}');
    }
  });

  test('with publicBaseUrl an absolute-form target forwards the base and its path and query as received', async () => {
    const url = await startEdge({ publicBaseUrl: 'https://pub.example/pfx' });
    const { status, text, forwarded } = await send(url, 'POST http://b.example/hooks/ep?x=%7c HTTP/1.1\r\nHost: a.example\r\nContent-Length: 2\r\n\r\n{}');
    assert.equal(status, 200, text);
    assert.equal(forwarded[0]?.url, 'https://pub.example/pfx/hooks/ep?x=%7c');
  });

  // As the Go edge answers them: an authority that is no host[:port] (userinfo, an empty one),
  // and a scheme other than http(s), cannot make the URL the provider called: 400, no call.
  test('an absolute-form target without a valid host, or of another scheme, gets 400 without a call', async () => {
    const url = await startEdge();
    for (const target of ['http://u@b.example/hooks/ep', 'http:///hooks/ep', 'ftp://b.example/hooks/ep']) {
      const { status, text, forwarded } = await send(url, `POST ${target} HTTP/1.1\r\nHost: a.example\r\nContent-Length: 2\r\n\r\n{}`);
      assert.equal(status, 400, `${target}: ${text}`);
      assert.match(text, /unreadable_request/);
      assert.equal(forwarded.length, 0);
    }
  });

  // The README: the route is /hooks/<endpoint id> (optionally ?query), and "any other path gets
  // 404 from the edge without a call", as the Go edge's /hooks/{endpoint} answers it. The
  // route's pattern took "/hooks/ep/" too, and forwarded it to endpoint ep: the two edges
  // answered the same URL differently.
  test('a path other than /hooks/<endpoint id> gets 404 without a call', async () => {
    const url = await startEdge();
    for (const target of ['/hooks/ep/', '/hooks/ep/?x=1']) {
      const { status, text, forwarded } = await send(url, `GET ${target} HTTP/1.1\r\nHost: a.example\r\n\r\n`);
      assert.equal(status, 404, `${target}: ${text}`);
      assert.equal(forwarded.length, 0);
    }
  });
});
