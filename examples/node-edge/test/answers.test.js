// How the edge turns a request it cannot forward, and each Verify outcome, into an HTTP answer,
// where it differed from what verifier.proto documents and the Go edge (client.Handler) does:
//  - RESOURCE_EXHAUSTED without RetryInfo is gRPC refusing a message over the server's receive
//    limit: 413, not retried (no retry can pass it). The edge answered 503 and retried it.
//  - a Host that is not uri-host [ ":" port ] (RFC 9110 7.2: answer 400), none or an empty one,
//    or two Host lines (RFC 9110 7.2: 400) is refused: the edge forwarded such Hosts into the
//    URL, and made "http://localhost/..." of a request without one.
//  - a 204 reply goes out without Content-Length (RFC 9110 8.6: a server MUST NOT send one).
//  - a request refused for its headers is answered without reading its body: the edge waited
//    for a body it did not need, until the deadline, and then answered 503.
'use strict';

const { describe, before, after, beforeEach, test } = require('node:test');
const assert = require('node:assert/strict');
const grpc = require('@grpc/grpc-js');

const { createEdge, loadHookverify } = require('../edge.js');
const h = require('./helpers.js');
const rpc = require('./rpc-status.js');

const accepted = (status = 200) => ({
  verdict: 'VERDICT_ACCEPTED', event_id: 'evt', operation_key: 'op',
  reply: { status, headers: [], body: status === 204 ? Buffer.alloc(0) : Buffer.from('{"status":"accepted"}') },
});

