// End-to-end with caller authentication: a real hookverify started with --require-auth and a
// bootstrap admin token, configured with its CLI ($HOOKVERIFY_TOKEN), behind Node edges holding
// different API tokens. The same server has an inbox limit of one unfinished delivery
// (--max-pending-total 1), so once a delivery is accepted, new events are refused with
// RESOURCE_EXHAUSTED and the server's RetryInfo hint, which the edge turns into Retry-After.
'use strict';

const { describe, before, after, test } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const path = require('node:path');

const { createEdge } = require('../edge.js');
const h = require('./helpers.js');

const ENDPOINT = 'node-auth';
const OTHER_ENDPOINT = 'node-other';
const SECRET = crypto.randomBytes(24).toString('hex');
const BOOTSTRAP = crypto.randomBytes(32).toString('base64url'); // 43 printable characters
const EDGE_RETRY_AFTER = 7; // the edge's fallback; the server's backpressure hint is 30 s

describe('node edge against a hookverify with --require-auth', { timeout: 400000 }, () => {
  let tmp;
  let bin;
  let hv;
  let verifyToken; // verify:node-auth
  let otherToken; // verify:node-other
  const logs = [];
  const edges = [];

  // cli runs the hookverify CLI against the server with the bootstrap admin token.
  let cli;

  // edgeWith starts an edge holding token (null: none) and resolves its base URL.
  const edgeWith = async (token) => {
    const edge = createEdge({
      verifierAddr: hv.addr,
      deadlineMs: 5000,
      retryAfterSeconds: EDGE_RETRY_AFTER,
      token,
      log: (level, msg, fields) => logs.push({ level, msg, ...fields }),
    });
    edges.push(edge);
    return h.listen(edge);
  };

  const push = (url, body = Buffer.from(JSON.stringify({ ref: 'refs/heads/main', n: crypto.randomUUID() }))) => {
    const headers = h.githubHeaders({ secret: SECRET, body });
    return h.request(`${url}/hooks/${ENDPOINT}`, { headers, body });
  };

  before(async () => {
    tmp = h.mkTmp();
    bin = await h.buildHookverify(tmp.dir);
    hv = await h.startHookverify(bin, path.join(tmp.dir, 'data'), {
      args: ['--require-auth', '--max-pending-total', '1'],
      env: { HOOKVERIFY_BOOTSTRAP_TOKEN: BOOTSTRAP },
    });
    cli = async (args, { input } = {}) => {
      const { stdout } = await h.run(bin, [...args, '--server', hv.addr, '--timeout', '10s'], {
        input, env: { HOOKVERIFY_TOKEN: BOOTSTRAP }, timeoutMs: 20000,
      });
      return stdout;
    };
    await cli(['endpoint', 'create', '--id', ENDPOINT, '--provider', 'github']);
    await cli(['endpoint', 'create', '--id', OTHER_ENDPOINT, '--provider', 'github']);
    await cli(['secret', 'add', '--endpoint', ENDPOINT], { input: SECRET });
    verifyToken = JSON.parse(await cli(['token', 'create', '--name', 'node edge', '--scope', `verify:${ENDPOINT}`])).bearerToken;
    otherToken = JSON.parse(await cli(['token', 'create', '--name', 'other edge', '--scope', `verify:${OTHER_ENDPOINT}`])).bearerToken;
    assert.match(verifyToken, /^hvt_/);
    assert.match(otherToken, /^hvt_/);
  }, { timeout: 360000 });

  after(async () => {
    for (const edge of edges) await h.closeServer(edge);
    if (hv) await hv.stop();
    if (tmp) tmp.cleanup();
  });

  test('the CLI without a token is refused (authentication really is on)', async () => {
    await assert.rejects(
      h.run(bin, ['endpoint', 'list', '--server', hv.addr, '--timeout', '10s'], { env: { HOOKVERIFY_TOKEN: '' }, timeoutMs: 20000 }),
      /Unauthenticated|UNAUTHENTICATED/i,
    );
  });

  test('an edge with a verify:<endpoint> token: a signed delivery is accepted (200)', async () => {
    const url = await edgeWith(verifyToken);
    const res = await push(url);
    assert.equal(res.status, 200, res.body.toString());
    assert.deepEqual(JSON.parse(res.body), { status: 'accepted' });
  });

  for (const [name, token, code] of [
    ['without a token', () => null, 'UNAUTHENTICATED'],
    ['with an unknown token', () => `hvt_${crypto.randomBytes(32).toString('hex')}`, 'UNAUTHENTICATED'],
    ['with a token scoped to another endpoint', () => otherToken, 'PERMISSION_DENIED'],
  ]) {
    test(`an edge ${name}: 500 (misconfigured, the provider keeps retrying), one error log line`, async () => {
      const url = await edgeWith(token());
      const before = logs.length;
      const res = await push(url);
      assert.equal(res.status, 500, res.body.toString());
      assert.equal(res.headers['retry-after'], undefined);
      const added = logs.slice(before).filter((l) => l.msg !== 'request');
      assert.equal(added.length, 1, JSON.stringify(added));
      assert.equal(added[0].level, 'error');
      assert.equal(added[0].grpc_code, code);
      assert.equal(added[0].endpoint, ENDPOINT);
    });
  }

  test('over the inbox limit, the 503 carries the server\'s RetryInfo hint (30 s) as Retry-After', async () => {
    const url = await edgeWith(verifyToken);
    // The first test's delivery is unfinished; the server refreshes the inbox depth every
    // second, so new events are refused once it has seen it. Until then they are accepted.
    const until = Date.now() + 15000;
    let res;
    do {
      res = await push(url);
      if (res.status === 503) break;
      assert.equal(res.status, 200, res.body.toString());
      await h.sleep(200);
    } while (Date.now() < until);
    assert.equal(res.status, 503, 'refused within 15 s');
    assert.equal(res.headers['retry-after'], '30');
    const line = logs.findLast((l) => l.grpc_code === 'RESOURCE_EXHAUSTED' && l.msg !== 'request');
    assert.ok(line, JSON.stringify(logs));
    assert.equal(line.retry_after, 30);
  });

  test('a refusal without a hint (hookverify killed) uses the edge\'s retryAfterSeconds', async () => {
    const url = await edgeWith(verifyToken);
    await hv.stop();
    const res = await push(url);
    assert.equal(res.status, 503, res.body.toString());
    assert.equal(res.headers['retry-after'], String(EDGE_RETRY_AFTER));
  });

  test('no token appears in the edge\'s log or in hookverify\'s', () => {
    const edgeLog = JSON.stringify(logs);
    const serverLog = hv.logs.join('');
    for (const token of [BOOTSTRAP, verifyToken, otherToken]) {
      assert.ok(!edgeLog.includes(token), 'a token in the edge log');
      assert.ok(!serverLog.includes(token), 'a token in the hookverify log');
    }
    assert.ok(!edgeLog.includes('sha256='));
  });
});
