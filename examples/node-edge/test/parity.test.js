// Behaviours of the Go edge (client.Handler, client.Dial, `hookverify edge`) the Node edge
// matches: TLS files read again when they change, the URL scheme from a trusted
// X-Forwarded-Proto, a public base URL refused (and not quoted) when it holds credentials, and
// a declared body over the limit answered 413 at once.
'use strict';

const { describe, before, after, beforeEach, test } = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const grpc = require('@grpc/grpc-js');

const { createEdge, loadHookverify } = require('../edge.js');
const h = require('./helpers.js');


const accepted = () => ({ verdict: 'VERDICT_ACCEPTED', reply: { status: 200, body: Buffer.from('{"status":"accepted"}') } });

describe('TLS files read again when they change (fake VerifierService, mutual TLS)', { timeout: 60000, skip: !h.haveOpenssl && 'no openssl command' }, () => {
  let tmp;
  let grpcServer;
  let addr;
  let certs;
  const edges = [];

  const selfSigned = (name, subject) => {
    const { key, cert } = h.selfSigned(tmp.dir, name, subject);
    return { key: fs.readFileSync(key), cert: fs.readFileSync(cert) };
  };

  before(async () => {
    tmp = h.mkTmp();
    certs = {
      server: selfSigned('server', '/CN=hookverify-test'),
      trusted: selfSigned('trusted', '/CN=edge-trusted'),
      stranger: selfSigned('stranger', '/CN=edge-stranger'),
    };
    grpcServer = new grpc.Server();
    grpcServer.addService(loadHookverify().VerifierService.service, { Verify: (call, cb) => cb(null, accepted()) });
    const creds = grpc.ServerCredentials.createSsl(certs.trusted.cert,
      [{ private_key: certs.server.key, cert_chain: certs.server.cert }], true);
    addr = await h.bindLoopback(grpcServer, { host: 'localhost', creds });
  });

  after(async () => {
    for (const edge of edges) await h.closeServer(edge);
    if (grpcServer) grpcServer.forceShutdown();
    if (tmp) tmp.cleanup();
  });

  // edgeWith writes the given client certificate to the edge's files and starts an edge on them.
  const edgeWith = async (client, logs) => {
    const dir = fs.mkdtempSync(path.join(tmp.dir, 'edge-'));
    const files = { ca: path.join(dir, 'ca.pem'), cert: path.join(dir, 'cert.pem'), key: path.join(dir, 'key.pem') };
    fs.writeFileSync(files.ca, certs.server.cert);
    fs.writeFileSync(files.cert, client.cert);
    fs.writeFileSync(files.key, client.key);
    const edge = createEdge({
      verifierAddr: addr, deadlineMs: 2000, retryAfterSeconds: 5, token: null, tls: files, tlsReloadMs: 100,
      log: (level, msg, fields) => logs.push({ level, msg, ...fields }),
    });
    edges.push(edge);
    return { url: await h.listen(edge), files };
  };
  const deliver = async (url) => (await h.request(`${url}/hooks/ep`, { body: Buffer.from('{}') })).status;

  test('a client certificate renewed on disk is used without a restart', async () => {
    const logs = [];
    const { url, files } = await edgeWith(certs.stranger, logs);
    assert.equal(await deliver(url), 503); // a certificate the server does not trust
    fs.writeFileSync(files.key, certs.trusted.key);
    fs.writeFileSync(files.cert, certs.trusted.cert);
    await h.sleep(200);
    assert.equal(await deliver(url), 200);
    assert.ok(logs.some((l) => l.level === 'info' && /reloaded/.test(l.msg)), JSON.stringify(logs));
  });

  test('files that changed but do not load (a certificate written before its key) leave the previous ones in use, reported once', async () => {
    const logs = [];
    const { url, files } = await edgeWith(certs.trusted, logs);
    assert.equal(await deliver(url), 200);
    fs.writeFileSync(files.cert, certs.stranger.cert); // the key does not match it yet
    for (let i = 0; i < 3; i++) {
      await h.sleep(150);
      assert.equal(await deliver(url), 200);
    }
    const errors = logs.filter((l) => l.level === 'error');
    assert.equal(errors.length, 1, JSON.stringify(logs));
    assert.match(errors[0].msg, /previous/);
    assert.doesNotMatch(JSON.stringify(logs), /PRIVATE KEY|BEGIN/);
    fs.writeFileSync(files.key, certs.stranger.key); // now they load: the stranger certificate is used
    await h.sleep(200);
    assert.equal(await deliver(url), 503);
  });
});

