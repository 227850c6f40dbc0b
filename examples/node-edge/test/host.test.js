// A Host header the URL cannot be built from. Node's HTTP parser takes any Host value, and
// without publicBaseUrl the edge builds the URL from it: "Host: /x" made "http:///x/hooks/ep",
// a URL without a host, which hookverify refuses (INVALID_ARGUMENT) whatever the delivery.
// The edge answered that 500 and logged it as its own misconfiguration: anyone could raise
// the alarm with one request, and a provider would retry for ever. It is the request's fault:
// 400 without a call, as the Go edge answers (its net/http refuses such a Host itself).
'use strict';

const { describe, before, after, beforeEach, test } = require('node:test');
const assert = require('node:assert/strict');
const grpc = require('@grpc/grpc-js');

const { createEdge, loadHookverify } = require('../edge.js');
const h = require('./helpers.js');

describe('edge: Host headers that give no URL', { timeout: 60000 }, () => {
  const hookverify = loadHookverify();
  let grpcServer;
  let edge;
  let edgeURL;
  let calls;
  let logs;

  before(async () => {
    grpcServer = new grpc.Server();
    grpcServer.addService(hookverify.VerifierService.service, {
      Verify(call, callback) {
        calls.push(call.request);
        // As hookverify does (server/verify.go, isAbsoluteHTTPURL).
        if (!/^https?:\/\/[^/]/i.test(call.request.url)) {
          callback({ code: grpc.status.INVALID_ARGUMENT, details: 'url is required, absolute' });
          return;
        }
        callback(null, {
          verdict: 'VERDICT_ACCEPTED', event_id: 'evt', operation_key: 'op',
          reply: { status: 200, headers: [], body: Buffer.from('{"status":"accepted"}') },
        });
      },
    });
    const addr = await h.bindLoopback(grpcServer);
    edge = createEdge({ verifierAddr: addr, log: (level, msg, fields) => msg !== 'request' && logs.push({ level, msg, ...fields }) });
    edgeURL = await h.listen(edge);
  });

  after(async () => {
    if (edge) await h.closeServer(edge);
    if (grpcServer) grpcServer.forceShutdown();
  });

  beforeEach(() => {
    calls = [];
    logs = [];
  });

  test('a Host that is no host (a /, ? or #) gets 400 without a call and without an error log', async () => {
    for (const host of ['/x', '//evil', '/', 'x/evil', 'x?y', 'x#y']) {
      const res = await h.request(`${edgeURL}/hooks/ep`, { body: Buffer.from('{}'), headers: ['Host', host] });
      assert.equal(res.status, 400, host);
      assert.deepEqual(JSON.parse(res.body), { status: 'rejected', reason: 'unreadable_request' });
    }
    assert.equal(calls.length, 0);
    assert.ok(logs.every((l) => l.level !== 'error'), JSON.stringify(logs));
  });

  test('an ordinary Host is forwarded as the URL\'s host', async () => {
    const res = await h.request(`${edgeURL}/hooks/ep?a=1`, { body: Buffer.from('{}'), headers: ['Host', 'hooks.example.com:8443'] });
    assert.equal(res.status, 200);
    assert.equal(calls.length, 1);
    assert.equal(calls[0].url, 'http://hooks.example.com:8443/hooks/ep?a=1');
  });
});
