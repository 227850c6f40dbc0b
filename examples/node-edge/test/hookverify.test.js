// End-to-end: a real hookverify server (built from this repository), configured with its CLI,
// behind the Node edge, receiving GitHub deliveries signed here with node:crypto.
'use strict';

const { describe, before, after, test } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const path = require('node:path');

const { createEdge } = require('../edge.js');
const h = require('./helpers.js');

const ENDPOINT = 'node-gh';
const SECRET = crypto.randomBytes(24).toString('hex');

describe('node edge against a real hookverify server', { timeout: 400000 }, () => {
  let tmp;
  let bin;
  let hv;
  let edge;
  let edgeURL;
  const logs = [];
  let firstDelivery; // accepted by the first test, redelivered after the restart

  before(async () => {
    tmp = h.mkTmp();
    bin = await h.buildHookverify(tmp.dir);
    hv = await h.startHookverify(bin, path.join(tmp.dir, 'data'));
    await h.run(bin, ['endpoint', 'create', '--server', hv.addr, '--timeout', '10s', '--id', ENDPOINT, '--provider', 'github'], { timeoutMs: 20000 });
    await h.run(bin, ['secret', 'add', '--server', hv.addr, '--timeout', '10s', '--endpoint', ENDPOINT], { input: SECRET, timeoutMs: 20000 });
    edge = createEdge({
      verifierAddr: hv.addr,
      publicBaseUrl: 'https://hooks.example.com',
      deadlineMs: 5000,
      retryAfterSeconds: 7,
      log: (level, msg, fields) => logs.push({ level, msg, ...fields }),
    });
    edgeURL = await h.listen(edge);
  }, { timeout: 360000 });

  after(async () => {
    if (edge) await h.closeServer(edge);
    if (hv) await hv.stop();
    if (tmp) tmp.cleanup();
  });

  const push = (body, opts = {}) => {
    const headers = h.githubHeaders({ secret: SECRET, body, ...opts });
    return h.request(`${edgeURL}/hooks/${opts.endpoint ?? ENDPOINT}`, { headers, body }).then((res) => ({ ...res, sent: headers }));
  };

  test('a signed delivery is accepted (200), its redelivery is a duplicate (200)', async () => {
    const body = Buffer.from(JSON.stringify({ ref: 'refs/heads/main', after: crypto.randomBytes(20).toString('hex') }));
    const deliveryId = crypto.randomUUID();
    firstDelivery = { body, deliveryId };

    const first = await push(body, { deliveryId });
    assert.equal(first.status, 200, first.body.toString());
    assert.deepEqual(JSON.parse(first.body), { status: 'accepted' });

    const again = await push(body, { deliveryId });
    assert.equal(again.status, 200, again.body.toString());
    assert.deepEqual(JSON.parse(again.body), { status: 'duplicate' });
  });

  test('a forged signature is rejected with 401 and nothing is stored', async () => {
    const body = Buffer.from('{"ref":"refs/heads/main","forged":true}');
    const deliveryId = crypto.randomUUID();
    const forged = h.signGitHub('not-the-secret', body);

    const res = await push(body, { deliveryId, signature: forged });
    assert.equal(res.status, 401, res.body.toString());
    assert.deepEqual(JSON.parse(res.body), { status: 'rejected', reason: 'signature_mismatch' });

    // Nothing was claimed: the genuine delivery with the same id is still accepted afterwards.
    const genuine = await push(body, { deliveryId });
    assert.equal(genuine.status, 200);
    assert.deepEqual(JSON.parse(genuine.body), { status: 'accepted' });
  });

  test('a delivery for an unknown endpoint gets 400, not 404 (on which Typeform disables the webhook for good)', async () => {
    const body = Buffer.from('{}');
    const res = await push(body, { endpoint: 'no-such-endpoint' });
    assert.equal(res.status, 400, res.body.toString());
    assert.deepEqual(JSON.parse(res.body), { status: 'rejected', reason: 'unknown_endpoint' });
  });

  test('an endpoint id no endpoint can have (129 bytes, which hookverify refuses as INVALID_ARGUMENT) gets 404 from the edge, with no error log', async () => {
    const before = logs.length;
    const res = await push(Buffer.from('{}'), { endpoint: 'a'.repeat(129) });
    assert.equal(res.status, 404, res.body.toString());
    assert.deepEqual(JSON.parse(res.body), { status: 'rejected', reason: 'unknown_endpoint' });
    assert.deepEqual(logs.slice(before).filter((l) => l.msg !== 'request'), []);
  });

  test('the raw body bytes are forwarded exactly (trailing space, non-ASCII UTF-8, invalid UTF-8, CRLF)', async () => {
    // Any re-encoding (JSON.parse/stringify, toString('utf8'), trimming, newline changes)
    // changes these bytes and so breaks the signature.
    const bodies = [
      Buffer.from('{"zen":"Ünïcödé ✓ 🚀 — naïve café"} ', 'utf8'),
      Buffer.concat([Buffer.from('payload=%7B%7D&raw='), Buffer.from([0xff, 0xfe, 0x00, 0xc3]), Buffer.from('\r\n\r\n')]),
      Buffer.from('{ "spaced" :\t[1,  2]\r\n}\n\n'),
    ];
    for (const body of bodies) {
      const res = await push(body);
      assert.equal(res.status, 200, `${body.toString('hex')}: ${res.body}`);
      assert.deepEqual(JSON.parse(res.body), { status: 'accepted' });
    }
    // Control: the same signature over the trimmed body does not verify, so the accepted
    // answers above really depended on the exact bytes.
    const exact = Buffer.from('{"zen":"Ünïcödé"} ');
    const headers = h.githubHeaders({ secret: SECRET, body: exact });
    const trimmed = await h.request(`${edgeURL}/hooks/${ENDPOINT}`, { headers, body: Buffer.from('{"zen":"Ünïcödé"}') });
    assert.equal(trimmed.status, 401);
  });

  test('an empty body and a chunked body are forwarded too', async () => {
    const empty = await push(Buffer.alloc(0));
    assert.equal(empty.status, 200, empty.body.toString());

    // Transfer-Encoding: chunked (no Content-Length): the edge forwards the de-chunked bytes.
    const body = Buffer.from('{"chunked":"yes ✓"}');
    const headers = [...h.githubHeaders({ secret: SECRET, body }), 'Transfer-Encoding', 'chunked'];
    const res = await h.request(`${edgeURL}/hooks/${ENDPOINT}`, { headers, body });
    assert.equal(res.status, 200, res.body.toString());
  });

  test('onEvent: a hand-off that fails once is retried by the provider and seen again as a duplicate with the same operation key', async () => {
    const seen = [];
    let failNext = true;
    const handing = createEdge({
      verifierAddr: hv.addr,
      deadlineMs: 5000,
      log: (level, msg, fields) => logs.push({ level, msg, ...fields }),
      onEvent: async ({ response, request }) => {
        seen.push({ verdict: response.verdict, key: response.operation_key, event: response.event_id, bytes: request.body.length });
        if (failNext) {
          failNext = false;
          throw new Error('queue unavailable');
        }
      },
    });
    const url = await h.listen(handing);
    try {
      const body = Buffer.from('{"ref":"refs/heads/main","handoff":true}');
      const deliveryId = crypto.randomUUID();
      const headers = h.githubHeaders({ secret: SECRET, body, deliveryId });
      const first = await h.request(`${url}/hooks/${ENDPOINT}`, { headers, body });
      assert.equal(first.status, 503, 'hand-off failed: the provider must retry');
      assert.ok(first.headers['retry-after']);
      const retry = await h.request(`${url}/hooks/${ENDPOINT}`, { headers, body });
      assert.equal(retry.status, 200);
      assert.deepEqual(JSON.parse(retry.body), { status: 'duplicate' });

      assert.equal(seen.length, 2);
      assert.deepEqual(seen.map((e) => e.verdict), ['VERDICT_ACCEPTED', 'VERDICT_DUPLICATE']);
      assert.match(seen[0].key, /^op_[0-9a-f]{32}$/);
      assert.equal(seen[1].key, seen[0].key, 'the operation key is stable across redeliveries');
      assert.equal(seen[0].event, deliveryId);
      assert.equal(seen[0].bytes, body.length);
    } finally {
      await h.closeServer(handing);
    }
  });

  test('a request past hookverify\'s limits (over 500 headers, which it would refuse as INVALID_ARGUMENT) gets 400 from the edge without a call, logged without body or signature', async () => {
    const body = Buffer.from('{"ref":"refs/heads/main","too":"many headers"}');
    const headers = h.githubHeaders({ secret: SECRET, body });
    for (let i = 0; i < 500; i++) headers.push(`X-Extra-${i}`, 'v');
    const before = logs.length;
    const res = await h.request(`${edgeURL}/hooks/${ENDPOINT}`, { headers, body });
    assert.equal(res.status, 400, res.body.toString());
    const added = logs.slice(before).filter((l) => l.msg !== 'request');
    assert.equal(added.length, 1, JSON.stringify(added));
    assert.equal(added[0].level, 'warn');
    assert.match(added[0].msg, /headers, more than the server's limit of 500/);
    assert.ok(!JSON.stringify(added).includes('sha256=') && !JSON.stringify(added).includes('many headers'));
  });

  test('no log line carries a body or a signature', () => {
    const text = JSON.stringify(logs);
    assert.ok(!text.includes('sha256='), text);
    assert.ok(!text.includes('refs/heads'), text);
    assert.ok(!text.includes(SECRET), text);
  });

  // These two run last, in order: the first kills the server, the second restarts it.
  test('with hookverify killed, the edge answers 503 with Retry-After', async () => {
    await hv.stop();
    const body = Buffer.from('{"ref":"refs/heads/main","while":"down"}');
    const started = Date.now();
    const res = await push(body);
    assert.equal(res.status, 503, res.body.toString());
    assert.equal(res.headers['retry-after'], '7');
    assert.ok(Date.now() - started < 6000, 'answered within the deadline');
    const line = logs.find((l) => l.msg.includes('unavailable'));
    assert.ok(line, JSON.stringify(logs));
    assert.ok(['UNAVAILABLE', 'DEADLINE_EXCEEDED'].includes(line.grpc_code), line.grpc_code);
    assert.ok(!JSON.stringify(logs).includes('sha256='));
  });

  test('once hookverify is back (same address, same data), the edge recovers by itself and earlier events stay duplicates', async () => {
    hv = await h.startHookverify(bin, path.join(tmp.dir, 'data'), { listen: hv.addr });
    const body = Buffer.from('{"ref":"refs/heads/main","after":"restart"}');
    const deliveryId = crypto.randomUUID();
    const until = Date.now() + 15000;
    let res;
    do {
      res = await push(body, { deliveryId });
      if (res.status === 200) break;
      assert.equal(res.status, 503, res.body.toString());
      await h.sleep(200);
    } while (Date.now() < until);
    assert.equal(res.status, 200, 'the edge reconnected within 15 s');
    assert.deepEqual(JSON.parse(res.body), { status: 'accepted' });

    const again = await push(firstDelivery.body, { deliveryId: firstDelivery.deliveryId });
    assert.equal(again.status, 200);
    assert.deepEqual(JSON.parse(again.body), { status: 'duplicate' }, 'accepted before the restart, still a duplicate after it');
  });
});