describe('edge answers', { timeout: 60000 }, () => {
  const hookverify = loadHookverify();
  let grpcServer;
  let small; // a server whose receive limit is 1 KiB
  let edge;
  let edgeURL;
  let smallEdge;
  let smallEdgeURL;
  let calls;
  let logs;
  let answer;

  before(async () => {
    const impl = {
      Verify(call, callback) {
        calls.push(call.request);
        if (answer) answer(call, callback);
        else callback(null, accepted());
      },
    };
    grpcServer = new grpc.Server();
    grpcServer.addService(hookverify.VerifierService.service, impl);
    small = new grpc.Server({ 'grpc.max_receive_message_length': 1024 });
    small.addService(hookverify.VerifierService.service, impl);
    const log = (level, msg, fields) => msg !== 'request' && logs.push({ level, msg, ...fields });
    edge = createEdge({ verifierAddr: await h.bindLoopback(grpcServer), retryAfterSeconds: 3, log });
    edgeURL = await h.listen(edge);
    smallEdge = createEdge({ verifierAddr: await h.bindLoopback(small), retryAfterSeconds: 3, log });
    smallEdgeURL = await h.listen(smallEdge);
  });

  after(async () => {
    if (edge) await h.closeServer(edge);
    if (smallEdge) await h.closeServer(smallEdge);
    if (grpcServer) grpcServer.forceShutdown();
    if (small) small.forceShutdown();
  });

  beforeEach(() => {
    calls = [];
    logs = [];
    answer = null;
  });

  test('the requests held at once are bounded (maxBytesInFlight): past it 503 with Retry-After, unread', async () => {
    // Without the bound, anyone could make the edge hold requests times 32 MiB until it ran out
    // of memory, cutting every delivery in flight.
    const bounded = createEdge({ verifierAddr: await h.bindLoopback(grpcServer), retryAfterSeconds: 3, maxBytesInFlight: 64 * 1024,
      log: (level, msg, fields) => msg !== 'request' && logs.push({ level, msg, ...fields }) });
    const url = await h.listen(bounded);
    try {
      // A request that declared 50,000 bytes and sends a few holds them until it is answered.
      const held = h.rawExchange(url, [`POST /hooks/ep HTTP/1.1\r\nHost: a.example\r\nContent-Length: 50000\r\n\r\n{"slow":`], { waitMs: 1500 });
      await h.sleep(300);
      const refused = await h.request(`${url}/hooks/ep`, { body: Buffer.alloc(30000, 0x61) });
      assert.equal(refused.status, 503);
      assert.equal(refused.headers['retry-after'], '3');
      assert.ok(logs.some((l) => l.msg.startsWith('holding the bound of request bytes')), JSON.stringify(logs));
      await held; // its connection closes: its bytes are given back
      await h.sleep(100);
      assert.equal((await h.request(`${url}/hooks/ep`, { body: Buffer.alloc(30000, 0x61) })).status, 200);
      // Alone, a request larger than the whole bound passes.
      assert.equal((await h.request(`${url}/hooks/ep`, { body: Buffer.alloc(100000, 0x61) })).status, 200);
      assert.equal(calls.length, 2);
    } finally {
      await h.closeServer(bounded);
    }
  });

  test('a message over the server\'s receive limit gets 413, once, without Retry-After', async () => {
    const res = await h.request(`${smallEdgeURL}/hooks/ep`, { body: Buffer.alloc(4096, 0x61) });
    assert.equal(res.status, 413);
    assert.equal(res.headers['retry-after'], undefined);
    assert.deepEqual(JSON.parse(res.body), { status: 'rejected', reason: 'body_too_large' });
    assert.equal(calls.length, 0); // gRPC refused it before Verify
    assert.ok(logs.every((l) => l.level !== 'error'), JSON.stringify(logs));
    // A body within the limit still goes through.
    assert.equal((await h.request(`${smallEdgeURL}/hooks/ep`, { body: Buffer.from('{}') })).status, 200);
  });

  test('RESOURCE_EXHAUSTED without RetryInfo → 413, not retried; with RetryInfo → 503 + Retry-After, as verifier.proto says', async () => {
    answer = (call, cb) => cb({ code: grpc.status.RESOURCE_EXHAUSTED, details: 'message larger than max' });
    let res = await h.request(`${edgeURL}/hooks/ep`, { body: Buffer.from('{}') });
    assert.equal(res.status, 413);
    assert.equal(res.headers['retry-after'], undefined);
    assert.deepEqual(JSON.parse(res.body), { status: 'rejected', reason: 'body_too_large' });
    assert.equal(calls.length, 1);

    calls = [];
    answer = (call, cb) => cb({
      code: grpc.status.RESOURCE_EXHAUSTED,
      details: 'inbox full',
      metadata: rpc.trailer(rpc.status({ code: grpc.status.RESOURCE_EXHAUSTED, details: [rpc.retryInfo({ seconds: 30 })] })),
    });
    res = await h.request(`${edgeURL}/hooks/ep`, { body: Buffer.from('{}') });
    assert.equal(res.status, 503);
    assert.equal(res.headers['retry-after'], '30');
  });

  const raw = (hostLines, { version = '1.1' } = {}) => h.rawExchange(edgeURL, [
    `POST /hooks/ep?x=1 HTTP/${version}\r\n${hostLines.map((v) => `Host: ${v}\r\n`).join('')}Content-Length: 2\r\nConnection: close\r\n\r\n{}`,
  ]);

  test('a Host that is not host[:port] gets 400 without a call and without an error log', async () => {
    const bad = [
      'a b', 'a\tb', 'héllo.example', 'user@hooks.example.com', 'a:b:c', 'host:8x', ':8080', '[notv6]', '[1.2.3.4]',
      '[::1', '::1', '[::1]x', '[::1]:x', '[fe80::1%eth0]', 'a%zz', 'a%4', '%41bc', 'a]b', 'a[b', 'a\\b', 'a"b', 'a<b', 'a|b',
      'a^b', 'a`b', 'a{b', '/x', 'x/y', 'x?y', 'x#y',
    ];
    for (const host of bad) {
      const { text } = await raw([Buffer.from(host, 'utf8').toString('latin1')]);
      assert.match(text, /^HTTP\/1\.1 400 /, JSON.stringify(host));
    }
    assert.equal(calls.length, 0);
    assert.ok(logs.every((l) => l.level !== 'error'), JSON.stringify(logs));
  });

  test('no Host, an empty one or two Host lines get 400 without a call', async () => {
    for (const [lines, version] of [[[], '1.0'], [[''], '1.1'], [[''], '1.0'], [['a.example', 'b.example'], '1.1'], [['a.example', 'a.example'], '1.1']]) {
      const { text } = await raw(lines, { version });
      assert.match(text, /^HTTP\/1\.1 400 /, JSON.stringify([lines, version]));
    }
    assert.equal(calls.length, 0);
  });

  test('a request refused for its Host is answered before its body arrives', async () => {
    // The body never comes: the edge used to wait for it until the deadline (8 s), then answer
    // 503, and the provider retried a request that can never pass.
    for (const hostLines of [['a b'], ['a.example', 'b.example']]) {
      const { text, closed } = await h.rawExchange(edgeURL, [
        `POST /hooks/ep HTTP/1.1\r\n${hostLines.map((v) => `Host: ${v}\r\n`).join('')}Content-Length: 100\r\n\r\n{"slow":`,
      ], { waitMs: 3000 });
      assert.match(text, /^HTTP\/1\.1 400 /, JSON.stringify(hostLines));
      assert.match(text, /\r\nConnection: close\r\n/i, 'the unread body must not be taken for the next request');
      assert.ok(closed, JSON.stringify(hostLines));
    }
    assert.equal(calls.length, 0);
  });

  test('a host[:port] is forwarded as the URL\'s host, as received', async () => {
    const good = [
      'hooks.example.com', 'hooks.example.com:8443', 'HOOKS.Example.COM.', '127.0.0.1:80', '[::1]', '[::1]:8080',
      '[2001:db8::ffff:1.2.3.4]', '[v1.x:y]', 'xn--bcher-kva.example', 'a-b_c~d', "!$&'()*+,;=", 'hooks.example.com:',
    ];
    for (const host of good) {
      calls = [];
      const { text } = await raw([host]);
      assert.match(text, /^HTTP\/1\.1 200 /, host);
      assert.equal(calls.length, 1, host);
      assert.equal(calls[0].url, `http://${host}/hooks/ep?x=1`);
    }
  });

  test('reply fields the edge cannot send as given are left out, and the answer still goes (as the Go edge)', async () => {
    answer = (call, cb) => cb(null, {
      ...accepted(),
      reply: {
        status: 200, body: Buffer.from('{"status":"accepted"}'),
        headers: [
          { name: 'X-Kept', value: 'yes' }, { name: 'X-Control', value: 'a\x10b' }, { name: 'Bad Name', value: 'v' },
          { name: 'Content-Length', value: '3' }, { name: 'Transfer-Encoding', value: 'gzip' }, { name: 'Connection', value: 'upgrade' },
        ],
      },
    });
    const { text } = await raw(['hooks.example.com']);
    answer = null;
    assert.match(text, /^HTTP\/1\.1 200 /);
    assert.match(text, /\r\nx-kept: yes\r\n/i);
    assert.match(text, /\r\ncontent-length: 21\r\n/i);
    assert.doesNotMatch(text, /x-control|bad name|transfer-encoding|upgrade/i);
    assert.match(text, /\{"status":"accepted"\}$/);
  });

  test('a 204 reply carries no Content-Length', async () => {
    answer = (call, cb) => cb(null, accepted(204));
    const { text } = await raw(['hooks.example.com']);
    assert.match(text, /^HTTP\/1\.1 204 /);
    assert.doesNotMatch(text, /content-length/i);
    answer = null;
    const ok = await raw(['hooks.example.com']);
    assert.match(ok.text, /content-length: 21\r\n/i);
  });
});