describe('URL, base URL and body limit as the Go edge (fake VerifierService)', { timeout: 60000 }, () => {
  let grpcServer;
  let addr;
  let calls;
  const edges = [];

  before(async () => {
    grpcServer = new grpc.Server();
    grpcServer.addService(loadHookverify().VerifierService.service, {
      Verify(call, cb) {
        calls.push(call.request);
        cb(null, accepted());
      },
    });
    addr = await h.bindLoopback(grpcServer);
  });

  after(async () => {
    for (const edge of edges) await h.closeServer(edge);
    if (grpcServer) grpcServer.forceShutdown();
  });

  beforeEach(() => {
    calls = [];
  });

  const edgeWith = (opts) => {
    const edge = createEdge({ verifierAddr: addr, deadlineMs: 3000, log: () => {}, token: null, ...opts });
    edges.push(edge);
    return h.listen(edge);
  };

  test('trustForwardedProto: the scheme comes from the first X-Forwarded-Proto value (http or https only); not trusted by default', async () => {
    const trusting = await edgeWith({ trustForwardedProto: true });
    const plain = await edgeWith({});
    const cases = [
      [trusting, 'https', 'https'],
      [trusting, 'HTTPS, http', 'https'],
      [trusting, ' http ', 'http'],
      [trusting, 'gopher', 'http'],
      [plain, 'https', 'http'],
    ];
    for (const [url, proto, want] of cases) {
      calls = [];
      const res = await h.request(`${url}/hooks/ep?a=1`, { body: Buffer.from('{}'), headers: ['Host', 'hooks.example.com', 'X-Forwarded-Proto', proto] });
      assert.equal(res.status, 200);
      assert.equal(calls[0].url, `${want}://hooks.example.com/hooks/ep?a=1`, proto);
    }
  });

  test('without publicBaseUrl, a Host outside ASCII is refused (400) as the Go edge refuses it; an IDN\'s A-label is forwarded', async () => {
    const url = await edgeWith({});
    // Sent as its UTF-8 bytes, which Node decodes as latin1. Not a reg-name (RFC 3986 3.2.2: a
    // name travels as its A-label); Go's net/http answers it 400 itself.
    const res = await h.request(`${url}/hooks/ep`, { body: Buffer.from('{}'), headers: ['Host', Buffer.from('hé.example').toString('latin1')] });
    assert.equal(res.status, 400);
    assert.equal(calls.length, 0);
    const host = 'xn--h-9fa.example';
    assert.equal((await h.request(`${url}/hooks/ep`, { body: Buffer.from('{}'), headers: ['Host', host] })).status, 200);
    assert.equal(calls[0].headers.find((f) => f.name === 'Host').value, host);
    assert.equal(calls[0].url, `http://${host}/hooks/ep`);
  });

  test('a public base URL with credentials, a space or a control character is refused, without quoting it', () => {
    for (const bad of ['https://user:s3cr3t@hooks.example.com', 'https://hooks.example.com/a b', 'https://hooks.example.com/a\tb']) {
      assert.throws(() => createEdge({ verifierAddr: addr, publicBaseUrl: bad }), (err) => {
        assert.match(err.message, /publicBaseUrl/);
        assert.ok(!err.message.includes('s3cr3t') && !err.message.includes(bad), err.message);
        return true;
      }, bad);
    }
  });

  test('a Content-Length over the limit is answered 413 at once, without waiting for the body', async () => {
    const url = new URL(await edgeWith({ maxBodyBytes: 1024, deadlineMs: 5000 }));
    const started = Date.now();
    const answer = await new Promise((resolve, reject) => {
      const socket = net.connect(Number(url.port), url.hostname, () => {
        socket.write(`POST /hooks/ep HTTP/1.1\r\nHost: x\r\nContent-Length: ${1 << 20}\r\n\r\n{"partial":`);
      });
      let data = '';
      socket.on('data', (c) => {
        data += c;
      });
      socket.on('close', () => resolve(data));
      socket.on('error', reject);
      setTimeout(() => socket.destroy(), 8000).unref();
    });
    assert.match(answer, /^HTTP\/1\.1 413 /);
    assert.match(answer, /body_too_large/);
    assert.ok(Date.now() - started < 2000, `answered after ${Date.now() - started} ms`);
    assert.equal(calls.length, 0);
  });

  test('Expect: 100-continue: 100 Continue only when the body is wanted; a Content-Length over the limit, or a request for no endpoint, is answered without it', async () => {
    const url = await edgeWith({ maxBodyBytes: 1024 });
    const expect = (target, length) => `POST ${target} HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: ${length}\r\n\r\n`;
    for (const [what, head, status] of [
      ['a body over the limit', expect('/hooks/ep', 1 << 20), 413],
      ['a path that is no route', expect('/elsewhere', 2), 404],
      ['an id no endpoint can have', expect('/hooks/a%20b', 2), 404],
    ]) {
      // The provider waits for 100 Continue (or the answer) before sending the body.
      const { text, closed } = await h.rawExchange(url, [head], { waitMs: 3000 });
      assert.match(text, new RegExp(`^HTTP/1\\.1 ${status} `), `${what}: ${text}`);
      assert.doesNotMatch(text, /100 Continue/, what);
      assert.match(text, /\r\nConnection: close\r\n/i, what);
      assert.ok(closed, what);
    }
    assert.equal(calls.length, 0);
    const good = await h.rawExchange(url, [`${expect('/hooks/ep', 2).slice(0, -2)}Connection: close\r\n\r\n`, 200, '{}'], { waitMs: 3000 });
    assert.match(good.text, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 /, good.text);
    assert.equal(calls.length, 1);
    assert.equal(calls[0].body.toString(), '{}');
  });

  test('headers up to the server\'s 256 KiB limit are forwarded, as the Go edge does (Node\'s own default stops at 16 KiB, with a 431)', async () => {
    const url = await edgeWith({});
    const big = 'x'.repeat(40 << 10);
    const res = await h.request(`${url}/hooks/ep`, { body: Buffer.from('{}'), headers: ['X-Big', big] });
    assert.equal(res.status, 200);
    assert.equal(calls[0].headers.find((f) => f.name === 'X-Big').value, big);
    // Past the server's limit: 400 from the edge, without a call (hookverify would refuse it).
    calls = [];
    const over = await h.request(`${url}/hooks/ep`, { body: Buffer.from('{}'), headers: ['X-Big', 'x'.repeat(257 << 10)] });
    assert.equal(over.status, 400);
    const longURL = await h.request(`${url}/hooks/ep?q=${'x'.repeat(17 << 10)}`, { body: Buffer.from('{}') });
    assert.equal(longURL.status, 400);
    assert.equal(calls.length, 0);
  });
});

