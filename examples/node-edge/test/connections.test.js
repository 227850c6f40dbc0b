// The bound on the connections the edge serves at once (maxConnections): without it anyone who
// can reach the edge could open connections that send nothing, or headers slowly, until the
// process ran out of file descriptors or memory, and then no provider got through.
'use strict';

const { test } = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');

const { createEdge } = require('../edge.js');
const h = require('./helpers.js');

/**
 * connectionsReach waits until the server counts n connections open, at most 10 s: a fixed
 * sleep could end before the server had seen a connection open or close on a loaded machine.
 */
async function connectionsReach(server, n) {
  const deadline = Date.now() + 10000;
  for (;;) {
    const count = await new Promise((resolve, reject) => server.getConnections((err, c) => (err ? reject(err) : resolve(c))));
    if (count === n) return;
    if (Date.now() > deadline) assert.fail(`the server counts ${count} connections open, want ${n}`);
    await h.sleep(10);
  }
}

/** connect opens a TCP connection to port and resolves once it is open. */
const connect = (port) => new Promise((resolve, reject) => {
  const c = net.connect(port, '127.0.0.1', () => resolve(c));
  c.on('error', reject);
});

test('past maxConnections a new connection is closed, warned of, and served again once one closes', { timeout: 30000 }, async () => {
  const warnings = [];
  const log = (level, msg, fields) => level === 'warn' && warnings.push({ msg, fields });
  // No verifier is needed: /healthz answers without one.
  const edge = createEdge({ verifierAddr: '127.0.0.1:1', maxConnections: 2, log });
  const url = await h.listen(edge);
  const port = Number(new URL(url).port);
  const idle = [await connect(port), await connect(port)];
  try {
    await connectionsReach(edge, 2);
    const third = await connect(port);
    const closed = await new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), 5000);
      third.on('close', () => {
        clearTimeout(timer);
        resolve(true);
      });
      third.write('GET /healthz HTTP/1.1\r\nHost: a.example\r\n\r\n');
    });
    assert.ok(closed, 'a third connection at maxConnections 2 was kept open');
    assert.equal(warnings.length, 1, JSON.stringify(warnings));
    assert.match(warnings[0].msg, /maxConnections/);
    assert.equal(warnings[0].fields.max_connections, 2);

    idle[0].destroy();
    await connectionsReach(edge, 1);
    const res = await h.request(`${url}/healthz`, { method: 'GET' });
    assert.equal(res.status, 200, 'a request once a connection closed');
  } finally {
    idle.forEach((c) => c.destroy());
    await h.closeServer(edge);
  }
});

test('createEdge refuses a maxConnections that is not a whole number', () => {
  for (const bad of [-1, 1.5, '10', NaN]) {
    assert.throws(() => createEdge({ verifierAddr: '127.0.0.1:1', maxConnections: bad }), /maxConnections/);
  }
});
