// The Node edge against the Go edge (`hookverify edge`: client.Handler behind an http.ServeMux)
// for the same request: what is forwarded, and the edge's own answers.
'use strict';

const { describe, before, after, beforeEach, test } = require('node:test');
const assert = require('node:assert/strict');
const grpc = require('@grpc/grpc-js');

const { createEdge, loadHookverify } = require('../edge.js');
const h = require('./helpers.js');

/**
 * acceptingEdge starts a fake VerifierService that answers every Verify ACCEPTED, keeping each
 * request in calls, and an edge (createEdge with edgeOpts) in front of it, listening at url.
 */
async function acceptingEdge(edgeOpts) {
  const hookverify = loadHookverify();
  const v = { calls: [] };
  v.grpcServer = new grpc.Server();
  v.grpcServer.addService(hookverify.VerifierService.service, {
    Verify(call, callback) {
      v.calls.push(call.request);
      callback(null, {
        verdict: 'VERDICT_ACCEPTED', event_id: 'evt', operation_key: 'op',
        reply: { status: 200, headers: [{ name: 'Content-Type', value: 'application/json' }], body: Buffer.from('{"status":"accepted"}') },
      });
    },
  });
  const addr = await h.bindLoopback(v.grpcServer);
  v.edge = createEdge({ verifierAddr: addr, log: () => {}, ...edgeOpts });
  v.url = await h.listen(v.edge);
  v.close = async () => {
    await h.closeServer(v.edge);
    v.grpcServer.forceShutdown();
  };
  return v;
}


describe('edge: agreement with the Go edge', { timeout: 60000 }, () => {
  let v;
  let edgeURL;
  let calls;

  before(async () => {
    v = await acceptingEdge({});
    edgeURL = v.url;
  });

  after(() => v?.close());

  beforeEach(() => {
    v.calls.length = 0;
    calls = v.calls;
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

  // The server's header limits, counted as the Go edge (client.Verify) counts them: hop-by-hop
  // fields towards the count but not the bytes, since they are not forwarded; Transfer-Encoding
  // and Trailer, which net/http removes before the Go edge sees them, towards neither.
  test('hop-by-hop bytes do not count towards the forwarded header bytes', async () => {
    // 255 KiB forwarded (under the server's 256 KiB), 8 KiB of a proxy's credential that is
    // not: the Go edge forwards it.
    const res = await h.request(`${edgeURL}/hooks/ep`, {
      headers: ['X-Big', 'a'.repeat(255 << 10), 'Proxy-Authorization', `Basic ${'b'.repeat(8 << 10)}`],
      body: Buffer.from('{}'),
    });
    assert.equal(res.status, 200, res.body.toString());
    assert.equal(calls.length, 1);
    assert.deepEqual(calls[0].headers.map((f) => f.name), ['Host', 'X-Big', 'Content-Length']);
  });

  test('Transfer-Encoding and Trailer do not count towards the header count', async () => {
    // Host, 498 X-N and the Connection: close Node's client adds make 500, the limit; the Go
    // edge never sees Transfer-Encoding or Trailer (net/http removes them).
    const headers = [];
    for (let i = 0; i < 498; i++) headers.push(`X-N${i}`, 'v');
    headers.push('Transfer-Encoding', 'chunked', 'Trailer', 'X-T');
    const res = await h.request(`${edgeURL}/hooks/ep`, { headers, body: Buffer.from('{}') });
    assert.equal(res.status, 200, res.body.toString());
    assert.equal(calls.length, 1);
    assert.equal(calls[0].headers.length, 499);
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

describe('edge: an absolute-form target with userinfo, as the Go edge', { timeout: 60000 }, () => {
  let v;
  let edgeURL;
  let calls;

  before(async () => {
    v = await acceptingEdge({ publicBaseUrl: 'https://hooks.example' });
    edgeURL = v.url;
    calls = v.calls;
  });

  after(() => v?.close());

  test('the userinfo of the target is not forwarded in Host (Go\'s r.Host is the URL\'s host)', async () => {
    const res = await h.rawExchange(edgeURL, ['POST http://user:s3cret@target.example:8080/hooks/ep HTTP/1.1\r\nHost: other.example\r\nContent-Length: 0\r\n\r\n'], { waitMs: 3000 });
    assert.match(res.text, /^HTTP\/1\.1 200 /);
    assert.equal(calls.length, 1);
    assert.equal(calls[0].url, 'https://hooks.example/hooks/ep');
    const fields = calls[0].headers.map((f) => `${f.name}: ${f.value}`);
    assert.deepEqual(fields, ['Host: target.example:8080', 'Content-Length: 0']);
    assert.ok(!JSON.stringify(calls[0].headers).includes('s3cret'));
  });
});