describe('graceful shutdown (fake VerifierService)', { timeout: 60000 }, () => {
  let grpcServer;
  let addr;

  before(async () => {
    grpcServer = new grpc.Server();
    grpcServer.addService(loadHookverify().VerifierService.service, {
      Verify: (call, cb) => setTimeout(() => cb(null, accepted()), 400),
    });
    addr = await h.bindLoopback(grpcServer);
  });

  after(() => {
    if (grpcServer) grpcServer.forceShutdown();
  });

  test('shutdown: in-flight deliveries finish and close their keep-alive connection; new connections and requests are refused', async () => {
    const edge = createEdge({ verifierAddr: addr, deadlineMs: 3000, log: () => {}, token: null });
    const url = new URL(await h.listen(edge));
    const port = Number(url.port);
    try {
      const socket = net.connect(port, '127.0.0.1');
      let data = '';
      socket.on('data', (c) => {
        data += c;
      });
      const closed = new Promise((resolve) => socket.on('close', resolve));
      const post = (id) => `POST /hooks/ep-${id} HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\n{}`;
      await new Promise((resolve) => socket.once('connect', resolve));
      socket.write(post(1));
      await h.sleep(100);
      const done = edge.shutdown();
      // A new connection is refused once shutdown has begun.
      await assert.rejects(new Promise((resolve, reject) => {
        const c = net.connect(port, '127.0.0.1', () => {
          c.destroy();
          resolve();
        });
        c.on('error', reject);
      }), /ECONNREFUSED/);
      await h.sleep(600); // the first delivery has been answered
      if (!socket.destroyed) socket.write(post(2)); // a provider reusing the connection
      await Promise.race([closed, h.sleep(3000, { unref: true })]);
      assert.match(data, /^HTTP\/1\.1 200 /);
      assert.match(data, /\r\nConnection: close\r\n/i);
      assert.equal(data.match(/HTTP\/1\.1 /g).length, 1, data); // the second request was not served
      assert.ok(socket.destroyed || socket.readableEnded, 'the edge closed the connection');
      assert.equal(await Promise.race([done, h.sleep(3000, { unref: true }).then(() => 'timeout')]), true);
    } finally {
      await h.closeServer(edge);
    }
  });

  test('shutdown is bounded: connections still open after graceMs are closed', async () => {
    const edge = createEdge({ verifierAddr: addr, deadlineMs: 3000, log: () => {}, token: null });
    const url = new URL(await h.listen(edge));
    try {
      // A request whose body never ends holds its connection.
      const socket = net.connect(Number(url.port), '127.0.0.1');
      socket.on('error', () => {});
      await new Promise((resolve) => socket.once('connect', resolve));
      socket.write('POST /hooks/ep HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{');
      await h.sleep(100);
      const started = Date.now();
      assert.equal(await edge.shutdown(300), false);
      assert.ok(Date.now() - started < 1500, `took ${Date.now() - started} ms`);
    } finally {
      await h.closeServer(edge);
    }
  });
});

