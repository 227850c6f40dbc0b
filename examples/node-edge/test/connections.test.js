// The bound on the connections the edge serves at once (maxConnections): without it anyone who
// can reach the edge could open connections that send nothing, or headers slowly, until the
// process ran out of file descriptors or memory, and then no provider got through.
'use strict';

const { test } = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
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

/**
 * keepAliveGet sends GET path over agent (its own keep-alive connection) and resolves {status,
 * socket} once the answer has been read, the socket then back in the agent's pool, idle.
 */
const keepAliveGet = (url, agent, path = '/healthz') => new Promise((resolve, reject) => {
  const req = http.get(`${url}${path}`, { agent, timeout: 5000 }, (res) => {
    const { socket } = res; // detached from res once the answer is read
    res.resume();
    res.on('end', () => resolve({ status: res.statusCode, socket }));
    res.on('error', reject);
  });
  req.on('timeout', () => req.destroy(new Error('timed out')));
  req.on('error', reject);
});

/** closedWithin resolves whether socket closes within ms. */
const closedWithin = (socket, ms) => new Promise((resolve) => {
  if (socket.destroyed) {
    resolve(true);
    return;
  }
  const timer = setTimeout(() => resolve(false), ms);
  socket.once('close', () => {
    clearTimeout(timer);
    resolve(true);
  });
});

test('at maxConnections a new connection takes the slot of the keep-alive connection idle the longest', { timeout: 30000 }, async () => {
  const lines = [];
  const log = (level, msg, fields) => lines.push({ level, msg, fields });
  const edge = createEdge({ verifierAddr: '127.0.0.1:1', maxConnections: 2, log });
  const url = await h.listen(edge);
  // One connection each, kept alive after its request, as a provider's HTTP client keeps them.
  const agents = [0, 1, 2].map(() => new http.Agent({ keepAlive: true, maxSockets: 1 }));
  try {
    const first = await keepAliveGet(url, agents[0]);
    await h.sleep(50);
    const second = await keepAliveGet(url, agents[1]);
    assert.equal(first.status, 200);
    assert.equal(second.status, 200);
    await connectionsReach(edge, 2);
    // Idle for less than a second, neither is taken: a client sending deliveries one after
    // another has its next request on the way then. The newcomer is closed as it arrives.
    const early = await connect(Number(new URL(url).port));
    assert.ok(await closedWithin(early, 5000), 'a connection idle under a second was closed for a new one');
    assert.ok(!first.socket.destroyed && !second.socket.destroyed, 'a connection idle under a second was closed');
    await h.sleep(1100);

    // Before, both idle connections held their slots for idleTimeoutMs (60 s) and this one was
    // closed as it arrived.
    const third = await keepAliveGet(url, agents[2]);
    assert.equal(third.status, 200, 'a new connection at maxConnections with idle ones open');
    assert.ok(await closedWithin(first.socket, 2000), 'the connection idle the longest was not closed');
    assert.ok(!second.socket.destroyed, 'a connection idle for less time was closed');
    // The other one still serves its client on the same connection.
    const again = await keepAliveGet(url, agents[1]);
    assert.equal(again.status, 200);
    assert.equal(again.socket, second.socket, 'the second client had to reconnect');

    // The one warning is the early newcomer's.
    assert.equal(lines.filter((l) => l.level === 'warn' && /maxConnections/.test(l.msg)).length, 1, JSON.stringify(lines));
    const closes = lines.filter((l) => /idle keep-alive connection/.test(l.msg));
    assert.equal(closes.length, 1, JSON.stringify(lines));
    assert.equal(closes[0].level, 'info');
    assert.equal(closes[0].fields.max_connections, 2);
  } finally {
    agents.forEach((a) => a.destroy());
    await h.closeServer(edge);
  }
});

test('at maxConnections a connection reading or answering a request is never closed', { timeout: 30000 }, async () => {
  // A verifier that answers only when told: the first connection's request is being answered.
  const held = [];
  const client = { Verify: (request, md, opts, cb) => held.push(cb) };
  const warnings = [];
  const log = (level, msg, fields) => level === 'warn' && warnings.push({ msg, fields });
  const edge = createEdge({ client, maxConnections: 2, token: null, log });
  const url = await h.listen(edge);
  const port = Number(new URL(url).port);
  // The first was idle between requests, then got one that is being answered.
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const before = await keepAliveGet(url, agent);
  const answering = new Promise((resolve, reject) => {
    const req = http.request(`${url}/hooks/ep`, { method: 'POST', agent, headers: { Host: 'a.example' } }, (res) => {
      const { socket } = res;
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode, socket }));
    });
    req.on('error', reject);
    req.end('{}');
  });
  // The second was answered once and has sent the first bytes of its next request: it is
  // reading that request, though no 'request' event has told the edge of it yet.
  const reading = await connect(port);
  let text = '';
  reading.on('data', (d) => {
    text += d.toString('latin1');
  });
  try {
    reading.write('GET /healthz HTTP/1.1\r\nHost: a.example\r\n\r\n');
    for (const deadline = Date.now() + 5000; !text.includes('ok\n');) {
      if (Date.now() > deadline) assert.fail(`no answer to the first request: ${JSON.stringify(text)}`);
      await h.sleep(10);
    }
    reading.write('GET /healthz HTTP/1.1\r\n');
    for (const deadline = Date.now() + 5000; held.length === 0;) {
      if (Date.now() > deadline) assert.fail('Verify was not called');
      await h.sleep(10);
    }
    await h.sleep(100); // the edge reads the partial request
    await connectionsReach(edge, 2);
    // Past the idle grace, so that what keeps the reading connection open is that it reads.
    await h.sleep(1100);

    const third = await connect(port);
    third.write('GET /healthz HTTP/1.1\r\nHost: a.example\r\n\r\n');
    assert.ok(await closedWithin(third, 5000), 'a third connection was served with none idle');
    assert.equal(warnings.length, 1, JSON.stringify(warnings));
    assert.ok(!reading.destroyed, 'the connection reading a request was closed');

    // Both finish their requests.
    text = '';
    reading.write('Host: a.example\r\n\r\n');
    held[0](null, { verdict: 'VERDICT_ACCEPTED', reply: { status: 200, headers: [], body: Buffer.from('{"status":"accepted"}') } });
    const res = await answering;
    assert.equal(res.status, 200, 'the request being answered');
    assert.equal(res.socket, before.socket, 'the request being answered went on another connection');
    for (const deadline = Date.now() + 5000; !text.includes('ok\n');) {
      if (Date.now() > deadline) assert.fail(`the request being read was not answered: ${JSON.stringify(text)}`);
      await h.sleep(10);
    }
  } finally {
    reading.destroy();
    agent.destroy();
    await h.closeServer(edge);
  }
});
