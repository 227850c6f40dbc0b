// Several hookverify instances behind one edge, restarted one at a time as a rolling deploy does:
// three real `hookverify serve` processes on one data directory (SQLite lets several processes
// share it), reached through one target that resolves to the three addresses, while simulated
// providers deliver events, each until it hears a 2xx.
'use strict';

const { describe, before, after, test } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const http = require('node:http');
const path = require('node:path');
const grpc = require('@grpc/grpc-js');

const { createEdge } = require('../edge.js');
const h = require('./helpers.js');

const ENDPOINT = 'node-rolling';
const SECRET = crypto.randomBytes(24).toString('hex');
const VERIFY = '/hookverify.v1.VerifierService/Verify';
// How long a restarted instance listens before its storage is ready (a database that is slow to
// answer, another instance migrating it): longer than the edge's retries of one call.
const SLOW_START_MS = 2000;

/**
 * startingInstance listens on addr as a hookverify instance still opening its storage does
 * (server.Server before SetStore): grpc.health.v1 answers NOT_SERVING (Check, and Watch, which
 * stays open), every Verify UNAVAILABLE. The SQLite store opens in milliseconds, so the test
 * plays that phase of a restart with this stand-in. Resolves {verifyCalls(), close()}.
 */
async function startingInstance(addr) {
  const raw = (path, responseStream) => ({
    path, requestStream: false, responseStream,
    requestSerialize: (b) => b, requestDeserialize: (b) => b, responseSerialize: (b) => b, responseDeserialize: (b) => b,
  });
  const NOT_SERVING = Buffer.from([0x08, 0x02]); // HealthCheckResponse{status: NOT_SERVING}
  const server = new grpc.Server();
  const watches = new Set();
  let verifyCalls = 0;
  server.addService({ Check: raw('/grpc.health.v1.Health/Check', false), Watch: raw('/grpc.health.v1.Health/Watch', true) }, {
    Check: (call, cb) => cb(null, NOT_SERVING),
    Watch: (call) => {
      watches.add(call);
      call.on('cancelled', () => watches.delete(call));
      call.write(NOT_SERVING);
    },
  });
  server.addService({ Verify: raw(VERIFY, false) }, {
    Verify: (call, cb) => {
      verifyCalls++;
      cb({ code: grpc.status.UNAVAILABLE, details: 'storage is not ready yet' });
    },
  });
  await new Promise((resolve, reject) => server.bindAsync(addr, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())));
  return {
    verifyCalls: () => verifyCalls,
    // As the instance becoming ready does not cut a call, the stand-in lets its calls end.
    close: () => new Promise((resolve) => {
      for (const w of watches) w.end();
      server.tryShutdown(() => resolve());
    }),
  };
}

/** verifyCalls reads an instance's Verify calls by gRPC code from its /metrics. */
function verifyCalls(httpAddr) {
  return new Promise((resolve, reject) => {
    http.get(`http://${httpAddr}/metrics`, { timeout: 5000 }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => { text += c; });
      res.on('end', () => {
        const counts = {};
        for (const line of text.split('\n')) {
          const m = /^hookverify_grpc_requests_total\{(.*)\} (\S+)$/.exec(line);
          if (!m || !m[1].includes(`method="${VERIFY}"`)) continue;
          const code = /code="([^"]*)"/.exec(m[1])[1];
          counts[code] = (counts[code] ?? 0) + Number(m[2]);
        }
        resolve(counts);
      });
    }).on('error', reject);
  });
}