describe('Verify retried as the Go client does (fake VerifierService)', { timeout: 60000 }, () => {
  const rpc = require('./rpc-status.js');
  let grpcServer;
  let addr;
  let answers;
  let calls = 0;

  before(async () => {
    grpcServer = new grpc.Server();
    grpcServer.addService(loadHookverify().VerifierService.service, {
      Verify(call, cb) {
        calls++;
        (answers.shift() ?? ((c) => c(null, accepted())))(cb);
      },
    });
    addr = await h.bindLoopback(grpcServer);
  });

  after(() => {
    if (grpcServer) grpcServer.forceShutdown();
  });

  test('a transient UNAVAILABLE is retried within the deadline: the provider gets the verdict, not 503', async () => {
    const edge = createEdge({ verifierAddr: addr, deadlineMs: 3000, log: () => {}, token: null });
    const url = await h.listen(edge);
    try {
      calls = 0;
      answers = [(cb) => cb({ code: grpc.status.UNAVAILABLE, details: 'restarting' }), (cb) => cb({ code: grpc.status.UNAVAILABLE, details: 'restarting' })];
      const res = await h.request(`${url}/hooks/ep`, { body: Buffer.from('{}') });
      assert.equal(res.status, 200);
      assert.equal(calls, 3);
    } finally {
      await h.closeServer(edge);
    }
  });

  test('a RetryInfo hint longer than the time left ends the retries at once, as Retry-After', async () => {
    const edge = createEdge({ verifierAddr: addr, deadlineMs: 3000, log: () => {}, token: null });
    const url = await h.listen(edge);
    try {
      calls = 0;
      const full = (cb) => cb({
        code: grpc.status.RESOURCE_EXHAUSTED, details: 'inbox full',
        metadata: rpc.trailer(rpc.status({ code: grpc.status.RESOURCE_EXHAUSTED, details: [rpc.retryInfo({ seconds: 30 })] })),
      });
      answers = [full, full, full, full];
      const started = Date.now();
      const res = await h.request(`${url}/hooks/ep`, { body: Buffer.from('{}') });
      assert.equal(res.status, 503);
      assert.equal(res.headers['retry-after'], '30');
      assert.equal(calls, 1);
      assert.ok(Date.now() - started < 1000);
    } finally {
      await h.closeServer(edge);
    }
  });
});

