// The Node edge against the Go edge (`hookverify edge`: client.Handler behind an http.ServeMux)
// for the same request: what is forwarded, and the edge's own answers.
'use strict';

const { describe, before, after, beforeEach, test } = require('node:test');
const assert = require('node:assert/strict');
const grpc = require('@grpc/grpc-js');

const { createEdge, loadHookverify } = require('../edge.js');
const h = require('./helpers.js');

describe('edge: agreement with the Go edge', { timeout: 60000 }, () => {
  const hookverify = loadHookverify();
  let grpcServer;
  let edge;
  let edgeURL;
  let calls;

  before(async () => {
    grpcServer = new grpc.Server();
    grpcServer.addService(hookverify.VerifierService.service, {
      Verify(call, callback) {
        calls.push(call.request);
        callback(null, {
          verdict: 'VERDICT_ACCEPTED', event_id: 'evt', operation_key: 'op',
          reply: { status: 200, headers: [{ name: 'Content-Type', value: 'application/json' }], body: Buffer.from('{"status":"accepted"}') },
        });
      },
    });
    const addr = await h.bindLoopback(grpcServer);
    edge = createEdge({ verifierAddr: addr, log: () => {} });
    edgeURL = await h.listen(edge);
  });

  after(async () => {
    if (edge) await h.closeServer(edge);
    if (grpcServer) grpcServer.forceShutdown();
  });

  beforeEach(() => {
    calls = [];
  });

  const forwarded = (i = 0) => calls[i].headers.map((f) => `${f.name}: ${f.value}`);

  test('hop-by-hop headers, and those Connection names, are not forwarded (as the Go edge)', async () => {
    // Fields about the connection, not the delivery (RFC 9110 7.6.1; Go's ReverseProxy list):
    // a proxy in front, or HTTP/2, would have removed them, and net/http removes
    // Transfer-Encoding and Trailer before the Go edge sees them. Host stays, even when named.
    const res = await h.rawExchange(edgeURL, ['POST /hooks/ep HTTP/1.1\r\nHost: a.example\r\n'
      + 'Connection: keep-alive, x-hop , host\r\nX-Hop: 1\r\nKeep-Alive: timeout=5\r\nProxy-Connection: keep-alive\r\n'
      + 'TE: trailers\r\nTrailer: X-Trailer\r\nUpgrade: h2c\r\nProxy-Authorization: Basic dTpw\r\nProxy-Authenticate: Basic\r\n'
      + 'X-Keep: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\nX-Trailer: t\r\n\r\n'], { waitMs: 3000 });
    assert.match(res.text, /^HTTP\/1\.1 200 /);
    assert.equal(calls.length, 1);
    assert.deepEqual(forwarded(), ['Host: a.example', 'X-Keep: 2']);
    assert.equal(calls[0].body.toString(), '{}');
  });

  test('an absolute-form target\'s authority is the Host forwarded, not the Host header (RFC 9112 3.2.2, as the Go edge)', async () => {
    let res = await h.rawExchange(edgeURL, ['POST http://target.example/hooks/ep?a=1 HTTP/1.1\r\nX-A: 1\r\nHost: other.example\r\nContent-Length: 0\r\n\r\n'], { waitMs: 3000 });
    assert.match(res.text, /^HTTP\/1\.1 200 /);
    assert.equal(calls[0].url, 'http://target.example/hooks/ep?a=1');
    assert.deepEqual(forwarded(0), ['X-A: 1', 'Host: target.example', 'Content-Length: 0']);
    // HTTP/1.0 needs no Host: the Go edge forwards the authority as Host all the same.
    res = await h.rawExchange(edgeURL, ['POST http://target.example/hooks/ep HTTP/1.0\r\nX-A: 1\r\nContent-Length: 0\r\n\r\n'], { waitMs: 3000 });
    assert.match(res.text, /^HTTP\/1\.1 200 /);
    assert.deepEqual(forwarded(1), ['Host: target.example', 'X-A: 1', 'Content-Length: 0']);
  });

  test('a path that is no route gets the Go edge\'s 404: text/plain "404 page not found"', async () => {
    for (const p of ['/nope', '/hooks/ep/', '/hooks', '/hooks/a/b', '/metrics']) {
      const res = await h.request(`${edgeURL}${p}`, { body: Buffer.from('{}') });
      assert.equal(res.status, 404, p);
      assert.equal(res.headers['content-type'], 'text/plain; charset=utf-8', p);
      assert.equal(res.headers['x-content-type-options'], 'nosniff', p);
      assert.equal(res.body.toString(), '404 page not found\n', p);
    }
    assert.equal(calls.length, 0);
  });

  test('a dot segment as the endpoint ("/hooks/.", "/hooks/..") is an unclean path: the Go edge\'s 404, no call', async () => {
    for (const p of ['/hooks/.', '/hooks/..', '/hooks/..?x=1']) {
      const res = await h.rawExchange(edgeURL, [`POST ${p} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`], { waitMs: 3000 });
      assert.match(res.text, /^HTTP\/1\.1 404 /, p);
      assert.ok(res.text.endsWith('404 page not found\n'), p);
    }
    assert.equal(calls.length, 0);
  });

  test('/healthz with a method other than GET or HEAD gets the Go edge\'s 405 with Allow', async () => {
    for (const method of ['POST', 'PUT', 'DELETE']) {
      const res = await h.request(`${edgeURL}/healthz`, { method, body: Buffer.from('{}') });
      assert.equal(res.status, 405, method);
      assert.equal(res.headers.allow, 'GET, HEAD', method);
      assert.equal(res.headers['content-type'], 'text/plain; charset=utf-8', method);
      assert.equal(res.body.toString(), 'Method Not Allowed\n', method);
    }
    const res = await h.request(`${edgeURL}/healthz`, { method: 'GET' });
    assert.equal(res.status, 200);
    assert.equal(res.body.toString(), 'ok\n');
    assert.equal(calls.length, 0);
  });
});

test('publicBaseUrl: refused at creation where the Go edge refuses --public-url-base (scheme not in lower case, a broken %-escape)', () => {
  // client.CheckPublicURLBase refuses them, so the Go edge does not start with one; the Node
  // edge started and put it in front of every URL it forwarded: the same configuration gave
  // the two edges different URLs, where one of them refuses to run.
  for (const base of ['HTTPS://hooks.example.com', 'Http://hooks.example.com', 'https://hooks.example.com/p%zz', 'https://hooks.example.com/p%2']) {
    assert.throws(() => createEdge({ verifierAddr: '127.0.0.1:1', publicBaseUrl: base, log: () => {} }), /publicBaseUrl must be/, base);
  }
  // What both take.
  for (const base of ['https://hooks.example.com', 'http://hooks.example.com:8080/prefix/', 'https://hooks.example.com/p%20x']) {
    const edge = createEdge({ verifierAddr: '127.0.0.1:1', publicBaseUrl: base, log: () => {} });
    edge.close();
  }
});