describe('node edge balancing over several hookverify instances', { timeout: 400000 }, () => {
  let tmp;
  let bin;
  let dataDir;
  const instances = [];
  let edge;
  let edgeURL;
  const logs = [];
  // Verify calls each instance answered, by gRPC code, summed over its runs.
  const served = [];

  const start = (listen) => h.startHookverify(bin, dataDir, { listen, args: ['--http-listen', '127.0.0.1:0'] });
  const countServed = async (i) => {
    for (const [code, n] of Object.entries(await verifyCalls(instances[i].httpAddr))) {
      served[i][code] = (served[i][code] ?? 0) + n;
    }
  };

  before(async () => {
    tmp = h.mkTmp();
    bin = await h.buildHookverify(tmp.dir);
    dataDir = path.join(tmp.dir, 'data');
    // One after the other: the first creates the database and the master key the others use.
    for (let i = 0; i < 3; i++) {
      instances.push(await start());
      served.push({});
    }
    const addr = instances[0].addr;
    await h.run(bin, ['endpoint', 'create', '--server', addr, '--timeout', '10s', '--id', ENDPOINT, '--provider', 'github'], { timeoutMs: 20000 });
    await h.run(bin, ['secret', 'add', '--server', addr, '--timeout', '10s', '--endpoint', ENDPOINT], { input: SECRET, timeoutMs: 20000 });
    edge = createEdge({
      // One target for the three instances, as a DNS name with three addresses would be.
      verifierAddr: `ipv4:${instances.map((p) => p.addr).join(',')}`,
      log: (level, msg, fields) => logs.push({ level, msg, ...fields }),
    });
    edgeURL = await h.listen(edge);
  }, { timeout: 360000 });

  after(async () => {
    if (edge) await h.closeServer(edge);
    for (const p of instances) await p.stop();
    if (tmp) tmp.cleanup();
  });

  test('rolling restarts with SIGTERM and a slow start: every event ends 2xx, no 4xx, no 503, calls spread, none to an instance not SERVING', async (t) => {
    const answers = []; // {event, status, at}
    const sent = [];
    let stopped = false;
    const deliver = async (deliveryId, body) => {
      while (!stopped) {
        const headers = h.githubHeaders({ secret: SECRET, body, deliveryId });
        let res;
        try {
          res = await h.request(`${edgeURL}/hooks/${ENDPOINT}`, { headers, body });
        } catch (err) {
          answers.push({ event: deliveryId, status: 0, error: err.message, at: Date.now() });
          return;
        }
        answers.push({ event: deliveryId, status: res.status, at: Date.now() });
        if (res.status < 300 || res.status >= 400 && res.status < 500) return; // 4xx: final for a provider
        await h.sleep(50);
      }
    };
    const provider = async () => {
      while (!stopped) {
        const old = sent.length > 0 && Math.random() < 0.3 ? sent[Math.floor(Math.random() * sent.length)] : null;
        const event = old ?? { id: crypto.randomUUID(), body: Buffer.from(JSON.stringify({ n: crypto.randomUUID() })) };
        if (!old) sent.push(event);
        await deliver(event.id, event.body);
      }
    };
    const oks = () => answers.filter((a) => a.status === 200).length;
    const waitOks = async (more) => {
      const target = oks() + more;
      const until = Date.now() + 60000;
      while (oks() < target) {
        assert.ok(Date.now() < until, `fewer than ${more} deliveries answered 200 within 60 s`);
        await h.sleep(20);
      }
    };

    const load = Array.from({ length: 4 }, provider);
    const windows = [];
    let notReadyCalls = 0; // Verify calls sent to an instance not SERVING
    try {
      await waitOks(100);
      for (let i = 0; i < instances.length; i++) {
        await countServed(i);
        const from = Date.now();
        await instances[i].terminate();
        const starting = await startingInstance(instances[i].addr);
        await h.sleep(SLOW_START_MS);
        await starting.close();
        notReadyCalls += starting.verifyCalls();
        instances[i] = await start(instances[i].addr);
        await waitOks(150);
        windows.push({ what: `SIGTERM instance ${i + 1}`, from, to: Date.now() });
      }
    } finally {
      stopped = true;
      await Promise.all(load);
    }
    for (let i = 0; i < instances.length; i++) await countServed(i);

    const byStatus = {};
    for (const a of answers) byStatus[a.status] = (byStatus[a.status] ?? 0) + 1;
    const codes = {};
    for (const l of logs) if (l.msg === 'request' && l.grpc_code !== 'OK') codes[l.grpc_code] = (codes[l.grpc_code] ?? 0) + 1;
    const report = `answers by status ${JSON.stringify(byStatus)}; Verify calls per instance ${JSON.stringify(served)}, `
      + `${notReadyCalls} to instances not SERVING; `
      + `failed Verify (after the edge's retries) ${JSON.stringify(codes)}`;
    t.diagnostic(report);

    assert.equal(answers.filter((a) => a.status >= 400 && a.status < 500).length, 0, `a 4xx is final for a provider: ${report}`);
    assert.equal(answers.filter((a) => a.status === 0).length, 0, `no answer: ${report}`);
    for (const w of windows) {
      const bad = answers.filter((a) => a.at >= w.from && a.at <= w.to && a.status !== 200);
      assert.equal(bad.length, 0, `${w.what}: ${bad.length} answers other than 200 while the other instances served; ${report}`);
    }
    assert.equal(notReadyCalls, 0, `Verify calls sent to an instance not SERVING: ${report}`);
    for (let i = 0; i < instances.length; i++) {
      assert.ok((served[i].OK ?? 0) >= 50, `instance ${i + 1} answered only ${served[i].OK ?? 0} Verify calls: the edge does not spread them; ${report}`);
    }
    // Every event sent ends with a 2xx.
    const done = new Set(answers.filter((a) => a.status === 200).map((a) => a.event));
    assert.deepEqual(sent.filter((e) => !done.has(e.id)).map((e) => e.id), []);
  });
});