describe('HTTP timeouts and access log as the Go edge (fake VerifierService)', { timeout: 60000 }, () => {
  let grpcServer;
  let addr;
  let answer;
  const edges = [];

  before(async () => {
    grpcServer = new grpc.Server();
    grpcServer.addService(loadHookverify().VerifierService.service, { Verify: (call, cb) => answer(cb) });
    addr = await h.bindLoopback(grpcServer);
  });

  after(async () => {
    for (const edge of edges) await h.closeServer(edge);
    if (grpcServer) grpcServer.forceShutdown();
  });

  beforeEach(() => {
    answer = (cb) => cb(null, accepted());
  });

  const edgeWith = (opts) => {
    const edge = createEdge({ verifierAddr: addr, token: null, log: () => {}, ...opts });
    edges.push(edge);
    return edge;
  };

  test('HTTP timeouts default to the Go edge\'s (--read-header-timeout 5s, --read-timeout 10s, idle 60s)', () => {
    const edge = edgeWith({});
    assert.equal(edge.headersTimeout, 5000);
    assert.equal(edge.requestTimeout, 10000);
    assert.equal(edge.keepAliveTimeout, 60000);
  });

  test('HTTP timeouts are configurable, and enforced within about a second (not on Node\'s 30 s sweep): 503 + Retry-After for a stalled request, an idle connection closed', async () => {
    const lines = [];
    const url = await h.listen(edgeWith({
      deadlineMs: 8000, retryAfterSeconds: 4, headersTimeoutMs: 500, requestTimeoutMs: 1000, idleTimeoutMs: 300,
      log: (level, msg, fields) => lines.push({ level, msg, ...fields }),
    }));
    for (const [what, head] of [
      ['a header section that stops arriving', 'POST /hooks/ep HTTP/1.1\r\nHost: x\r\nX-Hub-Sig'],
      ['a body that stops arriving', 'POST /hooks/ep HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"slow":'],
    ]) {
      const { text, closed, ms } = await h.rawExchange(url, [head], { waitMs: 6000 });
      assert.match(text, /^HTTP\/1\.1 503 /, `${what}: ${text}`);
      assert.match(text, /\r\nRetry-After: 4\r\n/i, what);
      assert.ok(closed, what);
      assert.ok(ms < 3000, `${what}: answered after ${ms} ms`);
    }
    // The body's request reached the edge: its access log line has the 503 Node's timeout sent.
    assert.deepEqual(lines.filter((l) => l.msg === 'request').map((l) => [l.path, l.status]), [['/hooks/ep', 503]]);
    const idle = await h.rawExchange(url, ['GET /elsewhere HTTP/1.1\r\nHost: x\r\n\r\n'], { waitMs: 6000 });
    assert.match(idle.text, /^HTTP\/1\.1 404 /);
    assert.ok(idle.closed && idle.ms < 3000, `idle connection closed: ${idle.closed} after ${idle.ms} ms`);
  });

  test('HTTP timeouts must be positive numbers of milliseconds, the header one at most the request one: createEdge throws otherwise', () => {
    for (const bad of [{ headersTimeoutMs: 0 }, { requestTimeoutMs: -1 }, { idleTimeoutMs: NaN }, { headersTimeoutMs: 20000 }]) {
      assert.throws(() => createEdge({ verifierAddr: addr, token: null, ...bad }), /TimeoutMs/, JSON.stringify(bad));
    }
  });

  test('access log: one info line per request, as the Go edge\'s: never the query, a body or a header value; GET /healthz answered, logged at debug', async () => {
    const lines = [];
    const url = await h.listen(edgeWith({ deadlineMs: 2000, log: (level, msg, fields) => lines.push({ level, msg, ...fields }) }));
    const requestLines = async (n) => {
      for (let i = 0; i < 50 && lines.filter((l) => l.msg === 'request').length < n; i++) await h.sleep(20);
      return lines.filter((l) => l.msg === 'request');
    };
    const signed = { body: Buffer.from('{"secret":"payload-bytes"}'), headers: ['X-Hub-Signature-256', 'sha256=deadbeefcafe'] };

    assert.equal((await h.request(`${url}/hooks/ep?token=s3cr3t-query`, signed)).status, 200);
    let [line] = await requestLines(1);
    const { duration_ms: took, verifier_duration_ms: verifyTook, ...rest } = line;
    assert.deepEqual(rest, {
      level: 'info', msg: 'request', method: 'POST', path: '/hooks/ep', status: 200,
      endpoint: 'ep', verdict: 'VERDICT_ACCEPTED', grpc_code: 'OK',
    });
    assert.ok(typeof took === 'number' && typeof verifyTook === 'number' && verifyTook <= took, JSON.stringify(line));

    answer = (cb) => cb(null, { verdict: 'VERDICT_REJECTED', reject_reason: 'REJECT_REASON_SIGNATURE_MISMATCH', reply: { status: 401, body: Buffer.from('{}') } });
    assert.equal((await h.request(`${url}/hooks/ep`, signed)).status, 401);
    line = (await requestLines(2))[1];
    assert.equal(line.status, 401);
    assert.equal(line.verdict, 'VERDICT_REJECTED');
    assert.equal(line.reason, 'REJECT_REASON_SIGNATURE_MISMATCH');

    answer = (cb) => cb({ code: grpc.status.FAILED_PRECONDITION, details: 'misconfigured' });
    assert.equal((await h.request(`${url}/hooks/ep`, signed)).status, 500);
    line = (await requestLines(3))[2];
    assert.equal(line.status, 500);
    assert.equal(line.verdict, 'VERDICT_UNSPECIFIED');
    assert.equal(line.grpc_code, 'FAILED_PRECONDITION');

    // No call: no gRPC code; no route: no endpoint or verdict either.
    assert.equal((await h.request(`${url}/hooks/a%20b`, signed)).status, 404);
    line = (await requestLines(4))[3];
    assert.equal(line.endpoint, 'a b');
    assert.equal(line.verdict, 'VERDICT_UNSPECIFIED');
    assert.ok(!('grpc_code' in line) && !('verifier_duration_ms' in line), JSON.stringify(line));
    assert.equal((await h.request(`${url}/elsewhere?x=1`, signed)).status, 404);
    line = (await requestLines(5))[4];
    assert.deepEqual(Object.keys(line).sort(), ['duration_ms', 'level', 'method', 'msg', 'path', 'status']);
    assert.equal(line.path, '/elsewhere');

    // The health check, as the Go edge's GET /healthz, logged at debug.
    const health = await h.request(`${url}/healthz`, { method: 'GET' });
    assert.equal(health.status, 200);
    assert.equal(health.body.toString(), 'ok\n');
    line = (await requestLines(6))[5];
    assert.equal(line.level, 'debug');
    assert.equal(line.path, '/healthz');

    const text = JSON.stringify(lines);
    for (const secret of ['s3cr3t-query', 'payload-bytes', 'deadbeefcafe']) assert.ok(!text.includes(secret), text);
  });

  test('LOG_LEVEL, as the Go edge\'s --log-level: the access log is on at info (the default), off at warn', async () => {
    const run = async (env) => {
      const port = await new Promise((resolve) => {
        const probe = net.createServer().listen(0, '127.0.0.1', () => {
          const p = probe.address().port;
          probe.close(() => resolve(p));
        });
      });
      const proc = spawn(process.execPath, [path.join(__dirname, '..', 'edge.js')], {
        env: { ...process.env, HOOKVERIFY_ADDR: addr, HOOKVERIFY_TOKEN: '', HOST: '127.0.0.1', PORT: String(port), ...env },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      proc.stderr.on('data', (c) => {
        stderr += c;
      });
      try {
        let res = null;
        for (let i = 0; i < 100 && !res; i++) {
          res = await h.request(`http://127.0.0.1:${port}/hooks/ep`, { body: Buffer.from('{}'), timeoutMs: 2000 }).catch(() => null);
          if (!res) await h.sleep(50);
        }
        assert.equal(res && res.status, 200);
        await h.sleep(200);
      } finally {
        proc.kill('SIGKILL');
      }
      return stderr.split('\n').filter(Boolean).map((l) => JSON.parse(l));
    };
    const info = await run({});
    assert.ok(info.some((l) => l.msg === 'request' && l.status === 200 && l.level === 'info'), JSON.stringify(info));
    const warn = await run({ LOG_LEVEL: 'warn' });
    assert.deepEqual(warn, []);
  });
});
