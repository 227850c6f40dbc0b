// The edge's side of the contract, checked against a fake VerifierService written in Node that
// records each VerifyRequest and answers what the test asks: exactly what is forwarded, exactly
// what is written back, and how every gRPC error is mapped.
'use strict';

const { describe, before, after, beforeEach, test } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const grpc = require('@grpc/grpc-js');

const { createEdge, loadHookverify, retryDelaySeconds } = require('../edge.js');
const h = require('./helpers.js');
const rpc = require('./rpc-status.js');

describe('edge contract (fake VerifierService)', { timeout: 60000 }, () => {
  const hookverify = loadHookverify();
  let grpcServer;
  let addr;
  let edge;
  let edgeURL;
  let calls;
  let answer; // (call, callback) => void, set per test
  let logs;

  before(async () => {
    grpcServer = new grpc.Server();
    grpcServer.addService(hookverify.VerifierService.service, {
      Verify(call, callback) {
        calls.push({ request: call.request, deadline: call.getDeadline(), authorization: call.metadata.get('authorization') });
        answer(call, callback);
      },
    });
    addr = await h.bindLoopback(grpcServer);
    // logs: every line but the access log's ('request', see parity.test.js).
    edge = createEdge({
      verifierAddr: addr,
      publicBaseUrl: 'https://hooks.example.com/',
      deadlineMs: 1500,
      retryAfterSeconds: 3,
      log: (level, msg, fields) => msg !== 'request' && logs.push({ level, msg, ...fields }),
    });
    edgeURL = await h.listen(edge);
  });

  after(async () => {
    if (edge) await h.closeServer(edge);
    if (grpcServer) grpcServer.forceShutdown();
  });

  beforeEach(() => {
    calls = [];
    logs = [];
    answer = (call, cb) => cb(null, accepted());
  });

  const accepted = () => ({
    verdict: 'VERDICT_ACCEPTED',
    event_id: 'evt',
    operation_key: 'op',
    reply: { status: 200, headers: [{ name: 'Content-Type', value: 'application/json' }], body: Buffer.from('{"status":"accepted"}') },
  });

  test('forwards endpoint id, raw body, every header in order with case and repeats, method and absolute URL, with a deadline', async () => {
    const body = Buffer.concat([Buffer.from('{"a":"é"} \r\n'), Buffer.from([0xff, 0x00, 0x80])]);
    const headers = [
      'X-Signature', 'sig-one',
      'content-type', 'application/json; charset=utf-8',
      'X-Repeat', 'first',
      'x-repeat', 'second',
      'X-Signature', 'sig-two',
      'X-Empty', '',
    ];
    const started = Date.now();
    const res = await h.request(`${edgeURL}/hooks/ep-1.test_A?x=1&y=%20z`, { method: 'PUT', headers, body });
    assert.equal(res.status, 200);
    assert.equal(calls.length, 1);
    const req = calls[0].request;
    assert.equal(req.endpoint_id, 'ep-1.test_A');
    assert.ok(Buffer.isBuffer(req.body));
    assert.ok(req.body.equals(body), req.body.toString('hex'));
    assert.equal(req.method, 'PUT');
    assert.equal(req.url, 'https://hooks.example.com/hooks/ep-1.test_A?x=1&y=%20z');
    const host = new URL(edgeURL).host;
    assert.deepEqual(req.headers.map((f) => [f.name, f.value]), [
      ['Host', host],
      ['X-Signature', 'sig-one'],
      ['content-type', 'application/json; charset=utf-8'],
      ['X-Repeat', 'first'],
      ['x-repeat', 'second'],
      ['X-Signature', 'sig-two'],
      ['X-Empty', ''],
      ['Content-Length', String(body.length)],
    ]); // Connection is hop-by-hop: not forwarded (agreement.test.js)
    const deadline = calls[0].deadline instanceof Date ? calls[0].deadline.getTime() : Number(calls[0].deadline);
    assert.ok(deadline > started && deadline <= Date.now() + 1600, `deadline ${deadline}`);
  });

  test('header values are forwarded as the bytes received (UTF-8), not re-encoded from Node\'s latin1 decoding', async () => {
    // Node's HTTP client writes header strings as latin1, one byte per character: these are
    // the UTF-8 bytes on the wire. Node's server decodes them as latin1 again.
    const values = ['Zürich', '✓ 🚀 naïve', '\ufeffbom-first', 'plain ascii'];
    const headers = values.flatMap((v, i) => [`X-Value-${i}`, Buffer.from(v, 'utf8').toString('latin1')]);
    const res = await h.request(`${edgeURL}/hooks/ep`, { body: Buffer.from('{}'), headers });
    assert.equal(res.status, 200);
    for (const [i, v] of values.entries()) {
      const forwarded = calls[0].request.headers.find((f) => f.name === `X-Value-${i}`);
      // protobuf encodes the string as UTF-8: those bytes are what hookverify receives.
      assert.equal(Buffer.from(forwarded.value, 'utf8').toString('hex'), Buffer.from(v, 'utf8').toString('hex'), JSON.stringify(forwarded.value));
    }
  });

  test('a header value that is not valid UTF-8 gets 400 without a call', async () => {
    const invalid = [
      [0xff],
      [0x61, 0xc3], // truncated sequence
      [0xc0, 0xaf], // overlong encoding of "/"
      [0xed, 0xa0, 0x80], // a UTF-16 surrogate half
      [0xe9, 0x74, 0xe9], // "été" in latin1
    ];
    for (const bytes of invalid) {
      const res = await h.request(`${edgeURL}/hooks/ep`, { body: Buffer.from('{}'), headers: ['X-Value', Buffer.from(bytes).toString('latin1')] });
      assert.equal(res.status, 400, Buffer.from(bytes).toString('hex'));
      assert.deepEqual(JSON.parse(res.body), { status: 'rejected', reason: 'unreadable_request' });
    }
    assert.equal(calls.length, 0);
    assert.ok(logs.every((l) => l.level === 'warn'), JSON.stringify(logs));
  });

  test('percent-encoded endpoint ids are decoded; other paths get 404 without a call', async () => {
    let res = await h.request(`${edgeURL}/hooks/a%2Eb`, { body: Buffer.from('x') });
    assert.equal(res.status, 200);
    assert.equal(calls[0].request.endpoint_id, 'a.b');

    for (const p of ['/', '/hooks', '/hooks/', '/hooks/a/b', '/other/a', '/hooks/%E0%A4%A']) {
      calls = [];
      res = await h.request(`${edgeURL}${p}`, { body: Buffer.from('x') });
      assert.equal(res.status, 404, p);
      assert.equal(calls.length, 0, p);
    }
  });

  test('an endpoint id no endpoint can have (not 1-128 of A-Z a-z 0-9 . _ - once decoded) gets 404 unknown_endpoint without a call or an error log', async () => {
    for (const id of ['a'.repeat(129), 'a%20b', 'caf%C3%A9', 'a~b', 'a%2Fb', 'a%00', '%E0%A4%A']) {
      const res = await h.request(`${edgeURL}/hooks/${id}`, { body: Buffer.from('{}') });
      assert.equal(res.status, 404, id);
      assert.deepEqual(JSON.parse(res.body), { status: 'rejected', reason: 'unknown_endpoint' }, id);
    }
    assert.equal(calls.length, 0);
    assert.deepEqual(logs, []);
    // The longest id an endpoint can have, and every allowed character, are forwarded.
    for (const id of ['a'.repeat(128), 'Az09._-']) {
      assert.equal((await h.request(`${edgeURL}/hooks/${id}`, { body: Buffer.from('{}') })).status, 200, id);
    }
    assert.deepEqual(calls.map((c) => c.request.endpoint_id), ['a'.repeat(128), 'Az09._-']);
  });

  test('a 404 whose body stalls closes the connection at once, rather than holding it until Node\'s requestTimeout', async () => {
    for (const [path, want] of [['/other', '404 page not found'], ['/hooks/a%20b', 'unknown_endpoint']]) {
      const { text, closed, ms } = await h.rawExchange(edgeURL, [`POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"slow":`], { waitMs: 3000 });
      assert.match(text, /^HTTP\/1\.1 404 /, path);
      assert.ok(text.includes(want), text);
      assert.match(text, /\r\nConnection: close\r\n/i, path);
      assert.ok(closed && ms < 3000, `${path}: connection still open after ${ms} ms`);
    }
    // A 404 whose body has arrived keeps the connection for the next request.
    const kept = await h.rawExchange(edgeURL, ['GET /other HTTP/1.1\r\nHost: x\r\n\r\n', 200, 'GET /other HTTP/1.1\r\nHost: x\r\n\r\n'], { waitMs: 1000 });
    assert.equal(kept.text.match(/HTTP\/1\.1 404 /g).length, 2, kept.text);
    assert.equal(calls.length, 0);
  });

  test('writes back the reply exactly: status, headers in order with repeats, binary body', async () => {
    const replyBody = Buffer.from([0x00, 0xff, 0x10, 0x7b, 0x7d]);
    answer = (call, cb) => cb(null, {
      verdict: 'VERDICT_HANDSHAKE',
      reply: {
        status: 202,
        headers: [
          { name: 'Content-Type', value: 'application/octet-stream' },
          { name: 'X-Challenge', value: 'one' },
          { name: 'x-challenge', value: 'two' },
          { name: 'Content-Length', value: '999' }, // ignored: the edge sets the real length
        ],
        body: replyBody,
      },
    });
    const res = await h.request(`${edgeURL}/hooks/ep`, { method: 'GET' });
    assert.equal(res.status, 202);
    assert.ok(res.body.equals(replyBody));
    const pairs = [];
    for (let i = 0; i < res.rawHeaders.length; i += 2) pairs.push([res.rawHeaders[i], res.rawHeaders[i + 1]]);
    const own = pairs.filter(([n]) => !['date', 'connection', 'keep-alive'].includes(n.toLowerCase()));
    assert.deepEqual(own, [
      ['Content-Type', 'application/octet-stream'],
      ['X-Challenge', 'one'],
      ['x-challenge', 'two'],
      ['Content-Length', String(replyBody.length)],
    ]);
  });

  test('reply header values go out as their UTF-8 bytes, so a handshake echoing a request header round-trips', async () => {
    answer = (call, cb) => {
      const challenge = call.request.headers.find((f) => f.name === 'X-Challenge').value;
      cb(null, { verdict: 'VERDICT_HANDSHAKE', reply: { status: 200, headers: [{ name: 'X-Challenge', value: challenge }], body: Buffer.from(challenge) } });
    };
    const sent = Buffer.from('défi ✓ 🚀', 'utf8');
    const res = await h.request(`${edgeURL}/hooks/ep`, { method: 'GET', headers: ['X-Challenge', sent.toString('latin1')] });
    assert.equal(res.status, 200);
    assert.equal(res.body.toString('hex'), sent.toString('hex'));
    // Node's client decodes header bytes as latin1: back to bytes, they are what was sent.
    assert.equal(Buffer.from(res.headers['x-challenge'], 'latin1').toString('hex'), sent.toString('hex'));
  });

  // RESOURCE_EXHAUSTED as backpressure: with RetryInfo (without it, it is a message over the
  // server's receive limit: 413, see answers.test.js).
  const backpressure = rpc.trailer(rpc.status({ code: grpc.status.RESOURCE_EXHAUSTED, details: [rpc.retryInfo({ seconds: 3 })] }));
  for (const [name, code, metadata] of [['UNAVAILABLE', grpc.status.UNAVAILABLE], ['RESOURCE_EXHAUSTED', grpc.status.RESOURCE_EXHAUSTED, backpressure]]) {
    test(`${name} → 503 with Retry-After`, async () => {
      answer = (call, cb) => cb({ code, details: 'storage down', metadata });
      const res = await h.request(`${edgeURL}/hooks/ep`, { body: Buffer.from('{"secret":"payload"}'), headers: ['X-Hub-Signature-256', 'sha256=abc'] });
      assert.equal(res.status, 503);
      assert.equal(res.headers['retry-after'], '3');
      assert.equal(logs.length, 1);
      assert.equal(logs[0].grpc_code, name);
    });
  }

  test('DEADLINE_EXCEEDED (hookverify too slow) → 503 with Retry-After, within the deadline', async () => {
    answer = (call, cb) => setTimeout(() => cb(null, accepted()), 2500).unref();
    const started = Date.now();
    const res = await h.request(`${edgeURL}/hooks/ep`, { body: Buffer.from('{}') });
    assert.equal(res.status, 503);
    assert.equal(res.headers['retry-after'], '3');
    assert.ok(Date.now() - started < 2400, `took ${Date.now() - started} ms`);
    assert.equal(logs[0].grpc_code, 'DEADLINE_EXCEEDED');
  });

  test('the deadline starts when the request arrives: time spent receiving the body is taken from Verify\'s deadline', async () => {
    const timed = createEdge({ verifierAddr: addr, deadlineMs: 3000, log: () => {} });
    const url = await h.listen(timed);
    try {
      const body = '{"slow":"upload"}';
      const started = Date.now();
      const { text } = await h.rawExchange(url, [
        `POST /hooks/ep HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: ${body.length}\r\n\r\n`,
        1000,
        body,
      ]);
      assert.match(text, /^HTTP\/1\.1 200 /);
      assert.equal(calls.length, 1);
      const deadline = calls[0].deadline instanceof Date ? calls[0].deadline.getTime() : Number(calls[0].deadline);
      // 3000 ms from the headers' arrival, not from the body's end 1000 ms later.
      assert.ok(deadline - started < 3500, `Verify deadline ${deadline - started} ms after the request arrived`);
    } finally {
      await h.closeServer(timed);
    }
  });

  test('a body that stops arriving is answered 503 with Retry-After and Connection: close within the deadline, without a call, and the connection is dropped', async () => {
    const started = Date.now();
    const { text, closed } = await h.rawExchange(edgeURL, [
      'POST /hooks/ep HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"partial":',
    ], { waitMs: 5000 });
    const took = Date.now() - started;
    assert.match(text, /^HTTP\/1\.1 503 /, text);
    assert.match(text, /\r\nRetry-After: 3\r\n/i);
    assert.match(text, /\r\nConnection: close\r\n/i);
    assert.ok(closed, 'the edge keeps the connection of a stalled upload open');
    assert.ok(took >= 1400 && took < 4000, `answered after ${took} ms (deadlineMs is 1500)`);
    assert.equal(calls.length, 0);
    assert.equal(logs.length, 1);
    assert.equal(logs[0].level, 'warn');
  });

  test('Node\'s own request and header timeouts are answered 503 with Retry-After, not 408; other malformed requests keep Node\'s 400', async () => {
    // Node's timeouts shorter than the edge's deadline (a server configured so), checked every
    // 100 ms (the interval is read when the server starts listening).
    const slow = createEdge({ verifierAddr: addr, deadlineMs: 10000, retryAfterSeconds: 3, log: (level, msg, fields) => msg !== 'request' && logs.push({ level, msg, ...fields }) });
    slow.requestTimeout = 1000;
    slow.headersTimeout = 1000;
    slow.connectionsCheckingInterval = 100;
    const url = await h.listen(slow);
    try {
      for (const [what, head] of [
        ['a body that stops arriving', 'POST /hooks/ep HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"slow":'],
        ['a header section that stops arriving', 'POST /hooks/ep HTTP/1.1\r\nHost: x\r\nX-Hub-Sig'],
      ]) {
        const { text, closed } = await h.rawExchange(url, [head], { waitMs: 5000 });
        assert.match(text, /^HTTP\/1\.1 503 /, `${what}: ${text.split('\r\n')[0]}`);
        assert.match(text, /\r\nRetry-After: 3\r\n/i, what);
        assert.match(text, /\r\nConnection: close\r\n/i, what);
        assert.ok(closed, what);
      }
      // Answered 404 before its body stalled: the timeout adds nothing after the 404.
      const answered = await h.rawExchange(url, ['POST /other HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"slow":'], { waitMs: 5000 });
      assert.match(answered.text, /^HTTP\/1\.1 404 /);
      assert.equal(answered.text.match(/HTTP\/1\.1 \d{3}/g).length, 1, answered.text);
      assert.ok(answered.closed);
      // Not a timeout: Node's own answer.
      const garbage = await h.rawExchange(url, ['NOT HTTP AT ALL\r\n\r\n'], { waitMs: 5000 });
      assert.match(garbage.text, /^HTTP\/1\.1 400 /);
      assert.equal(calls.length, 0);
    } finally {
      await h.closeServer(slow);
    }
  });

  for (const [name, code] of [
    ['INVALID_ARGUMENT', grpc.status.INVALID_ARGUMENT],
    ['FAILED_PRECONDITION', grpc.status.FAILED_PRECONDITION],
    ['INTERNAL', grpc.status.INTERNAL],
    ['UNIMPLEMENTED', grpc.status.UNIMPLEMENTED],
    ['UNAUTHENTICATED', grpc.status.UNAUTHENTICATED],
    ['PERMISSION_DENIED', grpc.status.PERMISSION_DENIED],
  ]) {
    test(`${name} → 500 and one log line without body or signature`, async () => {
      answer = (call, cb) => cb({ code, details: 'edge misconfigured' });
      const body = Buffer.from('{"secret":"payload-bytes"}');
      const res = await h.request(`${edgeURL}/hooks/ep`, { body, headers: ['X-Hub-Signature-256', 'sha256=deadbeefcafe'] });
      assert.equal(res.status, 500);
      assert.equal(res.headers['retry-after'], undefined);
      assert.equal(logs.length, 1);
      assert.equal(logs[0].level, 'error');
      assert.equal(logs[0].grpc_code, name);
      assert.equal(logs[0].endpoint, 'ep');
      const line = JSON.stringify(logs[0]);
      assert.ok(!line.includes('payload-bytes') && !line.includes('deadbeefcafe'), line);
    });
  }

  test('every gRPC error code is answered as the Go edge (client.Handler) answers it: 503 + Retry-After for UNAVAILABLE, DEADLINE_EXCEEDED and CANCELLED, 413 for RESOURCE_EXHAUSTED without RetryInfo, 500 for the others; only UNAVAILABLE retried', async () => {
    const unavailable = new Set(['UNAVAILABLE', 'DEADLINE_EXCEEDED', 'CANCELLED']);
    const retried = new Set(['UNAVAILABLE']);
    for (const [name, code] of Object.entries(grpc.status)) {
      if (typeof code !== 'number' || code === grpc.status.OK) continue;
      calls = [];
      logs = [];
      answer = (call, cb) => cb({ code, details: 'as told' });
      const res = await h.request(`${edgeURL}/hooks/ep`, { body: Buffer.from('{}') });
      if (unavailable.has(name)) {
        assert.equal(res.status, 503, name);
        assert.equal(res.headers['retry-after'], '3', name);
        assert.deepEqual(JSON.parse(res.body), { status: 'unavailable' }, name);
      } else if (name === 'RESOURCE_EXHAUSTED') {
        assert.equal(res.status, 413, name);
        assert.equal(res.headers['retry-after'], undefined, name);
      } else {
        assert.equal(res.status, 500, name);
        assert.equal(res.headers['retry-after'], undefined, name);
      }
      assert.equal(calls.length > 1, retried.has(name), `${name}: ${calls.length} calls`);
      assert.equal(logs.length, 1, name);
      assert.equal(logs[0].grpc_code, name);
    }
  });

  test('a response without a usable reply → 500', async () => {
    for (const resp of [{ verdict: 'VERDICT_ACCEPTED' }, { verdict: 'VERDICT_ACCEPTED', reply: { status: 0 } }, { reply: { status: 99 } }]) {
      answer = (call, cb) => cb(null, resp);
      const res = await h.request(`${edgeURL}/hooks/ep`, { body: Buffer.from('{}') });
      assert.equal(res.status, 500, JSON.stringify(resp));
    }
  });

  test('onEvent runs for ACCEPTED and DUPLICATE only, before the reply; if it throws the answer is 503', async () => {
    const seen = [];
    let fail = false;
    const handing = createEdge({
      verifierAddr: addr,
      retryAfterSeconds: 4,
      log: (level, msg, fields) => msg !== 'request' && logs.push({ level, msg, ...fields }),
      onEvent: async ({ response, request }) => {
        seen.push([response.verdict, response.operation_key, request.endpoint_id]);
        if (fail) throw new Error('queue down');
      },
    });
    const url = await h.listen(handing);
    try {
      const verdicts = [
        ['VERDICT_ACCEPTED', 200],
        ['VERDICT_DUPLICATE', 200],
        ['VERDICT_REJECTED', 401],
        ['VERDICT_HANDSHAKE', 200],
      ];
      for (const [verdict, status] of verdicts) {
        answer = (call, cb) => cb(null, { verdict, operation_key: 'op_1', reply: { status, body: Buffer.from('x') } });
        const res = await h.request(`${url}/hooks/ep`, { body: Buffer.from('{}') });
        assert.equal(res.status, status, verdict);
      }
      assert.deepEqual(seen, [['VERDICT_ACCEPTED', 'op_1', 'ep'], ['VERDICT_DUPLICATE', 'op_1', 'ep']]);

      fail = true;
      answer = (call, cb) => cb(null, accepted());
      const res = await h.request(`${url}/hooks/ep`, { body: Buffer.from('{"secret":"payload"}') });
      assert.equal(res.status, 503);
      assert.equal(res.headers['retry-after'], '4');
      assert.equal(logs.length, 1);
      assert.ok(!JSON.stringify(logs).includes('payload'));
    } finally {
      await h.closeServer(handing);
    }
  });

  test('an onEvent hand-off that never settles is answered 503 with Retry-After when the request\'s deadline passes', async () => {
    const hanging = createEdge({
      verifierAddr: addr,
      deadlineMs: 1000,
      retryAfterSeconds: 3,
      log: (level, msg, fields) => msg !== 'request' && logs.push({ level, msg, ...fields }),
      onEvent: () => new Promise(() => {}),
    });
    const url = await h.listen(hanging);
    try {
      // Verify takes 600 ms of the 1000 ms: onEvent gets what is left, not a deadline of its own.
      answer = (call, cb) => setTimeout(() => cb(null, accepted()), 600).unref();
      const started = Date.now();
      const res = await h.request(`${url}/hooks/ep`, { body: Buffer.from('{}'), timeoutMs: 5000 });
      const took = Date.now() - started;
      assert.equal(res.status, 503);
      assert.equal(res.headers['retry-after'], '3');
      assert.ok(took >= 900 && took < 1450, `answered after ${took} ms (deadlineMs is 1000)`);
      assert.equal(logs.length, 1);
      assert.equal(logs[0].level, 'error');
      assert.equal(logs[0].operation_key, 'op');
    } finally {
      await h.closeServer(hanging);
    }
  });

  test('Retry-After is whole seconds, at least 1, when retryAfterSeconds is not (gRPC errors and a failed onEvent)', async () => {
    for (const [retryAfterSeconds, want] of [[2.5, '3'], [0.2, '1']]) {
      const fractional = createEdge({
        verifierAddr: addr,
        retryAfterSeconds,
        log: () => {},
        onEvent: async () => {
          throw new Error('queue down');
        },
      });
      const url = await h.listen(fractional);
      try {
        answer = (call, cb) => cb({ code: grpc.status.UNAVAILABLE, details: 'down' });
        let res = await h.request(`${url}/hooks/ep`, { body: Buffer.from('{}') });
        assert.equal(res.status, 503);
        assert.equal(res.headers['retry-after'], want, `UNAVAILABLE, retryAfterSeconds ${retryAfterSeconds}`);
        answer = (call, cb) => cb(null, accepted());
        res = await h.request(`${url}/hooks/ep`, { body: Buffer.from('{}') });
        assert.equal(res.status, 503);
        assert.equal(res.headers['retry-after'], want, `onEvent failed, retryAfterSeconds ${retryAfterSeconds}`);
      } finally {
        await h.closeServer(fractional);
      }
    }
  });

  test('a provider that disconnects mid-body causes no call and no crash', async () => {
    const net = require('node:net');
    const { port } = new URL(edgeURL);
    await new Promise((resolve, reject) => {
      const sock = net.connect(Number(port), '127.0.0.1', () => {
        sock.write('POST /hooks/ep HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"partial":');
        setTimeout(() => {
          sock.destroy();
          resolve();
        }, 100);
      });
      sock.on('error', reject);
    });
    await h.sleep(200);
    assert.equal(calls.length, 0);
    assert.equal((await h.request(`${edgeURL}/hooks/ep`, { body: Buffer.from('{}') })).status, 200);
  });

  test('a body above maxBodyBytes gets 413 without a call', async () => {
    const small = createEdge({ verifierAddr: addr, maxBodyBytes: 1024, log: () => {} });
    const url = await h.listen(small);
    try {
      const res = await h.request(`${url}/hooks/ep`, { body: Buffer.alloc(4096, 0x61) }).catch((err) => ({ err }));
      // Node may see the reset before the 413 when the edge drops the connection; both mean
      // the body was refused. What matters is that no call was made.
      if (!res.err) assert.equal(res.status, 413);
      assert.equal(calls.length, 0);
      const ok = await h.request(`${url}/hooks/ep`, { body: Buffer.alloc(1024, 0x61) });
      assert.equal(ok.status, 200);
      assert.equal(calls[0].request.body.length, 1024);
    } finally {
      await h.closeServer(small);
    }
  });

  test('maxBodyBytes must be a whole number from 1 to 32 MiB (hookverify\'s ceiling): createEdge throws otherwise', () => {
    for (const bad of [64 << 20, (32 << 20) + 1, 0, -1, 1.5, NaN, Infinity, '1024', null]) {
      assert.throws(() => createEdge({ verifierAddr: addr, maxBodyBytes: bad }), /maxBodyBytes/, String(bad));
    }
    for (const good of [1, 32 << 20]) {
      createEdge({ verifierAddr: addr, maxBodyBytes: good }).close();
    }
  });

  test('deadlineMs and retryAfterSeconds must be positive numbers: createEdge throws otherwise', () => {
    for (const bad of [0, -1, NaN, Infinity, '8000', null]) {
      assert.throws(() => createEdge({ verifierAddr: addr, deadlineMs: bad }), /deadlineMs/, String(bad));
      assert.throws(() => createEdge({ verifierAddr: addr, retryAfterSeconds: bad }), /retryAfterSeconds/, String(bad));
    }
    createEdge({ verifierAddr: addr, deadlineMs: 250, retryAfterSeconds: 0.5 }).close();
  });

  test('without publicBaseUrl the URL comes from the Host header', async () => {
    const plain = createEdge({ verifierAddr: addr, log: () => {} });
    const url = await h.listen(plain);
    try {
      await h.request(`${url}/hooks/ep?q=1`, { body: Buffer.from('{}'), headers: ['Host', 'hooks.internal:8080'] });
      assert.equal(calls[0].request.url, 'http://hooks.internal:8080/hooks/ep?q=1');
    } finally {
      await h.closeServer(plain);
    }
  });

  test('publicBaseUrl may carry a path prefix a proxy strips; anything but http(s)://host[/prefix] is refused', async () => {
    const prefixed = createEdge({ verifierAddr: addr, publicBaseUrl: 'https://example.com/webhooks/', log: () => {} });
    const url = await h.listen(prefixed);
    try {
      await h.request(`${url}/hooks/ep?q=1`, { body: Buffer.from('{}') });
      assert.equal(calls[0].request.url, 'https://example.com/webhooks/hooks/ep?q=1');
    } finally {
      await h.closeServer(prefixed);
    }
    for (const bad of ['hooks.example.com', 'ftp://hooks.example.com', 'https://hooks.example.com/?a=1', 'https://hooks.example.com#x']) {
      assert.throws(() => createEdge({ verifierAddr: addr, publicBaseUrl: bad }), /publicBaseUrl/, bad);
    }
  });

  test('token: sent on every call as "authorization: Bearer <token>" metadata (plaintext to loopback); none without one', async () => {
    const token = `hvt_${'a'.repeat(64)}`;
    const withToken = createEdge({ verifierAddr: addr, token, log: (level, msg, fields) => msg !== 'request' && logs.push({ level, msg, ...fields }) });
    const without = createEdge({ verifierAddr: addr, token: null, log: () => {} });
    const urls = [await h.listen(withToken), await h.listen(without)];
    try {
      for (const url of [urls[0], urls[0], urls[1]]) {
        assert.equal((await h.request(`${url}/hooks/ep`, { body: Buffer.from('{}') })).status, 200);
      }
      assert.deepEqual(calls.map((c) => c.authorization), [[`Bearer ${token}`], [`Bearer ${token}`], []]);

      // Refused by the server: 500 and a log line that does not quote the token.
      answer = (call, cb) => cb({ code: grpc.status.UNAUTHENTICATED, details: 'missing or invalid API token' });
      const res = await h.request(`${urls[0]}/hooks/ep`, { body: Buffer.from('{}') });
      assert.equal(res.status, 500);
      assert.equal(logs.length, 1);
      assert.equal(logs[0].grpc_code, 'UNAUTHENTICATED');
      assert.ok(!JSON.stringify(logs).includes(token));
    } finally {
      await h.closeServer(withToken);
      await h.closeServer(without);
    }
  });

  test('token: defaults to $HOOKVERIFY_TOKEN; refused in clear to a non-loopback address, and when metadata cannot carry it', async () => {
    const saved = process.env.HOOKVERIFY_TOKEN;
    process.env.HOOKVERIFY_TOKEN = 'hvt_from_the_environment';
    try {
      const fromEnv = createEdge({ verifierAddr: addr, log: () => {} });
      const url = await h.listen(fromEnv);
      try {
        await h.request(`${url}/hooks/ep`, { body: Buffer.from('{}') });
        assert.deepEqual(calls[0].authorization, ['Bearer hvt_from_the_environment']);
      } finally {
        await h.closeServer(fromEnv);
      }
    } finally {
      if (saved === undefined) delete process.env.HOOKVERIFY_TOKEN;
      else process.env.HOOKVERIFY_TOKEN = saved;
    }

    const secret = 'hvt_never_in_an_error_message';
    // A list of instances is loopback only when every one is.
    for (const verifierAddr of ['10.1.2.3:7700', 'hooks.internal:7700', 'dns:///hookverify.example.com:443',
      'ipv4:127.0.0.1:7700,10.1.2.3:7700', 'ipv6:[::1]:7700,[2001:db8::1]:7700']) {
      assert.throws(() => createEdge({ verifierAddr, token: secret }), (err) => /in clear/.test(err.message) && !err.message.includes(secret), verifierAddr);
    }
    for (const verifierAddr of ['127.0.0.1:7700', 'localhost:7700', '[::1]:7700', 'ipv4:127.0.0.1:7700,127.0.0.2:7701', 'ipv6:[::1]:7700,[::1]:7701']) {
      createEdge({ verifierAddr, token: secret }).close();
    }
    // With TLS the address may be anywhere (no connection is made until the first call).
    createEdge({ verifierAddr: '10.1.2.3:7700', token: secret, tls: {} }).close();
    for (const bad of ['has space', 'new\nline', 'caf\u00e9']) {
      assert.throws(() => createEdge({ verifierAddr: addr, token: bad }), (err) => /printable ASCII/.test(err.message) && !err.message.includes(bad));
    }
  });

  for (const [name, delay, want] of [
    ['30 s', { seconds: 30 }, '30'],
    ['a fraction, rounded up', { seconds: 30, nanos: 500000000 }, '31'],
    ['below 1 s, raised to 1', { nanos: 200000000 }, '1'],
    ['zero, raised to 1', {}, '1'],
    ['negative, raised to 1', { seconds: -5 }, '1'],
    ['one hour, capped at 300', { seconds: 3600 }, '300'],
  ]) {
    test(`RESOURCE_EXHAUSTED with a RetryInfo hint of ${name} → Retry-After ${want}`, async () => {
      answer = (call, cb) => cb({
        code: grpc.status.RESOURCE_EXHAUSTED,
        details: 'inbox full, retry later',
        metadata: rpc.trailer(rpc.status({ code: grpc.status.RESOURCE_EXHAUSTED, details: [rpc.retryInfo(delay)] })),
      });
      const res = await h.request(`${edgeURL}/hooks/ep`, { body: Buffer.from('{}') });
      assert.equal(res.status, 503);
      assert.equal(res.headers['retry-after'], want);
      assert.equal(logs[0].retry_after, Number(want));
    });
  }

  test('UNAVAILABLE with a RetryInfo hint uses it too (as the Go edge does)', async () => {
    answer = (call, cb) => cb({
      code: grpc.status.UNAVAILABLE,
      details: 'draining',
      metadata: rpc.trailer(rpc.status({ code: grpc.status.UNAVAILABLE, details: [rpc.retryInfo({ seconds: 12 })] })),
    });
    const res = await h.request(`${edgeURL}/hooks/ep`, { body: Buffer.from('{}') });
    assert.equal(res.headers['retry-after'], '12');
  });

  test('RESOURCE_EXHAUSTED without a RetryInfo detail is a message over the receive limit (413); an unusable RetryInfo falls back to retryAfterSeconds', async () => {
    const other = rpc.any('type.googleapis.com/google.rpc.ErrorInfo', Buffer.from([0x0a, 0x03, 0x61, 0x62, 0x63]));
    const invalidDuration = rpc.retryInfo({ seconds: 30, nanos: -1 }); // mixed signs: not a Duration
    const trailers = [
      null, // no trailer at all
      rpc.status({ code: grpc.status.RESOURCE_EXHAUSTED, message: 'no details' }),
      rpc.status({ code: grpc.status.RESOURCE_EXHAUSTED, details: [other] }),
      rpc.status({ code: grpc.status.RESOURCE_EXHAUSTED, details: [invalidDuration] }),
      Buffer.from([0xff, 0xff, 0xff]), // truncated varint
      Buffer.from('not protobuf at all'),
    ];
    for (const trailer of trailers) {
      logs = [];
      answer = (call, cb) => cb({ code: grpc.status.RESOURCE_EXHAUSTED, details: 'full', metadata: trailer ? rpc.trailer(trailer) : undefined });
      const res = await h.request(`${edgeURL}/hooks/ep`, { body: Buffer.from('{}') });
      const backpressure = trailer === trailers[3]; // a RetryInfo, with a delay that is no Duration
      assert.equal(res.status, backpressure ? 503 : 413, trailer && trailer.toString('hex'));
      assert.equal(res.headers['retry-after'], backpressure ? '3' : undefined, trailer && trailer.toString('hex'));
    }
    // UNAVAILABLE without a hint falls back to retryAfterSeconds.
    answer = (call, cb) => cb({ code: grpc.status.UNAVAILABLE, details: 'down' });
    assert.equal((await h.request(`${edgeURL}/hooks/ep`, { body: Buffer.from('{}') })).headers['retry-after'], '3');
    // A RetryInfo after an unrelated detail is still found.
    answer = (call, cb) => cb({
      code: grpc.status.RESOURCE_EXHAUSTED,
      details: 'full',
      metadata: rpc.trailer(rpc.status({ code: grpc.status.RESOURCE_EXHAUSTED, details: [other, rpc.retryInfo({ seconds: 45 })] })),
    });
    assert.equal((await h.request(`${edgeURL}/hooks/ep`, { body: Buffer.from('{}') })).headers['retry-after'], '45');
  });

  test('retryDelaySeconds never throws: truncations and byte flips of a valid Status give null or a number', () => {
    const valid = rpc.status({ code: 8, message: 'inbox full', details: [rpc.retryInfo({ seconds: 30, nanos: 250000000 })] });
    assert.equal(retryDelaySeconds(valid), 30.25);
    const rand = crypto.createHash('sha256');
    let seed = 0;
    const next = () => rand.copy().update(String(seed++)).digest().readUInt32BE(0);
    const inputs = [undefined, null, 'string', Buffer.alloc(0), Buffer.from([0x00]), Buffer.from([0x1a, 0x7f])];
    for (let i = 0; i <= valid.length; i++) inputs.push(valid.subarray(0, i));
    for (let i = 0; i < 2000; i++) {
      const mutated = Buffer.from(valid);
      for (let j = 0, n = 1 + (next() % 4); j < n; j++) mutated[next() % mutated.length] = next() & 0xff;
      inputs.push(mutated);
    }
    for (const input of inputs) {
      const got = retryDelaySeconds(input);
      assert.ok(got === null || Number.isFinite(got), `${Buffer.isBuffer(input) ? input.toString('hex') : input}: ${got}`);
    }
  });
});
