// The bound on the bytes the edge holds at once (maxBytesInFlight) must give back what each
// request reserved however the request ends. A request pipelined behind another on the same
// connection gets a response that waits its turn; when the connection ends first, Node never
// emits that response's 'close', the only event the edge released the request's bytes on: a
// few such connections (Content-Length reserved, body never sent) took the whole bound for
// good, and every later delivery was answered 503; and the response stayed in the edge's
// in-flight set, keeping its request and body, without an access log line.
'use strict';

const { test } = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const grpc = require('@grpc/grpc-js');

const { createEdge, loadHookverify } = require('../edge.js');
const h = require('./helpers.js');

test('bytes of pipelined requests whose connection ends before their answer are given back', { timeout: 30000 }, async () => {
  const hookverify = loadHookverify();
  const grpcServer = new grpc.Server();
  grpcServer.addService(hookverify.VerifierService.service, {
    Verify(call, callback) {
      // Slow enough that the request pipelined behind this one waits for its turn.
      setTimeout(() => callback(null, {
        verdict: 'VERDICT_ACCEPTED', event_id: 'evt', operation_key: 'op',
        reply: { status: 200, headers: [], body: Buffer.from('{"status":"accepted"}') },
      }), 300);
    },
  });
  const lines = [];
  const log = (level, msg, fields) => msg === 'request' && lines.push(fields);
  const edge = createEdge({ verifierAddr: await h.bindLoopback(grpcServer), maxBytesInFlight: 64 * 1024, log });
  const url = await h.listen(edge);
  const { port } = new URL(url);
  try {
    const first = 'POST /hooks/ep HTTP/1.1\r\nHost: a.example\r\nContent-Length: 2\r\n\r\n{}';
    for (const second of [
      // Its body never comes: the read fails when the connection ends.
      'POST /hooks/ep HTTP/1.1\r\nHost: a.example\r\nContent-Length: 60000\r\n\r\n{"a":',
      // Its body came whole: it waits in Verify when the connection ends.
      `POST /hooks/ep HTTP/1.1\r\nHost: a.example\r\nContent-Length: 60000\r\n\r\n${'b'.repeat(60000)}`,
    ]) {
      await new Promise((resolve, reject) => {
        const c = net.connect(Number(port), '127.0.0.1', () => {
          c.write(first + second);
          setTimeout(() => {
            c.destroy();
            resolve();
          }, 100);
        });
        c.on('error', reject);
      });
      await h.sleep(700); // every call is answered, every request ended
      // The response that never had its turn ended too (its access log line is written), and
      // with it what the edge held for it: otherwise inFlight keeps its request and body.
      assert.equal(lines.length, 2, JSON.stringify(lines));
      lines.length = 0;
      const res = await h.request(`${url}/hooks/ep`, { body: Buffer.alloc(30000, 0x61) });
      assert.equal(res.status, 200, 'a delivery alone after the connection ended was refused: its bytes are still held');
      await h.sleep(50);
      lines.length = 0;
    }
  } finally {
    await h.closeServer(edge);
    grpcServer.forceShutdown();
  }
});

test('a large Content-Length is not reserved whole before its bytes arrive', { timeout: 30000 }, async () => {
  const hookverify = loadHookverify();
  const grpcServer = new grpc.Server();
  grpcServer.addService(hookverify.VerifierService.service, {
    Verify(call, callback) {
      callback(null, {
        verdict: 'VERDICT_ACCEPTED', event_id: 'evt', operation_key: 'op',
        reply: { status: 200, headers: [], body: Buffer.from('{"status":"accepted"}') },
      });
    },
  });
  const edge = createEdge({ verifierAddr: await h.bindLoopback(grpcServer), maxBytesInFlight: 1 << 20, log: () => {} });
  const url = await h.listen(edge);
  const { port } = new URL(url);
  const announced = [];
  try {
    // Four clients announce a body of the whole bound and send one byte of it.
    for (let i = 0; i < 4; i++) {
      announced.push(await new Promise((resolve, reject) => {
        const c = net.connect(Number(port), '127.0.0.1', () => {
          c.write(`POST /hooks/ep HTTP/1.1\r\nHost: a.example\r\nContent-Length: ${1 << 20}\r\n\r\n{`);
          resolve(c);
        });
        c.on('error', reject);
      }));
    }
    await h.sleep(300); // every announced request is being read
    const res = await h.request(`${url}/hooks/ep`, { body: Buffer.from('{"id":"evt_1"}') });
    assert.equal(res.status, 200, 'a delivery while four clients announced 1 MiB bodies and sent nothing was refused');
  } finally {
    announced.forEach((c) => c.destroy());
    await h.closeServer(edge);
    grpcServer.forceShutdown();
  }
});
