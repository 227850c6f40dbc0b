// Review: the Node edge checks hookverify's header limits as the Go edge (client.Verify) does:
// hop-by-hop fields count towards the header count, but not towards the header bytes, since
// they are not forwarded; Transfer-Encoding and Trailer, which net/http removes before the Go
// edge sees them, count towards neither.
'use strict';

const { describe, before, after, beforeEach, test } = require('node:test');
const assert = require('node:assert/strict');
const grpc = require('@grpc/grpc-js');

const { createEdge, loadHookverify } = require('../edge.js');
const h = require('./helpers.js');

describe('edge: header limits after hop-by-hop removal, as the Go edge', { timeout: 60000 }, () => {
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
    edge = createEdge({ verifierAddr: addr, log: (...a) => { if (process.env.DBG) console.error(JSON.stringify(a)); } });
    edgeURL = await h.listen(edge);
  });

  after(async () => {
    if (edge) await h.closeServer(edge);
    if (grpcServer) grpcServer.forceShutdown();
  });

  beforeEach(() => {
    calls = [];
  });

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

describe('edge: an absolute-form target with userinfo, as the Go edge', { timeout: 60000 }, () => {
  const hookverify = loadHookverify();
  let grpcServer;
  let edge;
  let edgeURL;
  let calls;

  before(async () => {
    calls = [];
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
    edge = createEdge({ verifierAddr: addr, publicBaseUrl: 'https://hooks.example', log: () => {} });
    edgeURL = await h.listen(edge);
  });

  after(async () => {
    if (edge) await h.closeServer(edge);
    if (grpcServer) grpcServer.forceShutdown();
  });

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
